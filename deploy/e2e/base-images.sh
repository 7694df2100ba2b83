#!/usr/bin/env bash
# Makes, from Debian's packages and this machine's Rust toolchain, the images that a
# machine with a registry would pull, and tags them with the names deploy/docker/Dockerfile
# and the cluster use, so that the Dockerfile builds unchanged where Docker Hub and the
# rustup installer cannot be reached:
#   docker.io/library/python:3.11-slim-bookworm  Debian bookworm (minbase) with its
#                                                python3.11 and pip, as the official image
#                                                lays them out (python, pip on PATH)
#   localhost/inferwire-rust-builder             that image plus this machine's stable
#                                                Rust toolchain: the build stage's base
#   localhost/pause:3.10                         Kubernetes' pause program, built from
#                                                k8s.io/kubernetes' build/pause/linux
# Images already present are kept; FORCE=1 remakes them.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
PYTHON_IMAGE=docker.io/library/python:3.11-slim-bookworm
BUILDER_IMAGE=localhost/inferwire-rust-builder
PAUSE_IMAGE=localhost/pause:3.10
have() { [ -z "${FORCE:-}" ] && podman image exists "$1"; }

if ! have "$PYTHON_IMAGE"; then
    log "making $PYTHON_IMAGE from Debian bookworm"
    # The local CA bundle goes in too: this machine's egress to the package registries
    # is through a proxy with its own certificate authority.
    mmdebstrap --variant=minbase --include=python3,python3-pip,ca-certificates,netbase,tzdata \
        --customize-hook='cp /usr/local/share/ca-certificates/*.crt "$1/usr/local/share/ca-certificates/" 2>/dev/null || true' \
        --customize-hook='chroot "$1" update-ca-certificates' \
        --customize-hook='ln -sf /usr/bin/python3 "$1/usr/local/bin/python"; ln -sf /usr/bin/python3 "$1/usr/local/bin/python3"; ln -sf /usr/bin/pip3 "$1/usr/local/bin/pip"' \
        --customize-hook='rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED' \
        --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
        bookworm "$CLUSTER_DIR/python-rootfs.tar" http://deb.debian.org/debian 2>&1 | tail -3
    podman import \
        --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' \
        "$CLUSTER_DIR/python-rootfs.tar" "$PYTHON_IMAGE" >/dev/null
    rm -f "$CLUSTER_DIR/python-rootfs.tar"
fi

if ! have "$BUILDER_IMAGE"; then
    log "making $BUILDER_IMAGE (this machine's Rust toolchain on $PYTHON_IMAGE)"
    toolchain="$(rustc --print sysroot)"
    ctr="$(buildah from "$PYTHON_IMAGE")"
    buildah copy "$ctr" "$toolchain" /opt/rust >/dev/null
    buildah config --env PATH=/opt/rust/bin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --env RUSTUP_TOOLCHAIN= "$ctr"
    buildah commit --quiet --rm "$ctr" "$BUILDER_IMAGE" >/dev/null
fi

if ! have "$PAUSE_IMAGE"; then
    log "making $PAUSE_IMAGE"
    pause_c="$CLUSTER_DIR/src/kubernetes-$K8S_VERSION/build/pause/linux/pause.c"
    [ -f "$pause_c" ] || bash "$E2E/build.sh" k8s
    gcc -Os -static -DVERSION="3.10" -o "$CLUSTER_DIR/pause" "$pause_c"
    strip "$CLUSTER_DIR/pause"
    ctr="$(buildah from scratch)"
    buildah copy "$ctr" "$CLUSTER_DIR/pause" /pause >/dev/null
    buildah config --entrypoint '["/pause"]' --user 65535:65535 "$ctr"
    buildah commit --quiet --rm "$ctr" "$PAUSE_IMAGE" >/dev/null
fi
podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "python|rust-builder|pause" >&2
