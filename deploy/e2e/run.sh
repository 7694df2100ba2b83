#!/usr/bin/env bash
# End to end on a real single-node cluster: builds what is missing (Kubernetes, Helm,
# KServe's controller, the image), starts the cluster, loads the images into the node,
# starts KServe's controller, and runs tests/deploy/test_cluster.py against it. The cluster
# stays up afterwards (deploy/e2e/cluster.sh down stops it). Needs root (containerd,
# the kubelet, iptables). The first run builds for about 40 minutes on 2 cores.
#
#     bash deploy/e2e/run.sh [pytest args...]
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)"
bash "$E2E/build.sh" all
bash "$E2E/image.sh"
bash "$E2E/cluster.sh" up
bash "$E2E/cluster.sh" load "localhost/inferwire:$VERSION" "localhost/inferwire-repository:$VERSION" \
    "localhost/iris-inferwire:$VERSION" "localhost/inferwire-mlserver:$VERSION"
"$ROOT/.venv/bin/python" "$E2E/kserve.py" up
cd "$ROOT"
INFERWIRE_CLUSTER_DIR="$CLUSTER_DIR" .venv/bin/python -m pytest tests/deploy/test_cluster.py -v "$@"
