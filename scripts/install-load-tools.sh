#!/usr/bin/env bash
# Builds the load tools of Seldon's benchmark notebook from the Go module proxy into
# .tools/bin (ignored by git), with `go install MODULE@VERSION`:
#
#   vegeta  github.com/tsenart/vegeta/v12@v12.12.0
#   ghz     github.com/bojand/ghz/cmd/ghz@v0.61.0
#
# ghz stays at v0.61.0: the notebook's command line passes --qps=0, and v0.61.0 is the
# last release the proxy serves that has --qps (v0.70.0 renamed it --rps; v0.120.0 fails
# with "unknown long flag '--qps'"). GHZ_VERSION / VEGETA_VERSION override the versions;
# always give explicit ones (the proxy here answers ghz@latest with an older v0.93.0).
#
# Idempotent: a tool whose binary exists and whose stamp file names the wanted
# module@version is not rebuilt. Go's module and build caches live outside the repository
# (${XDG_CACHE_HOME:-$HOME/.cache}/inferwire/go), so a fresh clone on the same machine
# downloads and compiles nothing again (it only relinks, in about 3 s). First build, from
# empty caches: about a minute. Needs no terminal (CI=true, no stdin).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${LOAD_TOOLS_BIN:-$ROOT/.tools/bin}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/inferwire/go"
VEGETA_VERSION="${VEGETA_VERSION:-v12.12.0}"
GHZ_VERSION="${GHZ_VERSION:-v0.61.0}"

export GOPATH="$CACHE/path" GOMODCACHE="$CACHE/mod" GOCACHE="$CACHE/build"
# Builds with the installed Go, never a downloaded toolchain; -modcacherw keeps the cache
# deletable; CGO off gives static binaries and needs no C compiler.
export GOTOOLCHAIN=local GOFLAGS=-modcacherw CGO_ENABLED=0
export PATH="/usr/local/go/bin:$PATH"

die() { echo "install-load-tools: $*" >&2; exit 1; }

command -v go >/dev/null || die "Go is needed (https://go.dev/dl/; expected in PATH or /usr/local/go/bin)"
mkdir -p "$BIN"

# One installer at a time per checkout (parallel CI jobs on one machine).
if command -v flock >/dev/null; then
    exec 9>"$BIN/.install.lock"
    flock 9
fi

# install NAME MODULE VERSION LDFLAGS_VERSION_VAR
install() {
    local name="$1" module="$2" version="$3" version_var="$4"
    local stamp="$BIN/.$name.stamp" want="$module@$version"
    if [[ -x "$BIN/$name" && "$(cat "$stamp" 2>/dev/null)" == "$want" ]]; then
        echo "$name: $want already installed" >&2
        return
    fi
    echo "$name: building $want ($(go env GOVERSION))" >&2
    local start=$SECONDS
    rm -f "$stamp"
    # Go names every module it downloads on stderr: routine lines, left out.
    GOBIN="$BIN" go install -trimpath -ldflags "-s -w -X main.$version_var=$version" "$want" \
        2> >(grep -v '^go: downloading ' >&2)
    "$BIN/$name" --version >/dev/null 2>&1 || die "$BIN/$name --version failed"
    echo "$want" >"$stamp"
    echo "$name: built in $((SECONDS - start)) s" >&2
}

install vegeta github.com/tsenart/vegeta/v12 "$VEGETA_VERSION" Version
install ghz github.com/bojand/ghz/cmd/ghz "$GHZ_VERSION" version
