#!/usr/bin/env bash
# A single-node Kubernetes cluster on this machine, from the binaries build.sh made and
# Debian's etcd, containerd, runc and CNI plugins. Its state, logs and certificates live
# under $CLUSTER_DIR (default ~/.cache/inferwire/cluster); nothing outside it is written
# but the kernel's network state (a bridge, iptables rules), which `down` removes.
#
#     bash deploy/e2e/cluster.sh up        start it (building what is missing) and wait
#                                          for the node to be Ready
#     bash deploy/e2e/cluster.sh down      stop everything and remove pods' containers
#     bash deploy/e2e/cluster.sh status    what runs, and the node
#     bash deploy/e2e/cluster.sh load IMG  copy a podman image into the node's containerd
#     bash deploy/e2e/cluster.sh purge     down, then remove the state (not the binaries)
#
# Then: export KUBECONFIG=$CLUSTER_DIR/state/admin.kubeconfig (printed by `up`).
#
# A test cluster, not a production one: the control plane's components share one admin
# certificate, the kubelet allows any authenticated caller, and there is no DNS add-on
# (pods use the host's resolver; Services are reached by ClusterIP). The API server
# (6443) and the kubelet (10250) listen on this machine's address, etcd and the rest on
# 127.0.0.1: run it where that address is not reachable from untrusted networks.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
PKI="$STATE/pki"
PIDS="$STATE/pids"
CONTAINERD_SOCK="$STATE/containerd/containerd.sock"
KUBECONFIG_FILE="$STATE/admin.kubeconfig"
NODE="$(hostname | tr '[:upper:]' '[:lower:]')"
HOST_IP="$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')"
HOST_IP="${HOST_IP:-$(hostname -I | awk '{print $1}')}"
SERVICE_CIDR=10.96.0.0/16
POD_CIDR=10.244.0.0/24
BRIDGE=iwcni0

pki() {
    [ -f "$PKI/admin.crt" ] && return
    log "making certificates ($PKI)"
    mkdir -p "$PKI" && cd "$PKI"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=inferwire-e2e-ca" \
        -keyout ca.key -out ca.crt 2>/dev/null
    cat >apiserver.ext <<EOF
subjectAltName=DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,DNS:$NODE,IP:127.0.0.1,IP:$HOST_IP,IP:${SERVICE_CIDR%.0/16}.1
EOF
    sign() { # name subject [extfile]
        openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
        openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
            ${3:+-extfile "$3"} -out "$1.crt" 2>/dev/null
        rm -f "$1.csr"
    }
    sign apiserver "/CN=kube-apiserver" apiserver.ext
    printf 'subjectAltName=DNS:%s,DNS:localhost,IP:127.0.0.1,IP:%s\n' "$NODE" "$HOST_IP" >kubelet.ext
    sign kubelet "/CN=system:node:$NODE/O=system:nodes" kubelet.ext
    sign admin "/CN=admin/O=system:masters"
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    cd - >/dev/null
}

kubeconfig() {
    [ -f "$KUBECONFIG_FILE" ] && return
    kubectl config --kubeconfig="$KUBECONFIG_FILE" set-cluster e2e --server="https://$HOST_IP:6443" \
        --certificate-authority="$PKI/ca.crt" --embed-certs >/dev/null
    kubectl config --kubeconfig="$KUBECONFIG_FILE" set-credentials admin \
        --client-certificate="$PKI/admin.crt" --client-key="$PKI/admin.key" --embed-certs >/dev/null
    kubectl config --kubeconfig="$KUBECONFIG_FILE" set-context e2e --cluster=e2e --user=admin >/dev/null
    kubectl config --kubeconfig="$KUBECONFIG_FILE" use-context e2e >/dev/null
}

running() { [ -f "$PIDS/$1" ] && kill -0 "$(cat "$PIDS/$1")" 2>/dev/null; }

start() { # name command...
    local name="$1"
    shift
    running "$name" && return
    mkdir -p "$PIDS"
    setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
    echo $! >"$PIDS/$name"
}

wait_for() { # what seconds command...
    local what="$1" seconds="$2"
    shift 2
    for _ in $(seq "$seconds"); do
        "$@" >/dev/null 2>&1 && return
        sleep 1
    done
    echo "timed out waiting for $what; logs in $LOGS" >&2
    return 1
}

network() {
    sysctl -qw net.ipv4.ip_forward=1
    sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true
    mkdir -p "$STATE/cni/net.d"
    cat >"$STATE/cni/net.d/10-inferwire-e2e.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "inferwire-e2e",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": true,
     "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$STATE/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

containerd_up() {
    mkdir -p "$STATE/containerd"
    cat >"$STATE/containerd/config.toml" <<EOF
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
[grpc]
  address = "$CONTAINERD_SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:3.10"
  # This machine refuses to lower a process's oom_score_adj (the kubelet asks -998 for
  # sandboxes): containerd keeps them no lower than its own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      BinaryName = "/usr/sbin/runc"
      SystemdCgroup = false
EOF
    start containerd containerd --config "$STATE/containerd/config.toml"
    wait_for containerd 30 ctr --address "$CONTAINERD_SOCK" version
    # The sandbox image above: without it no pod starts (containerd would pull it from
    # http://localhost). base-images.sh makes it, and keeps images already made.
    podman image exists localhost/pause:3.10 || bash "$E2E/base-images.sh"
    load localhost/pause:3.10
}

load() { # image...
    local img
    for img in "$@"; do
        log "loading $img into the node"
        podman save "$img" | ctr --address "$CONTAINERD_SOCK" -n k8s.io images import - >/dev/null
    done
}

control_plane() {
    start etcd etcd --data-dir "$STATE/etcd" --listen-client-urls http://127.0.0.1:2379 \
        --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
        --unsafe-no-fsync
    wait_for etcd 30 curl -sf http://127.0.0.1:2379/health
    start kube-apiserver kube-apiserver \
        --etcd-servers=http://127.0.0.1:2379 \
        --advertise-address="$HOST_IP" --bind-address=0.0.0.0 --secure-port=6443 \
        --service-cluster-ip-range="$SERVICE_CIDR" \
        --client-ca-file="$PKI/ca.crt" \
        --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
        --kubelet-client-certificate="$PKI/admin.crt" --kubelet-client-key="$PKI/admin.key" \
        --kubelet-certificate-authority="$PKI/ca.crt" \
        --kubelet-preferred-address-types=InternalIP \
        --service-account-key-file="$PKI/sa.pub" \
        --service-account-signing-key-file="$PKI/sa.key" \
        --service-account-issuer=https://kubernetes.default.svc.cluster.local \
        --authorization-mode=Node,RBAC \
        --enable-admission-plugins=NodeRestriction \
        --allow-privileged=true \
        --requestheader-client-ca-file="$PKI/ca.crt" \
        --requestheader-allowed-names=admin \
        --requestheader-username-headers=X-Remote-User \
        --requestheader-group-headers=X-Remote-Group \
        --requestheader-extra-headers-prefix=X-Remote-Extra- \
        --proxy-client-cert-file="$PKI/admin.crt" --proxy-client-key-file="$PKI/admin.key" \
        --enable-aggregator-routing=true
    wait_for kube-apiserver 120 kubectl --kubeconfig "$KUBECONFIG_FILE" get --raw /readyz
    start kube-controller-manager kube-controller-manager \
        --kubeconfig="$KUBECONFIG_FILE" \
        --authentication-kubeconfig="$KUBECONFIG_FILE" --authorization-kubeconfig="$KUBECONFIG_FILE" \
        --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
        --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
        --service-cluster-ip-range="$SERVICE_CIDR" --use-service-account-credentials=true \
        --bind-address=127.0.0.1 --leader-elect=false \
        --horizontal-pod-autoscaler-sync-period=10s
    start kube-scheduler kube-scheduler --kubeconfig="$KUBECONFIG_FILE" \
        --authentication-kubeconfig="$KUBECONFIG_FILE" --authorization-kubeconfig="$KUBECONFIG_FILE" \
        --bind-address=127.0.0.1 --leader-elect=false
}

node() {
    # The kubelet authenticates as the node (its own certificate, for NodeRestriction).
    local kc="$STATE/kubelet.kubeconfig"
    if [ ! -f "$kc" ]; then
        cp "$KUBECONFIG_FILE" "$kc"
        kubectl config --kubeconfig="$kc" set-credentials admin \
            --client-certificate="$PKI/kubelet.crt" --client-key="$PKI/kubelet.key" --embed-certs >/dev/null
    fi
    cat >"$STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $HOST_IP
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$PKI/ca.crt"}
authorization: {mode: AlwaysAllow}
tlsCertFile: "$PKI/kubelet.crt"
tlsPrivateKeyFile: "$PKI/kubelet.key"
cgroupDriver: cgroupfs
# This machine's cgroups are the v1 hybrid layout, with no systemd: the kubelet runs
# pods without per-QoS parent cgroups and reserves nothing.
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
containerRuntimeEndpoint: "unix://$CONTAINERD_SOCK"
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
podCIDR: "$POD_CIDR"
maxPods: 60
serializeImagePulls: false
evictionHard: {"memory.available": "200Mi", "nodefs.available": "1%", "imagefs.available": "1%"}
imageGCHighThresholdPercent: 100
EOF
    start kubelet kubelet --config="$STATE/kubelet.yaml" --kubeconfig="$kc" \
        --root-dir="$STATE/kubelet" --hostname-override="$NODE" --node-ip="$HOST_IP" \
        --cert-dir="$STATE/kubelet/pki"
    start kube-proxy kube-proxy --kubeconfig="$KUBECONFIG_FILE" --hostname-override="$NODE" \
        --proxy-mode=iptables --cluster-cidr="$POD_CIDR" --conntrack-max-per-core=0 \
        --metrics-bind-address=127.0.0.1:10249 --healthz-bind-address=127.0.0.1:10256
    wait_for "the node to be Ready" 120 \
        kubectl --kubeconfig "$KUBECONFIG_FILE" wait --for=condition=Ready "node/$NODE" --timeout=1s
}

# metrics-server (when build.sh built it), beside the cluster as the HPA's resource
# metrics API: an APIService whose Service has no selector, only this machine's address.
metrics() {
    [ -x "$BIN/metrics-server" ] || return 0
    mkdir -p "$STATE/metrics-server"
    start metrics-server metrics-server --kubeconfig="$KUBECONFIG_FILE" \
        --authentication-kubeconfig="$KUBECONFIG_FILE" --authorization-kubeconfig="$KUBECONFIG_FILE" \
        --requestheader-client-ca-file="$PKI/ca.crt" \
        --bind-address="$HOST_IP" --secure-port=4443 --cert-dir="$STATE/metrics-server" \
        --kubelet-preferred-address-types=InternalIP --kubelet-certificate-authority="$PKI/ca.crt" \
        --metric-resolution=15s --kubelet-request-timeout=5s
    kubectl --kubeconfig "$KUBECONFIG_FILE" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec:
  ports: [{name: https, port: 443, targetPort: 4443, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server-host
  namespace: kube-system
  labels: {kubernetes.io/service-name: metrics-server}
addressType: IPv4
ports: [{name: https, port: 4443, protocol: TCP}]
endpoints: [{addresses: ["$HOST_IP"], conditions: {ready: true}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  service: {name: metrics-server, namespace: kube-system, port: 443}
  group: metrics.k8s.io
  version: v1beta1
  # metrics-server's certificate is its own, made at start.
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
EOF
}

up() {
    bash "$E2E/build.sh" debs
    bash "$E2E/build.sh" k8s
    pki
    kubeconfig
    network
    containerd_up
    control_plane
    node
    metrics
    log "the cluster is up: export KUBECONFIG=$KUBECONFIG_FILE"
    kubectl --kubeconfig "$KUBECONFIG_FILE" get nodes -o wide >&2
}

down() {
    log "stopping the cluster"
    # Pods first, while containerd can still stop them.
    if running containerd; then
        local ctr=(ctr --address "$CONTAINERD_SOCK" -n k8s.io)
        for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
            "${ctr[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
        done
    fi
    local name
    for name in metrics-server kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver etcd containerd; do
        if running "$name"; then
            kill -TERM -- "-$(cat "$PIDS/$name")" 2>/dev/null || kill "$(cat "$PIDS/$name")" 2>/dev/null || true
        fi
    done
    sleep 2
    for name in metrics-server kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver etcd containerd; do
        running "$name" && kill -KILL -- "-$(cat "$PIDS/$name")" 2>/dev/null || true
        rm -f "$PIDS/$name"
    done
    pkill -f "containerd-shim-runc-v2 -namespace k8s.io" 2>/dev/null || true
    # Mounts the kubelet and containerd leave behind (pod volumes, sandboxes' /dev/shm, rootfs).
    # (`|| true`: under pipefail a grep that finds nothing would end the script.)
    { grep -oE " $STATE/[^ ]+" /proc/mounts || true; } | sort -r |
        while read -r m; do umount -l "$m" 2>/dev/null || true; done
    { grep -oE " /run/netns/cni-[^ ]+" /proc/mounts || true; } |
        while read -r m; do umount -l "$m" 2>/dev/null || true; done
    rm -f /run/netns/cni-* 2>/dev/null || true
    # kube-proxy's, the kubelet's and the CNI plugins' iptables chains: the jumps into
    # them from the built-in chains, then the chains (flushed first: they jump to each other).
    local table chain chains
    for table in nat filter mangle; do
        { iptables -t "$table" -S 2>/dev/null || true; } |
            { grep -E "^-A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) .*-j (KUBE|CNI)-" || true; } |
            sed 's/^-A/-D/' | while read -r rule; do eval iptables -t "$table" "$rule" 2>/dev/null || true; done
        chains="$({ iptables -t "$table" -S 2>/dev/null || true; } | sed -n 's/^-N \(\(KUBE\|CNI\)-[^ ]*\).*/\1/p')"
        for chain in $chains; do iptables -t "$table" -F "$chain" 2>/dev/null || true; done
        for chain in $chains; do iptables -t "$table" -X "$chain" 2>/dev/null || true; done
    done
    ip link del "$BRIDGE" 2>/dev/null || true
}

status() {
    local name
    for name in etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy metrics-server; do
        if running "$name"; then echo "$name: running (pid $(cat "$PIDS/$name"))"; else echo "$name: stopped"; fi
    done
    running kube-apiserver && kubectl --kubeconfig "$KUBECONFIG_FILE" get nodes -o wide
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    status) status ;;
    load) shift; load "$@" ;;
    purge) down; rm -rf "$STATE" ;;
    *) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
