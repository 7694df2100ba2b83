"""Triton's perf_analyzer (the binary in the tritonclient 2.41 wheel, installed into its own
cached virtualenv by scripts/install-perf-analyzer.sh) measuring inferwire over HTTP and
gRPC with its default options, bounded in time: it must read the model's metadata and
configuration, run its measurement, read the server's statistics and report a
throughput. How its figures compare with `inferwire bench` is a benchmark
(benchmarks/perf_analyzer.py), not a test."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import Served, run_perf_analyzer


@pytest.fixture(scope="module")
def srv(serve: Any) -> Served:
    # A numeric version, as Triton's are (perf_analyzer parses them as numbers).
    return serve("tritonmodels:Sleep5ms", "--model-name", "sleep", "--model-version", "3")


def run(pa: str, *args: str) -> str:
    return run_perf_analyzer(pa, "-m", "sleep", *args)


def throughputs(report: str) -> dict[int, float]:
    found = re.findall(r"Concurrency: (\d+), throughput: ([\d.]+) infer/sec", report)
    return {int(c): float(t) for c, t in found}


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_perf_analyzer_defaults(perf_analyzer: str, srv: Served, protocol: str) -> None:
    url = f"127.0.0.1:{srv.http_port}" if protocol == "http" else srv.grpc_target
    report = run(perf_analyzer, "-u", url, "-i", protocol, "--concurrency-range", "1:2")
    got = throughputs(report)
    assert set(got) == {1, 2}, report
    # The model sleeps 5 ms: at most 200 requests/s per concurrent request.
    for c, t in got.items():
        assert 0 < t < 200 * c * 1.2, report
    # It read the server's statistics (the statistics extension) for its server-side
    # breakdown.
    assert "Server:" in report and "Successful request count" in report, report
    assert "compute infer" in report, report


def test_perf_analyzer_async_and_shared_options(perf_analyzer: str, srv: Served) -> None:
    """Asynchronous requests over gRPC with an explicit batch size of 1 and the model
    version named, as perf_analyzer is often run."""
    report = run(
        perf_analyzer, "-u", srv.grpc_target, "-i", "grpc", "--async", "-b", "1", "-x", "3"
    )
    assert throughputs(report).get(1, 0) > 0, report


def test_perf_analyzer_streaming(perf_analyzer: str, srv: Served) -> None:
    """``--streaming``: its requests on gRPC ModelStreamInfer streams (one per concurrent
    request), each answered once and marked final."""
    report = run(
        perf_analyzer, "-u", srv.grpc_target, "-i", "grpc", "--streaming",
        "--concurrency-range", "1:2",
    )  # fmt: skip
    got = throughputs(report)
    assert set(got) == {1, 2} and all(t > 0 for t in got.values()), report
    assert "Successful request count" in report, report
