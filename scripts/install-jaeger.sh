#!/usr/bin/env bash
# Jaeger v1.76.0 (the collector-based `jaeger` binary: OTLP receiver + query API), built
# from Go modules into .tools/bin for the trace tests in tests/observability/. Pinned: the
# tests rely on its query API's JSON shape. Jaeger's go.mod has replace directives, so
# `go install pkg@version` refuses it; a throwaway module that takes it as a tool builds it.
# Takes minutes (a full Go build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="v1.76.0"
bin="$root/.tools/bin"
mkdir -p "$bin"
if [ -x "$bin/jaeger" ]; then
    echo "jaeger already in $bin (delete it to rebuild)"
    exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
go mod init inferwire.local/jaeger-tool >/dev/null 2>&1
go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$version"
go build -trimpath -o "$bin/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger
echo "built $bin/jaeger"
