#!/bin/bash
# Instructions per request, counted by callgrind: unlike time on a noisy 2-core machine,
# the count barely moves between runs, so two builds compare to a fraction of a percent.
#
#   bash benchmarks/callgrind_requests.sh NAME=PYTHON [NAME=PYTHON ...]
#   bash benchmarks/callgrind_requests.sh new=.venv/bin/python base=/tmp/before/.v/bin/python
#
# Each PYTHON's inferwire serves benchmarks/models/noop.py:Echo (one process, no
# supervisor) under valgrind; this checkout's `inferwire bench` sends, one at a time:
# V2 REST JSON with 1 and 100,000 INT64s, V2 gRPC (typed contents) with 1, and Seldon
# REST ndarray with 1 value. Counters are zeroed after 20 warm-up requests and read after
# the measured ones, so start-up (imports, model load) is not counted. Needs valgrind
# (apt-get install valgrind); about 3 minutes per build.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
cd "$ROOT"
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }
(($#)) || { sed -n '2,13p' "$0" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$VENV/bin/python" - "$work" <<'EOF'
import json, sys
for n in (1, 100_000):
    body = {"inputs": [{"name": "x", "shape": [n], "datatype": "INT64", "data": list(range(n))}]}
    open(f"{sys.argv[1]}/v2-{n}.json", "w").write(json.dumps(body))
open(f"{sys.argv[1]}/seldon-1.json", "w").write(json.dumps({"data": {"ndarray": [[1.0]]}}))
EOF

free_port() { "$VENV/bin/python" -c 'from inferwire.local import _free_port; print(_free_port())'; }
attack() { "$VENV/bin/python" -m inferwire bench attack "$@" --no-progress --format json >/dev/null; }

# count NAME PID LABEL REQUESTS TARGET ARGS...: prints instructions per request.
count() {
    local name=$1 pid=$2 label=$3 n=$4
    shift 4
    attack "$@" -n 20 -c 1
    callgrind_control -z "$pid" >/dev/null 2>&1
    attack "$@" -n "$n" -c 1
    callgrind_control -d "$pid" >/dev/null 2>&1
    local dump ir
    dump=$(ls -t "$work/$name.out".* | head -1)
    ir=$(grep -m1 -E '^(summary|totals):' "$dump" | awk '{print $2}')
    printf '%-8s %-22s %12d instructions/request\n' "$name" "$label" $((ir / n))
}

for spec in "$@"; do
    name=${spec%%=*} python=${spec#*=}
    http=$(free_port) grpc=$(free_port)
    valgrind --tool=callgrind --callgrind-out-file="$work/$name.out" \
        "$python" -m inferwire serve benchmarks/models/noop.py:Echo --model-name noop \
        --host 127.0.0.1 --http-port "$http" --grpc-port "$grpc" --supervisor off \
        --log-level warning >"$work/$name.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do
        curl -sf "http://127.0.0.1:$http/v2/health/ready" >/dev/null && break
        kill -0 "$pid" 2>/dev/null || { cat "$work/$name.log" >&2; exit 1; }
        sleep 1
    done
    url=http://127.0.0.1:$http
    count "$name" "$pid" "v2 rest json 1" 2000 "$url/v2/models/noop/infer" -D "$work/v2-1.json"
    count "$name" "$pid" "v2 rest json 100000" 50 "$url/v2/models/noop/infer" -D "$work/v2-100000.json"
    count "$name" "$pid" "v2 grpc typed 1" 2000 "127.0.0.1:$grpc" \
        --call inference.GRPCInferenceService/ModelInfer --v2 typed --model noop -D "$work/v2-1.json"
    count "$name" "$pid" "seldon rest ndarray 1" 2000 "$url/api/v1.0/predictions" -D "$work/seldon-1.json"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
done
