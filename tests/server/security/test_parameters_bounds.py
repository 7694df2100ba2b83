"""V2 ``parameters`` objects, the request's, an input's and an output's, are bounded
(issue 41): at most 1,024 entries in one object and 16 levels of nesting, over REST and
gRPC, refused with a 400 / ``INVALID_ARGUMENT`` naming the field, before the model (each
entry would become its own Python object). Within the bounds a request is served."""

from __future__ import annotations

from typing import Any

import grpc
import httpx
import numpy as np
from tritonclient.grpc import service_pb2, service_pb2_grpc


def body(parameters: dict[str, Any], where: str = "request") -> dict[str, Any]:
    doc: dict[str, Any] = {
        "inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}],
    }
    if where == "request":
        doc["parameters"] = parameters
    elif where == "input":
        doc["inputs"][0]["parameters"] = parameters
    else:
        doc["outputs"] = [{"name": "y", "parameters": parameters}]
    return doc


def nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def test_rest_parameters_are_bounded(serve: Any) -> None:
    server = serve("noop")
    url = server.url + "/v2/models/Noop/infer"
    many = {f"k{i}": i for i in range(1025)}
    for where, field in [("request", "parameters"), ("input", "inputs[0].parameters"),
                         ("output", "outputs[0].parameters")]:  # fmt: skip
        r = httpx.post(url, json=body(many, where))
        assert r.status_code == 400, r.text
        assert f"{field}: an object of 1025 entries" in r.json()["error"]
        r = httpx.post(url, json=body({"p": nested(16)}, where))
        assert r.status_code == 400, r.text
        assert f"{field}: nested deeper than 16 levels" in r.json()["error"]
    # Nested objects count too.
    r = httpx.post(url, json=body({"headers": many}))
    assert r.status_code == 400 and "parameters: an object of 1025" in r.json()["error"]
    # Within the bounds: served.
    r = httpx.post(url, json=body({f"k{i}": i for i in range(1023)} | {"p": nested(15)}))
    assert r.status_code == 200, r.text


def test_grpc_parameters_are_bounded(serve: Any) -> None:
    server = serve("noop")
    req = service_pb2.ModelInferRequest(model_name="Noop")
    req.inputs.add(name="x", datatype="FP32", shape=[1])
    req.raw_input_contents.append(np.array([1], np.float32).tobytes())
    for i in range(1025):
        req.parameters[f"k{i}"].int64_param = i
    with server.channel() as ch:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(ch)
        try:
            stub.ModelInfer(req, timeout=10)
            raise AssertionError("accepted")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e
            assert "parameters: an object of 1025 entries" in (e.details() or "")
        del req.parameters["k0"]
        assert stub.ModelInfer(req, timeout=10).model_name == "Noop"
