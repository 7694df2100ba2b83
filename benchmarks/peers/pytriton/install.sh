#!/usr/bin/env bash
# Installs PyTriton (NVIDIA's Python front end to Triton Inference Server; the wheel
# bundles tritonserver and its Python backend) into a virtualenv at .tools/peers/pytriton
# (PYTRITON_VENV overrides), the Triton peer of the streaming benchmark (see README.md).
# Idempotent: a virtualenv that holds the pins and imports them is left alone. Prints the
# versions.
#
# The interpreter must be Debian's /usr/bin/python3.11 (PYTRITON_PYTHON overrides): Triton's
# Python backend stub links libpython3.11.so.1.0 from the system's library path, so the
# virtualenv's interpreter has to be the Python that library belongs to. A pyenv build
# (another 3.11 patch release, or 3.12 without a shared library) fails when the model
# loads. Debian's python3.11-venv and libpython3.11 are installed when missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
VENV="${PYTRITON_VENV:-$ROOT/.tools/peers/pytriton}"
PYTHON="${PYTRITON_PYTHON:-/usr/bin/python3.11}"
PACKAGES=(
    "nvidia-pytriton==0.7.0"
    "tritonclient==2.73.0"  # its [grpc,http] extras come with nvidia-pytriton
    "numpy==1.26.4"
    "httpx==0.28.1"
)

if [[ "$PYTHON" == /usr/bin/python3.11 ]]; then
    bash "$ROOT/scripts/apt-install.sh" python3.11 file:/usr/bin/python3.11 >&2
    bash "$ROOT/scripts/apt-install.sh" python3.11-venv file:/usr/lib/python3.11/ensurepip/__init__.py >&2
    bash "$ROOT/scripts/apt-install.sh" libpython3.11 lib:libpython3.11.so.1.0 >&2
fi
# A virtualenv made from another interpreter would install fine and fail at load: remake it.
if [[ -f "$VENV/pyvenv.cfg" ]] && ! grep -qxF "executable = $PYTHON" "$VENV/pyvenv.cfg"; then
    echo "$VENV was not made from $PYTHON: making it again" >&2
    rm -rf "$VENV"
fi
export PYTHON311="$PYTHON"
PYTHON_VERSIONS=(3.11)

# shellcheck source=../lib.sh
source "$ROOT/benchmarks/peers/lib.sh"

pinned_venv "$VENV" "PyTriton (Debian's python3.11)" pytriton.triton tritonclient.grpc tritonclient.http httpx
# The bundled server and backend stub must be there (a pip that skipped them would not say).
for f in tritonserver/bin/tritonserver tritonserver/python_backend_stubs/3.11/triton_python_backend_stub; do
    [[ -x "$("$VENV/bin/python" -c 'import pytriton, os; print(os.path.dirname(pytriton.__file__))')/$f" ]] ||
        { echo "PyTriton's $f is missing from $VENV" >&2; exit 1; }
done
"$VENV/bin/python" - <<'PY'
import platform
from importlib.metadata import version

import pytriton.triton  # noqa: F401

names = ["nvidia-pytriton", "tritonclient", "grpcio", "protobuf", "numpy", "httpx"]
print(
    f"PyTriton ready: Python {platform.python_version()} ({platform.python_implementation()}), "
    + ", ".join(f"{name} {version(name)}" for name in names)
)
PY
