"""tritonclient and KServe-style clients pointed at inferwire, as a Triton user runs them:
every datatype through tritonclient's HTTP (binary and JSON) and gRPC clients, sync and
async; the compression options; server and model metadata, readiness, configuration and
statistics; error statuses; and the gRPC reply layout Triton's clients read."""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib
from typing import Any

import grpc
import httpx
import ml_dtypes
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as grpcaio
import tritonclient.http as httpclient
import tritonclient.http.aio as httpaio
from conftest import Served
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

MODEL = "ident"
LIMIT = 1024 * 1024  # --max-body-bytes for these servers

# One small array per V2 datatype, with values at the edges of each type's range.
ARRAYS: dict[str, np.ndarray] = {
    "BOOL": np.array([[True, False, True]]),
    "UINT8": np.array([[0, 1, 255]], np.uint8),
    "UINT16": np.array([[0, 1, 65535]], np.uint16),
    "UINT32": np.array([[0, 1, 2**32 - 1]], np.uint32),
    "UINT64": np.array([[0, 1, 2**64 - 1]], np.uint64),
    "INT8": np.array([[0, 1, 127]], np.int8),
    "INT16": np.array([[0, 1, 32767]], np.int16),
    "INT32": np.array([[0, 1, 2**31 - 1]], np.int32),
    "INT64": np.array([[0, 1, 2**63 - 1]], np.int64),
    "FP16": np.array([[0.5, 1.0, 65504.0]], np.float16),
    "BF16": np.array([[0.5, 1.0, 3.0e38]], ml_dtypes.bfloat16),
    "FP32": np.array([[0.5, 1.0, 3.4e38]], np.float32),
    "FP64": np.array([[0.5, 1.0, 1.7e308]], np.float64),
    "BYTES": np.array([[b"a", b"", "é".encode()]], dtype=np.object_),
}
# Datatypes tritonclient's HTTP client refuses to put in JSON (BF16 has no JSON form).
BINARY_ONLY = {"BF16"}
# numpy has no bfloat16: a Python model gets BF16 as float32 and answers FP32 (same values).
ANSWERED_AS = {"BF16": "FP32"}


@pytest.fixture(scope="module")
def srv(serve: Any) -> Served:
    return serve(
        "tritonmodels:Identity",
        "--model-name",
        MODEL,
        "--max-body-bytes",
        str(LIMIT),
    )


def http(s: Served) -> httpclient.InferenceServerClient:
    return httpclient.InferenceServerClient(url=f"127.0.0.1:{s.http_port}")


def grpcc(s: Served) -> grpcclient.InferenceServerClient:
    return grpcclient.InferenceServerClient(url=s.grpc_target)


def same(got: np.ndarray | None, want: np.ndarray) -> None:
    assert got is not None, "no such output"
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype == np.object_:
        # tritonclient.http hands BYTES sent as JSON back as str.
        as_bytes = [v.encode() if isinstance(v, str) else bytes(v) for v in got.ravel()]
        assert as_bytes == list(want.ravel())
    elif want.dtype == ml_dtypes.bfloat16:
        # tritonclient.http widens BF16 to float32; the values must be the same.
        assert np.array_equal(got.astype(np.float32), want.astype(np.float32))
    else:
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        assert np.array_equal(got, want)


def inputs(mod: Any, binary: bool = True) -> tuple[list[Any], list[Any]]:
    """Every datatype as one input each (``x_INT8``...), with the outputs asked for."""
    ins, outs = [], []
    for dt, a in ARRAYS.items():
        if not binary and dt in BINARY_ONLY:
            continue
        i = mod.InferInput(f"x_{dt}", list(a.shape), dt)
        if mod in (httpclient, httpaio):
            i.set_data_from_numpy(a, binary_data=binary)
            outs.append(mod.InferRequestedOutput(f"x_{dt}_out", binary_data=binary))
        else:
            i.set_data_from_numpy(a)
            outs.append(mod.InferRequestedOutput(f"x_{dt}_out"))
        ins.append(i)
    return ins, outs


def check_all(result: Any, binary: bool = True) -> None:
    for dt, a in ARRAYS.items():
        if not binary and dt in BINARY_ONLY:
            continue
        same(result.as_numpy(f"x_{dt}_out"), a)


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "json"])
def test_http_every_datatype(srv: Served, binary: bool) -> None:
    ins, outs = inputs(httpclient, binary)
    result = http(srv).infer(MODEL, ins, outputs=outs, request_id="r1")
    check_all(result, binary)
    reply = result.get_response()
    assert reply["model_name"] == MODEL and reply["id"] == "r1"
    by_name = {o["name"]: o for o in reply["outputs"]}
    for dt in ARRAYS:
        if binary or dt not in BINARY_ONLY:
            assert by_name[f"x_{dt}_out"]["datatype"] == ANSWERED_AS.get(dt, dt)
            assert ("binary_data_size" in by_name[f"x_{dt}_out"].get("parameters", {})) == binary


@pytest.mark.parametrize("dt", list(ARRAYS))
def test_grpc_each_datatype(srv: Served, dt: str) -> None:
    a = ARRAYS[dt]
    i = grpcclient.InferInput("x", list(a.shape), dt)
    i.set_data_from_numpy(a)
    result = grpcc(srv).infer(MODEL, [i])
    same(result.as_numpy("x_out"), a)
    reply = result.get_response()
    assert reply.outputs[0].datatype == ANSWERED_AS.get(dt, dt)
    assert len(reply.raw_output_contents) == 1  # what tritonclient reads


def test_grpc_every_datatype_in_one_request(srv: Served) -> None:
    ins, outs = inputs(grpcclient)
    result = grpcc(srv).infer(MODEL, ins, outputs=outs, request_id="r2")
    check_all(result)
    assert result.get_response().id == "r2"


def test_async_clients(srv: Served) -> None:
    async def run() -> None:
        h = httpaio.InferenceServerClient(url=f"127.0.0.1:{srv.http_port}")
        g = grpcaio.InferenceServerClient(url=srv.grpc_target)
        try:
            assert await h.is_server_live() and await h.is_model_ready(MODEL)
            assert await g.is_server_ready() and await g.is_model_ready(MODEL)
            ins, outs = inputs(httpaio)
            check_all(await h.infer(MODEL, ins, outputs=outs))
            ins, outs = inputs(grpcaio)
            # Several calls at once on one channel.
            results = await asyncio.gather(*(g.infer(MODEL, ins, outputs=outs) for _ in range(4)))
            for r in results:
                check_all(r)
            meta = await g.get_model_metadata(MODEL, as_json=True)
            assert meta["name"] == MODEL
        finally:
            await h.close()
            await g.close()

    asyncio.run(run())


@pytest.mark.parametrize("request_algo", [None, "gzip", "deflate"])
@pytest.mark.parametrize("response_algo", [None, "gzip", "deflate"])
def test_http_compression(srv: Served, request_algo: str | None, response_algo: str | None) -> None:
    # Binary data after the JSON header: Inference-Header-Content-Length counts the
    # header's bytes before compression, as tritonclient measures it.
    ins, outs = inputs(httpclient, binary=True)
    result = http(srv).infer(
        MODEL,
        ins,
        outputs=outs,
        request_compression_algorithm=request_algo,
        response_compression_algorithm=response_algo,
    )
    check_all(result)


def test_http_compressed_body_is_bounded(srv: Served) -> None:
    """A small compressed body that inflates past --max-body-bytes is refused with 413."""
    size = 4 * LIMIT
    tensor = {"name": "x", "datatype": "UINT8", "shape": [size]}
    tensor["parameters"] = {"binary_data_size": size}
    header = json.dumps({"inputs": [tensor]}).encode()
    body = gzip.compress(header + bytes(size))
    assert len(body) < LIMIT // 50
    r = httpx.post(
        f"{srv.url}/v2/models/{MODEL}/infer",
        content=body,
        headers={
            "Content-Encoding": "gzip",
            "Inference-Header-Content-Length": str(len(header)),
            "Content-Type": "application/octet-stream",
        },
    )
    assert r.status_code == 413, r.text
    assert "--max-body-bytes" in r.json()["error"]
    check_all(http(srv).infer(MODEL, inputs(httpclient)[0]))  # still serving


@pytest.mark.parametrize("algo", ["gzip", "deflate"])
def test_grpc_compression(srv: Served, algo: str) -> None:
    ins, outs = inputs(grpcclient)
    check_all(grpcc(srv).infer(MODEL, ins, outputs=outs, compression_algorithm=algo))


@pytest.mark.parametrize("algo", ["gzip", "deflate"])
def test_grpc_compression_bomb_is_resource_exhausted(srv: Served, algo: str) -> None:
    a = np.zeros((1, 8 * LIMIT), np.uint8)  # inflates to 8x the limit
    i = grpcclient.InferInput("x", list(a.shape), "UINT8")
    i.set_data_from_numpy(a)
    with pytest.raises(InferenceServerException) as e:
        grpcc(srv).infer(MODEL, [i], compression_algorithm=algo)
    assert e.value.status() == "StatusCode.RESOURCE_EXHAUSTED", e.value
    msg = e.value.message() or ""
    assert f"inflates (grpc-encoding: {algo}) to more than the limit of {LIMIT}" in msg, msg
    check_all(grpcc(srv).infer(MODEL, inputs(grpcclient)[0]))


def test_server_and_model_metadata(srv: Served) -> None:
    for c in (http(srv), grpcc(srv)):
        assert c.is_server_live() and c.is_server_ready() and c.is_model_ready(MODEL)
        assert not c.is_model_ready("nope")
    meta = http(srv).get_server_metadata()
    assert meta["name"] == "inferwire"
    for ext in ("binary_tensor_data", "statistics", "model_configuration"):
        assert ext in meta["extensions"]
    gmeta = grpcc(srv).get_server_metadata()
    assert gmeta.name == "inferwire" and "statistics" in gmeta.extensions
    assert http(srv).get_model_metadata(MODEL)["name"] == MODEL
    assert grpcc(srv).get_model_metadata(MODEL).name == MODEL
    assert http(srv).get_model_config(MODEL)["name"] == MODEL
    assert grpcc(srv).get_model_config(MODEL).config.name == MODEL


def test_statistics_count_tritonclient_calls(srv: Served) -> None:
    def count() -> int:
        s = grpcc(srv).get_inference_statistics(MODEL, as_json=True)["model_stats"][0]
        return int(s["inference_stats"]["success"].get("count", 0))

    before = count()
    http(srv).infer(MODEL, inputs(httpclient)[0])
    grpcc(srv).infer(MODEL, inputs(grpcclient)[0])
    assert count() == before + 2
    h = http(srv).get_inference_statistics(MODEL)["model_stats"][0]
    assert h["name"] == MODEL and h["inference_stats"]["success"]["count"] == before + 2


def test_errors(srv: Served) -> None:
    bad = np.array([[-1.0]], np.float32)
    for mod, c in ((httpclient, http(srv)), (grpcclient, grpcc(srv))):
        i = mod.InferInput("x", [1, 1], "FP32")
        i.set_data_from_numpy(bad)
        # The model's own error: 500 / INTERNAL with its message.
        with pytest.raises(InferenceServerException) as e:
            c.infer(MODEL, [i])
        assert "negative values are refused by this model" in (e.value.message() or "")
        assert e.value.status() in ("500", "StatusCode.INTERNAL"), e.value.status()
        # An unknown model: 404 / NOT_FOUND naming it.
        with pytest.raises(InferenceServerException) as e:
            c.infer("nope", [i])
        assert "nope" in (e.value.message() or "")
        assert e.value.status() in ("404", "StatusCode.NOT_FOUND"), e.value.status()
    # A shape that the data does not fill: 400 / INVALID_ARGUMENT naming the input.
    req = service_pb2.ModelInferRequest(model_name=MODEL)
    t = req.inputs.add(name="x", datatype="FP32", shape=[2, 2])
    t.contents.fp32_contents.extend([1.0])
    with grpc.insecure_channel(srv.grpc_target) as ch:
        with pytest.raises(grpc.RpcError) as ge:
            service_pb2_grpc.GRPCInferenceServiceStub(ch).ModelInfer(req, timeout=10)
    assert ge.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "inputs[0]" in (ge.value.details() or "")
    r = httpx.post(
        f"{srv.url}/v2/models/{MODEL}/infer",
        json={"inputs": [{"name": "x", "datatype": "FP99", "shape": [1], "data": [1]}]},
    )
    assert r.status_code == 400 and "FP99" in r.json()["error"], r.text


def test_streaming_every_datatype(srv: Served) -> None:
    """ModelStreamInfer (tritonclient's start_stream): every datatype answered on the
    stream, final (the model does not stream); more in tests/server/v2/test_grpc_stream.py."""
    import queue

    got: queue.Queue[Any] = queue.Queue()
    c = grpcc(srv)
    c.start_stream(callback=lambda result, error: got.put((result, error)))
    try:
        ins, outs = inputs(grpcclient)
        c.async_stream_infer(MODEL, ins, outputs=outs, request_id="s1")
        result, error = got.get(timeout=10)
    finally:
        c.stop_stream()
    assert error is None, error
    check_all(result)
    reply = result.get_response()
    assert reply.id == "s1" and reply.parameters["triton_final_response"].bool_param


def typed_request(binary_data_output: bool | None) -> service_pb2.ModelInferRequest:
    """Every datatype with a typed field, sent in typed ``contents`` (as KServe's clients
    send it), FP16/BF16 aside."""
    req = service_pb2.ModelInferRequest(model_name=MODEL)
    for dt, a in ARRAYS.items():
        if dt in ("FP16", "BF16"):
            continue
        t = req.inputs.add(name=f"x_{dt}", datatype=dt, shape=list(a.shape))
        field = {
            "BOOL": "bool_contents", "UINT64": "uint64_contents", "INT64": "int64_contents",
            "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents",
        }.get(dt, "uint_contents" if dt.startswith("U") else "int_contents")  # fmt: skip
        getattr(t.contents, field).extend(a.ravel().tolist())
    if binary_data_output is not None:
        req.parameters["binary_data_output"].bool_param = binary_data_output
    return req


def test_typed_request_answered_typed_or_raw_when_asked(srv: Served) -> None:
    with grpc.insecure_channel(srv.grpc_target) as ch:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(ch)
        typed = stub.ModelInfer(typed_request(None), timeout=10)
        assert not typed.raw_output_contents
        outs = {o.name: o for o in typed.outputs}
        assert list(outs["x_INT64_out"].contents.int64_contents) == [0, 1, 2**63 - 1]
        assert list(outs["x_BOOL_out"].contents.bool_contents) == [True, False, True]
        # Asked for raw: tritonclient's InferResult reads every datatype.
        raw = stub.ModelInfer(typed_request(True), timeout=10)
        assert len(raw.raw_output_contents) == len(raw.outputs)
        result = grpcclient.InferResult(raw)
        for dt, a in ARRAYS.items():
            if dt not in ("FP16", "BF16"):
                same(result.as_numpy(f"x_{dt}_out"), a)
        # A raw request answered typed when asked.
        raw_req = service_pb2.ModelInferRequest(model_name=MODEL)
        raw_req.inputs.add(name="x", datatype="INT32", shape=[2])
        raw_req.raw_input_contents.append(np.array([7, 8], np.int32).tobytes())
        raw_req.parameters["binary_data_output"].bool_param = False
        typed = stub.ModelInfer(raw_req, timeout=10)
        assert not typed.raw_output_contents
        assert list(typed.outputs[0].contents.int_contents) == [7, 8]


def test_http_deflate_raw_and_zlib(srv: Served) -> None:
    """``deflate`` bodies in the zlib format (tritonclient) and raw (some clients)."""
    body = json.dumps(
        {"inputs": [{"name": "x", "datatype": "INT32", "shape": [2], "data": [3, 4]}]}
    ).encode()
    raw = zlib.compressobj(wbits=-15)
    for coded in (zlib.compress(body), raw.compress(body) + raw.flush()):
        r = httpx.post(
            f"{srv.url}/v2/models/{MODEL}/infer",
            content=coded,
            headers={"Content-Encoding": "deflate", "Content-Type": "application/json"},
        )
        assert r.status_code == 200, r.text
        assert r.json()["outputs"][0]["data"] == [3, 4]
