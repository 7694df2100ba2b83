"""OpenTelemetry traces, read back from real collectors: a small OTLP receiver written
here (OTLP/HTTP decoded with the ``opentelemetry-proto`` package's own messages, and
OTLP/gRPC served with its own service stubs), and Jaeger v1.76.0 when
``scripts/install-jaeger.sh`` has built it. A REST and a gRPC request that bring a
``traceparent`` continue that trace (parent span, spans for decode/infer/encode,
attributes; the queue wait and the model call, with its batch size, under ``infer``);
one without starts a trace; a client instrumented with OpenTelemetry's SDK is one trace
with the server and the model; ``always_off`` exports nothing; a collector that is down,
or stops mid-load, costs a counter, never a request; the model sees the server span's
context in its request parameters."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc as triton_grpc
from conftest import ROOT, free_port
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.trace.v1 import trace_pb2
from prometheus_client.parser import text_string_to_metric_families

MODEL = "trace"
SERVER = trace_pb2.Span.SpanKind.SPAN_KIND_SERVER
JAEGER = ROOT / ".tools/bin/jaeger"


class Collector:
    """What an OTLP receiver was sent: every span, with its resource's attributes."""

    def __init__(self) -> None:
        self.spans: list[trace_pb2.Span] = []
        self.resources: list[dict[str, Any]] = []
        self.requests = 0
        self.lock = threading.Lock()

    def take(self, request: trace_service_pb2.ExportTraceServiceRequest) -> None:
        with self.lock:
            self.requests += 1
            for rs in request.resource_spans:
                self.resources.append(attributes(rs.resource.attributes))
                for ss in rs.scope_spans:
                    self.spans.extend(ss.spans)

    def trace(self, trace_id: bytes, count: int, timeout: float = 10.0) -> list[trace_pb2.Span]:
        """The spans of ``trace_id``, once there are ``count`` of them."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                found = [s for s in self.spans if s.trace_id == trace_id]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.05)


def attributes(kvs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in kvs:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind) if kind else None
    return out


def otlp_http_receiver(collector: Collector) -> ThreadingHTTPServer:
    """An OTLP/HTTP receiver on 127.0.0.1, serving: ``POST /v1/traces`` with a protobuf
    body, each request given to ``collector``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            assert length <= 16 * 1024 * 1024
            body = self.rfile.read(length)
            if self.path != "/v1/traces" or self.headers["content-type"] != (
                "application/x-protobuf"
            ):
                self.send_response(404)
                self.end_headers()
                return
            request = trace_service_pb2.ExportTraceServiceRequest()
            request.ParseFromString(body)
            collector.take(request)
            reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def otlp_http() -> Iterator[tuple[str, Collector]]:
    """An OTLP/HTTP receiver on 127.0.0.1: ``POST /v1/traces`` with a protobuf body."""
    collector = Collector()
    server = otlp_http_receiver(collector)
    yield f"http://127.0.0.1:{server.server_address[1]}", collector
    server.shutdown()
    server.server_close()


@pytest.fixture
def otlp_grpc() -> Iterator[tuple[str, Collector]]:
    """An OTLP/gRPC receiver on 127.0.0.1 (``TraceService/Export``)."""
    collector = Collector()

    class Service(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            collector.take(request)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", collector
    server.stop(0)


def new_ids() -> tuple[str, str]:
    return secrets.token_hex(16), secrets.token_hex(8)


def rest_infer(url: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]}
    r = httpx.post(f"{url}/v2/models/{MODEL}/infer", json=body, headers=headers or {})
    assert r.status_code == 200, r.text
    return {o["name"]: o for o in r.json()["outputs"]}


def grpc_infer(target: str, headers: dict[str, str]) -> Any:
    client = triton_grpc.InferenceServerClient(url=target)
    x = triton_grpc.InferInput("x", [1, 2], "FP32")
    x.set_data_from_numpy(np.array([[1, 2]], dtype=np.float32))
    try:
        return client.infer(MODEL, [x], headers=headers)
    finally:
        client.close()


def serve_traced(serve: Callable[..., Any], *args: str, env: dict[str, str] | None = None) -> Any:
    return serve("trace_models:TraceEcho", "--model-name", MODEL, *args, env=env)


# A V2 inference's spans below the server span.
PARTS = ("decode", "infer", "queue", "model", "encode")
SPANS = 1 + len(PARTS)


def by_name(spans: list[trace_pb2.Span]) -> dict[str, trace_pb2.Span]:
    return {s.name: s for s in spans}


def check_request_trace(
    spans: list[trace_pb2.Span], name: str, parent: str, protocol: str
) -> trace_pb2.Span:
    """The request's server span under ``parent``, its parts its children, the queue
    wait and the model call children of ``infer``."""
    named = by_name(spans)
    assert set(named) == {name, *PARTS}, list(named)
    server = named[name]
    assert server.kind == SERVER
    assert server.parent_span_id.hex() == parent
    a = attributes(server.attributes)
    assert a["inferwire.model.name"] == MODEL
    assert a["inferwire.protocol"] == protocol
    assert a["inferwire.dialect"] == "inferwire"
    assert a["inferwire.route"] == "infer"
    for part in ("decode", "infer", "encode"):
        child = named[part]
        assert child.parent_span_id == server.span_id
        assert server.start_time_unix_nano <= child.start_time_unix_nano
        assert child.start_time_unix_nano <= child.end_time_unix_nano
        assert child.end_time_unix_nano <= server.end_time_unix_nano
    infer = named["infer"]
    for part in ("queue", "model"):
        child = named[part]
        assert child.parent_span_id == infer.span_id
        assert infer.start_time_unix_nano <= child.start_time_unix_nano
        assert child.start_time_unix_nano <= child.end_time_unix_nano
        assert child.end_time_unix_nano <= infer.end_time_unix_nano
    assert named["queue"].end_time_unix_nano <= named["model"].start_time_unix_nano
    assert attributes(named["model"].attributes) == {"inferwire.batch.size": 1}
    return server


def test_rest_and_grpc_requests_continue_the_callers_trace(
    serve: Callable[..., Any], otlp_http: tuple[str, Collector]
) -> None:
    endpoint, collector = otlp_http
    server = serve_traced(serve, "--otlp-endpoint", endpoint, "--trace-service-name", "iw-test")

    trace, parent = new_ids()
    outputs = rest_infer(
        server.url,
        {"traceparent": f"00-{trace}-{parent}-01", "tracestate": "vendor=abc"},
    )
    spans = collector.trace(bytes.fromhex(trace), SPANS)
    span = check_request_trace(spans, f"POST /v2/models/{MODEL}/infer", parent, "rest")
    assert attributes(span.attributes)["http.response.status_code"] == 200
    assert span.trace_state == "vendor=abc"
    # The model is handed the server span's context, to continue it.
    assert outputs["traceparent"]["data"] == [f"00-{trace}-{span.span_id.hex()}-01"]
    assert outputs["tracestate"]["data"] == ["vendor=abc"]
    assert {"service.name": "iw-test"}.items() <= collector.resources[0].items()

    trace, parent = new_ids()
    reply = grpc_infer(server.grpc_target, {"traceparent": f"00-{trace}-{parent}-01"})
    spans = collector.trace(bytes.fromhex(trace), SPANS)
    span = check_request_trace(spans, "ModelInfer", parent, "grpc")
    assert attributes(span.attributes)["rpc.grpc.status_code"] == 0
    seen = reply.as_numpy("traceparent")[0].decode()
    assert seen == f"00-{trace}-{span.span_id.hex()}-01"


def test_batched_requests_model_call_spans_carry_the_batch_size(
    serve: Callable[..., Any], otlp_http: tuple[str, Collector]
) -> None:
    endpoint, collector = otlp_http
    server = serve(
        "trace_models:TraceBatchEcho",
        "--model-name",
        MODEL,
        "--otlp-endpoint",
        endpoint,
        "--max-batch-size",
        "8",
        "--max-batch-delay",
        "0.05",
        "--model-threads",
        "1",
    )
    body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]}
    traces = [new_ids() for _ in range(16)]

    def one(ids: tuple[str, str]) -> int:
        headers = {"traceparent": f"00-{ids[0]}-{ids[1]}-01"}
        r = httpx.post(
            f"{server.url}/v2/models/{MODEL}/infer", json=body, headers=headers, timeout=30
        )
        return r.status_code

    with futures.ThreadPoolExecutor(16) as pool:
        assert list(pool.map(one, traces)) == [200] * 16
    sizes = []
    for trace, parent in traces:
        spans = collector.trace(bytes.fromhex(trace), SPANS)
        named = by_name(spans)
        assert set(named) == {f"POST /v2/models/{MODEL}/infer", *PARTS}, list(named)
        assert named[f"POST /v2/models/{MODEL}/infer"].parent_span_id.hex() == parent
        assert named["queue"].parent_span_id == named["infer"].span_id
        assert named["model"].parent_span_id == named["infer"].span_id
        sizes.append(attributes(named["model"].attributes)["inferwire.batch.size"])
    # Every request is in one call; the calls' sizes add up to 16, at least one joined.
    assert max(sizes) > 1, sizes
    assert all(1 <= n <= 8 for n in sizes), sizes


def test_an_instrumented_python_client_sees_one_trace_into_the_model(
    serve: Callable[..., Any], otlp_http: tuple[str, Collector]
) -> None:
    """OpenTelemetry's own SDK and ``requests`` instrumentation as a client uses them,
    exporting to the same receiver as the server: one trace from the client's span
    through the server's spans into the model."""
    import requests
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.requests import RequestsInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    endpoint, collector = otlp_http
    server = serve_traced(serve, "--otlp-endpoint", endpoint)
    provider = TracerProvider(resource=Resource.create({"service.name": "iw-client"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{endpoint}/v1/traces")))
    instrumentor = RequestsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]}
        with provider.get_tracer("iw-test").start_as_current_span("client-work") as work:
            r = requests.post(f"{server.url}/v2/models/{MODEL}/infer", json=body, timeout=30)
        assert r.status_code == 200, r.text
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    trace = work.get_span_context().trace_id.to_bytes(16, "big")
    spans = collector.trace(trace, SPANS + 2)
    clients = [s for s in spans if s.kind == trace_pb2.Span.SpanKind.SPAN_KIND_CLIENT]
    assert len(clients) == 1, [s.name for s in spans]
    client = clients[0]
    assert client.parent_span_id == work.get_span_context().span_id.to_bytes(8, "big")
    server_spans = [s for s in spans if s.kind == SERVER]
    assert len(server_spans) == 1
    check_request_trace(
        [s for s in spans if s not in (client,) and s.name != "client-work"],
        f"POST /v2/models/{MODEL}/infer",
        client.span_id.hex(),
        "rest",
    )
    # The model continues the same trace, under the server's span.
    outputs = {o["name"]: o for o in r.json()["outputs"]}
    seen = outputs["traceparent"]["data"][0].split("-")
    assert seen[1] == trace.hex() and seen[2] == server_spans[0].span_id.hex()
    assert {"iw-client", "inferwire"} <= {r.get("service.name") for r in collector.resources}


def test_seldon_rest_predict_has_the_queue_and_model_call_spans(
    serve: Callable[..., Any], otlp_http: tuple[str, Collector]
) -> None:
    endpoint, collector = otlp_http
    server = serve_traced(serve, "--otlp-endpoint", endpoint)
    trace, parent = new_ids()
    r = httpx.post(
        f"{server.url}/api/v1.0/predictions",
        json={"data": {"ndarray": [[1, 2]]}},
        headers={"traceparent": f"00-{trace}-{parent}-01"},
    )
    assert r.status_code == 200, r.text
    named = by_name(collector.trace(bytes.fromhex(trace), 4))
    name = "POST /api/v1.0/predictions"
    assert set(named) == {name, "infer", "queue", "model"}, list(named)
    assert named[name].parent_span_id.hex() == parent
    assert named["infer"].parent_span_id == named[name].span_id
    for part in ("queue", "model"):
        assert named[part].parent_span_id == named["infer"].span_id
    assert attributes(named["model"].attributes) == {"inferwire.batch.size": 1}


def test_a_request_without_traceparent_starts_a_trace(
    serve: Callable[..., Any], otlp_http: tuple[str, Collector]
) -> None:
    endpoint, collector = otlp_http
    server = serve_traced(
        serve,
        "--otlp-traces-endpoint",
        endpoint + "/v1/traces",
        "--trace-sampler",
        "traceidratio",
        "--trace-sampler-arg",
        "1.0",
    )
    # An invalid traceparent (upper-case hex) is ignored, as W3C says: a new trace.
    bad = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"
    outputs = rest_infer(server.url, {"traceparent": bad})
    trace = outputs["traceparent"]["data"][0].split("-")[1]
    assert trace != "4bf92f3577b34da6a3ce929d0e0e4736"
    spans = collector.trace(bytes.fromhex(trace), SPANS)
    server_span = [s for s in spans if s.kind == SERVER]
    assert len(server_span) == 1 and server_span[0].parent_span_id == b""


def test_always_off_exports_nothing(
    serve: Callable[..., Any], otlp_http: tuple[str, Collector]
) -> None:
    endpoint, collector = otlp_http
    # OpenTelemetry's own variables, as an operator sets them.
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_SAMPLER": "always_off"}
    server = serve_traced(serve, env=env)
    trace, parent = new_ids()
    outputs = rest_infer(server.url, {"traceparent": f"00-{trace}-{parent}-01"})
    assert "traceparent" not in outputs
    time.sleep(2.5)  # past the exporter's one-second batch
    assert collector.requests == 0
    assert "inferwire_trace_spans" not in httpx.get(server.url + "/metrics").text


def span_counts(url: str) -> dict[str, float]:
    text = httpx.get(url + "/metrics").text
    return {
        s.name: s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name.startswith("inferwire_trace_spans")
    }


def test_a_collector_that_is_down_costs_a_counter_not_a_request(
    serve: Callable[..., Any],
) -> None:
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    server = serve_traced(serve, "--otlp-endpoint", down, "--otlp-timeout", "1")
    for _ in range(20):
        rest_infer(server.url, {"traceparent": f"00-{new_ids()[0]}-{new_ids()[1]}-01"})
    deadline = time.monotonic() + 10
    while span_counts(server.url).get("inferwire_trace_spans_failed_total", 0) < 80:
        assert time.monotonic() < deadline, span_counts(server.url)
        time.sleep(0.2)
    counts = span_counts(server.url)
    assert counts["inferwire_trace_spans_exported_total"] == 0
    assert counts["inferwire_trace_spans_dropped_total"] == 0


def test_the_collector_stopped_mid_load_loses_no_request(serve: Callable[..., Any]) -> None:
    collector = Collector()
    receiver = otlp_http_receiver(collector)
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}"
    server = serve_traced(serve, "--otlp-endpoint", endpoint, "--otlp-timeout", "1")
    statuses: list[int] = []
    stop = threading.Event()

    def load() -> None:
        body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]}]}
        with httpx.Client(timeout=30) as client:
            while not stop.is_set() and len(statuses) < 2000:
                r = client.post(f"{server.url}/v2/models/{MODEL}/infer", json=body)
                statuses.append(r.status_code)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 15
        while span_counts(server.url).get("inferwire_trace_spans_exported_total", 0) == 0:
            assert time.monotonic() < deadline, span_counts(server.url)
            time.sleep(0.1)
        receiver.shutdown()  # the collector goes away mid-load
        receiver.server_close()
        before = span_counts(server.url)
        sent = len(statuses)
        deadline = time.monotonic() + 15
        while True:
            counts = span_counts(server.url)
            lost = counts["inferwire_trace_spans_failed_total"] + counts.get(
                "inferwire_trace_spans_dropped_total", 0
            )
            if lost > before["inferwire_trace_spans_failed_total"] and len(statuses) > sent:
                break
            assert time.monotonic() < deadline, (before, counts)
            time.sleep(0.2)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert statuses and statuses == [200] * len(statuses), set(statuses)
    assert counts["inferwire_trace_spans_failed_total"] > 0


def test_otlp_grpc_export_as_mlservers_tracing_server_sets_it(
    serve: Callable[..., Any], otlp_grpc: tuple[str, Collector], tmp_path: Path
) -> None:
    target, collector = otlp_grpc
    from inferwire.mlserver.settings import server_settings

    (tmp_path / "settings.json").write_text(json.dumps({"tracing_server": target}))
    mapped = server_settings(tmp_path)
    assert (mapped["otlp_traces_endpoint"], mapped["otlp_protocol"]) == (target, "grpc")

    server = serve_traced(
        serve,
        "--otlp-traces-endpoint",
        mapped["otlp_traces_endpoint"],
        "--otlp-protocol",
        mapped["otlp_protocol"],
    )
    trace, parent = new_ids()
    rest_infer(server.url, {"traceparent": f"00-{trace}-{parent}-01"})
    spans = collector.trace(bytes.fromhex(trace), SPANS)
    check_request_trace(spans, f"POST /v2/models/{MODEL}/infer", parent, "rest")


# -- Jaeger v1.76.0 (scripts/install-jaeger.sh) ---------------------------------------------

JAEGER_CONFIG = """
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:{query}
    grpc:
      endpoint: 127.0.0.1:{query_grpc}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{otlp_grpc}
      http:
        endpoint: 127.0.0.1:{otlp_http}
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
"""


@pytest.fixture
def jaeger(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Jaeger all-in-one (memory storage) on free ports: its OTLP/HTTP endpoint and its
    query API's URL."""
    binary = os.environ.get("JAEGER_BIN") or (str(JAEGER) if JAEGER.exists() else None)
    binary = binary or shutil.which("jaeger")
    if not binary:
        pytest.skip("Jaeger not installed: run scripts/install-jaeger.sh (builds v1.76.0)")
    ports = {k: free_port() for k in ("query", "query_grpc", "otlp_grpc", "otlp_http")}
    config = tmp_path / "jaeger.yaml"
    config.write_text(JAEGER_CONFIG.format(**ports))
    log = open(tmp_path / "jaeger.log", "w")
    proc = subprocess.Popen([binary, "--config", str(config)], stdout=log, stderr=subprocess.STDOUT)
    query = f"http://127.0.0.1:{ports['query']}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "jaeger.log").read_text()
            try:
                if httpx.get(query + "/api/services", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "jaeger.log").read_text()
            time.sleep(0.2)
        yield f"http://127.0.0.1:{ports['otlp_http']}", query
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def jaeger_trace(query: str, trace: str, count: int) -> dict[str, Any]:
    deadline = time.monotonic() + 15
    while True:
        r = httpx.get(f"{query}/api/traces/{trace}")
        if r.status_code == 200:
            data = r.json()["data"]
            if data and len(data[0]["spans"]) >= count:
                return dict(data[0])
        assert time.monotonic() < deadline, r.text
        time.sleep(0.2)


def check_jaeger_trace(found: dict[str, Any], name: str, parent: str, protocol: str) -> None:
    spans = {s["operationName"]: s for s in found["spans"]}
    assert set(spans) == {name, *PARTS}, list(spans)
    server = spans[name]
    assert [(r["refType"], r["spanID"]) for r in server["references"]] == [("CHILD_OF", parent)]
    tags = {t["key"]: t["value"] for t in server["tags"]}
    assert tags["span.kind"] == "server"
    assert tags["inferwire.model.name"] == MODEL
    assert tags["inferwire.protocol"] == protocol
    for part in ("decode", "infer", "encode"):
        refs = spans[part]["references"]
        assert [(r["refType"], r["spanID"]) for r in refs] == [("CHILD_OF", server["spanID"])]
    for part in ("queue", "model"):
        refs = spans[part]["references"]
        assert [(r["refType"], r["spanID"]) for r in refs] == [
            ("CHILD_OF", spans["infer"]["spanID"])
        ]
    model_tags = {t["key"]: t["value"] for t in spans["model"]["tags"]}
    assert model_tags["inferwire.batch.size"] == 1
    services = {p["serviceName"] for p in found["processes"].values()}
    assert services == {"inferwire"}


def test_traces_read_back_from_jaeger(serve: Callable[..., Any], jaeger: tuple[str, str]) -> None:
    endpoint, query = jaeger
    server = serve_traced(serve, "--otlp-endpoint", endpoint)
    trace, parent = new_ids()
    rest_infer(server.url, {"traceparent": f"00-{trace}-{parent}-01"})
    found = jaeger_trace(query, trace, SPANS)
    check_jaeger_trace(found, f"POST /v2/models/{MODEL}/infer", parent, "rest")

    trace, parent = new_ids()
    grpc_infer(server.grpc_target, {"traceparent": f"00-{trace}-{parent}-01"})
    found = jaeger_trace(query, trace, SPANS)
    check_jaeger_trace(found, "ModelInfer", parent, "grpc")


# -- settings ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "words"),
    [
        (
            {"otlp_endpoint": "https://collector:4318"},
            'otlp_endpoint: "https://collector:4318": https is not supported yet',
        ),
        (
            {"otlp_traces_endpoint": "ftp://collector"},
            'otlp_traces_endpoint: "ftp://collector" is not an http:// URL',
        ),
        (
            {"otlp_endpoint": "http://c:4318", "otlp_headers": "api-key"},
            'otlp_headers: "api-key" is not key=value',
        ),
    ],
)
def test_bad_trace_settings_are_refused_naming_the_setting(
    given: dict[str, Any], words: str
) -> None:
    from inferwire.settings import Settings

    with pytest.raises(ValueError, match="^" + re.escape(words)):
        Settings(**given).to_core()


def test_trace_settings_come_from_opentelemetrys_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from inferwire.errors import SettingsError
    from inferwire.settings import from_sources

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.01")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "fraud-model")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%20ecret")
    s = from_sources({})
    assert (s.otlp_endpoint, s.otlp_protocol) == ("http://collector:4317", "grpc")
    assert (s.trace_sampler, s.trace_sampler_arg) == ("parentbased_traceidratio", 0.01)
    assert (s.trace_service_name, s.otlp_headers) == ("fraud-model", "api-key=s%20ecret")
    s.to_core()  # the core takes them
    # inferwire's own variable wins over OpenTelemetry's.
    monkeypatch.setenv("INFERWIRE_TRACE_SERVICE_NAME", "mine")
    assert from_sources({}).trace_service_name == "mine"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    with pytest.raises(SettingsError, match="otlp_protocol: 'http/json' is not"):
        from_sources({})
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "2")
    with pytest.raises(SettingsError, match="trace_sampler_arg: a ratio from 0 to 1"):
        from_sources({})


def test_mlservers_tracing_server_variable_is_honoured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from inferwire.mlserver.settings import server_settings

    monkeypatch.setenv("MLSERVER_TRACING_SERVER", "otel-collector:4317")
    mapped = server_settings(tmp_path)
    assert mapped["otlp_traces_endpoint"] == "otel-collector:4317"
    assert mapped["otlp_protocol"] == "grpc"
