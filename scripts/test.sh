#!/usr/bin/env bash
# Installs what the tests need and runs every test: Rust formatting, lints and unit and
# property tests; Python lints, types and the stub check; then the end-to-end suite,
# which starts real servers on 127.0.0.1 and drives them with httpx, grpcio, vegeta, ghz.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
START=$SECONDS

ensure_venv -r requirements-test.txt
if [[ "${INFERWIRE_TEST_TORCH:-}" == 1 ]]; then
    install_torch
fi
log "building load tools (vegeta, ghz) into .tools/bin"
bash scripts/install-load-tools.sh
log "chromium (renders the HTML reports in a test)"
bash scripts/install-chromium.sh
log "nginx (the balancer in the scale-out test)"
bash scripts/apt-install.sh nginx
log "perf_analyzer (tritonclient 2.41's binary, its own cached virtualenv; tests/dialects/triton)"
bash scripts/install-perf-analyzer.sh >/dev/null

log "cargo fmt --check"
cargo fmt --all --check
log "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings 2>&1 | build_progress
log "cargo test"
cargo test --workspace --exclude inferwire-py --locked -- --quiet 2>&1 | build_progress

if rustup run nightly rustc --version >/dev/null 2>&1; then
    log "fuzzing every decoder (${FUZZ_SECONDS:-10} s each; scripts/fuzz.sh)"
    FUZZ_SEED="${FUZZ_SEED-1}" bash scripts/fuzz.sh "${FUZZ_SECONDS:-10}"
else
    # cargo-fuzz needs nightly, which only rustup's own server has (unreachable here).
    log "SKIPPED fuzzing: no nightly toolchain (rustup toolchain install nightly)"
fi

rebuild_extension

log "ruff, mypy, stubtest"
"$VENV/bin/ruff" check python tests benchmarks examples fuzz deploy
"$VENV/bin/ruff" format --check python tests benchmarks examples fuzz deploy
"$VENV/bin/mypy"
"$VENV/bin/python" -m mypy.stubtest inferwire._core

pytest() { "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"; }
if (($#)); then
    log "pytest (end to end): $*"
    pytest "$@"
else
    # The suite spends much of its time waiting on the servers it starts, so two runs side
    # by side fill the two cores: the dialects, deploy and client tiers (about half of the
    # time, measured with --durations) beside the rest.
    # Each draws its servers' ports from a range of its own (inferwire.local's
    # INFERWIRE_LOCAL_PORTS), below the kernel's ephemeral ports; the fixed ports the docs
    # pages serve on (5000 to 9000) are in neither. The first run's report follows the
    # second's.
    log "pytest (end to end): the dialects, deploy and client tiers beside the others, in two processes"
    BESIDE="dialects or deploy or client"
    DIALECTS_LOG="$(mktemp)"
    trap 'rm -f "$DIALECTS_LOG"' EXIT
    INFERWIRE_LOCAL_PORTS=20000-25999 pytest -m "$BESIDE" >"$DIALECTS_LOG" 2>&1 &
    DIALECTS=$!
    rest=0 dialects=0
    INFERWIRE_LOCAL_PORTS=26000-31999 pytest -m "not ($BESIDE)" || rest=$?
    wait "$DIALECTS" || dialects=$?
    log "pytest -m \"$BESIDE\" (run beside the above)"
    cat "$DIALECTS_LOG"
    if ((rest || dialects)); then
        log "pytest failed: exit $rest (the others), $dialects ($BESIDE)"
        exit 1
    fi
fi
log "all tests passed in $((SECONDS - START)) s"
