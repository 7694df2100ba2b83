#!/usr/bin/env bash
# Makes the tritonserver binary bundled in PyTriton's wheel (tritonserver 2.51.0 and its
# Python backend) runnable on its own, on a Triton model repository (see README.md):
#
# 1. PyTriton's virtualenv, .tools/peers/pytriton (benchmarks/peers/pytriton/install.sh:
#    Debian's python3.11, whose libpython3.11.so.1.0 the backend's stub links);
# 2. the Python backend's stub for that interpreter's version, copied from the wheel's
#    tritonserver/python_backend_stubs/X.Y/ into tritonserver/backends/python/, where the
#    backend looks for it. The wheel ships the backend without a stub there: PyTriton
#    copies the whole server into a workspace per run and puts the stub into the copy;
#    this puts it into the wheel's folder once, so --backend-directory can name the
#    wheel's own backends folder. PyTriton itself is not affected (its copy leaves out
#    any file named triton_python_backend_stub and adds its own).
#
# Idempotent. Prints the paths serve.py uses.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
VENV="${PYTRITON_VENV:-$ROOT/.tools/peers/pytriton}"

PYTRITON_VENV="$VENV" bash "$ROOT/benchmarks/peers/pytriton/install.sh"

read -r SERVER VERSION < <("$VENV/bin/python" -c '
import os, sys, pytriton
print(os.path.join(os.path.dirname(pytriton.__file__), "tritonserver"), f"{sys.version_info[0]}.{sys.version_info[1]}")')
STUB="$SERVER/python_backend_stubs/$VERSION/triton_python_backend_stub"
[[ -x "$STUB" ]] || { echo "the wheel has no Python backend stub for Python $VERSION ($STUB)" >&2; exit 1; }
if ! cmp -s "$STUB" "$SERVER/backends/python/triton_python_backend_stub"; then
    cp "$STUB" "$SERVER/backends/python/triton_python_backend_stub"
    echo "copied the Python $VERSION stub into $SERVER/backends/python" >&2
fi
if ldd "$SERVER/backends/python/triton_python_backend_stub" | grep -q "not found"; then
    ldd "$SERVER/backends/python/triton_python_backend_stub" | grep "not found" >&2
    echo "the stub's libraries are missing (libpython$VERSION: Debian's libpython$VERSION)" >&2
    exit 1
fi
echo "tritonserver ready: $SERVER/bin/tritonserver, backends $SERVER/backends, stub for Python $VERSION"
