#!/usr/bin/env bash
# Fuzzes every decoder (fuzz/fuzz_targets: cargo-fuzz, libFuzzer, AddressSanitizer) for a
# bounded time each, starting from the committed seed corpus (fuzz/corpus), and prints
# one line per target: executions, corpus size, crashes. A crash fails the run; its input
# is left in fuzz/artifacts/TARGET/ (make it a regression test).
#
#     bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 20 s, every target)
#
# FUZZ_SEED fixes libFuzzer's random seed (the test run uses 1, so that it tries the same
# inputs on every run and stays reproducible); unset, each run explores anew.
# Needs the nightly toolchain (rustup's); installs cargo-fuzz (pinned) into .tools.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
SECONDS_PER_TARGET="${1:-20}"
shift || true
CARGO_FUZZ_VERSION=0.13.2
TOOLS="$ROOT/.tools/cargo-fuzz"
if ! "$TOOLS/bin/cargo-fuzz" --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
    log "installing cargo-fuzz $CARGO_FUZZ_VERSION"
    cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION" --root "$TOOLS" --quiet
fi
export PATH="$TOOLS/bin:$PATH"
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzzing needs the nightly toolchain: rustup toolchain install nightly" >&2
    exit 1
fi
cd fuzz
log "building the fuzz targets (nightly, AddressSanitizer)"
cargo +nightly fuzz build -O 2>&1 | build_progress
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    mapfile -t TARGETS < <(cargo +nightly fuzz list)
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
failed=0
printf '%-12s %12s %8s %s\n' target executions corpus result
for t in "${TARGETS[@]}"; do
    mkdir -p "$WORK/$t"
    # New inputs go to the scratch folder; the committed corpus is only read.
    if cargo +nightly fuzz run -O "$t" "$WORK/$t" "corpus/$t" -- \
        -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 -rss_limit_mb=2048 \
        ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
        >"$WORK/$t.log" 2>&1; then
        result=ok
    else
        result="CRASH (see fuzz/artifacts/$t/)"
        failed=1
        tail -40 "$WORK/$t.log" >&2
    fi
    runs="$(grep -oE 'Done [0-9]+ runs' "$WORK/$t.log" | grep -oE '[0-9]+' | tail -1)"
    corpus="$(find "$WORK/$t" "corpus/$t" -type f | wc -l)"
    printf '%-12s %12s %8s %s\n' "$t" "${runs:--}" "$corpus" "$result"
done
exit "$failed"
