# Shared by deploy/e2e's scripts: where the cluster lives and the versions it is built from.
# Everything (binaries, state, logs, images) stays under one folder, outside the repo.
set -euo pipefail
E2E="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$E2E/../.." && pwd)"
CLUSTER_DIR="${INFERWIRE_CLUSTER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/inferwire/cluster}"
BIN="$CLUSTER_DIR/bin"
STATE="$CLUSTER_DIR/state"
LOGS="$CLUSTER_DIR/logs"
# Pinned versions; every one builds from the Go module proxy.
K8S_VERSION=v1.34.4
HELM_VERSION=v3.19.5
KSERVE_VERSION=v0.15.2
METRICS_SERVER_VERSION=v0.8.0
export PATH="$BIN:$PATH"
mkdir -p "$BIN" "$STATE" "$LOGS"
log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
