#!/usr/bin/env bash
# The virtualenv that runs seldon-core 1.18.2's own wrapper tests (tests/vendor/
# seldon_core_tests) against inferwire, for tests/dialects/seldon/test_seldon_wrapper_suite.py:
# seldon-core with its protobuf pin, what its tests import (pytest-mock, Pillow, tenacity),
# and this checkout's inferwire (python/ on the path through a .pth, as `maturin develop`
# puts it in .venv), so that the server the tests' shim starts loads their classes with
# seldon-core's own modules beside them. At .venv-seldon-wrapper-tests
# (SELDON_WRAPPER_TESTS_VENV overrides). Prints the virtualenv's python on stdout.
#
# Why Python 3.11, where scripts/seldon-client-env.sh makes 3.10: here inferwire itself
# runs in the virtualenv, and its native module is the one built for .venv (3.11); a
# second build for 3.10 would double every build. protobuf 3.20.3 (seldon-core's pin) has
# no compiled wheel for 3.11, so pip takes its pure-Python one: the same API (what the
# server's *_grpc methods need to work with), only slower. Run scripts/test.sh (or
# build_extension) first: the native module comes from that build.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SELDON_WRAPPER_TESTS_VENV:-$ROOT/.venv-seldon-wrapper-tests}"
PACKAGES=(
    "seldon-core==1.18.2" "protobuf==3.20.3" "setuptools<81"
    "pytest==8.3.4" "pytest-mock==3.14.0" "cloudpickle==3.1.0" "Pillow==10.4.0" "tenacity==8.5.0"
    "pyyaml>=6" "pydantic>=2.7" "pydantic-settings>=2.3"
)

source "$ROOT/scripts/pinned-venv.sh"
PYTHON_VERSIONS=(3.11)
pinned_venv "$VENV" "seldon-core's wrapper tests" seldon_core.wrapper pytest_mock PIL
site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$ROOT/python" >"$site/inferwire.pth"
"$VENV/bin/python" -c "import inferwire._core" >&2 \
    || { echo "inferwire's native module did not import: build it first (scripts/test.sh)" >&2; exit 1; }
echo "$VENV/bin/python"
