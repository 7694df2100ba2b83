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

log "pytest (end to end)"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
log "all tests passed in $((SECONDS - START)) s"
