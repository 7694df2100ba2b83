# The Rust and the Python tests, each runnable on its own. scripts/test.sh (what CI runs)
# installs what the tests need, runs the lints and then both suites; run it once first
# (it creates .venv/, the load tools in .tools/, chromium and nginx).
#
#   make test-rust                  unit and integration tests of the Rust crates (no Python)
#   make test-python                builds the extension into .venv/ (in its profile), then the end-to-end suite
#   make test-python PYTEST_ARGS="tests/server/v2/test_v2.py -x"   a part of it
#   make test                       both

PYTEST_ARGS ?=

.PHONY: test test-rust test-python

test: test-rust test-python

# inferwire-py is glue with no tests of its own: the Python suite covers it.
test-rust:
	cargo test --workspace --exclude inferwire-py --locked

test-python:
	bash -c 'source scripts/env.sh && rebuild_extension && cd "$$ROOT" && "$$VENV/bin/python" -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)'
