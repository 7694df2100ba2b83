#!/usr/bin/env bash
# Installs LitServe (Lightning AI's FastAPI/uvicorn-based model server), a peer server for
# the REST benchmarks (see README.md), into a virtualenv at .tools/peers/litserve
# (LITSERVE_VENV overrides; PYTHON311 names the interpreter). Idempotent: a virtualenv
# that already holds the pins below and imports litserve, zmq and httpx is left alone.
# Prints the installed versions.
#
# Besides litserve itself, the packages its speed rests on are pinned to what pip picked
# for litserve 0.2.19 on 2026-11-24: FastAPI/Starlette (routing, JSON), uvicorn with
# uvloop and httptools (its [standard] extra, which litserve asks for), pyzmq (the
# fast_queue transport serve.py turns on). httpx is smoke.py's client.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
VENV="${LITSERVE_VENV:-$ROOT/.tools/peers/litserve}"
PACKAGES=(
    "litserve==0.2.19"
    "fastapi==0.165.0"
    "starlette==1.10.0"
    "uvicorn==0.54.0"
    "uvloop==0.23.0"
    "httptools==0.9.0"
    "pyzmq==27.3.0"
    "httpx==0.28.1"
)

# shellcheck source=../lib.sh
source "$ROOT/benchmarks/peers/lib.sh"

pinned_venv "$VENV" "LitServe" litserve zmq uvloop httpx

"$VENV/bin/python" - "${PACKAGES[@]}" <<'PY'
import platform
import sys
from importlib.metadata import version

names = [p.split("==")[0] for p in sys.argv[1:]] + ["pydantic"]
print(
    f"LitServe ready: Python {platform.python_version()}, "
    + ", ".join(f"{name} {version(name)}" for name in names)
)
PY
