"""Classes written for seldon-core 1.x's wrapper, unchanged: subclasses of
``SeldonComponent`` (whose stubs raise SeldonNotImplementedError, which Seldon treats as
"not defined") and exceptions that carry an HTTP status, over REST and gRPC.

seldon_core cannot be imported here (it needs Python 3.10; the tests run on 3.11), so
tests/seldon_components.py defines stand-ins with seldon-core 1.18's names and behaviour."""

from __future__ import annotations

from typing import Any

import grpc
import httpx
import pytest
from seldon_client import grpc_call, rest, send


def body(*row: float) -> dict[str, Any]:
    return {"data": {"ndarray": [list(row)]}}


@pytest.fixture(scope="module")
def predict_only(serve: Any) -> Any:
    return serve("seldon_components.py:PredictOnly")


@pytest.fixture(scope="module")
def raising(serve: Any) -> Any:
    return serve("seldon_components.py:Raising")


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_a_subclass_defining_only_predict_serves(protocol: str, predict_only: Any, pb: Any) -> None:
    got = send(protocol, predict_only, pb, {"meta": {"tags": {"a": 1}}, **body(1, 2)})
    assert got["data"]["ndarray"] == [[2.0, 4.0]]
    # class_names falls back to t:0.., tags to none of the model's own.
    assert got["data"]["names"] == ["t:0", "t:1"]
    assert got["meta"]["tags"] == {"a": 1}
    assert "metrics" not in got["meta"] or got["meta"]["metrics"] == []


def test_the_stubs_fall_back_for_metadata_health_and_feedback(predict_only: Any) -> None:
    meta = httpx.get(predict_only.url + "/metadata").json()
    assert meta["name"] and meta["inputs"] == [] and meta["outputs"] == []
    health = httpx.get(predict_only.url + "/health/status")
    assert health.status_code == 200, health.text
    fb = rest(predict_only.url, {"request": body(1), "reward": 1.0}, path="/api/v1.0/feedback")
    assert fb.status_code == 200, fb.text


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_a_subclass_defining_only_predict_raw_serves(protocol: str, serve: Any, pb: Any) -> None:
    server = serve("seldon_components.py:RawOnly")
    got = send(protocol, server, pb, body(1))
    assert got["jsonData"] == {"keys": ["data"]}


def test_an_override_that_raises_not_implemented_falls_back(serve: Any) -> None:
    server = serve("seldon_components.py:TagsViaSuper")
    for _ in range(2):  # the second call skips the method it learnt is not there
        r = rest(server.url, body(1, 2))
        assert r.status_code == 200, r.text
        assert r.json()["data"]["ndarray"] == [[2.0, 3.0]]
        assert "tags" not in r.json().get("meta", {})


def test_seldon_microservice_exception_answers_its_status_and_body(raising: Any) -> None:
    r = rest(raising.url, body(1))
    assert r.status_code == 400
    assert r.json() == {
        "status": {
            "status": 1,
            "info": "no negative ages",
            "code": -1,
            "reason": "MICROSERVICE_BAD_DATA",
        }
    }
    r = rest(raising.url, body(5))
    assert r.status_code == 503
    assert r.json()["status"]["reason"] == "MICROSERVICE_UNAVAILABLE"


def test_a_user_exception_with_status_code_and_to_dict(raising: Any) -> None:
    r = rest(raising.url, body(2))
    assert r.status_code == 404
    assert r.json() == {"status": {"status": 404, "message": "no such customer", "app_code": 1234}}


@pytest.mark.parametrize(("kind", "code"), [(1, 400), (2, 404), (5, 503)])
def test_the_status_reaches_the_v2_route(raising: Any, kind: int, code: int) -> None:
    v2 = {"inputs": [{"name": "x", "shape": [1, 1], "datatype": "FP64", "data": [kind]}]}
    r = httpx.post(raising.url + "/v2/models/Raising/infer", json=v2, timeout=30)
    assert r.status_code == code, r.text
    assert "error" in r.json()


@pytest.mark.parametrize("kind", [3, 4, 6])
def test_a_status_outside_4xx_5xx_is_500(raising: Any, kind: int) -> None:
    r = rest(raising.url, body(kind))
    assert r.status_code == 500, r.text
    assert r.json()["status"]["reason"] == "MODEL_ERROR"


@pytest.mark.parametrize(
    ("kind", "code", "text"),
    [
        (1, grpc.StatusCode.INVALID_ARGUMENT, "no negative ages"),
        (2, grpc.StatusCode.NOT_FOUND, "no such customer"),
        (4, grpc.StatusCode.INTERNAL, "off the scale"),
        (5, grpc.StatusCode.UNAVAILABLE, "warming up"),
        (6, grpc.StatusCode.INTERNAL, "ValueError: plain"),
    ],
)
def test_grpc_answers_the_nearest_code(
    raising: Any, pb: Any, kind: int, code: grpc.StatusCode, text: str
) -> None:
    with raising.channel() as ch, pytest.raises(grpc.RpcError) as err:
        grpc_call(ch, pb, body(kind))
    assert err.value.code() == code
    assert text in err.value.details()


def test_the_server_keeps_serving(raising: Any, pb: Any) -> None:
    for kind in (1, 2, 3, 4, 5, 6):
        rest(raising.url, body(kind))
    assert send("rest", raising, pb, body(7))["data"]["ndarray"] == [[7.0]]
    assert send("grpc", raising, pb, body(8))["data"]["ndarray"] == [[8.0]]
    assert httpx.get(raising.url + "/health/ping").status_code == 200
