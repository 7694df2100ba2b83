#!/usr/bin/env bash
# Installs the two reference servers of seed 001 (REST on FastAPI/uvicorn, gRPC on grpcio,
# see README.md) into a virtualenv at .tools/peers/fastapi-images (FASTAPI_IMAGES_VENV
# overrides; PYTHON311 names the interpreter), and generates the gRPC Python modules from
# images.proto into that virtualenv's gen/ folder (not into the repository: the repo's ruff
# runs over benchmarks/). Idempotent: pinned packages already in place are left alone, and
# the modules are generated again only when images.proto changed. Prints the versions.
#
# uvicorn comes with uvloop and httptools, pinned here, which is what uvicorn[standard]
# adds for serving HTTP (the rest of [standard], websockets, watchfiles, python-dotenv
# and PyYAML, serves no purpose here). python-multipart is what FastAPI needs for the
# UploadFile route. httpx and Pillow are for the smoke test's client and test image.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
HERE="$ROOT/benchmarks/peers/fastapi_images"
VENV="${FASTAPI_IMAGES_VENV:-$ROOT/.tools/peers/fastapi-images}"
GEN="$VENV/gen"
PACKAGES=(
    "fastapi==0.165.0"
    "uvicorn==0.54.0"
    "uvloop==0.23.0"
    "httptools==0.9.0"
    "python-multipart==0.0.34"
    "grpcio==1.85.1"
    "grpcio-tools==1.85.1"
    "protobuf==7.36.2"
    "numpy==2.4.6"
    "pillow==13.0.0"
    "httpx==0.28.1"
)

# shellcheck source=../lib.sh
source "$ROOT/benchmarks/peers/lib.sh"

pinned_venv "$VENV" "the FastAPI/grpcio image servers" fastapi grpc grpc_tools.protoc httptools httpx multipart numpy PIL.Image uvicorn uvloop
generate_grpc "$VENV" "$HERE" images
print_versions "$VENV" "FastAPI/grpcio image servers"
