# Shared by the project's scripts: the virtualenv, the Cargo target dir, the tool folder.
# Sourced, not run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
VENV="${INFERWIRE_VENV:-$ROOT/.venv}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/inferwire"
# CI starts from a fresh clone each time: keep compiled crates between its runs.
if [[ "${CI:-}" == "true" && -z "${CARGO_TARGET_DIR:-}" ]]; then
    export CARGO_TARGET_DIR="$CACHE/target"
fi
# CI builds each commit once: incremental data (gigabytes) would only slow it and fill the disk.
if [[ "${CI:-}" == "true" ]]; then
    export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
fi
export PATH="$ROOT/.tools/bin:$HOME/.cargo/bin:/usr/local/go/bin:$PATH"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# Creates the virtualenv (once) and installs the given pip requirements into it.
ensure_venv() {
    if [[ ! -x "$VENV/bin/python" ]]; then
        log "creating virtualenv $VENV"
        "$PYTHON" -m venv "$VENV"
        "$VENV/bin/python" -m pip install -q --upgrade pip
    fi
    if (($#)); then
        log "installing Python packages: $*"
        "$VENV/bin/python" -m pip install -q "$@"
    fi
}

# PyTorch for the PyTorch example's test: about 6 GB installed (PyPI's Linux wheels carry
# CUDA libraries) and 3 GB of downloads meanwhile. On a disk with less room than that it
# is left out, loudly, and the test says so: a full disk would fail every other test too.
TORCH_DISK_GB=10
install_torch() {
    if "$VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
        return 0
    fi
    local free_gb
    free_gb=$(df -Pk "$VENV" | awk 'NR == 2 { print int($4 / 1048576) }')
    if ((free_gb < TORCH_DISK_GB)); then
        log "SKIPPED PyTorch: ${free_gb} GB free where $VENV is, ${TORCH_DISK_GB} GB needed"
        export INFERWIRE_TEST_TORCH="no-disk: ${free_gb} GB free, ${TORCH_DISK_GB} GB needed"
        return 0
    fi
    log "installing PyTorch for the PyTorch example's test (about 6 GB)"
    # No wheel cache: it would keep another 3 GB for a later install that seldom comes.
    "$VENV/bin/python" -m pip install -q --no-cache-dir -r "$ROOT/requirements-torch.txt"
}

# Builds the Rust extension into the virtualenv (editable: python/ is used in place),
# with the load generator (`inferwire bench`, the `bench` feature) the tests and
# benchmarks run; a wheel built without the feature leaves it out.
# Cargo's crate lines become a progress count; maturin's banners and pip's notes about
# optional extras (which read like warnings) are left out; errors and warnings pass.
build_extension() {
    local profile=("$@")
    local what="dev profile"
    if [[ " ${profile[*]} " == *" --release "* ]]; then
        # The figure measured by scripts/first_run.py, not a constant.
        what="release: $(python3 "$ROOT/scripts/first_run.py" estimate 2>/dev/null || echo "several minutes the first time, seconds after")"
    fi
    log "building the inferwire extension ($what)"
    (cd "$ROOT" && "$VENV/bin/maturin" develop "${profile[@]}" --features bench --pip-path "$VENV/bin/pip" 2>&1 \
        | build_progress) || { echo "maturin develop failed" >&2; exit 1; }
    "$VENV/bin/python" -c "import inferwire._core" \
        || { echo "the extension did not build" >&2; exit 1; }
    if [[ " ${profile[*]} " == *" --release "* ]]; then
        echo release >"$VENV/.inferwire-profile"
    else
        rm -f "$VENV/.inferwire-profile"
    fi
}

# The extension again, in the profile the virtualenv's has: the test command keeps the
# quick start's release build (its benchmarks measure release code), else builds the dev
# profile, which compiles faster.
rebuild_extension() {
    if [[ "$(cat "$VENV/.inferwire-profile" 2>/dev/null)" == release ]]; then
        build_extension --release
    else
        build_extension
    fi
}

# Reads cargo/maturin output: counts built crates on one updating line (a terminal) or
# a line every 50 (a log), and passes through anything that is not routine.
build_progress() {
    local n=0 line tty=0
    [[ -t 2 ]] && tty=1
    while IFS= read -r line; do
        case "$line" in
            *"   Compiling "*|*"    Checking "*)
                n=$((n + 1))
                if ((tty)); then
                    printf '\r\033[K    %d crates built (%s)' "$n" "${line#*ing }" >&2
                elif ((n % 50 == 0)); then
                    printf '    %d crates built\n' "$n" >&2
                fi ;;
            *"    Finished "*)
                ((tty)) && printf '\r\033[K' >&2
                printf '    %d crates built; %s\n' "$n" "${line#*Finished }" >&2 ;;
            *"  Downloaded "*|"Ignoring "*|"Requirement already satisfied"*|"Looking in "*|\
            "Processing "*|"Installing collected"*|"Successfully installed"*|"Obtaining "*|\
            "  Attempting uninstall"*|"    Found existing"*|"    Uninstalling"*|\
            "      Successfully uninstalled"*|*"Blocking waiting for file lock"*|\
            "🍹"*|"🐍"*|"🔗"*|"📡"*|"📦"*|"💻"*|"🛠"*|"✏️"*|"⚠️  Warning: "*"TOML"*|"") ;;
            *) ((tty)) && printf '\r\033[K' >&2; printf '%s\n' "$line" >&2 ;;
        esac
    done
    return 0
}
