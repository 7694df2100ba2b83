#!/usr/bin/env bash
# Every benchmark in docs/benchmarks.md in one command: builds inferwire (release) and the
# load tools, installs each peer server in its own virtualenv (.venv-seldon, .tools/peers),
# runs each benchmark against inferwire and its peers side by side, each in one run, and
# renders docs/benchmarks.md and docs/reliability.md from the results (benchmarks/render.py:
# tables, plots, commands, versions, machine). About 65 minutes on a 2-core machine.
#
#     bash benchmarks/all.sh            # the full run; rewrites docs/benchmarks.md
#     bash benchmarks/all.sh --quick    # every benchmark briefly (about 10 minutes),
#                                       # into benchmarks/results/quick/, docs untouched
#     bash benchmarks/all.sh --only images_numpy,realtime_rows   # some of them
#
# Installs are idempotent: a second run only runs the benchmarks. A benchmark that fails
# is named at the end (exit status 1); the others still run and are rendered.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/env.sh"
cd "$ROOT"

QUICK=0
ONLY=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --only) ONLY="$2"; shift ;;
        *) echo "usage: $0 [--quick] [--only NAME,NAME...]" >&2; exit 2 ;;
    esac
    shift
done

ALL="seldon_matrix peers_seldon_matrix peer_servers torchserve_densenet torchserve_archives runtime v2_mlserver images_numpy realtime_rows generator_overhead reliability scaleout perf_analyzer streaming floor multimodel"
CHOSEN="${ONLY//,/ }"
CHOSEN="${CHOSEN:-$ALL}"
for name in $CHOSEN; do
    case " $ALL " in *" $name "*) ;; *) echo "unknown benchmark $name (one of: $ALL)" >&2; exit 2 ;; esac
done

if [ "$QUICK" = 1 ]; then
    OUT="$ROOT/benchmarks/results/quick"
    DUR=1s; SECONDS_PER_CELL=1
else
    OUT="$ROOT/benchmarks/results"
    DUR=10s; SECONDS_PER_CELL=""
fi
mkdir -p "$OUT"

log "installing: inferwire (release), load tools, peers"
# torch and torchvision: inferwire serving densenet161 beside TorchServe (about 5 GB).
ensure_venv -r requirements-test.txt -r requirements-torch.txt -r benchmarks/requirements-densenet.txt
build_extension --release
bash scripts/install-load-tools.sh
bash scripts/install-wrk.sh
bash scripts/apt-install.sh nginx
bash scripts/install-perf-analyzer.sh >/dev/null
bash benchmarks/seldon_wrapper/setup.sh
for peer in mlserver ray fastapi_images numpy_echo pytriton kserve bentoml litserve torchserve; do
    bash "benchmarks/peers/$peer/install.sh"
done

PY="$VENV/bin/python"
seconds() { if [ -n "$SECONDS_PER_CELL" ]; then echo --seconds "$SECONDS_PER_CELL"; fi; }
failed=""
for name in $CHOSEN; do
    log "benchmark: $name"
    case "$name" in
        seldon_matrix) cmd=("$PY" benchmarks/seldon_matrix.py --duration "$DUR"
            --out "$OUT/seldon_matrix.json" --markdown "$OUT/seldon_matrix.md") ;;
        peers_seldon_matrix) cmd=("$PY" benchmarks/peers/peers.py --duration "$DUR" --out "$OUT") ;;
        generator_overhead) cmd=("$PY" benchmarks/generator_overhead.py --duration "$DUR"
            --markdown "$OUT/generator_overhead.md") ;;
        reliability) cmd=("$PY" benchmarks/reliability.py --out "$OUT")
            if [ "$QUICK" = 1 ]; then cmd+=(--seconds 3 --minutes 0.5); fi ;;
        scaleout) cmd=("$PY" benchmarks/scaleout.py --out "$OUT")
            if [ "$QUICK" = 1 ]; then cmd+=(--seconds 1 --repeats 1); fi ;;
        torchserve_densenet) cmd=("$PY" benchmarks/torchserve_densenet.py --out "$OUT")
            if [ "$QUICK" = 1 ]; then cmd+=(--rounds 1 --sizes 360); fi ;;
        torchserve_archives) cmd=("$PY" benchmarks/torchserve_archives.py --out "$OUT")
            if [ "$QUICK" = 1 ]; then cmd+=(--rounds 1); fi ;;
        multimodel) cmd=("$PY" benchmarks/multimodel.py --out "$OUT")
            if [ "$QUICK" = 1 ]; then cmd+=(--models 60 --fit 6 --trees 20 --seconds 2 --rounds 1); fi ;;
        floor) cmd=(bash benchmarks/floor.sh --out "$OUT")
            if [ "$QUICK" = 1 ]; then cmd+=(--duration 1s --rounds 1); fi ;;
        streaming) cmd=("$PY" benchmarks/streaming.py --out "$OUT" $(seconds))
            if [ "$QUICK" = 1 ]; then cmd+=(--clients 1,64); fi ;;
        *) cmd=("$PY" "benchmarks/$name.py" --out "$OUT" $(seconds)) ;;
    esac
    echo "+ ${cmd[*]}" >&2
    if ! "${cmd[@]}"; then
        failed="$failed $name"
    fi
done

for page in benchmarks reliability; do
    if [ "$QUICK" = 1 ]; then
        cp "docs/$page.md" "$OUT/$page.md"
        "$PY" benchmarks/render.py --results "$OUT" --page "$OUT/$page.md"
    else
        "$PY" benchmarks/render.py --results "$OUT" --page "docs/$page.md"
    fi
done
if [ -n "$failed" ]; then
    echo "failed:$failed (their figures in the page are the previous run's)" >&2
    exit 1
fi
