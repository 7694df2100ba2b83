#!/usr/bin/env bash
# Installs MLServer (Seldon's Open Inference Protocol V2 server), a peer server for the V2
# benchmarks (see README.md), into a virtualenv at .tools/peers/mlserver (MLSERVER_VENV
# overrides; PYTHON311 names the interpreter). Idempotent: a virtualenv that already
# imports mlserver, uvloop and tritonclient at the pinned versions is left alone. Prints
# the installed versions.
#
# uvloop is pinned to 0.21.0: with uvloop 0.22.1 or 0.23.0 (what pip picks for MLServer
# 1.7.1 on its own), every parallel inference worker dies at start with "RuntimeError:
# There is no current event loop in thread 'MainThread'" (mlserver/parallel/worker.py
# calls asyncio.get_event_loop() before it has a loop), so with parallel_workers >= 1,
# MLServer's default, the model never loads.
# tritonclient[grpc] is the benchmark's gRPC client. MLServer already needs
# tritonclient[http]; the [grpc] extra adds nothing MLServer's server needs and keeps the
# resolved versions intact. httpx reads the streamed (server-sent events) replies in
# smoke_stream.py. One process cannot import both tritonclient.grpc and mlserver
# (both register the protobuf package "inference"), so clients must not import mlserver.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
VENV="${MLSERVER_VENV:-$ROOT/.tools/peers/mlserver}"
MLSERVER_VERSION="1.7.1"
UVLOOP_VERSION="0.21.0"
TRITONCLIENT_VERSION="2.73.0"
HTTPX_VERSION="0.28.1"
# The scikit-learn runtime serves seed 002's tree (benchmarks/realtime_rows.py); its
# scikit-learn is pinned to the version the model is trained with in .venv, so the pickle
# loads unchanged.
SKLEARN_VERSION="1.9.1"
PACKAGES=(
    "mlserver==$MLSERVER_VERSION"
    "mlserver-sklearn==$MLSERVER_VERSION"
    "scikit-learn==$SKLEARN_VERSION"
    "uvloop==$UVLOOP_VERSION"
    "tritonclient[grpc]==$TRITONCLIENT_VERSION"
    "httpx==$HTTPX_VERSION"
)

# shellcheck source=../lib.sh
source "$ROOT/benchmarks/peers/lib.sh"

installed() {
    [[ -x "$VENV/bin/python" ]] &&
        "$VENV/bin/python" - "$MLSERVER_VERSION" "$UVLOOP_VERSION" "$TRITONCLIENT_VERSION" \
            "$MLSERVER_VERSION" "$SKLEARN_VERSION" "$HTTPX_VERSION" <<'PY' 2>/dev/null &&
import sys
from importlib.metadata import version

wanted = dict(zip(("mlserver", "uvloop", "tritonclient", "mlserver-sklearn", "scikit-learn",
                   "httpx"), sys.argv[1:]))
got = {name: version(name) for name in wanted}
assert got == wanted, (got, wanted)
import mlserver.cli.main  # noqa: F401  (what `mlserver start` imports)
import uvloop  # noqa: F401
import httpx  # noqa: F401
PY
        "$VENV/bin/python" -c 'import tritonclient.grpc' 2>/dev/null  # its own process: see above
}

if ! installed; then
    if [[ ! -x "$VENV/bin/python" ]]; then
        mkdir -p "$(dirname "$VENV")"
        "$(find_python "MLServer")" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${PACKAGES[@]}"
    installed || { echo "${PACKAGES[*]} did not install into $VENV" >&2; exit 1; }
fi

"$VENV/bin/python" - <<'PY'
import platform
from importlib.metadata import version

names = ["mlserver", "mlserver-sklearn", "scikit-learn", "uvloop", "tritonclient", "httpx", "fastapi", "uvicorn", "starlette", "grpcio",
         "protobuf", "pydantic", "numpy"]
print(
    f"MLServer ready: Python {platform.python_version()}, "
    + ", ".join(f"{name} {version(name)}" for name in names)
)
PY
