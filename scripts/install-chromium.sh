#!/usr/bin/env bash
# Installs Debian's chromium (headless) for the test that renders inferwire bench's HTML
# reports. Idempotent: nothing happens when `chromium` is already on PATH. Needs root (or
# passwordless sudo) and the Debian mirrors, as this project's machines have.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    SUDO="sudo -n"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null
