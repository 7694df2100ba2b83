"""The Seldon benchmark notebook's own vegeta and ghz command lines against a real server,
with only host:port changed and 2 s instead of 10 s (benchmarks/lib/notebook_tools.py holds
the commands; benchmarks/notebook_payloads.py writes the notebook's request files).

The cells are the notebook's: predict at 100,000 and 1 integers, predict_raw at 100,000;
ndarray, tensor and tftensor; REST (vegeta) and gRPC (ghz). Every request must succeed:
vegeta's success ratio is 1.0 with only 200s; every ghz call is OK except at most the
last one, which ghz cancels when its time is up (as in the notebook's output).

Environment:
- NOTEBOOK_TOOLS_SERVER: ``inferwire`` (default: ``python -m inferwire serve`` of this
  interpreter), ``seldon`` (the Seldon wrapper of benchmarks/seldon_wrapper/setup.sh,
  to check these tests themselves), or a command template (benchmarks/lib/servers.py).
- NOTEBOOK_TOOLS_DURATION: instead of 2s.
- CI: when set, missing load tools fail the tests instead of skipping them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).resolve().parents[2] / "benchmarks"))
from lib import notebook_tools, servers
from notebook_payloads import ENCODINGS

DURATION = os.environ.get("NOTEBOOK_TOOLS_DURATION", "2s")
TIMEOUT = 120.0
CELLS = [
    pytest.param("NoopPredict", 100_000, id="predict-100000"),
    pytest.param("NoopPredictRaw", 100_000, id="predict_raw-100000"),
    pytest.param("NoopPredict", 1, id="predict-1"),
]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def server_spec() -> servers.ServerSpec:
    choice = os.environ.get("NOTEBOOK_TOOLS_SERVER", "inferwire")
    if choice == "inferwire":
        return servers.inferwire_spec([sys.executable, "-m", "inferwire"])
    if choice == "seldon":
        return servers.seldon_spec()
    return servers.ServerSpec("custom", choice)


def notebook_url(server: servers.ServerProcess) -> str:
    """The notebook's URL with only host:port changed. The Seldon wrapper on its own (no
    Istio in front) serves the path without the ingress prefix."""
    if os.environ.get("NOTEBOOK_TOOLS_SERVER", "inferwire") == "inferwire":
        return f"{server.url}/seldon/seldon/seldon-model/api/v1.0/predictions"
    return server.predictions_url


@pytest.fixture(scope="module")
def load_tools() -> None:
    missing = notebook_tools.missing_tools()
    if not missing:
        return
    reason = f"{', '.join(missing)} missing: run scripts/install-load-tools.sh"
    if in_ci():
        pytest.fail(f"{reason} (CI is set: the notebook's tools are required)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def notebook_server(load_tools: None) -> Iterator[Callable[[str], servers.ServerProcess]]:
    """Starts one server per model on first use, on free ports of 127.0.0.1, ready once
    /health/ping answers 200; each gets SIGTERM when the module is done."""
    spec = server_spec()
    started: dict[str, servers.ServerProcess] = {}

    def get(model: str) -> servers.ServerProcess:
        if model not in started:
            started[model] = servers.ServerProcess(spec, model)
        return started[model]

    yield get
    for proc in started.values():
        proc.stop()


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize(("model", "size"), CELLS)
def test_vegeta_notebook_command(
    model: str,
    size: int,
    encoding: str,
    notebook_server: Callable[[str], servers.ServerProcess],
    tmp_path: Path,
) -> None:
    server = notebook_server(model)
    notebook_tools.prepare(tmp_path, size, notebook_url(server))
    run = notebook_tools.run_vegeta(tmp_path, encoding, DURATION, TIMEOUT)
    assert run.requests > 0, run.command
    assert run.raw["success"] == 1.0, (run.command, run.raw)
    assert run.status_codes == {"200": run.requests}, run.raw
    assert run.errors == []


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize(("model", "size"), CELLS)
def test_ghz_notebook_command(
    model: str,
    size: int,
    encoding: str,
    notebook_server: Callable[[str], servers.ServerProcess],
    tmp_path: Path,
) -> None:
    server = notebook_server(model)
    notebook_tools.prepare(tmp_path, size, notebook_url(server))
    run = notebook_tools.run_ghz(tmp_path, encoding, DURATION, server.grpc_target, TIMEOUT)
    assert run.ok > 0, (run.command, run.status_codes, run.errors)
    others = {code: n for code, n in run.status_codes.items() if code != "OK"}
    allowed = ({}, *({code: 1} for code in notebook_tools.END_OF_RUN_CODES))
    assert others in allowed, (run.command, run.status_codes, run.errors)
    assert notebook_tools.unexpected_ghz_failures(run) == []
