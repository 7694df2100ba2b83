"""Bad input gets a clear 4xx / gRPC status naming the problem; the server keeps serving."""

from __future__ import annotations

from typing import Any

import grpc
import httpx
import numpy as np
import pytest
from seldon_client import grpc_call, rest, send

# A ragged list, so not a tensor: it would reach the model as nested lists.
DEEP = b'{"data": {"ndarray": ' + b"[" * 40 + b'1, "x"' + b"]" * 40 + b"}}"
BAD_JSON = [
    # (body, content type, expected status, text the message must contain)
    (b"", "application/json", 400, "empty body"),
    (b"{", "application/json", 400, "invalid JSON"),
    (b"[1, 2]", "application/json", 400, "must be a JSON object"),
    (b'{"data": {"ndarray": [1, 2}}', "application/json", 400, "invalid JSON"),
    (
        b'{"data": {"tensor": {"shape": [2, 2], "values": [1, 2, 3]}}}',
        "application/json",
        400,
        "data.tensor: shape [2, 2] needs 4 values but 3 were given",
    ),
    (
        b'{"data": {"tensor": {"shape": [1], "values": ["x"]}}}',
        "application/json",
        400,
        "data.tensor: values: must be a flat list of numbers",
    ),
    (
        b'{"data": {"tensor": {"shape": "1x2", "values": [1]}}}',
        "application/json",
        400,
        "data.tensor.shape",
    ),
    (b'{"data": {"tensor": {"shape": [-3], "values": [1]}}}', "application/json", 400, "negative"),
    (
        b'{"data": {"tensor": {"shape": [4294967296, 4294967296, 4294967296], "values": [1]}}}',
        "application/json",
        400,
        "limit",
    ),
    (
        b'{"data": {"tftensor": {"dtype": "DT_BANANA"}}}',
        "application/json",
        400,
        "data.tftensor.dtype: unknown dtype",
    ),
    (
        b'{"data": {"tftensor": {"dtype": "DT_COMPLEX64"}}}',
        "application/json",
        400,
        "not supported",
    ),
    (
        b'{"data": {"tftensor": {"dtype": "DT_FLOAT", "tensorShape": {"dim": [{"size": "99999999999999"}]}}}}',
        "application/json",
        400,
        "limit",
    ),
    (
        b'{"data": {"tftensor": {"dtype": "DT_INT64", "tensorShape": {"dim": [{"size": "3"}]}, "tensorContent": "AAAA"}}}',
        "application/json",
        400,
        "tensor_content",
    ),
    (
        b'{"data": {"ndarray": "nope"}}',
        "application/json",
        400,
        "data.ndarray: must be a (nested) list",
    ),
    (b'{"binData": "not base64!"}', "application/json", 400, "binData: invalid base64"),
    (b'{"strData": 5}', "application/json", 400, "strData"),
    (b'{"strData": "a", "jsonData": 1}', "application/json", 400, "only one of"),
    (b"<xml/>", "application/xml", 415, "unsupported Content-Type"),
    (DEEP, "application/json", 400, "nested deeper than 32"),
    (b"[" * 4000, "application/json", 400, ""),  # deep nesting in any JSON: no overflow
]


@pytest.fixture(scope="module")
def echo(serve: Any) -> Any:
    return serve("models.py:Echo", "--max-body-bytes", "4096", "--max-elements", "1000")


@pytest.mark.parametrize(
    ("body", "ctype", "status", "text"), BAD_JSON, ids=[c[3] for c in BAD_JSON]
)
def test_rest_bad_input(body: bytes, ctype: str, status: int, text: str, echo: Any) -> None:
    r = rest(echo.url, body, headers={"Content-Type": ctype})
    assert r.status_code == status, r.text
    failure = r.json()["status"]
    assert failure["status"] == "FAILURE"
    assert failure["code"] == status
    assert text in failure["info"], failure["info"]
    assert "Traceback" not in r.text
    # ... and the server still answers.
    assert rest(echo.url, {"strData": "still here"}).json()["strData"] == "still here"


def test_rest_body_over_the_limit_is_413(echo: Any) -> None:
    r = rest(echo.url, {"data": {"ndarray": list(range(2000))}})
    assert r.status_code == 413
    assert "larger than the limit of 4096 bytes" in r.json()["status"]["info"]


def test_rest_element_limit(echo: Any) -> None:
    r = rest(echo.url, {"data": {"ndarray": [0] * 1001}})
    assert r.status_code == 400
    assert "limit of 1000 elements" in r.json()["status"]["info"]


def test_unknown_route_and_method(echo: Any) -> None:
    r = httpx.get(echo.url + "/nope")
    assert r.status_code == 404
    assert "no route" in r.json()["status"]["info"]
    r = httpx.put(echo.url + "/api/v1.0/predictions")
    assert r.status_code == 405
    # GET takes the message in the `json` query parameter, as the Seldon wrapper does.
    r = httpx.get(echo.url + "/api/v1.0/predictions")
    assert r.status_code == 400 and "`json` query parameter" in r.json()["status"]["info"]
    r = httpx.get(
        echo.url + "/api/v1.0/predictions", params={"json": '{"data":{"ndarray":[[1,2]]}}'}
    )
    assert r.status_code == 200 and r.json()["data"]["ndarray"] == [[1, 2]]


def grpc_error(call: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as e:
        call()
    return e.value


def test_grpc_malformed_protobuf(echo: Any) -> None:
    with echo.channel() as ch:
        predict = ch.unary_unary("/seldon.protos.Seldon/Predict")
        err = grpc_error(lambda: predict(b"\x1a\x05\xff\xff", timeout=10))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "malformed protobuf SeldonMessage" in err.details()


GRPC_BAD = [
    (
        {"data": {"tensor": {"shape": [2, 2], "values": [1, 2, 3]}}},
        "data.tensor: shape [2, 2] needs 4 values",
    ),
    ({"data": {"tftensor": {"dtype": 999}}}, "data.tftensor: dtype: unknown DataType 999"),
    (
        {
            "data": {
                "tftensor": {
                    "dtype": "DT_INT64",
                    "tensorShape": {"dim": [{"size": "3"}]},
                    "tensorContent": "AAAA",
                }
            }
        },
        "tensor_content",
    ),
    ({"data": {"tensor": {"shape": [65536, 65536, 65536], "values": [1]}}}, "limit"),
]


@pytest.mark.parametrize(("body", "text"), GRPC_BAD, ids=[c[1] for c in GRPC_BAD])
def test_grpc_bad_input(body: dict[str, Any], text: str, echo: Any, pb: Any) -> None:
    with echo.channel() as ch:
        err = grpc_error(lambda: grpc_call(ch, pb, body))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err
        assert text in err.details()
        assert grpc_call(ch, pb, {"strData": "still here"})["strData"] == "still here"


def test_grpc_message_over_the_limit(echo: Any, pb: Any) -> None:
    with echo.channel() as ch:
        err = grpc_error(lambda: grpc_call(ch, pb, {"strData": "x" * 10_000}))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
        assert "too large" in err.details()


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_failing_model_gets_500_and_server_keeps_serving(
    protocol: str, serve: Any, pb: Any
) -> None:
    server = serve("models.py:Failing")
    for _ in range(3):
        if protocol == "rest":
            r = rest(server.url, {"data": {"ndarray": [1]}})
            assert r.status_code == 500
            assert r.json()["status"]["info"] == "ValueError: model exploded: bad luck"
            assert r.json()["status"]["reason"] == "MODEL_ERROR"
        else:
            with server.channel() as ch:
                err = grpc_error(lambda ch=ch: grpc_call(ch, pb, {"data": {"ndarray": [1]}}))
                assert err.code() == grpc.StatusCode.INTERNAL
                assert err.details() == "ValueError: model exploded: bad luck"
        assert send(protocol, server, pb, {"strData": "ok"})["strData"] == "fine"
    assert "model exploded" in server.log()  # the traceback is logged on the server side


@pytest.mark.parametrize("protocol", ["rest", "grpc"])
def test_model_can_reject_input_with_bad_request(protocol: str, serve: Any, pb: Any) -> None:
    server = serve("models.py:Rejecting")
    if protocol == "rest":
        r = rest(server.url, {"data": {"ndarray": [1]}})
        assert r.status_code == 400
        assert r.json()["status"]["info"] == "feature 'age' must be positive"
    else:
        with server.channel() as ch:
            err = grpc_error(lambda: grpc_call(ch, pb, {"data": {"ndarray": [1]}}))
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert err.details() == "feature 'age' must be positive"


def test_str_result_is_str_data_whatever_the_request_encoding(serve: Any) -> None:
    server = serve("models.py:Types")
    r = rest(server.url, {"data": {"tensor": {"shape": [1], "values": [1]}}})
    # Types returns a str: that becomes strData whatever the request encoding.
    assert r.status_code == 200 and "strData" in r.json()
    np.testing.assert_equal(r.json()["strData"], "ndarray:int64:(1,)")
