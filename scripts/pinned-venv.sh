# Sourced by the scripts that keep a client or a peer server in its own pinned virtualenv
# (benchmarks/seldon_wrapper/setup.sh, scripts/seldon-client-env.sh,
# scripts/kserve-client-env.sh): finding the interpreter, and telling whether the
# virtualenv already has the pins, so a second run installs nothing.

# find_python VERSION WHAT: an interpreter of VERSION (e.g. 3.10): $PYTHON310 (the
# version without its dot), pythonVERSION, pyenv's, or /usr/bin's; else exits saying
# WHAT needs it.
find_python() {
    local var="PYTHON${1//./}" want="(${1/./, })" c
    local candidates=("${!var:-}" "python$1")
    if command -v pyenv >/dev/null; then
        # pyenv's shim answers `command -v` even when VERSION is not selected: try each.
        candidates+=("$(pyenv root)"/versions/"$1".*/bin/python"$1")
    fi
    candidates+=("/usr/bin/python$1")
    for c in "${candidates[@]}"; do
        if [[ -n "$c" ]] && "$c" -c "import sys; assert sys.version_info[:2] == $want" 2>/dev/null; then
            echo "$c"
            return
        fi
    done
    echo "Python $1 is needed for $2 (e.g. pyenv install $1; $var=...)" >&2
    exit 1
}

# pins_installed VENV IMPORTS PACKAGE...: whether VENV has every NAME==VERSION among the
# packages at that version and runs the Python statement IMPORTS.
pins_installed() {
    local venv="$1" imports="$2"
    shift 2
    [[ -x "$venv/bin/python" ]] && "$venv/bin/python" - "$imports" "$@" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version

for spec in sys.argv[2:]:
    if "==" in spec:
        name, want = spec.split("==")
        assert version(name) == want, (name, version(name), want)
exec(sys.argv[1])
PY
}
