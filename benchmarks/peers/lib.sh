# Shared by the peers' install scripts (source it): finding an interpreter for a peer's
# virtualenv.

# Prints a Python 3.10-3.12 (PYTHON311, python3.11, then pyenv's 3.11, 3.12, 3.10), or
# exits naming the peer ($1) that needs it.
find_python() {
    # pyenv's shim answers `command -v` even when a version is not selected: run each.
    local candidates=("${PYTHON311:-}" python3.11)
    if command -v pyenv >/dev/null; then
        candidates+=("$(pyenv root)"/versions/3.11.*/bin/python3.11)
        candidates+=("$(pyenv root)"/versions/3.12.*/bin/python3.12)
        candidates+=("$(pyenv root)"/versions/3.10.*/bin/python3.10)
    fi
    local c
    for c in "${candidates[@]}"; do
        if [[ -n "$c" ]] && "$c" -c 'import sys; assert (3, 10) <= sys.version_info[:2] <= (3, 12)' 2>/dev/null; then
            echo "$c"
            return
        fi
    done
    echo "Python 3.11 (or 3.10/3.12) is needed for $1 (PYTHON311=...)" >&2
    exit 1
}
