#!/usr/bin/env bash
# Builds deploy/docker's image with podman (buildah underneath) and checks it as a user
# would (check_image.py): non-root, serves a mounted model and a baked one over REST,
# gRPC and V2, answers the probes, drains on SIGTERM, reads settings from the
# environment, carries no build tools; prints its size.
#
#     bash deploy/e2e/image.sh [--no-check]
#
# Where Docker Hub and the rustup installer are reachable, `docker build -f
# deploy/docker/Dockerfile .` builds the same image; here base-images.sh makes the base
# from Debian's packages and the build stage's base from this machine's Rust, named with
# `--from` (the Dockerfile skips rustup when cargo is already there).
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)"
IMAGE="localhost/inferwire:$VERSION"
BAKED="localhost/inferwire-repository:$VERSION"
bash "$E2E/build.sh" debs
bash "$E2E/base-images.sh"
# Cargo's downloads are kept between builds (a build-time volume, not in the image).
mkdir -p "$CLUSTER_DIR/cargo-registry"
build() {
    podman build --network host --from localhost/inferwire-rust-builder \
        -v "$CLUSTER_DIR/cargo-registry:/root/.cargo/registry" \
        -f "$ROOT/deploy/docker/Dockerfile" "$@" "$ROOT"
}
log "building $IMAGE"
build -t "$IMAGE" >"$LOGS/image-build.log" 2>&1 || { tail -40 "$LOGS/image-build.log"; exit 1; }
log "building $BAKED (examples/repository/models baked in)"
build --build-arg MODEL_DIR=examples/repository/models -t "$BAKED" \
    >>"$LOGS/image-build.log" 2>&1 || { tail -40 "$LOGS/image-build.log"; exit 1; }
# The model deploy/seldon's SeldonDeployment names (a Seldon-style class baked in).
SELDON="localhost/iris-inferwire:$VERSION"
log "building $SELDON (examples/seldon_model baked in)"
build --build-arg MODEL_DIR=examples/seldon_model -t "$SELDON" \
    >>"$LOGS/image-build.log" 2>&1 || { tail -40 "$LOGS/image-build.log"; exit 1; }
# MLServer's drop-in (deploy/docker/Dockerfile.mlserver): the image above with MLServer's
# libraries, for KServe's kserve-mlserver runtime with only its image changed.
MLSERVER="localhost/inferwire-mlserver:$VERSION"
log "building $MLSERVER (Dockerfile.mlserver on $IMAGE)"
podman build --network host --build-arg "BASE=$IMAGE" -t "$MLSERVER" \
    -f "$ROOT/deploy/docker/Dockerfile.mlserver" "$ROOT/deploy/docker" \
    >>"$LOGS/image-build.log" 2>&1 || { tail -40 "$LOGS/image-build.log"; exit 1; }
podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep inferwire >&2
if [ "${1:-}" != "--no-check" ]; then
    log "checking the image"
    "$ROOT/.venv/bin/python" "$E2E/check_image.py" --image "$IMAGE" --baked "$BAKED"
fi
