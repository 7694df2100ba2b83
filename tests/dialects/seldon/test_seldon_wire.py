"""Seldon's wire details, as the seldon-core 1.x wrapper has them: multipart form
uploads, GET ?json=, a predict_raw reply's `status` as the HTTP status, the reply
encoding rules, `meta` (puid, tags, metrics, SeldonResponse), MODEL_METADATA and the
metadata schema, /seldon.json, and the metrics port its operator scrapes."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

import grpc
import httpx
import numpy as np
import pytest
from conftest import free_port
from google.protobuf import empty_pb2, json_format
from seldon_client import grpc_call, rest, send, tftensor, to_numpy

PREDICT = "/api/v1.0/predictions"


@pytest.fixture(scope="module")
def kinds(serve: Any) -> Any:
    return serve("seldon_wire_models.py:Kinds")


def asking(answer: str, **payload: Any) -> dict[str, Any]:
    return {"meta": {"tags": {"answer": answer}}, **payload}


# -- multipart forms -----------------------------------------------------------------------


def test_form_fields_are_the_message(kinds: Any) -> None:
    r = httpx.post(
        kinds.url + PREDICT,
        files={
            "data": (None, '{"names": ["a", "b"], "ndarray": [[5, 6]]}'),
            "meta": (None, '{"puid": "form-1", "tags": {"answer": "echo"}}'),
        },
    )
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["data"]["ndarray"] == [[5, 6]]
    assert got["meta"]["puid"] == "form-1"
    assert got["meta"]["tags"]["answer"] == "echo"


def test_form_str_data_as_file_and_text(kinds: Any) -> None:
    for files in (
        {"strData": ("note.txt", b"hello\nthere", "text/plain")},
        {"strData": (None, "hello\nthere")},
    ):
        r = httpx.post(kinds.url + PREDICT, files=files)
        assert r.status_code == 200, r.text
        assert r.json()["jsonData"] == {"text": "hello\nthere"}


def test_form_bin_data_file(kinds: Any) -> None:
    blob = bytes(range(256))
    r = httpx.post(
        kinds.url + PREDICT,
        files={"binData": ("blob.bin", blob, "application/octet-stream")},
        data={"meta": '{"puid": "b1"}'},
    )
    assert r.status_code == 200, r.text
    assert r.json()["jsonData"] == {"bytes": 256, "first": "\x00"}
    assert r.json()["meta"]["puid"] == "b1"


def test_form_mistakes_are_400_naming_the_field(kinds: Any) -> None:
    r = httpx.post(kinds.url + PREDICT, files={"data": (None, "{not json")})
    assert r.status_code == 400 and "data is not JSON" in r.json()["status"]["info"]
    r = httpx.post(kinds.url + PREDICT, files={"data": (None, "{}"), "colour": (None, "red")})
    assert r.status_code == 400 and '"colour"' in r.json()["status"]["info"]
    r = httpx.post(
        kinds.url + PREDICT,
        files={"binData": ("b", b"x", "application/octet-stream"), "strData": (None, "y")},
    )
    assert r.status_code == 400 and "binData and strData" in r.json()["status"]["info"]


def test_a_lone_file_upload_still_reaches_the_model_as_bytes(kinds: Any) -> None:
    r = httpx.post(kinds.url + PREDICT, files={"file": ("x.png", b"\x89PNG", "image/png")})
    assert r.status_code == 200, r.text


# -- GET ?json= and form-encoded json= -----------------------------------------------------


def test_get_with_json_query_and_form_encoded_body(kinds: Any) -> None:
    msg = json.dumps(asking("echo", data={"ndarray": [[1, 2]]}))
    r = httpx.get(f"{kinds.url}{PREDICT}?json={quote(msg)}")
    assert r.status_code == 200, r.text
    assert r.json()["data"]["ndarray"] == [[1, 2]]
    r = httpx.get(f"{kinds.url}/predict?json={quote(msg)}")
    assert r.status_code == 200 and r.json()["data"]["ndarray"] == [[1, 2]]
    r = httpx.post(kinds.url + "/predict", data={"json": msg})
    assert r.status_code == 200 and r.json()["data"]["ndarray"] == [[1, 2]]


def test_feedback_by_get_with_json_query(serve: Any) -> None:
    server = serve("seldon_models.py:Doubler")
    fb = {"request": {"data": {"ndarray": [[1, 2]]}}, "reward": 0.25}
    r = httpx.get(f"{server.url}/send-feedback?json={quote(json.dumps(fb))}")
    assert r.status_code == 200, r.text
    assert r.json()["data"]["ndarray"][0] == 0.25
    r = httpx.get(f"{server.url}/send-feedback")
    assert r.status_code == 400 and "json" in r.json()["status"]["info"]


# -- reply encoding ------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
@pytest.mark.parametrize(
    "payload",
    [{"strData": "x"}, {"binData": base64.b64encode(b"x").decode()}, {"jsonData": {"a": 1}}],
    ids=["strData", "binData", "jsonData"],
)
def test_an_array_answering_a_non_array_request_is_a_tensor(
    protocol: str, kinds: Any, pb: Any, payload: dict[str, Any]
) -> None:
    got = send(protocol, kinds, pb, asking("array", **payload))
    assert got["data"]["tensor"] == {"shape": [1, 2], "values": [1.0, 2.0]}
    assert got["data"]["names"] == ["t:0", "t:1"]


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
@pytest.mark.parametrize("request_kind", ["ndarray", "tensor", "tftensor", "strData"])
@pytest.mark.parametrize("answer", ["strings", "flags"])
def test_non_numeric_arrays_answer_as_ndarray(
    protocol: str, kinds: Any, pb: Any, request_kind: str, answer: str
) -> None:
    row = np.array([[1.0, 2.0]])
    payload: dict[str, Any] = {
        "ndarray": {"data": {"ndarray": row.tolist()}},
        "tensor": {"data": {"tensor": {"shape": [1, 2], "values": [1.0, 2.0]}}},
        "tftensor": {"data": {"tftensor": tftensor(row)}},
        "strData": {"strData": "x"},
    }[request_kind]
    got = send(protocol, kinds, pb, asking(answer, **payload))
    assert set(got["data"]) == {"names", "ndarray"}
    expected = [["a", "b"]] if answer == "strings" else [[True, False]]
    assert got["data"]["ndarray"] == expected


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
@pytest.mark.parametrize("kind", ["ndarray", "tensor", "tftensor"])
def test_a_numeric_answer_keeps_the_requests_encoding(
    protocol: str, kinds: Any, pb: Any, kind: str
) -> None:
    row = np.array([[3.0, 4.0]])
    data = {
        "ndarray": {"ndarray": row.tolist()},
        "tensor": {"tensor": {"shape": [1, 2], "values": [3.0, 4.0]}},
        "tftensor": {"tftensor": tftensor(row)},
    }[kind]
    got = send(protocol, kinds, pb, asking("array", data=data))
    assert kind in got["data"]
    assert to_numpy(got["data"]).tolist() == [[1.0, 2.0]]


# -- predict_raw's status --------------------------------------------------------------------


def test_predict_raw_status_code_is_the_http_status(serve: Any) -> None:
    server = serve("seldon_wire_models.py:RawStatus")
    for code in (200, 400, 422, 503):
        r = rest(server.url, {"jsonData": {"code": code}})
        assert r.status_code == code, r.text
        assert r.json()["status"]["info"] == "as asked"
    # A code that is no HTTP status leaves the reply a 200, with the model's body.
    r = rest(server.url, {"jsonData": {"code": -1}})
    assert r.status_code == 200 and r.json()["status"]["code"] == -1


# -- meta ------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_seldon_response_tags_and_metrics_merge_as_seldons(
    protocol: str, kinds: Any, pb: Any
) -> None:
    got = send(protocol, kinds, pb, asking("runtime", data={"ndarray": [[0]]}))
    assert got["data"]["ndarray"] == [[1.0, 2.0]]
    # The request's tags, then the class's tags(), then the response's: later ones win.
    assert got["meta"]["tags"] == {
        "answer": "runtime",
        "static": "s",
        "shared": "from the response",
        "runtime": 1,
    }
    assert [m["key"] for m in got["meta"]["metrics"]] == ["kinds_calls", "kinds_runtime"]


def test_seldon_response_on_a_v2_route_gives_its_data(kinds: Any) -> None:
    body = {
        "parameters": {"answer": "runtime"},
        "inputs": [{"name": "x", "shape": [1], "datatype": "FP64", "data": [0.0]}],
    }
    r = httpx.post(kinds.url + "/v2/models/Kinds/infer", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == [1.0, 2.0]
    assert r.json()["outputs"][0]["shape"] == [1, 2]


def test_seldon_response_metrics_are_exported(kinds: Any, pb: Any) -> None:
    send("rest", kinds, pb, asking("runtime", data={"ndarray": [[0]]}))
    text = httpx.get(kinds.url + "/metrics").text
    assert "kinds_runtime 3" in text
    assert "kinds_calls_total" in text


def test_puid_made_through_the_ingress_only(kinds: Any, pb: Any) -> None:
    body = asking("echo", data={"ndarray": [[1]]})
    direct = rest(kinds.url, body).json()["meta"]
    assert "puid" not in direct  # the wrapper only echoes a puid
    ingress = rest(kinds.url, body, path="/seldon/ns/dep" + PREDICT).json()["meta"]
    assert len(ingress["puid"]) == 36 and ingress["puid"].count("-") == 4
    again = rest(kinds.url, body, path="/seldon/ns/dep" + PREDICT).json()["meta"]
    assert again["puid"] != ingress["puid"]
    given = {**body, "meta": {**body["meta"], "puid": "mine"}}
    assert rest(kinds.url, given, path="/seldon/ns/dep" + PREDICT).json()["meta"]["puid"] == "mine"
    # gRPC: the `seldon` header is the ingress.
    with kinds.channel() as ch:
        stub = pb.grpc.SeldonStub(ch)
        msg = json_format.ParseDict(body, pb.msgs.SeldonMessage())
        reply = stub.Predict(msg, metadata=(("seldon", "dep"), ("namespace", "ns")), timeout=10)
        assert len(reply.meta.puid) == 36
        assert grpc_call(ch, pb, body)["meta"].get("puid") is None


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_earlier_nodes_request_path_and_metrics_pass_through(
    protocol: str, kinds: Any, pb: Any
) -> None:
    body = asking(
        "echo",
        data={"ndarray": [[1]]},
    )
    body["meta"]["requestPath"] = {"earlier-node": "earlier-image"}
    body["meta"]["metrics"] = [{"key": "request_gauge", "type": "GAUGE", "value": 100}]
    got = send(protocol, kinds, pb, body)["meta"]
    # An unnamed unit (no PREDICTIVE_UNIT_ID) adds no entry of its own, as the wrapper.
    assert got["requestPath"] == {"earlier-node": "earlier-image"}
    # The request's metrics first, then the model's; only the model's are counted.
    assert [m["key"] for m in got["metrics"]] == ["request_gauge", "kinds_calls"]
    assert got["metrics"][0]["value"] == 100
    assert "request_gauge" not in httpx.get(kinds.url + "/metrics").text


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_data_without_an_array_is_an_empty_one(protocol: str, serve: Any, pb: Any) -> None:
    """A `data` with none of ndarray, tensor, tftensor (only names, or nothing): the
    model gets an empty array, as the wrapper's np.array([]); SendFeedback too."""
    server = serve("seldon_models.py:Doubler")
    for data in ({}, {"names": ["a"]}):
        got = send(protocol, server, pb, {"data": data})
        assert got["data"]["ndarray"] == [], got
    fb = {"request": {"data": {"names": ["a"]}}, "reward": 2.0}
    if protocol == "rest":
        r = httpx.post(server.url + "/api/v1.0/feedback", json=fb)
        assert r.status_code == 200, r.text
    else:
        with server.channel() as ch:
            msg = pb.msgs.Feedback()
            json_format.ParseDict(fb, msg)
            pb.grpc.ModelStub(ch).SendFeedback(msg, timeout=10)


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_metrics_left_out_of_replies_as_the_wrapper_is_told(
    protocol: str, serve: Any, pb: Any
) -> None:
    """INCLUDE_METRICS_IN_CLIENT_RESPONSE=false: the model's metrics leave the reply (the
    request's, from earlier nodes, stay) and are still counted on /metrics."""
    server = serve(
        "seldon_wire_models.py:Kinds", env={"INCLUDE_METRICS_IN_CLIENT_RESPONSE": "false"}
    )
    body = asking("echo", data={"ndarray": [[1]]})
    body["meta"]["metrics"] = [{"key": "request_gauge", "type": "GAUGE", "value": 100}]
    got = send(protocol, server, pb, body)["meta"]
    assert [m["key"] for m in got["metrics"]] == ["request_gauge"]
    del body["meta"]["metrics"]
    assert "metrics" not in send(protocol, server, pb, body)["meta"]
    assert "kinds_calls_total" in httpx.get(server.url + "/metrics").text


def test_a_form_to_predict_raw_with_a_status(serve: Any) -> None:
    server = serve("seldon_wire_models.py:RawStatus")
    r = httpx.post(
        server.url + "/predict",
        files={"jsonData": (None, '{"code": 400}'), "meta": (None, '{"puid": "1234"}')},
    )
    assert r.status_code == 400 and r.json()["status"]["info"] == "as asked"


# -- metadata --------------------------------------------------------------------------------


def test_model_metadata_env_over_init_metadata(serve: Any, pb: Any) -> None:
    env = {"MODEL_METADATA": "platform: sklearn\ncustom:\n  team: ml\nversions: [v9]\n"}
    server = serve("seldon_wire_models.py:WithMetadata", env=env)
    m = httpx.get(server.url + "/metadata").json()
    assert m["versions"] == ["v9"]  # the variable wins over init_metadata()
    assert m["platform"] == "sklearn" and m["custom"] == {"team": "ml"}
    assert m["inputs"] == [{"messagetype": "ndarray"}]
    with server.channel() as ch:
        md = pb.grpc.ModelStub(ch).Metadata(empty_pb2.Empty(), timeout=10)
        assert list(md.versions) == ["v9"] and md.platform == "sklearn"
        assert dict(md.custom) == {"team": "ml"}  # as REST keeps it


def test_invalid_metadata_serves_and_answers_500_on_metadata(serve: Any, pb: Any) -> None:
    server = serve("seldon_wire_models.py:BadMetadata")
    r = httpx.get(server.url + "/metadata")
    assert r.status_code == 500
    status = r.json()["status"]
    # The wrapper's words exactly; what is wrong is in the log.
    assert status == {
        "code": -1,
        "info": "Model metadata unavailable",
        "reason": "MICROSERVICE_BAD_METADATA",
        "status": 1,
    }
    assert "invalid model metadata" in server.log() and "inputs" in server.log()
    assert rest(server.url, {"data": {"ndarray": [[1]]}}).status_code == 200  # still serving
    with server.channel() as ch, pytest.raises(grpc.RpcError) as err:
        pb.grpc.ModelStub(ch).Metadata(empty_pb2.Empty(), timeout=10)
    assert err.value.code() == grpc.StatusCode.INTERNAL
    assert "Model metadata unavailable" in (err.value.details() or "")
    bad_env = serve("seldon_wire_models.py:WithMetadata", env={"MODEL_METADATA": "colour: red"})
    r = httpx.get(bad_env.url + "/metadata")
    assert r.status_code == 500 and "colour" in bad_env.log()


# -- /seldon.json ----------------------------------------------------------------------------


def test_seldon_json_describes_the_routes(kinds: Any) -> None:
    r = httpx.get(kinds.url + "/seldon.json")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    doc = r.json()
    assert doc["openapi"].startswith("3.")
    for path in ("/api/v1.0/predictions", "/api/v1.0/feedback", "/health/status", "/metadata"):
        assert path in doc["paths"], path
    assert "multipart/form-data" in doc["paths"]["/predict"]["post"]["requestBody"]["content"]


# -- the metrics port ------------------------------------------------------------------------


def test_metrics_port_as_seldons_operator_scrapes_it(serve: Any) -> None:
    port = free_port()
    server = serve(
        "seldon_wire_models.py:Kinds",
        "--workers",
        "2",
        env={
            "PREDICTIVE_UNIT_METRICS_SERVICE_PORT": str(port),
            "PREDICTIVE_UNIT_METRICS_ENDPOINT": "/prometheus",
        },
    )
    for _ in range(6):
        assert rest(server.url, asking("array", data={"ndarray": [[1]]})).status_code == 200
    metrics = f"http://127.0.0.1:{port}"
    # Whichever worker answers, it counts every worker's requests (shared memory).
    for _ in range(4):
        text = httpx.get(metrics + "/prometheus").text
        assert "kinds_calls_total 6" in text
    r = httpx.get(metrics + PREDICT)
    assert r.status_code == 404 and "only the metrics" in r.json()["status"]["info"]
    assert httpx.post(metrics + "/prometheus").status_code == 405
    assert f"metrics http://127.0.0.1:{port}/prometheus" in server.log()


def test_no_metrics_port_unless_asked(kinds: Any) -> None:
    assert "metrics http://" not in kinds.log()


# seldon-core 1.18's metadata tests' cases, valid and invalid, against inferwire's check.
VALID_METADATA = [
    {},
    {"inputs": []},
    *(
        {"inputs": [{"messagetype": k}], "outputs": [{"messagetype": k}], "custom": {"a": "b"}}
        for k in ("tensor", "ndarray", "tftensor", "jsonData", "binData", "strData", "mine")
    ),
    {"inputs": [{"messagetype": "tensor", "schema": {"names": ["a"], "shape": [2, 2]}}]},
    {"inputs": [{"messagetype": "custom_data", "schema": {"names": ["a"], "shape": [1]}}]},
    {"inputs": [{"messagetype": "jsonData", "schema": {"type": "object"}}]},
    {"inputs": [{"datatype": "BYTES", "name": "input", "shape": [1, 4]}]},
    {"inputs": [{"datatype": "FP32", "name": "x", "shape": [1]}, {"messagetype": "jsonData"}]},
]
INVALID_METADATA = [
    {"inputs": {}},
    {"inputs": "some string"},
    {"inputs": ["some string in array"]},
    {"inputs": [{"messagetype": "tensor", "schema": {"custom-field": "x"}}]},
    {"inputs": [{"messagetype": "jsonData", "invalid": "field"}]},
    {"inputs": [{"messagetype": "jsonData", "schema": "some string"}]},
    {"inputs": [{"messagetype": "strData", "invalid": "field"}]},
    {"inputs": [{"messagetype": "binData", "schema": {}}]},
    {"inputs": [{"name": "t", "datatype": "data-type", "shape": [1, 2]}]},
    {"versions": "v1"},
    {"versions": [1]},
    {"custom": {"a": 1}},
    {"colour": "red"},
]


@pytest.mark.parametrize("meta", VALID_METADATA)
def test_metadata_seldon_accepts(meta: dict[str, Any]) -> None:
    from inferwire.seldon import metadata_problem

    assert metadata_problem(meta) is None


@pytest.mark.parametrize("meta", INVALID_METADATA)
def test_metadata_seldon_refuses(meta: dict[str, Any]) -> None:
    from inferwire.seldon import metadata_problem

    problem = metadata_problem(meta)
    assert problem is not None and next(iter(meta)) in problem


def test_predict_raw_reply_metrics_are_exported(serve: Any, pb: Any) -> None:
    server = serve("seldon_wire_models.py:RawMetrics")
    for protocol in ("rest", "grpc"):
        got = send(protocol, server, pb, {"data": {"ndarray": [[0]]}})
        assert [m["key"] for m in got["meta"]["metrics"]] == ["raw_gauge", "raw_calls"]
    text = httpx.get(server.url + "/metrics").text
    assert "raw_gauge 5" in text
    assert "raw_calls_total 2" in text
