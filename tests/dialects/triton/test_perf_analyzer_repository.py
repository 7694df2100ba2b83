"""perf_analyzer against `inferwire tritonserver` serving Triton's own Python-backend
examples: add_sub over HTTP and gRPC, and the decoupled square_int32 with `--streaming`
(each request answered by as many responses as its input says). Bounded in time; the
figures are not checked, only that perf_analyzer reads the model, measures and reports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_perf_analyzer
from triton_server import Tritonserver, repository


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tritonserver]:
    root = repository(tmp_path_factory.mktemp("pa"), "add_sub", "square_int32")
    s = Tritonserver(root)
    yield s
    s.stop()


def throughput(report: str) -> float:
    found = re.findall(r"throughput: ([\d.]+) infer/sec", report)
    assert found, report
    return float(found[-1])


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_add_sub(perf_analyzer: str, server: Tritonserver, protocol: str) -> None:
    url = server.url.removeprefix("http://") if protocol == "http" else server.grpc_target
    report = run_perf_analyzer(perf_analyzer, "-m", "add_sub", "-i", protocol, "-u", url)
    assert throughput(report) > 0


def test_a_decoupled_model_streamed(
    perf_analyzer: str, server: Tritonserver, tmp_path: Path
) -> None:
    # Each request asks for 3 responses (perf_analyzer's random data could ask millions).
    data = tmp_path / "square.json"
    data.write_text(json.dumps({"data": [{"IN": [3]}]}))
    report = run_perf_analyzer(
        perf_analyzer,
        "-m",
        "square_int32",
        "-i",
        "grpc",
        "-u",
        server.grpc_target,
        "--streaming",
        "--input-data",
        str(data),
    )
    assert throughput(report) > 0
