#!/usr/bin/env bash
# The floor under a small REST request on this machine, beside inferwire, in one run:
# the http_floor example (one thread, blocking socket calls, a fixed reply) and inferwire
# serving the notebook's no-op model get the same 1-integer request from inferwire-bench,
# one connection, one request in flight; each server's CPU time per request is printed.
#
#     bash benchmarks/floor.sh [DURATION]        (default 10s; needs a built .venv)
source "$(dirname "$0")/../scripts/env.sh"
cd "$ROOT"
DURATION="${1:-10s}"
# Two builds: `--example` applies to every `-p`, so one command would leave the load
# generator's binary unbuilt.
cargo build --release --quiet -p inferwire-server --example http_floor
cargo build --release --quiet -p inferwire-bench --bin inferwire-bench
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
BENCH="$TARGET_DIR/release/inferwire-bench"
"$TARGET_DIR/release/examples/http_floor" 127.0.0.1:9300 2>/dev/null &
FLOOR=$!
"$VENV/bin/inferwire" serve benchmarks/models/noop.py:NoopPredict --http-port 9301 --grpc-port 5301 \
    --host 127.0.0.1 >/dev/null 2>&1 &
SERVER=$!
trap 'kill $FLOOR $SERVER 2>/dev/null' EXIT
for _ in $(seq 100); do
    curl -sf http://127.0.0.1:9301/health/ping >/dev/null && break
    sleep 0.1
done
BODY='{"data": {"ndarray": [[0]]}}'
for round in 1 2 3; do
    for target in "http_floor 9300 $FLOOR" "inferwire 9301 $SERVER"; do
        read -r name port pid <<<"$target"
        "$BENCH" attack "http://127.0.0.1:$port/api/v1.0/predictions" -d "$BODY" -z "$DURATION" \
            --server-pid "$pid" --format json --no-progress |
            "$VENV/bin/python" -c "import json,sys; r=json.load(sys.stdin); print(f'round $round  {\"$name\":<10} {r[\"requests\"]:>7} requests  mean {r[\"latency\"][\"mean_ns\"]/1e3:6.1f} µs  server CPU {r[\"server_cpu_ns_per_request\"]/1e3:5.1f} µs/request')"
    done
done
