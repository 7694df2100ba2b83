#!/usr/bin/env bash
# Installs the Seldon Python wrapper (seldon-core-microservice) into .venv-seldon, the
# baseline the benchmark compares inferwire with. seldon-core pins protobuf<4, which has
# no CPython 3.11 wheel: Python 3.10 keeps protobuf's compiled implementation (with the
# pure-Python one the wrapper is several times slower, which would flatter inferwire).
# tensorflow-cpu is what the wrapper uses for tftensor; 2.12 is the last release whose
# generated protos load with protobuf 3.20 (newer ones fail at import). Idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${SELDON_VENV:-$ROOT/.venv-seldon}"
PY310="${PYTHON310:-}"
if [[ -z "$PY310" ]]; then
    # pyenv's shim answers `command -v` even when 3.10 is not selected: test by running it.
    for c in "$(pyenv root 2>/dev/null)/versions/3.10."*/bin/python3.10 python3.10; do
        if "$c" -c "import sys" >/dev/null 2>&1; then PY310="$c"; break; fi
    done
fi
[[ -n "$PY310" ]] || { echo "Python 3.10 is needed for the Seldon wrapper (pyenv install 3.10)" >&2; exit 1; }

if ! "$VENV/bin/python" -c "import seldon_core, tensorflow" >/dev/null 2>&1; then
    [[ -x "$VENV/bin/python" ]] || "$PY310" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q "seldon-core" "tensorflow-cpu>=2.12,<2.13" "setuptools<81"
fi
"$VENV/bin/python" - <<'PY'
from google.protobuf.internal import api_implementation
import seldon_core, tensorflow as tf
print(f"seldon-core {seldon_core.__version__ if hasattr(seldon_core, '__version__') else ''}"
      f" tensorflow {tf.__version__} protobuf implementation {api_implementation.Type()}")
PY
