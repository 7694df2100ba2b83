#!/usr/bin/env bash
# Installs the Seldon Python wrapper (seldon-core-microservice), the baseline the
# benchmark compares inferwire with, into a Python 3.10 virtualenv at .venv-seldon
# (SELDON_VENV overrides; PYTHON310 names the interpreter). Idempotent: a virtualenv that
# already imports everything at the pinned versions is left alone.
#
# Why these pins:
# - seldon-core pins protobuf<4. protobuf 3.20 ships its compiled (C++) implementation as
#   CPython wheels up to 3.10 only; on 3.11 pip falls back to the pure-Python one and the
#   wrapper becomes several times slower, which would flatter inferwire. Hence Python
#   3.10, and the check below that api_implementation.Type() is "cpp".
# - The wrapper needs tensorflow for tftensor; tensorflow-cpu 2.12.1 is what was verified
#   here with protobuf 3.20.3.
# - gunicorn 20.1 (seldon-core's pin) imports pkg_resources, which setuptools 81 removed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${SELDON_VENV:-$ROOT/.venv-seldon}"
PACKAGES=("seldon-core==1.18.2" "tensorflow-cpu==2.12.1" "protobuf==3.20.3" "setuptools<81")

source "$ROOT/scripts/pinned-venv.sh"
PYTHON_VERSIONS=(3.10)
pinned_venv "$VENV" "the Seldon wrapper" pkg_resources seldon_core.microservice tensorflow

"$VENV/bin/python" - <<'PY'
from importlib.metadata import version

from google.protobuf.internal import api_implementation

impl = api_implementation.Type()
print(
    f"Seldon wrapper ready: seldon-core {version('seldon-core')}, "
    f"tensorflow-cpu {version('tensorflow-cpu')}, protobuf {version('protobuf')} ({impl})"
)
if impl == "python":
    raise SystemExit("protobuf runs its pure-Python implementation: the wrapper would be slow")
PY
