#!/usr/bin/env bash
# Installs the two reference servers of seed 003 (numpy echo on aiohttp and on grpcio, see
# README.md) into a virtualenv at .tools/peers/numpy-echo (NUMPY_ECHO_VENV overrides;
# PYTHON311 names the interpreter), and generates the gRPC Python modules from echo.proto
# into that virtualenv's gen/ folder (not into the repository: the repo's ruff runs over
# benchmarks/). Idempotent: pinned packages already in place are left alone, and the
# modules are generated again only when echo.proto changed. Prints the versions.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
HERE="$ROOT/benchmarks/peers/numpy_echo"
VENV="${NUMPY_ECHO_VENV:-$ROOT/.tools/peers/numpy-echo}"
GEN="$VENV/gen"
PACKAGES=(
    "aiohttp==3.14.5"
    "msgpack==1.2.4"
    "msgpack-numpy==0.4.8"
    "numpy==2.4.6"
    "grpcio==1.85.1"
    "grpcio-tools==1.85.1"
    "protobuf==7.36.2"
)

# shellcheck source=../lib.sh
source "$ROOT/benchmarks/peers/lib.sh"

pinned_venv "$VENV" "the aiohttp/grpcio numpy echo servers" aiohttp.web grpc grpc_tools.protoc msgpack msgpack_numpy numpy
generate_grpc "$VENV" "$HERE" echo
print_versions "$VENV" "aiohttp/grpcio numpy echo servers"
