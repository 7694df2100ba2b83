#!/usr/bin/env bash
# Installs KServe's Python model server (PyPI kserve: kserve.Model, kserve.ModelServer;
# V1 and V2 (Open Inference Protocol) over REST, V2 over gRPC), a peer server for the
# benchmarks (see README.md), into a virtualenv at .tools/peers/kserve (KSERVE_VENV
# overrides; PYTHON311 names the interpreter). Idempotent: a virtualenv that already holds
# the pins and imports them is left alone. Prints the installed versions.
#
# kserve 0.21.0 is the newest release on PyPI (2026-11). No extras: the no-op model needs
# none of storage, logging, ray or llm. The packages on its request path (FastAPI,
# uvicorn, uvloop, orjson, grpcio, protobuf, numpy) are pinned to what pip resolved for it
# here, so that figures taken later are taken with the same server. httpx is the smoke
# test's REST client; the gRPC client is KServe's own (kserve.InferenceGRPCClient).
# Not scripts/kserve-client-env.sh's virtualenv: that one holds KServe 0.15.2's clients
# for the compatibility tests and stays at that version.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
VENV="${KSERVE_VENV:-$ROOT/.tools/peers/kserve}"
PACKAGES=(
    "kserve==0.21.0"
    "fastapi==0.165.0"
    "uvicorn==0.54.0"
    "uvloop==0.23.0"
    "orjson==3.13.0"
    "grpcio==1.85.3"
    "protobuf==6.33.6"
    "numpy==2.4.6"
    "httpx==0.28.1"
)
PYTHON_VERSIONS=(3.11)

# shellcheck source=../lib.sh
source "$ROOT/benchmarks/peers/lib.sh"

pinned_venv "$VENV" "KServe" kserve kserve.protocol.grpc.grpc_predict_v2_pb2_grpc httpx uvloop
"$VENV/bin/python" - <<'PY'
import platform
from importlib.metadata import version

names = ["kserve", "fastapi", "starlette", "uvicorn", "uvloop", "orjson", "grpcio",
         "protobuf", "pydantic", "numpy", "httpx"]
print(
    f"KServe ready: Python {platform.python_version()}, "
    + ", ".join(f"{name} {version(name)}" for name in names)
)
PY
