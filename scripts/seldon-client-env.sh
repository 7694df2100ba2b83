#!/usr/bin/env bash
# Installs seldon-core's own client (seldon_core.seldon_client.SeldonClient) into a small
# Python 3.10 virtualenv at .venv-seldon-client (SELDON_CLIENT_VENV overrides; PYTHON310
# names the interpreter) for tests/dialects/seldon/, which run SeldonClient against inferwire.
# Idempotent and cheap after the first run: a virtualenv that already imports the client
# at the pinned versions is left alone. Prints the virtualenv's python on stdout.
#
# Why these pins: seldon-core 1.18.2 is the release the compatibility tests target; it
# pins protobuf<4 and protobuf 3.20 has compiled wheels up to Python 3.10 only (hence
# 3.10); gunicorn 20.1 (its pin) imports pkg_resources, which setuptools 81 removed.
# No tensorflow: SeldonClient builds ndarray/tensor payloads without it, and the tests
# build tftensor payloads from seldon-core's own protobuf classes.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SELDON_CLIENT_VENV:-$ROOT/.venv-seldon-client}"
PACKAGES=("seldon-core==1.18.2" "protobuf==3.20.3" "setuptools<81")

source "$ROOT/scripts/pinned-venv.sh"
PYTHON_VERSIONS=(3.10)
pinned_venv "$VENV" "seldon-core's client" seldon_core.seldon_client
echo "$VENV/bin/python"
