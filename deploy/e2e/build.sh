#!/usr/bin/env bash
# Installs Debian's packages the e2e scripts use, and builds the cluster's programs from
# their Go modules into $CLUSTER_DIR/bin: Kubernetes (API server, controller manager,
# scheduler, kubelet, kube-proxy, kubectl) from k8s.io/kubernetes, Helm, KServe's
# controller and metrics-server. Each step is skipped when its binary is there. About 20
# minutes on 2 cores the first time.
#
#     bash deploy/e2e/build.sh [debs|k8s|helm|kserve|metrics-server|all]     (default all)
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
what="${1:-all}"

k8s() {
    local have
    have="$("$BIN/kubelet" --version 2>/dev/null || true)"
    [ "$have" = "Kubernetes $K8S_VERSION" ] && return
    log "downloading k8s.io/kubernetes@$K8S_VERSION"
    local mod src="$CLUSTER_DIR/src/kubernetes-$K8S_VERSION"
    mod="$(cd /tmp && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')"
    # The module's zip leaves out staging/ (each staging folder is a module of its own),
    # so its `replace ... => ./staging/src/k8s.io/X` cannot resolve. The same code is
    # published as k8s.io/X v0.MINOR.PATCH: point the requirements there instead.
    if [ ! -f "$src/.ready" ]; then
        rm -rf "$src" && mkdir -p "$(dirname "$src")"
        cp -r "$mod" "$src" && chmod -R u+w "$src"
        rm -f "$src/go.work" "$src/go.work.sum"
        local staged=() m
        mapfile -t staged < <(sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$src/go.mod")
        local edits=()
        for m in "${staged[@]}"; do
            edits+=(-dropreplace="$m")
            # Only those required (the samples are neither required nor published).
            if grep -qE "^\s+$m v0\.0\.0" "$src/go.mod"; then
                edits+=(-require="$m@v0.${K8S_VERSION#v1.}")
            fi
        done
        (cd "$src" && go mod edit "${edits[@]}" && GOFLAGS=-mod=mod go mod download)
        touch "$src/.ready"
    fi
    local minor="${K8S_VERSION#v1.}"
    minor="${minor%%.*}"
    local v="k8s.io/component-base/version"
    local ldflags="-s -w -X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor"
    ldflags+=" -X $v.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
    log "building Kubernetes $K8S_VERSION (kube-apiserver, controller-manager, scheduler, kubelet, kube-proxy, kubectl)"
    (cd "$src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$BIN/" \
        ./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/kube-scheduler \
        ./cmd/kubelet ./cmd/kube-proxy ./cmd/kubectl)
}

# Debian's packages: containers (podman, buildah, runc, mmdebstrap for the base image)
# and the node (etcd, containerd, the CNI plugins, iptables).
DEBS=(podman buildah runc mmdebstrap uidmap etcd-server containerd containernetworking-plugins
    iptables conntrack socat curl openssl)
debs() {
    local missing=() p
    for p in "${DEBS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return
    log "installing Debian packages: ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# A Go module's main package into $BIN/NAME, built in the module's own folder (its go.mod
# and go.sum decide every dependency).
gomod() { # name module@version package
    local name="$1" module="$2" pkg="$3" dir
    [ -x "$BIN/$name" ] && [ "$(cat "$BIN/.$name.version" 2>/dev/null)" = "$module" ] && return
    log "building $name from $module"
    dir="$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$module" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')"
    [ -n "$dir" ] || { echo "go mod download $module failed" >&2; return 1; }
    (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$BIN/$name" "$pkg")
    echo "$module" >"$BIN/.$name.version"
}

helm() { gomod helm "helm.sh/helm/v3@$HELM_VERSION" ./cmd/helm; }
# The resource metrics API the HPA reads (run beside the cluster, registered as an
# aggregated API).
metrics_server() { gomod metrics-server "sigs.k8s.io/metrics-server@$METRICS_SERVER_VERSION" ./cmd/metrics-server; }
# KServe's controller (the manager), run beside the cluster with its kubeconfig.
kserve() { gomod kserve-manager "github.com/kserve/kserve@$KSERVE_VERSION" ./cmd/manager; }

case "$what" in
    debs) debs ;;
    k8s) k8s ;;
    helm) helm ;;
    kserve) kserve ;;
    metrics-server) metrics_server ;;
    all) debs; k8s; helm; kserve; metrics_server ;;
    *) echo "unknown: $what" >&2; exit 2 ;;
esac
