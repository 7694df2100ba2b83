"""The Open Inference Protocol (V2) over REST and gRPC, driven by tritonclient (HTTP with
and without the binary extension, gRPC with raw contents) and by plain httpx and grpcio
(JSON, typed contents), for every datatype; requested outputs; errors."""

from __future__ import annotations

import json
import struct
from typing import Any

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from conftest import Served
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

NUMERIC = [
    np.bool_,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.float16,
    np.float32,
    np.float64,
]


@pytest.fixture(scope="module")
def echo(serve: Any) -> Served:
    return serve("models:Echo", "--model-name", "echo", "--model-version", "3")


@pytest.fixture(scope="module")
def two(serve: Any) -> Served:
    return serve("models:TwoInputs", "--model-name", "two")


def sample(dtype: Any, utf8: bool = False) -> np.ndarray:
    if dtype is np.bool_:
        return np.array([[True, False, True], [False, False, True]])
    if dtype is object:
        odd = b"\x00\x01" if utf8 else b"\x00\xff"
        return np.array([[b"ab", b"", "ü".encode()], [b"x" * 10, odd, b"z"]], dtype=object)
    info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else None
    if info is not None:
        return np.array([[info.min, 0, 1], [2, 3, info.max]], dtype=dtype)
    return np.array([[-1.5, 0.0, 2.25], [1e3, -0.125, 7.0]], dtype=dtype)


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
@pytest.mark.parametrize("dtype", [*NUMERIC, object], ids=lambda d: np.dtype(d).name)
def test_tritonclient_http_every_datatype(echo: Served, dtype: Any, binary: bool) -> None:
    arr = sample(dtype, utf8=not binary)  # JSON carries BYTES as UTF-8 strings
    client = httpclient.InferenceServerClient(url=f"127.0.0.1:{echo.http_port}")
    inp = httpclient.InferInput("x", list(arr.shape), np_to_triton_dtype(arr.dtype))
    inp.set_data_from_numpy(arr, binary_data=binary)
    out = httpclient.InferRequestedOutput("y", binary_data=binary)
    res = client.infer("echo", [inp], outputs=[out], request_id="r-1")
    got = res.as_numpy("y")
    assert res.get_response()["id"] == "r-1"
    assert res.get_output("y")["datatype"] == np_to_triton_dtype(arr.dtype)
    if dtype is object:
        # tritonclient gives BYTES read from JSON back as str, from binary as bytes.
        want = [[b.decode() for b in row] for row in arr.tolist()] if not binary else arr.tolist()
        assert got.tolist() == want
    else:
        assert got.dtype == arr.dtype
        np.testing.assert_array_equal(got, arr)


def test_non_utf8_bytes_in_json_get_a_clear_error(echo: Served) -> None:
    body = {"inputs": [{"name": "x", "shape": [1], "datatype": "BYTES", "data": ["ok"]}]}
    r = httpx.post(f"{echo.url}/v2/models/echo/infer", json=body)
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == ["ok"]
    client = httpclient.InferenceServerClient(url=f"127.0.0.1:{echo.http_port}")
    inp = httpclient.InferInput("x", [1], "BYTES")
    inp.set_data_from_numpy(np.array([b"\xff"], dtype=object), binary_data=True)
    with pytest.raises(InferenceServerException) as e:
        client.infer(
            "echo", [inp], outputs=[httpclient.InferRequestedOutput("y", binary_data=False)]
        )
    assert "not UTF-8" in str(e.value) and "binary_data" in str(e.value)


@pytest.mark.parametrize("dtype", [*NUMERIC, object], ids=lambda d: np.dtype(d).name)
def test_tritonclient_grpc_every_datatype(echo: Served, dtype: Any) -> None:
    arr = sample(dtype)
    client = grpcclient.InferenceServerClient(url=echo.grpc_target)
    inp = grpcclient.InferInput("x", list(arr.shape), np_to_triton_dtype(arr.dtype))
    inp.set_data_from_numpy(arr)  # tritonclient sends raw_input_contents
    res = client.infer("echo", [inp], outputs=[grpcclient.InferRequestedOutput("y")])
    got = res.as_numpy("y")
    if dtype is object:
        assert got.tolist() == arr.tolist()
    else:
        assert got.dtype == arr.dtype
        np.testing.assert_array_equal(got, arr)


def test_bf16_reaches_the_model_as_float32(echo: Served) -> None:
    import ml_dtypes

    arr = np.array([1.5, -2.0, 0.0078125], dtype=np.float32)  # exact in bfloat16
    client = httpclient.InferenceServerClient(url=f"127.0.0.1:{echo.http_port}")
    inp = httpclient.InferInput("x", [3], "BF16")
    inp.set_data_from_numpy(arr.astype(ml_dtypes.bfloat16), binary_data=True)
    res = client.infer("echo", [inp])
    assert res.get_output("output-0")["datatype"] == "FP32"
    np.testing.assert_array_equal(res.as_numpy("output-0"), arr)
    body = {"inputs": [{"name": "x", "shape": [3], "datatype": "BF16", "data": arr.tolist()}]}
    r = httpx.post(f"{echo.url}/v2/models/echo/infer", json=body)
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == arr.tolist()


def test_typed_grpc_contents_with_plain_grpcio(echo: Served) -> None:
    # Triton's own compiled protos (shipped in tritonclient), driven with grpcio directly:
    # typed contents, which tritonclient itself never sends.
    from tritonclient.grpc import service_pb2 as v2
    from tritonclient.grpc import service_pb2_grpc

    with echo.channel() as ch:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(ch)
        req = v2.ModelInferRequest(model_name="echo", model_version="3", id="t")
        req.inputs.add(
            name="x",
            datatype="INT16",
            shape=[2, 2],
            contents=v2.InferTensorContents(int_contents=[1, -2, 3, 32767]),
        )
        reply = stub.ModelInfer(req)
        assert reply.model_name == "echo" and reply.model_version == "3" and reply.id == "t"
        (out,) = reply.outputs
        assert (out.name, out.datatype, list(out.shape)) == ("output-0", "INT16", [2, 2])
        # Typed in, typed out.
        assert list(out.contents.int_contents) == [1, -2, 3, 32767]
        assert not reply.raw_output_contents
        assert stub.ServerLive(v2.ServerLiveRequest()).live
        assert stub.ServerReady(v2.ServerReadyRequest()).ready
        assert stub.ModelReady(v2.ModelReadyRequest(name="echo")).ready
        assert stub.ServerMetadata(v2.ServerMetadataRequest()).name == "inferwire"
        meta = stub.ModelMetadata(v2.ModelMetadataRequest(name="echo"))
        assert meta.name == "echo" and list(meta.versions) == ["3"]
        bad = v2.ModelInferRequest(model_name="echo")
        bad.inputs.add(
            name="x",
            datatype="INT8",
            shape=[1],
            contents=v2.InferTensorContents(int_contents=[300]),
        )
        with pytest.raises(grpc.RpcError) as e:
            stub.ModelInfer(bad)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "300 does not fit in INT8" in (e.value.details() or "")
        with pytest.raises(grpc.RpcError) as e:
            stub.ModelInfer(v2.ModelInferRequest(model_name="nope"))
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.RpcError) as e:
            stub.ModelMetadata(v2.ModelMetadataRequest(name="echo", version="9"))
        assert e.value.code() == grpc.StatusCode.NOT_FOUND and '"3"' in (e.value.details() or "")


def test_several_inputs_and_requested_outputs(two: Served) -> None:
    a = np.array([1.0, 2.0])
    b = np.array([0.5, 0.25])
    body = {
        "id": "q",
        "inputs": [
            {"name": "a", "shape": [2], "datatype": "FP64", "data": a.tolist()},
            {"name": "b", "shape": [2], "datatype": "FP64", "data": b.tolist()},
        ],
        "outputs": [{"name": "diff"}, {"name": "names"}],
    }
    r = httpx.post(f"{two.url}/v2/models/two/infer", json=body)
    assert r.status_code == 200, r.text
    outs = {o["name"]: o for o in r.json()["outputs"]}
    assert list(outs) == ["diff", "names"]  # in the order asked for, "sum" left out
    assert outs["diff"]["data"] == (a - b).tolist()
    assert outs["names"]["datatype"] == "BYTES" and outs["names"]["data"] == ["a", "b"]
    body["outputs"] = [{"name": "product"}]
    r = httpx.post(f"{two.url}/v2/models/two/infer", json=body)
    assert r.status_code == 400
    assert 'no output named "product"' in r.json()["error"]
    # Everything, when no outputs are named.
    del body["outputs"]
    r = httpx.post(f"{two.url}/v2/models/two/infer", json=body)
    assert [o["name"] for o in r.json()["outputs"]] == ["sum", "diff", "names"]


def test_health_and_metadata_routes(echo: Served) -> None:
    client = httpclient.InferenceServerClient(url=f"127.0.0.1:{echo.http_port}")
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("echo") and client.is_model_ready("echo", "3")
    assert not client.is_model_ready("nope")
    assert client.get_server_metadata()["name"] == "inferwire"
    meta = client.get_model_metadata("echo")
    assert meta["name"] == "echo" and meta["versions"] == ["3"]
    r = httpx.get(f"{echo.url}/v2/models/echo/versions/2")
    assert r.status_code == 404 and "no version" in r.json()["error"]
    r = httpx.get(f"{echo.url}/v2/models/echo/infer")
    assert r.status_code == 405
    r = httpx.get(f"{echo.url}/v2/nothing")
    assert r.status_code == 404 and "error" in r.json()


@pytest.mark.parametrize(
    ("body", "headers", "status", "message"),
    [
        (
            {"inputs": [{"name": "x", "shape": [2], "datatype": "FP8", "data": [1, 2]}]},
            {},
            400,
            "inputs[0].datatype",
        ),
        (
            {"inputs": [{"name": "x", "shape": [3], "datatype": "INT32", "data": [1, 2]}]},
            {},
            400,
            "2 values for shape [3]",
        ),
        (
            {"inputs": [{"name": "x", "shape": [1], "datatype": "UINT8", "data": [-1]}]},
            {},
            400,
            "-1 does not fit in UINT8",
        ),
        (
            {"inputs": [{"name": "x", "datatype": "INT32", "data": [1]}]},
            {},
            400,
            "missing field `shape`",
        ),
        (b"{not json", {}, 400, "invalid JSON"),
        (
            b'{"inputs":[]}',
            {"Inference-Header-Content-Length": "99"},
            400,
            "Inference-Header-Content-Length is 99",
        ),
        (b'{"inputs":[]}', {"Inference-Header-Content-Length": "abc"}, 400, "is not a byte count"),
    ],
)
def test_bad_requests_get_clear_errors(
    echo: Served, body: Any, headers: dict[str, str], status: int, message: str
) -> None:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = httpx.post(f"{echo.url}/v2/models/echo/infer", content=content, headers=headers)
    assert r.status_code == status, r.text
    assert message in r.json()["error"], r.json()
    # The server keeps serving.
    ok = {"inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [7]}]}
    assert httpx.post(f"{echo.url}/v2/models/echo/infer", json=ok).status_code == 200


def test_binary_lengths_that_overrun_are_refused(echo: Served) -> None:
    header = {
        "inputs": [
            {"name": "x", "shape": [1], "datatype": "BYTES", "parameters": {"binary_data_size": 6}}
        ]
    }
    head = json.dumps(header).encode()
    # The element claims 100 bytes; 2 follow.
    blob = struct.pack("<I", 100) + b"ab"
    r = httpx.post(
        f"{echo.url}/v2/models/echo/infer",
        content=head + blob,
        headers={"Inference-Header-Content-Length": str(len(head))},
    )
    assert r.status_code == 400 and "says it has 100 bytes but only 2 remain" in r.json()["error"]
    # binary_data_size past the end of the body.
    header["inputs"][0]["parameters"]["binary_data_size"] = 60
    head = json.dumps(header).encode()
    r = httpx.post(
        f"{echo.url}/v2/models/echo/infer",
        content=head + blob,
        headers={"Inference-Header-Content-Length": str(len(head))},
    )
    assert r.status_code == 400 and "binary_data_size: 60 bytes" in r.json()["error"]


def test_v2_requests_are_counted_in_metrics(echo: Served) -> None:
    ok = {"inputs": [{"name": "x", "shape": [1], "datatype": "INT32", "data": [7]}]}
    assert httpx.post(f"{echo.url}/v2/models/echo/infer", json=ok).status_code == 200
    text = httpx.get(f"{echo.url}/metrics").text
    assert 'protocol="rest",route="infer",encoding="json",code="200"' in text
    assert 'protocol="grpc",route="infer",encoding="raw",code="OK"' in text


@pytest.fixture(scope="module")
def describe(serve: Any) -> Served:
    return serve("models:Describe", "--model-name", "describe")


def test_content_types_like_mlserver(describe: Served) -> None:
    url = f"{describe.url}/v2/models/describe/infer"

    def kind(inp: dict[str, Any], **params: Any) -> Any:
        body: dict[str, Any] = {"inputs": [inp]}
        if params:
            body["parameters"] = params
        r = httpx.post(url, json=body)
        assert r.status_code == 200, r.text
        return r.json()

    plain = {"name": "x", "shape": [2], "datatype": "FP32", "data": [1, 2]}
    assert kind(plain)["outputs"][0]["data"] == ["ndarray:float32"]
    text = {"name": "t", "shape": [2], "datatype": "BYTES", "data": ["hé", "b"],
            "parameters": {"content_type": "str"}}  # fmt: skip
    assert kind(text)["outputs"][0]["data"] == ["list:str:'hé'"]
    b64 = {"name": "t", "shape": [1], "datatype": "BYTES", "data": ["aGk="],
           "parameters": {"content_type": "base64"}}  # fmt: skip
    assert kind(b64)["outputs"][0]["data"] == ["list:bytes:b'hi'"]
    # A data frame, column by column, and one back.
    body = {
        "parameters": {"content_type": "pd"},
        "inputs": [
            {"name": "Number", "shape": [3], "datatype": "INT64", "data": [1, 2, 3]},
            {"name": "Start", "shape": [3, 1], "datatype": "FP64", "data": [0.5, 1.5, 2.5]},
            {"name": "Label", "shape": [3], "datatype": "BYTES", "data": ["a", "b", "c"]},
        ],
    }
    r = httpx.post(url, json=body)
    assert r.status_code == 200, r.text
    outs = {o["name"]: o for o in r.json()["outputs"]}
    assert list(outs) == ["Number", "Start", "Label", "n_cols"]
    assert outs["Number"]["data"] == [1, 2, 3] and outs["Start"]["data"] == [0.5, 1.5, 2.5]
    assert outs["Label"]["datatype"] == "BYTES" and outs["Label"]["data"] == ["a", "b", "c"]
    assert outs["n_cols"]["data"] == [3, 3, 3]


@pytest.mark.parametrize(
    ("params", "inp_params", "message"),
    [
        ({"content_type": "xml"}, {}, "parameters.content_type: 'xml' is not one of np, pd, dict"),
        ({}, {"content_type": "pd"}, "inputs[x].parameters.content_type: 'pd'"),
        ({}, {"content_type": "base64"}, "not base64"),
    ],
)
def test_bad_content_types_are_400(
    describe: Served, params: dict[str, Any], inp_params: dict[str, Any], message: str
) -> None:
    inp = {
        "name": "x",
        "shape": [1],
        "datatype": "BYTES",
        "data": ["%%%"],
        "parameters": inp_params,
    }
    r = httpx.post(
        f"{describe.url}/v2/models/describe/infer", json={"inputs": [inp], "parameters": params}
    )
    assert r.status_code == 400 and message in r.json()["error"], r.text
