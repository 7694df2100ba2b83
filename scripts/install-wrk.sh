#!/usr/bin/env bash
# Installs Debian's wrk, for the benchmarks that run the Ray Serve seed's wrk command.
# Idempotent: nothing happens when `wrk` is already on PATH. Needs root (or
# passwordless sudo) and the Debian mirrors, as this project's machines have.
set -euo pipefail
if command -v wrk >/dev/null 2>&1; then
    exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    SUDO="sudo -n"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends wrk >/dev/null
command -v wrk >/dev/null
