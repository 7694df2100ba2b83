#!/usr/bin/env bash
# Installs Triton's perf_analyzer, as shipped in the tritonclient 2.41.0 wheel, into its
# own small virtualenv, and prints the path of a launcher that runs it:
#
#   PA="$(bash scripts/install-perf-analyzer.sh)"; "$PA" -m MODEL -u 127.0.0.1:8000
#
# The binary needs no GPU, but it is linked against libcudart.so.12 (taken from the
# nvidia-cuda-runtime-cu12 wheel, 0.9 MB) and libb64.so.0d (Debian's libb64-0d). The
# wheels are installed with --no-deps: only the binary is used, not the Python client
# (the tests use the newer tritonclient from requirements-test.txt).
#
# Cached and idempotent: the virtualenv lives outside the checkout
# (${XDG_CACHE_HOME:-$HOME/.cache}/inferwire/perf-analyzer-2.41.0, shared by clones and
# worktrees) and a stamp names the pinned versions; a second run only checks the stamp
# and prints the path (well under a second). First run: a 13 MB download.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

TRITONCLIENT=2.41.0
CUDART=12.3.101
PA_VENV="${PERF_ANALYZER_VENV:-$CACHE/perf-analyzer-$TRITONCLIENT}"
WANT="tritonclient==$TRITONCLIENT nvidia-cuda-runtime-cu12==$CUDART"
LAUNCHER="$PA_VENV/bin/perf-analyzer"

bash "$ROOT/scripts/apt-install.sh" libb64-0d lib:libb64.so.0d >&2

mkdir -p "$(dirname "$PA_VENV")"
# One installer at a time (tests and scripts/test.sh may start it together).
if command -v flock >/dev/null; then
    exec 9>"$PA_VENV.lock"
    flock 9
fi

if [[ -x "$LAUNCHER" && "$(cat "$PA_VENV/.stamp" 2>/dev/null)" == "$WANT" ]]; then
    echo "$LAUNCHER"
    exit 0
fi
log "installing perf_analyzer ($WANT) into $PA_VENV"
rm -rf "$PA_VENV"
"$PYTHON" -m venv "$PA_VENV"
# shellcheck disable=SC2086 # $WANT is two requirement words
"$PA_VENV/bin/python" -m pip install -q --no-deps --disable-pip-version-check $WANT >&2
CUDART_DIR="$(dirname "$(find "$PA_VENV" -name 'libcudart.so.12' | head -1)")"
[[ -e "$CUDART_DIR/libcudart.so.12" ]] || { echo "libcudart.so.12 not found in $PA_VENV" >&2; exit 1; }
cat >"$LAUNCHER" <<LAUNCH
#!/bin/sh
# perf_analyzer with the CUDA runtime from its wheel (no GPU is used).
LD_LIBRARY_PATH="$CUDART_DIR\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$PA_VENV/bin/perf_analyzer" "\$@"
LAUNCH
chmod +x "$LAUNCHER"
"$LAUNCHER" --version >/dev/null 2>&1 || "$LAUNCHER" --help >/dev/null 2>&1 ||
    { echo "perf_analyzer does not start: $("$LAUNCHER" --help 2>&1 | head -3)" >&2; exit 1; }
echo "$WANT" >"$PA_VENV/.stamp"
echo "$LAUNCHER"
