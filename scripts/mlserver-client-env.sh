#!/usr/bin/env bash
# Installs MLServer's own client side (mlserver.types, mlserver.codecs, its gRPC
# converters and stubs, and the `mlserver infer` command) into a Python 3.11 virtualenv
# at .venv-mlserver-client (MLSERVER_CLIENT_VENV overrides; PYTHON311 names the
# interpreter) for tests/dialects/mlserver/, which call inferwire with them. Idempotent and cheap
# after the first run. Prints the virtualenv's python on stdout.
#
# mlserver 1.7.1 is the last release; its pins (protobuf, fastapi) conflict with the test
# virtualenv's, hence a virtualenv of its own. pandas stays at 2.x: MLServer's PandasCodec
# fails on pandas 3's string columns (dtype "str" is not in its table of datatypes), which
# pip would pick for it. MLModel classes run in this virtualenv too (they import mlserver),
# with inferwire from the checkout on PYTHONPATH, and so do MLflow models (mlflow-skinny,
# with scikit-learn at the test virtualenv's version for the models it saves).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${MLSERVER_CLIENT_VENV:-$ROOT/.venv-mlserver-client}"
PACKAGES=("mlserver==1.7.1" "pandas==2.3.3" "mlflow-skinny==3.17.2" "scikit-learn==1.9.1")

source "$ROOT/scripts/pinned-venv.sh"
PYTHON_VERSIONS=(3.11)
pinned_venv "$VENV" "MLServer's client types" mlserver.types mlserver.codecs mlserver.grpc.converters mlflow.pyfunc
echo "$VENV/bin/python"
