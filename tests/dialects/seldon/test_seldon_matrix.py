"""Every payload kind × REST and gRPC × predict and predict_raw, against real servers."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest
from seldon_client import send, tftensor, to_numpy

ARRAY = np.arange(6, dtype=np.float64).reshape(2, 3) * 1.5
PAYLOADS: dict[str, dict[str, Any]] = {
    "ndarray": {"data": {"names": ["a", "b", "c"], "ndarray": ARRAY.tolist()}},
    "tensor": {
        "data": {
            "names": ["a", "b", "c"],
            "tensor": {"shape": [2, 3], "values": ARRAY.ravel().tolist()},
        }
    },
    "tftensor": {"data": {"names": ["a", "b", "c"], "tftensor": tftensor(ARRAY)}},
    "binData": {"binData": base64.b64encode(b"\x00\x01\xffbinary").decode()},
    "strData": {"strData": "hello, inferwire ✓"},
    "jsonData": {"jsonData": {"a": [1, 2], "b": {"c": "d"}, "e": None}},
}
PROTOCOLS = ["rest", "grpc"]


@pytest.fixture(scope="module")
def echo(serve: Any) -> Any:
    return serve("models.py:Echo", "--model-name", "classifier", "--model-image", "seldonio/echo:1")


@pytest.fixture(scope="module")
def echo_raw(serve: Any) -> Any:
    return serve("models.py:EchoRaw")


def assert_same_payload(sent: dict[str, Any], got: dict[str, Any], names: list[str] | None) -> None:
    kind = next(k for k in ("data", "binData", "strData", "jsonData") if k in sent)
    assert kind in got, got
    if kind != "data":
        assert got[kind] == sent[kind]
        return
    encoding = next(k for k in ("ndarray", "tensor", "tftensor") if k in sent["data"])
    assert encoding in got["data"], f"reply encoding differs from {encoding}: {got}"
    np.testing.assert_array_equal(to_numpy(got["data"]), to_numpy(sent["data"]))
    if names is not None:
        assert got["data"].get("names", []) == names


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind", list(PAYLOADS))
def test_predict_replies_in_the_request_encoding(
    protocol: str, kind: str, echo: Any, pb: Any
) -> None:
    got = send(protocol, echo, pb, PAYLOADS[kind])
    # Seldon names 2-D results t:0..t:n when the model has no class_names.
    assert_same_payload(PAYLOADS[kind], got, ["t:0", "t:1", "t:2"])
    assert got["meta"]["requestPath"] == {"classifier": "seldonio/echo:1"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind", list(PAYLOADS))
def test_predict_raw_gets_the_whole_message(
    protocol: str, kind: str, echo_raw: Any, pb: Any
) -> None:
    got = send(protocol, echo_raw, pb, PAYLOADS[kind])
    assert_same_payload(PAYLOADS[kind], got, ["a", "b", "c"])


def test_predict_raw_dict_is_the_rest_json(echo_raw: Any) -> None:
    from seldon_client import rest

    body = {
        "data": {"names": ["x"], "ndarray": [[1, 2], [3, 4]]},
        "meta": {"puid": "p-1", "tags": {"k": "v"}},
    }
    assert rest(echo_raw.url, body).json() == body


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_notebook_payloads_100000_integers(protocol: str, serve: Any, pb: Any) -> None:
    server = serve("models.py:Noop", "--model-name", "classifier")
    vals = list(range(100_000))
    ints = np.array(vals, dtype=np.int64)
    bodies = {
        "ndarray": {"data": {"ndarray": [vals]}},
        "tensor": {"data": {"tensor": {"shape": [1, len(vals)], "values": vals}}},
        "tftensor": {"data": {"tftensor": tftensor(ints)}},
    }
    for encoding, body in bodies.items():
        got = send(protocol, server, pb, body)
        assert encoding in got["data"], got
        np.testing.assert_array_equal(to_numpy(got["data"]), [1])
        assert got["data"].get("names", []) == []
        assert got["meta"]["requestPath"] == {"classifier": "Noop"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_numbers_reach_the_model_as_numpy_without_python_lists(
    protocol: str, serve: Any, pb: Any
) -> None:
    server = serve("models.py:Types")
    cases = {
        "ndarray": (
            {"data": {"ndarray": [[1, 2], [3, 4]]}},
            "ndarray:int64:(2, 2)" if protocol == "rest" else "ndarray:float64:(2, 2)",
        ),
        "ndarray-float": ({"data": {"ndarray": [[1.5, 2]]}}, "ndarray:float64:(1, 2)"),
        "ndarray-bool": ({"data": {"ndarray": [True, False]}}, "ndarray:bool:(2,)"),
        "ndarray-strings": ({"data": {"ndarray": [["a", "b"]]}}, "ndarray:<U1:(1, 2)"),
        "tensor": (
            {"data": {"tensor": {"shape": [3], "values": [1, 2, 3]}}},
            "ndarray:int64:(3,)" if protocol == "rest" else "ndarray:float64:(3,)",
        ),
        "tftensor-f32": (
            {"data": {"tftensor": tftensor(np.ones((2, 2), np.float32))}},
            "ndarray:float32:(2, 2)",
        ),
        "tftensor-u8-typed": (
            {"data": {"tftensor": tftensor(np.array([1, 2], np.uint8), typed=True)}},
            "ndarray:uint8:(2,)",
        ),
        "binData": ({"binData": "AAE="}, "bytes::"),
        "strData": ({"strData": "s"}, "str::"),
        "jsonData": ({"jsonData": {"a": 1}}, "dict::"),
    }
    for name, (body, want) in cases.items():
        got = send(protocol, server, pb, body)
        assert got["strData"] == want, name


@pytest.mark.parametrize(
    "dtype",
    [
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool",
        "float16",
    ],
)
@pytest.mark.parametrize("typed", [False, True])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tftensor_every_dtype(dtype: str, typed: bool, protocol: str, echo: Any, pb: Any) -> None:
    arr = (np.arange(6) % 2 == 1) if dtype == "bool" else np.arange(6).astype(dtype)
    arr = arr.reshape(2, 3)
    got = send(protocol, echo, pb, {"data": {"tftensor": tftensor(arr, typed=typed)}})
    back = to_numpy(got["data"])
    assert back.dtype == arr.dtype
    np.testing.assert_array_equal(back, arr)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mode", ["numpy", "list"])
def test_predict_raw_arrays_are_numpy_or_lists(
    protocol: str, mode: str, serve: Any, pb: Any
) -> None:
    server = serve("models.py:RawTypes", "--raw-arrays", mode)
    got = send(protocol, server, pb, {"data": {"ndarray": [[1, 2], [3, 4]]}})["strData"]
    got_t = send(protocol, server, pb, {"data": {"tensor": {"shape": [2], "values": [5, 6]}}})[
        "strData"
    ]
    if mode == "numpy":
        dtype = "int64" if protocol == "rest" else "float64"
        assert (
            got.startswith(f"ndarray:{dtype}:") and got.endswith("[[1, 2], [3, 4]]")
        ) or got.endswith("[[1.0, 2.0], [3.0, 4.0]]")
        assert got_t.startswith("ndarray:")
    else:
        assert got.startswith("list::")
        assert got_t.startswith("list::")
