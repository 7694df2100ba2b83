#!/usr/bin/env bash
# Installs a Debian package whose command the project needs, unless the command is
# already on PATH: `apt-install.sh PACKAGE [COMMAND]` (COMMAND defaults to PACKAGE).
# For a library, COMMAND is `lib:SONAME` (`apt-install.sh libb64-0d lib:libb64.so.0d`):
# present when the dynamic linker's cache has it. For anything else, COMMAND is
# `file:PATH` (`apt-install.sh python3.11-venv file:/usr/lib/python3.11/ensurepip/__init__.py`):
# present when that file exists.
# Needs root (or passwordless sudo) and the Debian mirrors, as this project's machines
# have. Used by install-chromium.sh (tests) and install-wrk.sh (benchmarks).
set -euo pipefail
package="$1"
command="${2:-$1}"
present() {
    if [[ "$command" == lib:* ]]; then
        ldconfig -p | grep -qF "${command#lib:} "
    elif [[ "$command" == file:* ]]; then
        [[ -e "${command#file:}" ]]
    else
        command -v "$command" >/dev/null 2>&1
    fi
}
if present; then
    exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    SUDO="sudo -n"
    if ! sudo -n true 2>/dev/null; then
        echo "$command is not installed, and installing Debian's $package needs root:" \
            "run 'sudo apt-get install $package' once (or run this as root)" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "$package" >/dev/null
present
