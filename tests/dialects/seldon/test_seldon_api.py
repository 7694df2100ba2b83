"""The rest of the Seldon model API: feedback, health, metadata, tags, metrics, meta,
both gRPC services, health checking and reflection, HTTP/2 for REST."""

from __future__ import annotations

import json
from typing import Any

import grpc
import httpx
import pytest
from seldon_client import grpc_call, rest, send

PARAMS = json.dumps(
    [
        {"name": "threshold", "value": "2.5", "type": "FLOAT"},
        {"name": "label", "value": "seldon", "type": "STRING"},
    ]
)


@pytest.fixture(scope="module")
def annotated(serve: Any) -> Any:
    return serve("models.py:Annotated", "--parameters", PARAMS, "--model-name", "classifier")


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_tags_metrics_class_names_and_puid(protocol: str, annotated: Any, pb: Any) -> None:
    body = {
        "meta": {"puid": "abc-123", "tags": {"from": "client"}},
        "data": {"names": ["a", "b"], "ndarray": [[1, 1], [2, 2]]},
    }
    got = send(protocol, annotated, pb, body)
    assert got["data"]["names"] == ["no", "yes"]
    assert [row[1] for row in got["data"]["ndarray"]] == [
        0.0,
        1.0,
    ]  # threshold 2.5 from --parameters
    meta = got["meta"]
    assert meta["puid"] == "abc-123"
    assert meta["tags"] == {"from": "client", "label": "seldon", "threshold": 2.5, "loaded": True}
    # The class name, not the file the server loaded it from.
    assert meta["requestPath"] == {"classifier": "Annotated"}
    metrics = {m["key"]: m for m in meta["metrics"]}
    assert metrics["threshold"]["type"] == "GAUGE" and metrics["threshold"]["value"] == 2.5
    assert metrics["calls"].get("type", "COUNTER") == "COUNTER"


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_names_and_meta_reach_the_model(protocol: str, serve: Any, pb: Any) -> None:
    server = serve("models.py:MetaEcho")
    got = send(
        protocol,
        server,
        pb,
        {
            "meta": {"puid": "p9", "tags": {"t": "v"}},
            "data": {"names": ["x", "y"], "ndarray": [[1, 2]]},
        },
    )
    assert got["jsonData"]["names"] == ["x", "y"]
    assert got["jsonData"]["meta"] == {"puid": "p9", "tags": {"t": "v"}}


def test_feedback_rest_and_grpc(annotated: Any, pb: Any) -> None:
    fb = {
        "request": {"data": {"ndarray": [[1, 2]]}},
        "response": {"data": {"ndarray": [[0.1, 0.9]]}},
        "reward": 1.0,
        "truth": {"data": {"ndarray": [[0, 1]]}},
    }
    for path in ("/api/v1.0/feedback", "/send-feedback"):
        r = rest(annotated.url, fb, path=path)
        assert r.status_code == 200, r.text
        assert r.json()["data"]["ndarray"][0][1] == 1.0
    with annotated.channel() as ch:
        for service in ("Seldon", "Model"):
            got = grpc_call(ch, pb, fb, service=service, method="SendFeedback")
            assert got["data"]["ndarray"][0][1] == 1.0
    status = httpx.get(annotated.url + "/health/status").json()
    assert status["jsonData"]["feedback_seen"] == 4
    assert status["jsonData"]["healthy"] is True


def test_metadata(annotated: Any, pb: Any) -> None:
    for path in ("/metadata", "/api/v1.0/metadata/classifier"):
        m = httpx.get(annotated.url + path).json()
        assert (
            m["name"] == "classifier" and m["versions"] == ["v7"] and m["platform"] == "inferwire"
        )
        assert m["inputs"][0]["schema"] == {"names": ["a", "b"]}
    from google.protobuf import empty_pb2, json_format

    with annotated.channel() as ch:
        md = pb.grpc.ModelStub(ch).Metadata(empty_pb2.Empty(), timeout=10)
        assert md.name == "classifier" and list(md.versions) == ["v7"]
        g = pb.grpc.SeldonStub(ch).GraphMetadata(empty_pb2.Empty(), timeout=10)
        assert "classifier" in json_format.MessageToDict(g)["models"]


def test_health_and_readiness(annotated: Any) -> None:
    assert httpx.get(annotated.url + "/health/ping").text == "pong"
    assert httpx.get(annotated.url + "/live").status_code == 200
    assert httpx.get(annotated.url + "/ready").json() == {"status": "ready"}


def test_model_service_and_seldon_metadata_headers(annotated: Any, pb: Any) -> None:
    with annotated.channel() as ch:
        stub = pb.grpc.ModelStub(ch)
        msg = pb.msgs.SeldonMessage(strData="x")
        msg.data.ndarray.values.add().list_value.values.add().number_value = 3
        reply = stub.Predict(
            msg, metadata=(("seldon", "seldon-model"), ("namespace", "seldon")), timeout=10
        )
        assert list(reply.data.names) == ["no", "yes"]


def test_grpc_health_and_reflection(annotated: Any) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    with annotated.channel() as ch:
        health = health_pb2_grpc.HealthStub(ch)
        for service in ("", "seldon.protos.Seldon", "seldon.protos.Model"):
            r = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert r.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(ch)
        replies = list(
            stub.ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10
            )
        )
        names = {s.name for s in replies[0].list_services_response.service}
        assert {"seldon.protos.Seldon", "seldon.protos.Model", "grpc.health.v1.Health"} <= names


def test_rest_over_http2_prior_knowledge(annotated: Any) -> None:
    with httpx.Client(http1=False, http2=True) as client:
        r = client.post(
            annotated.url + "/api/v1.0/predictions", json={"data": {"ndarray": [[3, 3]]}}
        )
        assert r.http_version == "HTTP/2"
        assert r.json()["data"]["names"] == ["no", "yes"]


def test_seldon_ingress_paths_and_form_bodies(annotated: Any) -> None:
    body = '{"data": {"ndarray": [[3, 3]]}}'
    r = httpx.post(
        annotated.url + "/seldon/seldon/seldon-model/api/v1.0/predictions",
        content=body,
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 200
    # curl -d without -H sends a form content type; Seldon accepts it, so do we.
    r = httpx.post(
        annotated.url + "/api/v1.0/predictions",
        content=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 200
    r = httpx.post(annotated.url + "/api/v1.0/predictions", data={"json": body})
    assert r.status_code == 200 and r.json()["data"]["names"] == ["no", "yes"]


def test_grpc_large_ndarray_roundtrip_is_typed(serve: Any, pb: Any) -> None:
    server = serve("models.py:Echo")
    with server.channel() as ch:
        got = grpc_call(ch, pb, {"data": {"ndarray": [list(range(1000))] * 3}})
    assert len(got["data"]["ndarray"]) == 3 and got["data"]["ndarray"][2][999] == 999.0


def test_grpc_channel_reuse_many_calls(annotated: Any, pb: Any) -> None:
    with annotated.channel() as ch:
        stub = pb.grpc.SeldonStub(ch)
        msg = pb.msgs.SeldonMessage()
        row = msg.data.tensor
        row.shape.extend([1, 2])
        row.values.extend([5, 5])
        futures = [stub.Predict.future(msg, timeout=10) for _ in range(200)]
        assert all(list(f.result().data.names) == ["no", "yes"] for f in futures)
        assert isinstance(grpc.StatusCode.OK, grpc.StatusCode)


def test_fortran_ordered_and_strided_results_keep_their_rows(serve: Any, pb: Any) -> None:
    s = serve("models:Transposed")
    r = httpx.post(s.url + "/api/v1.0/predictions", json={"data": {"ndarray": [[1]]}})
    assert r.json()["data"]["ndarray"] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    r = httpx.post(s.url + "/api/v1.0/predictions", json={"data": {"ndarray": [[1, 2]]}})
    assert r.json()["data"]["ndarray"] == [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]
    v2 = {"inputs": [{"name": "x", "shape": [1, 1], "datatype": "FP64", "data": [1]}]}
    r = httpx.post(s.url + "/v2/models/Transposed/infer", json=v2)
    assert r.json()["outputs"][0]["data"] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
