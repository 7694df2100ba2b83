#!/usr/bin/env bash
# Debian's wrk, for the benchmark that runs the Ray Serve seed's wrk command.
exec bash "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" wrk
