#!/usr/bin/env bash
# Debian's chromium (headless), for the test that renders inferwire bench's HTML reports.
exec bash "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" chromium
