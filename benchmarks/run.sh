#!/usr/bin/env bash
# Reproduces docs/benchmarks.md's Seldon table: builds inferwire (release), the load tools
# and the Seldon wrapper, then runs the notebook's matrix against both servers, side by
# side, in one run. Extra arguments go to seldon_matrix.py (e.g. --duration 5).
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
cd "$ROOT"
ensure_venv -r requirements-test.txt
build_extension --release
bash scripts/install-load-tools.sh
bash benchmarks/seldon_wrapper/setup.sh
mkdir -p benchmarks/results
"$VENV/bin/python" benchmarks/seldon_matrix.py --out benchmarks/results/seldon_matrix.json \
    --markdown benchmarks/results/seldon_matrix.md "$@"
