#!/usr/bin/env bash
# Builds the load tools the tests and benchmarks use (vegeta v12.12.0, ghz v0.61.0) from
# the Go module proxy into .tools/bin (ignored by git). Versions and every dependency are
# pinned in tools/loadtools/go.{mod,sum}. ghz stays at v0.61.0, the last release whose
# flags include the notebook's --qps (v0.70.0 renamed it --rps). Idempotent: nothing is
# rebuilt while go.sum is unchanged. Go's caches live outside the repository, so a fresh clone on the same
# machine (CI) does not download or compile again.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.tools/bin"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/inferwire/go"
export GOPATH="$CACHE/path" GOMODCACHE="$CACHE/mod" GOCACHE="$CACHE/build"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly
export PATH="/usr/local/go/bin:$PATH"

stamp="$BIN/.loadtools.sum"
want="$(sha256sum "$ROOT/tools/loadtools/go.sum" | cut -d' ' -f1)"
if [[ -x "$BIN/vegeta" && -x "$BIN/ghz" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
    exit 0
fi
mkdir -p "$BIN"
echo "building vegeta and ghz (pinned in tools/loadtools/go.mod)" >&2
cd "$ROOT/tools/loadtools"
go build -trimpath -o "$BIN/" github.com/tsenart/vegeta/v12 github.com/bojand/ghz/cmd/ghz
echo "$want" >"$stamp"
