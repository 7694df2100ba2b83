"""Runs KServe's own Python clients (kserve 0.15.2, Python 3.11: see
scripts/kserve-client-env.sh) against an inferwire server and prints one JSON object: for
each named call, ``{"ok": true, "value": ...}`` or ``{"ok": false, "error": ...}`` with the
exception's type, message and status. test_kserve_client_compat.py asserts on it.

    python kserve_client_calls.py HTTP_PORT GRPC_PORT MODEL

kserve's InferenceRESTClient and InferenceGRPCClient are asynchronous only (there is no
sync variant), and neither has a metadata call: server and model metadata are fetched with
the pieces kserve ships for them (its generated gRPC stub; its pydantic REST data models).
"""

import asyncio
import json
import sys
import traceback

import grpc
import httpx
import numpy as np
from google.protobuf import json_format
from kserve import (
    InferenceGRPCClient,
    InferenceRESTClient,
    InferInput,
    InferRequest,
    RESTConfig,
)
from kserve.protocol.grpc import grpc_predict_v2_pb2 as pb
from kserve.protocol.grpc.grpc_predict_v2_pb2_grpc import GRPCInferenceServiceStub
from kserve.protocol.infer_type import InferResponse, RequestedOutput, to_http_parameters
from kserve.protocol.rest.v2_datamodels import ModelMetadataResponse, ServerMetadataResponse

# Beside this script (its folder is on sys.path when it runs).
from kserve_arrays import ARRAYS, FP16

HTTP, GRPC, MODEL = sys.argv[1], sys.argv[2], sys.argv[3]
BASE = f"http://127.0.0.1:{HTTP}"
TARGET = f"127.0.0.1:{GRPC}"
TIMEOUT = 30

BINARY_ONLY = {"FP16": FP16}


def list_inputs():
    """Data given as plain lists, as kserve's docs write requests by hand."""
    return [
        InferInput("x_FP32", [2], "FP32", data=[1.5, 2.5]),
        InferInput("x_INT64", [2], "INT64", data=[7, 2**62]),
        InferInput("x_BOOL", [1], "BOOL", data=[True]),
        InferInput("x_BYTES", [2], "BYTES", data=["hi", "there"]),
    ]


def inputs(binary):
    """Every array as one input ``x_DT``, through InferInput.set_data_from_numpy."""
    arrays = {**ARRAYS, **(BINARY_ONLY if binary else {})}
    out = []
    for dt, a in arrays.items():
        i = InferInput(f"x_{dt}", list(a.shape), dt)
        i.set_data_from_numpy(a, binary_data=binary)
        out.append(i)
    return out


def mixed():
    """One input raw (FP16, which has no typed gRPC field) and one given as a list."""
    half = InferInput("x_FP16", [2], "FP16")
    half.set_data_from_numpy(np.array([0.5, 2.0], np.float16))
    return InferRequest(MODEL, [half, InferInput("x_INT64", [2], "INT64", data=[3, 4])])


def plain(v):
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, np.generic):
        return v.item()
    return v


def response(r: InferResponse):
    """What the client made of the reply: per output its datatype, shape, parameters,
    whether kserve kept raw bytes for it (gRPC only: over REST, InferResponse.from_bytes
    turns binary outputs into lists, so the reply's headers tell instead), and
    ``as_numpy()``'s dtype and values."""
    outs = {}
    for o in r.outputs:
        a = o.as_numpy()
        outs[o.name] = {
            "datatype": o.datatype,
            "shape": list(o.shape),
            "parameters": to_http_parameters(o.parameters) if o.parameters else {},
            "raw": o._raw_data is not None and len(o._raw_data) > 0,
            "numpy_dtype": str(a.dtype),
            "numpy_shape": list(a.shape),
            "element_types": sorted({type(v).__name__ for v in a.ravel().tolist()}),
            "values": [plain(v) for v in a.ravel().tolist()],
        }
    params = r.parameters
    if params is not None and not isinstance(params, dict):
        params = to_http_parameters(params)
    return {
        "id": r.id,
        "model_name": r.model_name,
        "model_version": r.model_version,
        "parameters": params or {},
        "outputs": outs,
    }


def failure(e):
    err = {"type": type(e).__name__, "message": str(e)}
    if isinstance(e, httpx.HTTPStatusError):
        err["status"] = e.response.status_code
        err["body"] = e.response.text
        err["content_type"] = e.response.headers.get("content-type")
    elif isinstance(e, grpc.RpcError):
        err["status"] = e.code().name
        err["message"] = e.details()
    else:
        err["trace"] = traceback.format_exc()
    return err


def rest_calls(c: InferenceRESTClient):
    async def infer(req, **kw):
        headers = {}
        r = await c.infer(BASE, req, model_name=req.model_name, response_headers=headers, **kw)
        out = response(r)
        out["content_type"] = headers.get("content-type")
        out["header_length"] = headers.get("inference-header-content-length")
        return out

    async def metadata(path, model):
        async with httpx.AsyncClient(timeout=TIMEOUT) as h:
            r = await h.get(f"{BASE}{path}")
            r.raise_for_status()
            return model.model_validate(r.json()).model_dump()

    return {
        "rest-live": lambda: c.is_server_live(BASE),
        "rest-ready": lambda: c.is_server_ready(BASE),
        "rest-model-ready": lambda: c.is_model_ready(BASE, MODEL),
        "rest-model-ready-unknown": lambda: c.is_model_ready(BASE, "nope"),
        "rest-server-metadata": lambda: metadata("/v2", ServerMetadataResponse),
        "rest-model-metadata": lambda: metadata(f"/v2/models/{MODEL}", ModelMetadataResponse),
        # Binary extension both ways: raw inputs after the JSON, binary_data_output asked.
        "rest-infer-binary": lambda: infer(
            InferRequest(
                MODEL, inputs(True), request_id="r-bin", parameters={"binary_data_output": True}
            )
        ),
        # Binary inputs, JSON outputs (the default when binary_data_output is not asked).
        "rest-infer-binary-in-json-out": lambda: infer(
            InferRequest(MODEL, inputs(True), request_id="r-bin-json")
        ),
        "rest-infer-json": lambda: infer(InferRequest(MODEL, inputs(False), request_id="r-json")),
        # Data given as plain lists, as kserve's docs write requests by hand.
        "rest-infer-lists": lambda: infer(
            InferRequest(
                MODEL,
                list_inputs(),
                parameters={"tag": "from-rest"},
            )
        ),
        # Requested outputs: only these, in this order; one binary, one JSON.
        "rest-infer-requested-outputs": lambda: infer(
            InferRequest(
                MODEL,
                inputs(False),
                request_outputs=[
                    RequestedOutput("x_INT64_out", {"binary_data": True}),
                    RequestedOutput("x_BYTES_out", {"binary_data": False}),
                ],
            )
        ),
        # The binary extension lets each input choose: raw data or JSON `data`.
        "rest-infer-mixed": lambda: infer(mixed()),
        "rest-infer-unknown-model": lambda: infer(InferRequest("nope", inputs(False))),
        "rest-infer-model-error": lambda: infer(
            InferRequest(MODEL, [InferInput("x_FP32", [1], "FP32", data=[-1.0])])
        ),
        "rest-infer-concurrent": lambda: concurrent(
            lambda k: infer(InferRequest(MODEL, [InferInput("x_INT64", [1], "INT64", data=[k])]))
        ),
    }


def grpc_calls(c: InferenceGRPCClient):
    async def infer(req):
        return response(await c.infer(req))

    async def stub_call(method, request):
        async with grpc.aio.insecure_channel(TARGET) as ch:
            reply = await getattr(GRPCInferenceServiceStub(ch), method)(request, timeout=TIMEOUT)
        return json_format.MessageToDict(reply, preserving_proto_field_name=True)

    return {
        "grpc-live": lambda: c.is_server_live(),
        "grpc-ready": lambda: c.is_server_ready(),
        "grpc-model-ready": lambda: c.is_model_ready(MODEL),
        "grpc-model-ready-unknown": lambda: c.is_model_ready("nope"),
        "grpc-server-metadata": lambda: stub_call("ServerMetadata", pb.ServerMetadataRequest()),
        "grpc-model-metadata": lambda: stub_call(
            "ModelMetadata", pb.ModelMetadataRequest(name=MODEL)
        ),
        # set_data_from_numpy(binary_data=True): raw_input_contents (kserve's default).
        "grpc-infer-raw": lambda: infer(
            InferRequest(MODEL, inputs(True), request_id="g-raw", model_version="1")
        ),
        # binary_data=False: typed `contents`; no FP16 (kserve has no typed field for it).
        "grpc-infer-typed": lambda: infer(
            InferRequest(MODEL, inputs(False), request_id="g-typed", parameters={"tag": "g"})
        ),
        "grpc-infer-lists": lambda: infer(
            InferRequest(
                MODEL,
                list_inputs(),
            )
        ),
        "grpc-infer-requested-outputs": lambda: infer(
            InferRequest(
                MODEL,
                inputs(True),
                request_outputs=[RequestedOutput("x_BOOL_out"), RequestedOutput("x_FP32_out")],
            )
        ),
        # kserve's to_grpc puts the raw input in raw_input_contents and the other in typed
        # `contents`: a request the protocol forbids (raw_input_contents, when given, holds
        # every input, and no input may then have contents).
        "grpc-infer-mixed": lambda: infer(mixed()),
        "grpc-infer-unknown-model": lambda: infer(InferRequest("nope", inputs(True))),
        "grpc-infer-unknown-version": lambda: infer(
            InferRequest(MODEL, inputs(True), model_version="9")
        ),
        "grpc-infer-model-error": lambda: infer(
            InferRequest(MODEL, [InferInput("x_FP32", [1], "FP32", data=[-1.0])])
        ),
        "grpc-infer-concurrent": lambda: concurrent(
            lambda k: infer(InferRequest(MODEL, [InferInput("x_INT64", [1], "INT64", data=[k])]))
        ),
    }


async def concurrent(one, n=16):
    """n requests in flight at once on one client: each must get its own answer back."""
    replies = await asyncio.gather(*(one(k) for k in range(n)))
    return [r["outputs"]["x_INT64_out"]["values"] for r in replies]


async def run(calls):
    out = {}
    for name, call in calls.items():
        try:
            out[name] = {"ok": True, "value": await call()}
        except Exception as e:  # reported per call: the test names which one failed
            out[name] = {"ok": False, "error": failure(e)}
    return out


async def main():
    out = {}
    # retries=0: a failure must show as it is, not be retried into a different answer.
    async with InferenceRESTClient(RESTConfig(protocol="v2", timeout=TIMEOUT, retries=0)) as rest:
        out.update(await run(rest_calls(rest)))
    async with InferenceGRPCClient(TARGET, timeout=TIMEOUT, retries=0) as g:
        out.update(await run(grpc_calls(g)))
    json.dump(out, sys.stdout)


asyncio.run(main())
