# Shared by the peers' install scripts (source it): their virtualenvs (from
# scripts/pinned-venv.sh), generated gRPC code, and the versions they print.

# find_python and pinned_venv (the interpreter, and the pins installed once).
# shellcheck source=../../scripts/pinned-venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/pinned-venv.sh"

# Generates $1/gen/$3_pb2.py and $3_pb2_grpc.py from $2/$3.proto with the virtualenv's
# grpcio-tools, when the proto changed (a copy of it is kept beside them to tell).
generate_grpc() {
    local venv="$1" dir="$2" stem="$3"
    local gen="$venv/gen"
    if ! cmp -s "$dir/$stem.proto" "$gen/$stem.proto" ||
        [[ ! -f "$gen/${stem}_pb2.py" || ! -f "$gen/${stem}_pb2_grpc.py" ]]; then
        local tmp
        tmp="$(mktemp -d "$venv/gen.XXXXXX")"
        "$venv/bin/python" -m grpc_tools.protoc -I "$dir" --python_out="$tmp" \
            --grpc_python_out="$tmp" --pyi_out="$tmp" "$dir/$stem.proto"
        cp "$dir/$stem.proto" "$tmp/$stem.proto"
        rm -rf "$gen"
        mv "$tmp" "$gen"
    fi
    "$venv/bin/python" -c 'import sys; sys.path.insert(0, sys.argv[1]); import importlib; importlib.import_module(sys.argv[2])' "$gen" "${stem}_pb2_grpc"
}

# Prints "$2 ready: Python X, pkg version, ..." for "${PACKAGES[@]}" in virtualenv $1.
print_versions() {
    "$1/bin/python" - "$2" "$1/gen" "${PACKAGES[@]}" <<'PY'
import platform
import sys
from importlib.metadata import version

label, gen, *packages = sys.argv[1:]
names = [p.split("==")[0] for p in packages]
print(
    f"{label} ready: Python {platform.python_version()}, "
    + ", ".join(f"{name} {version(name)}" for name in names)
    + f"; gRPC modules in {gen}"
)
PY
}
