"""seldon-core's own client against inferwire: SeldonClient (seldon-core 1.18.2) runs in
a Python 3.10 virtualenv that scripts/seldon-client-env.sh makes (once; cached after),
calls a real server in every mode it has (microservice, and the ambassador, istio and
seldon gateways over inferwire's ingress paths, REST and gRPC) with every payload it can
build without tensorflow, and prints what it got; these tests assert on that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from client_venv import client_venv, run_client

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
TRANSPORTS = ("rest", "grpc")


@pytest.fixture(scope="module")
def client_python() -> str:
    return client_venv("seldon-client-env.sh")


def run_calls(python: str, server: Any, group: str) -> dict[str, Any]:
    port = server.grpc_target.rsplit(":", 1)[1]
    script = HERE / "seldon_client_calls.py"
    return run_client(python, script, str(server.http_port), port, group)


@pytest.fixture(scope="module")
def calls(client_python: str, serve: Any) -> dict[str, Any]:
    server = serve("seldon_models.py:Doubler")
    return run_calls(client_python, server, "predict")


def ok(calls: dict[str, Any], name: str) -> dict[str, Any]:
    got = calls[name]
    assert got["success"], f"{name}: {got['msg']}\n{got.get('trace', '')}"
    response: dict[str, Any] = got["response"]
    assert "status" not in response or response["status"].get("status") != "FAILURE", response
    return response


def array(data: dict[str, Any]) -> np.ndarray:
    if "ndarray" in data:
        return np.array(data["ndarray"])
    t = data["tensor"]
    return np.array(t["values"]).reshape(t["shape"])


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("gateway", ["ambassador", "istio", "seldon"])
@pytest.mark.parametrize("payload", ["ndarray", "tensor"])
def test_gateway_predict(calls: dict[str, Any], transport: str, gateway: str, payload: str) -> None:
    r = ok(calls, f"{transport}-{gateway}-{payload}")
    assert payload in r["data"]  # the reply keeps the request's encoding
    assert array(r["data"]).tolist() == [[2.0, 4.0]]
    assert r["data"]["names"] == ["t:0", "t:1"]
    assert r["meta"]["tags"] == {"model": "doubler"}
    assert any(m["key"] == "doubler_calls" for m in r["meta"]["metrics"])
    # Through the ingress (a /seldon/... path, a `seldon` gRPC header), a puid is made as
    # Seldon's executor makes one; the "seldon" gateway calls the model's own routes.
    if gateway != "seldon":
        assert len(r["meta"]["puid"]) == 36, r["meta"]
    else:
        assert "puid" not in r["meta"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_gateway_without_namespace(calls: dict[str, Any], transport: str) -> None:
    r = ok(calls, f"{transport}-no-namespace")
    assert r["data"]["ndarray"] == [[2.0, 4.0]]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_str_bin_and_json_data(calls: dict[str, Any], transport: str) -> None:
    assert ok(calls, f"{transport}-str")["strData"] == "HELLO"
    import base64

    assert base64.b64decode(ok(calls, f"{transport}-bin")["binData"]) == b"\xff\x01\x00"
    r = ok(calls, f"{transport}-json")
    assert r["jsonData"]["got"] == {"a": [1.0, 2.0]}
    # (SeldonClient drops `meta` for json_data: only the model's tags.)
    assert r["meta"]["tags"] == {"model": "doubler"}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_client_meta_tags_are_merged(calls: dict[str, Any], transport: str) -> None:
    # SeldonClient sends `meta` as the request's tags; the reply has them with the model's.
    r = ok(calls, f"{transport}-meta")
    assert r["meta"]["tags"] == {"model": "doubler", "team": "x"}
    assert r["data"]["tensor"]["values"] == [2.0, 4.0]  # SeldonClient's default: tensor


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_seldon_response_runtime_tags_and_metrics(calls: dict[str, Any], transport: str) -> None:
    r = ok(calls, f"{transport}-runtime")
    # An array answered to a jsonData request is a tensor, as Seldon's wrapper encodes it.
    assert r["data"]["tensor"] == {"shape": [1, 2], "values": [1.0, 2.0]}
    assert r["meta"]["tags"] == {"model": "doubler", "runtime": "yes"}
    keys = [m["key"] for m in r["meta"]["metrics"]]
    assert keys == ["doubler_calls", "doubler_runtime"]
    assert r["meta"]["metrics"][1]["type"] == "GAUGE" and r["meta"]["metrics"][1]["value"] == 7


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_raw_data_tftensor_and_puid(calls: dict[str, Any], transport: str) -> None:
    r = ok(calls, f"{transport}-raw-tftensor")
    tf = r["data"]["tftensor"]
    assert tf["dtype"] == "DT_DOUBLE"
    assert [d["size"] for d in tf["tensorShape"]["dim"]] == ["1", "2"]
    import base64

    assert np.frombuffer(base64.b64decode(tf["tensorContent"])).tolist() == [2.0, 4.0]
    r = ok(calls, f"{transport}-raw-puid")
    assert r["meta"]["puid"] == "given-1"  # a given puid is echoed
    assert r["data"]["ndarray"] == [[6, 8]] or r["data"]["ndarray"] == [[6.0, 8.0]]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_microservice_predict(calls: dict[str, Any], transport: str) -> None:
    for payload in ("ndarray", "tensor"):
        r = ok(calls, f"{transport}-micro-{payload}")
        assert payload in r["data"] and array(r["data"]).tolist() == [[2.0, 4.0]]
        assert "puid" not in r["meta"]  # the wrapper only echoes one
    assert ok(calls, f"{transport}-micro-str")["strData"] == "HI"
    assert ok(calls, f"{transport}-micro-bin")["binData"] == "YmE="  # b"ba"
    assert ok(calls, f"{transport}-micro-json")["jsonData"]["got"] == {"x": 1.0}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("gateway", ["ambassador", "seldon"])
def test_gateway_feedback(calls: dict[str, Any], transport: str, gateway: str) -> None:
    r = ok(calls, f"{transport}-{gateway}-feedback")
    reward, count = r["data"]["ndarray"]
    assert reward == 0.5 and count >= 1


def test_rest_microservice_feedback(calls: dict[str, Any]) -> None:
    reward, count = ok(calls, "rest-micro-feedback")["data"]["ndarray"]
    assert reward == 1.0 and count >= 1


def test_grpc_custom_data(calls: dict[str, Any]) -> None:
    # customData (a protobuf Any) reaches the model as its bytes; bytes answer as binData.
    import base64

    got = base64.b64decode(ok(calls, "grpc-custom")["binData"])
    assert b"opaque" in bytes(reversed(got))


def test_grpc_metadata_with_seldons_stubs(calls: dict[str, Any]) -> None:
    md = ok(calls, "grpc-metadata")
    assert md["name"] == "doubler" and md["versions"] == ["v1"] and md["platform"] == "seldon"
    assert md["inputs"] == [{"messagetype": "tensor", "schema": {"names": ["a", "b"]}}]


# -- the other component types -----------------------------------------------------------


@pytest.fixture(scope="module")
def component_calls(client_python: str, serve: Any) -> dict[str, Any]:
    server = serve("seldon_models.py:Component")
    return run_calls(client_python, server, "components")


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("transform-input", [[2.0, 3.0]]),
        ("transform-output", [[10.0, 20.0]]),
        # [1, 2] sums past 2: child 1, answered as [[1]].
        ("route", [[1]]),
    ],
)
def test_microservice_component_methods(
    component_calls: dict[str, Any], transport: str, method: str, expected: list[Any]
) -> None:
    r = ok(component_calls, f"{transport}-{method}")
    assert r["data"]["ndarray"] == expected


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_microservice_aggregate(component_calls: dict[str, Any], transport: str) -> None:
    # [1, 2] + [3, 6]
    r = ok(component_calls, f"{transport}-aggregate")
    assert r["data"]["ndarray"] == [[4.0, 8.0]]


def test_grpc_microservice_feedback(calls: dict[str, Any]) -> None:
    # SeldonClient sends it to seldon.protos.Generic/SendFeedback.
    reward, count = ok(calls, "grpc-micro-feedback")["data"]["ndarray"]
    assert reward == 1.0 and count >= 1
