"""TorchServe's metrics on the metrics port of a real ``inferwire torchserve``, as
TorchServe 0.12 exports them in ``metrics_mode=prometheus``: the frontend's series (the
core's ``dialect/torchserve.rs``) and the handlers' ``context.metrics`` (the Python
side's ``torchserve/metrics.py``), with the values the requests sent make."""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import pytest
from inferwire.torchserve.dialect import TorchServeDialect
from torchserve_archives import VENDOR, archive, handler_file
from torchserve_server import TorchServe

# Counts its calls in a custom metric with a dimension of its own, times itself, and fails
# on request.
COUNTING = """
from ts.metrics.dimension import Dimension


def handle(data, context):
    if data is None:
        return None
    out = []
    for row in data:
        body = bytes(row["body"])
        if body == b"fail":
            raise ValueError("asked to fail")
        context.metrics.add_counter("CallCount", 1, dimensions=[Dimension("Route", "main")])
        context.metrics.add_time("BodyTime", 2.5)
        out.append(body)
    return out
"""

# What TorchServe's simpleclient writes: a sample, labels with a trailing comma.
SAMPLE = re.compile(r"(\w+)(?:\{(.*)\})? (\S+)\Z")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)",?')
HOST = socket.gethostname()


def scrape(server: TorchServe) -> tuple[str, dict[tuple[str, frozenset[tuple[str, str]]], float]]:
    """The page, and each sample's value by (name, labels)."""
    r = httpx.get(f"http://127.0.0.1:{server.metrics}/metrics", timeout=10)
    assert r.status_code == 200
    samples = {}
    for line in r.text.splitlines():
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        assert m, line
        labels = frozenset(LABEL.findall(m.group(2) or ""))
        samples[(m.group(1), labels)] = float(m.group(3))
    return r.text, samples


def model(name: str) -> frozenset[tuple[str, str]]:
    return frozenset({("model_name", name), ("model_version", "default"), ("hostname", HOST)})


HOST_LABELS = frozenset({("Level", "Host"), ("Hostname", HOST)})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TorchServe]:
    tmp = tmp_path_factory.mktemp("ts-metrics")
    store = tmp / "store"
    store.mkdir()
    archive(store, "echo", VENDOR / "echo" / "handler.py")
    archive(store, "counting", handler_file(tmp, "counting.py", COUNTING), version="2.0")
    pytest.importorskip("ts", reason="the counting handler imports ts.metrics")
    s = TorchServe(store, "echo.mar", "counting.mar", extra="metrics_mode=prometheus\n")
    yield s
    s.stop()


def test_the_frontend_s_series_count_the_requests_sent(server: TorchServe) -> None:
    _, before = scrape(server)
    for i in range(5):
        r = httpx.post(f"{server.url}/predictions/echo", params={"data": f"x{i}"})
        assert r.status_code == 200
    for body in (b"a", b"b", b"fail"):
        httpx.post(f"{server.url}/predictions/counting", content=body)
    assert httpx.post(f"{server.url}/predictions/nothing", content=b"x").status_code == 404
    text, after = scrape(server)

    # Named, typed, helped and written as TorchServe's page has them.
    for name, unit in [
        ("ts_inference_requests_total", "Count"),
        ("ts_inference_latency_microseconds", "Microseconds"),
        ("ts_queue_latency_microseconds", "Microseconds"),
        ("Requests2XX", "Count"),
        ("Requests4XX", "Count"),
        ("Requests5XX", "Count"),
    ]:
        assert (
            f"# HELP {name} Torchserve prometheus counter metric with unit: {unit}\n"
            f"# TYPE {name} counter\n"
        ) in text
    assert (
        f'ts_inference_requests_total{{model_name="echo",model_version="default",'
        f'hostname="{HOST}",}} 5.0\n'
    ) in text
    # Every request the model answered, failed ones too (TorchServe counts on arrival).
    assert after[("ts_inference_requests_total", model("counting"))] == 3
    # Latencies: the successful requests' (TorchServe's sendError records none).
    for name in ("ts_inference_latency_microseconds", "ts_queue_latency_microseconds"):
        assert after[(name, model("echo"))] >= 0
    latency = after[("ts_inference_latency_microseconds", model("echo"))]
    queue = after[("ts_queue_latency_microseconds", model("echo"))]
    assert 0 < queue < latency < 5 * 10**6  # five small requests: under 5 s in all

    def delta(name: str) -> float:
        return after.get((name, HOST_LABELS), 0) - before.get((name, HOST_LABELS), 0)

    # HTTP replies by class: the 7 answered, the unknown model, the handler's failure.
    assert (delta("Requests2XX"), delta("Requests4XX"), delta("Requests5XX")) == (7, 1, 1)
    # The host's CPU and memory, in TorchServe's units.
    assert 0 <= after[("CPUUtilization", HOST_LABELS)] <= 100
    assert 0 < after[("MemoryUsed", HOST_LABELS)] and 0 < after[("MemoryAvailable", HOST_LABELS)]
    # inferwire's own series follow.
    assert "inferwire_requests_total{" in text


def test_the_handlers_metrics_as_torchserve_names_them(server: TorchServe) -> None:
    for body in (b"one", b"two"):
        assert httpx.post(f"{server.url}/predictions/counting", content=body).status_code == 200
    _, before = scrape(server)
    assert httpx.post(f"{server.url}/predictions/counting", content=b"three").status_code == 200
    text, after = scrape(server)

    counted = frozenset(
        {("Route", "main"), ("ModelName", "counting"), ("Level", "Model"), ("Hostname", HOST)}
    )
    assert "# HELP CallCount Torchserve prometheus counter metric with unit: Count\n" in text
    assert (
        f'CallCount{{Route="main",ModelName="counting",Level="Model",Hostname="{HOST}",}}'
    ) in text
    assert after[("CallCount", counted)] - before[("CallCount", counted)] == 1
    model_labels = {("ModelName", "counting"), ("Level", "Model"), ("Hostname", HOST)}
    assert "# TYPE BodyTime gauge\n" in text
    assert after[("BodyTime", frozenset(model_labels))] == 2.5
    # TorchServe's default backend metrics: PredictionTime measured around the handler,
    # HandlerTime declared (BaseHandler subclasses record it).
    assert "# HELP PredictionTime Torchserve prometheus gauge metric with unit: ms\n" in text
    assert after[("PredictionTime", frozenset(model_labels))] >= 0
    echo = frozenset({("ModelName", "echo"), ("Level", "Model"), ("Hostname", HOST)})
    assert ("PredictionTime", echo) in after
    assert "# TYPE HandlerTime gauge\n" in text


@pytest.mark.parametrize(
    ("mode", "warned"),
    [("log", "metrics_mode=log"), ("legacy", "metrics_mode=legacy"), ("prometheus", None)],
)
def test_metrics_modes_other_than_prometheus_warn(
    mode: str, warned: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    config = SimpleNamespace(metrics_mode=mode, metrics=object())
    with caplog.at_level(logging.WARNING, logger="inferwire"):
        render = TorchServeDialect(config).metrics_text()  # type: ignore[arg-type]
    assert render is not None and "# TYPE PredictionTime gauge" in render()
    if warned is None:
        assert not caplog.records
    else:
        assert len(caplog.records) == 1 and caplog.records[0].getMessage().startswith(warned)
        assert "no ts_metrics.log" in caplog.text or "no metric logs" in caplog.text


def test_no_metrics_port_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    config = SimpleNamespace(metrics_mode="log", metrics=None)  # enable_metrics_api=false
    with caplog.at_level(logging.WARNING, logger="inferwire"):
        TorchServeDialect(config).metrics_text()  # type: ignore[arg-type]
    assert not caplog.records
