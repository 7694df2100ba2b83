#!/usr/bin/env bash
# Installs KServe's own Python clients (kserve.InferenceRESTClient, InferenceGRPCClient and
# their InferRequest/InferResponse types) into a small Python 3.11 virtualenv at
# .venv-kserve-client (KSERVE_CLIENT_VENV overrides; PYTHON311 names the interpreter) for
# tests/compat/test_kserve_client_compat.py, which runs them against inferwire.
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

installed() {
    "$VENV/bin/python" - "${PACKAGES[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version

for spec in sys.argv[1:]:
    name, want = spec.split("==")
    assert version(name) == want, (name, version(name), want)
from kserve import InferenceGRPCClient, InferenceRESTClient  # noqa: F401
PY
}

find_python311() {
    # pyenv's shim answers `command -v` even when 3.11 is not selected: try each by running it.
    local c
    for c in "${PYTHON311:-}" python3.11 /usr/bin/python3.11; do
        if [[ -n "$c" ]] && "$c" -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null; then
            echo "$c"
            return
        fi
    done
    echo "Python 3.11 is needed for KServe's clients (PYTHON311=...)" >&2
    exit 1
}

if ! installed; then
    if [[ ! -x "$VENV/bin/python" ]]; then
        "$(find_python311)" -m venv "$VENV" >&2
    fi
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${PACKAGES[@]}" >&2
    installed || { echo "KServe's clients did not install into $VENV" >&2; exit 1; }
fi
echo "$VENV/bin/python"
