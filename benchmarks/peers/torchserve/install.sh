#!/usr/bin/env bash
# Installs TorchServe (PyTorch's model server: a Java frontend that takes REST and gRPC
# requests, batches them and hands them to Python backend workers running a handler) into
# a virtualenv at .tools/peers/torchserve (TORCHSERVE_VENV overrides; PYTHON311 names the
# interpreter), the TorchServe peer of the benchmarks (see README.md). Idempotent: a
# virtualenv that holds the pins and imports them is left alone. Prints the versions.
#
# torchserve and torch-model-archiver 0.12.0 are the newest releases on PyPI (2026-11;
# TorchServe is archived upstream, 0.12.0 is its last). torch is pinned to the version
# inferwire's requirements-torch.txt installs today (2.15.0, what /work/main/.venv holds),
# so both servers run the same network code; torchvision 0.29.2 is the newest torchvision
# (it asks for torch>=2.14; no torchvision for 2.15 yet), the same pin as
# benchmarks/requirements-densenet.txt. PyPI's torch brings its CUDA libraries (about
# 5 GB installed, never loaded here: everything runs on the CPU); the CPU-only wheels
# are not on PyPI. grpcio/grpcio-tools/protobuf generate and run the smoke test's gRPC
# client from TorchServe's inference.proto (our own minimal copy); httpx is its REST client.
# TorchServe's frontend needs Java 11 or later: Debian's openjdk-17-jre-headless, installed
# through scripts/apt-install.sh only when `java` is missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
VENV="${TORCHSERVE_VENV:-$ROOT/.tools/peers/torchserve}"
HERE="$ROOT/benchmarks/peers/torchserve"
PACKAGES=(
    "torchserve==0.12.0"
    "torch-model-archiver==0.12.0"
    "torch==2.15.0"
    "torchvision==0.29.2"
    "pillow==13.0.0"
    "numpy==2.4.6"
    "psutil==7.2.2"
    "pyyaml==6.0.4"  # the backend worker imports yaml; torchserve does not declare it
    "grpcio==1.85.3"
    "grpcio-tools==1.85.1"
    "protobuf==7.36.2"
    "httpx==0.28.1"
)
PYTHON_VERSIONS=(3.11)

bash "$ROOT/scripts/apt-install.sh" openjdk-17-jre-headless java
java_major="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)"
if [[ -z "$java_major" || "$java_major" -lt 11 ]]; then
    echo "TorchServe 0.12 needs Java 11 or later; java -version says: $(java -version 2>&1 | head -1)" >&2
    exit 1
fi

# shellcheck source=../lib.sh
source "$ROOT/benchmarks/peers/lib.sh"

pinned_venv "$VENV" "TorchServe" ts ts.model_service_worker model_archiver torch torchvision grpc_tools httpx
generate_grpc "$VENV" "$HERE" torchserve_inference
print_versions "$VENV" "TorchServe"
echo "Java: $(java -version 2>&1 | head -1)"
