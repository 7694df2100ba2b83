#!/usr/bin/env bash
# Installs BentoML (a Python model-serving framework: a `@bentoml.service` class whose
# `@bentoml.api` methods become REST endpoints) into a virtualenv at .tools/peers/bentoml
# (BENTOML_VENV overrides; PYTHON311 names the interpreter), the BentoML peer of the
# benchmarks (see README.md). Idempotent: a virtualenv that holds the pins and imports
# them is left alone. Prints the versions.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
VENV="${BENTOML_VENV:-$ROOT/.tools/peers/bentoml}"
PACKAGES=(
    "bentoml==1.4.40"
    "httpx==0.28.1"  # the smoke test's client (BentoML's own client needs it too)
)

# shellcheck source=../lib.sh
source "$ROOT/benchmarks/peers/lib.sh"

pinned_venv "$VENV" "BentoML" bentoml httpx numpy
"$VENV/bin/python" - <<'PY'
import platform
from importlib.metadata import version

import bentoml  # noqa: F401

names = ["bentoml", "httpx", "numpy", "pydantic", "starlette", "uvicorn", "anyio", "kantoku"]
print(
    f"BentoML ready: Python {platform.python_version()}, "
    + ", ".join(f"{name} {version(name)}" for name in names)
)
PY
