#!/usr/bin/env bash
# Installs Ray Serve, a peer server for the ray-micro benchmark (Ray's own Serve
# microbenchmark, see README.md), into a virtualenv at .tools/peers/ray (RAY_VENV
# overrides; PYTHON311 names the interpreter). Idempotent: a virtualenv that already
# imports ray.serve at the pinned version is left alone. Prints the installed versions.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
VENV="${RAY_VENV:-$ROOT/.tools/peers/ray}"
RAY_VERSION="2.60.0"
PACKAGES=("ray[serve]==$RAY_VERSION")

# shellcheck source=../lib.sh
source "$ROOT/benchmarks/peers/lib.sh"

installed() {
    [[ -x "$VENV/bin/python" ]] &&
        "$VENV/bin/python" - "$RAY_VERSION" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version

assert version("ray") == sys.argv[1], (version("ray"), sys.argv[1])
import ray.serve  # noqa: F401  (fails without the [serve] extra's packages)
PY
}

if ! installed; then
    if [[ ! -x "$VENV/bin/python" ]]; then
        mkdir -p "$(dirname "$VENV")"
        "$(find_python "Ray Serve")" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${PACKAGES[@]}"
    installed || { echo "ray[serve]==$RAY_VERSION did not install into $VENV" >&2; exit 1; }
fi

"$VENV/bin/python" - <<'PY'
import platform
from importlib.metadata import version

print(
    f"Ray Serve ready: ray[serve] {version('ray')}, Python {platform.python_version()}, "
    f"fastapi {version('fastapi')}, uvicorn {version('uvicorn')}"
)
PY
