# Sourced by the scripts that make a Python 3.10 virtualenv for seldon-core (which pins
# protobuf 3.20, compiled for CPython up to 3.10 only): benchmarks/seldon_wrapper/setup.sh
# and scripts/seldon-client-env.sh.

# find_python310 WHAT: a Python 3.10 interpreter (PYTHON310, python3.10, or pyenv's), else
# exits saying WHAT needs it.
find_python310() {
    # pyenv's shim answers `command -v` even when 3.10 is not selected: try each by running it.
    local candidates=("${PYTHON310:-}" python3.10)
    if command -v pyenv >/dev/null; then
        candidates+=("$(pyenv root)"/versions/3.10.*/bin/python3.10)
    fi
    local c
    for c in "${candidates[@]}"; do
        if [[ -n "$c" ]] && "$c" -c 'import sys; assert sys.version_info[:2] == (3, 10)' 2>/dev/null; then
            echo "$c"
            return
        fi
    done
    echo "Python 3.10 is needed for $1 (e.g. pyenv install 3.10; PYTHON310=...)" >&2
    exit 1
}
