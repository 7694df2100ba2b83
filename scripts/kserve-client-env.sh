#!/usr/bin/env bash
# Installs KServe's own Python clients (kserve.InferenceRESTClient, InferenceGRPCClient and
# their InferRequest/InferResponse types) into a small Python 3.11 virtualenv at
# .venv-kserve-client (KSERVE_CLIENT_VENV overrides; PYTHON311 names the interpreter) for
# tests/dialects/kserve/test_kserve_client_compat.py, which runs them against inferwire.
# Idempotent and cheap after the first run: a virtualenv that already imports the clients
# at the pinned version is left alone. Prints the virtualenv's python on stdout.
#
# Why a virtualenv of its own: kserve pins pandas<3 and psutil<6, which the test
# virtualenv's packages conflict with. Why 0.15.2: the KServe release deploy/kserve's
# manifests are validated against (docs/deploy.md), and the last one without
# grpcio-tools, aiohttp, cryptography and pillow among its requirements. No extras: the
# clients need none of storage, logging, ray or llm.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${KSERVE_CLIENT_VENV:-$ROOT/.venv-kserve-client}"
PACKAGES=("kserve==0.15.2")

source "$ROOT/scripts/pinned-venv.sh"
PYTHON_VERSIONS=(3.11)
pinned_venv "$VENV" "KServe's clients" kserve
echo "$VENV/bin/python"
