"""What operators see: Prometheus ``/metrics`` (parsed with prometheus_client's own
parser), the model's Seldon metrics among them, request ids, and the JSON access log."""

from __future__ import annotations

import json
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from seldon_client import grpc_call, rest


def test_every_metric_served_is_documented(serve: Any) -> None:
    from conftest import ROOT

    server = serve("models.py:Echo")
    assert rest(server.url, {"data": {"ndarray": [[1]]}}).status_code == 200
    families = {
        f.name for f in text_string_to_metric_families(httpx.get(server.url + "/metrics").text)
    }
    doc = (ROOT / "docs/reference/metrics.md").read_text()
    missing = [name for name in families if f"`{name}" not in doc]
    assert families and not missing, missing


def _samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = httpx.get(url + "/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _requests(protocol: str, route: str, encoding: str, code: str) -> tuple[str, Any]:
    labels = {
        "model": "Annotated",
        "protocol": protocol,
        "route": route,
        "encoding": encoding,
        "code": code,
    }
    return ("inferwire_requests_total", tuple(sorted(labels.items())))


def test_metrics_count_requests_by_protocol_route_encoding_and_status(serve: Any, pb: Any) -> None:
    server = serve("models.py:Annotated")
    for _ in range(3):
        assert rest(server.url, {"data": {"ndarray": [[1, 2]]}}).status_code == 200
    assert rest(server.url, {"data": {"tensor": {"shape": [1, 2], "values": [1, 2]}}}).is_success
    assert rest(server.url, {"data": {"tensor": {"shape": [3], "values": [1]}}}).status_code == 400
    assert rest(server.url, {"reward": 1.0}, path="/api/v1.0/feedback").status_code == 200
    with server.channel() as ch:
        grpc_call(ch, pb, {"data": {"tensor": {"shape": [1, 2], "values": [1, 2]}}})
    samples = _samples(server.url)
    assert samples[_requests("rest", "predict", "ndarray", "200")] == 3
    assert samples[_requests("rest", "predict", "tensor", "200")] == 1
    assert samples[_requests("rest", "predict", "none", "400")] == 1
    assert samples[_requests("rest", "feedback", "none", "200")] == 1
    assert samples[_requests("grpc", "predict", "tensor", "OK")] == 1
    latency = ("model", "Annotated"), ("protocol", "rest"), ("route", "predict")
    assert samples[("inferwire_request_duration_seconds_count", latency)] == 5
    assert samples[("inferwire_request_duration_seconds_sum", latency)] > 0
    # 4 REST predicts, 1 feedback and 1 gRPC predict reached the model.
    model = (("model", "Annotated"),)
    assert samples[("inferwire_model_duration_seconds_count", model)] == 6
    assert samples[("inferwire_batch_size_count", model)] == 6
    assert samples[("inferwire_in_flight_requests", ())] == 0
    assert samples[("inferwire_queue_depth", ())] == 0
    assert samples[("inferwire_workers", ())] == 1
    # The model's own metrics(): a COUNTER adds up per call, a GAUGE keeps its value.
    # (predict and send_feedback both report them: 5 predicts and 1 feedback)
    assert samples[("calls_total", ())] == 6
    assert samples[("threshold", ())] == 0.5


def test_timer_metrics_and_tags_become_histograms_and_labels(serve: Any) -> None:
    server = serve("models.py:Timed")
    for _ in range(2):
        assert rest(server.url, {"data": {"ndarray": [[1]]}}).status_code == 200
    samples = _samples(server.url)
    key = ("model_step_seconds_count", (("step", "score"),))
    assert samples.get(key) == 2, sorted(k for k in samples if "step" in k[0])
    assert abs(samples[("model_step_seconds_sum", (("step", "score"),))] - 0.05) < 1e-6


def test_request_ids_and_json_access_log(serve: Any) -> None:
    server = serve("models.py:Echo", "--access-log", "json")
    r = rest(server.url, {"data": {"ndarray": [[1]]}}, headers={"x-request-id": "abc-123"})
    assert r.status_code == 200 and r.headers["x-request-id"] == "abc-123"
    assert rest(server.url, {"meta": {"puid": "p-9"}, "data": {"ndarray": [[1]]}}).is_success
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    by_id = {line["id"]: line for line in lines}
    assert by_id["abc-123"]["code"] == "200" and by_id["abc-123"]["protocol"] == "rest"
    assert by_id["abc-123"]["target"] == "POST /api/v1.0/predictions"
    assert by_id["abc-123"]["encoding"] == "ndarray" and by_id["abc-123"]["ms"] > 0
    assert "p-9" in by_id
