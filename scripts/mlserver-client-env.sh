#!/usr/bin/env bash
# Installs MLServer's own client side (mlserver.types, mlserver.codecs, its gRPC
# converters and stubs, and the `mlserver infer` command) into a Python 3.11 virtualenv
# at .venv-mlserver-client (MLSERVER_CLIENT_VENV overrides; PYTHON311 names the
# interpreter) for tests/compat/, which call inferwire with them. Idempotent and cheap
# after the first run. Prints the virtualenv's python on stdout.
#
# mlserver 1.7.1 is the last release; its pins (pandas, protobuf, fastapi) conflict with
# the test virtualenv's, hence a virtualenv of its own.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${MLSERVER_CLIENT_VENV:-$ROOT/.venv-mlserver-client}"
PACKAGES=("mlserver==1.7.1")

source "$ROOT/scripts/pinned-venv.sh"
PYTHON_VERSIONS=(3.11)
pinned_venv "$VENV" "MLServer's client types" mlserver.types mlserver.codecs mlserver.grpc.converters
echo "$VENV/bin/python"
