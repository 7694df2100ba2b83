#!/usr/bin/env bash
# Builds inferwire (release) and the peers' virtualenvs, then runs the source benchmarks
# with `inferwire bench` against inferwire and each peer in one run (peers.py). Extra
# arguments go to peers.py (e.g. --duration 2s).
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$ROOT"
ensure_venv -r requirements-test.txt
build_extension --release
bash benchmarks/seldon_wrapper/setup.sh
"$VENV/bin/python" benchmarks/peers/peers.py "$@"
