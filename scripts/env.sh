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

# Builds the Rust extension into the virtualenv (editable: python/ is used in place).
build_extension() {
    local profile=("$@")
    log "building the inferwire extension ${profile[*]:-(dev profile)}"
    (cd "$ROOT" && "$VENV/bin/maturin" develop -q "${profile[@]}" \
        --pip-path "$VENV/bin/pip" 2>&1 | grep -v '^📦\|^🐍\|^🔗\|^⚠️\|^💻\|^🛠\|^✏️' || true)
    "$VENV/bin/python" -c "import inferwire._core" \
        || { echo "the extension did not build" >&2; exit 1; }
}
