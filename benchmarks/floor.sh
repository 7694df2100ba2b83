#!/usr/bin/env bash
# The floor under a small request at every pace, beside inferwire, in one run
# (benchmarks/floor.py says what each row is): builds inferwire (release), the floor
# servers, the load generator and the notebook's load tools, then prints the table that
# docs/benchmarks.md ("The floor at every pace") shows.
#
#     bash benchmarks/floor.sh [--duration 5s] [--rounds 3] [--out DIR]     (about 12 minutes)
source "$(dirname "$0")/../scripts/env.sh"
cd "$ROOT"
ensure_venv -r requirements-test.txt
build_extension --release
bash scripts/install-load-tools.sh
# Two builds: `--example` applies to every `-p`, so one command would leave the load
# generator's binary unbuilt.
cargo build --release --quiet -p inferwire-server --example http_floor --example grpc_floor
cargo build --release --quiet -p inferwire-bench --bin inferwire-bench
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
"$VENV/bin/python" benchmarks/floor.py --bench "$TARGET_DIR/release/inferwire-bench" \
    --examples "$TARGET_DIR/release/examples" --inferwire "$VENV/bin/inferwire" "$@"
