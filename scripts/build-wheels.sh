#!/usr/bin/env bash
# Builds inferwire's wheel for other Linux machines into dist/ (WHEEL_DIR overrides):
# one release wheel, inferwire-VERSION-cp310-abi3-manylinux_2_28_x86_64.whl, that pip
# installs on CPython 3.10 and every later 3.x (PyO3's stable ABI: the `pyo3/abi3-py310`
# feature, given here only, so that a checkout's `maturin develop` keeps building
# _core.cpython-3XX-*.so, which Python would prefer over a fresher _core.abi3.so beside
# it) on any Linux with glibc 2.28 or newer (RHEL 8, Debian 11,
# Ubuntu 20.04 and later), with the load generator (`inferwire bench`) in it. Extra
# arguments go to `maturin build` (e.g. --target aarch64-unknown-linux-gnu).
#
# Why zig: a Rust library linked against this machine's glibc (2.36) asks for symbols of
# glibc 2.34 (pthread_create, dlsym), so it would only be manylinux_2_34. maturin links
# with zig instead (`--zig`), against glibc 2.28's symbol versions, and its compliance
# check refuses the wheel if any symbol is newer than the tag allows. zig comes from PyPI's
# `ziglang` package, pinned with maturin in scripts/wheel-tools.txt and installed into
# .tools/wheel-venv (ignored by git), or, with WHEEL_PYTHON=python, into that interpreter
# (the image's build stage, deploy/docker/Dockerfile: the image installs the very wheel
# this script makes).
#
# About 10 minutes on 2 cores from nothing (zig builds for an explicit target, so the
# crates are compiled once more beside the checkout's own release build), seconds after.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${WHEEL_DIR:-$ROOT/dist}"
mapfile -t PACKAGES < <(grep -v '^#' "$ROOT/scripts/wheel-tools.txt")

if [[ -n "${WHEEL_PYTHON:-}" ]]; then
    PYTHON="$(command -v "$WHEEL_PYTHON")"
    "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-input "${PACKAGES[@]}"
else
    source "$ROOT/scripts/pinned-venv.sh"
    pinned_venv "$ROOT/.tools/wheel-venv" "the wheel build" ziglang
    PYTHON="$ROOT/.tools/wheel-venv/bin/python"
fi

export PATH="$(dirname "$PYTHON"):$HOME/.cargo/bin:$PATH"
# maturin runs zig as `python3 -m ziglang`: the python that has it.
export CARGO_ZIGBUILD_PYTHON_PATH="$PYTHON"

mkdir -p "$OUT"
rm -f "$OUT"/inferwire-*.whl
cd "$ROOT"
# --features replaces pyproject.toml's features (it does not add to them): bench named again.
maturin build --release --locked --zig --compatibility manylinux_2_28 \
    --features bench,pyo3/abi3-py310 --interpreter "$PYTHON" --out "$OUT" "$@"
ls -l "$OUT"/inferwire-*.whl
