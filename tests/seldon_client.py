"""Seldon protocol helpers for tests: one request dict, sent over REST or gRPC, and the
reply as a dict in both cases (protobuf's JSON mapping), so assertions are shared."""

from __future__ import annotations

import base64
from typing import Any

import grpc
import httpx
import numpy as np
from google.protobuf import json_format

TF_DTYPES = {
    "DT_FLOAT": np.float32,
    "DT_DOUBLE": np.float64,
    "DT_INT32": np.int32,
    "DT_UINT8": np.uint8,
    "DT_INT16": np.int16,
    "DT_INT8": np.int8,
    "DT_INT64": np.int64,
    "DT_BOOL": np.bool_,
    "DT_UINT16": np.uint16,
    "DT_HALF": np.float16,
    "DT_UINT32": np.uint32,
    "DT_UINT64": np.uint64,
}
TYPED_FIELD = {
    "DT_FLOAT": "floatVal",
    "DT_DOUBLE": "doubleVal",
    "DT_INT32": "intVal",
    "DT_UINT8": "intVal",
    "DT_INT16": "intVal",
    "DT_INT8": "intVal",
    "DT_UINT16": "intVal",
    "DT_INT64": "int64Val",
    "DT_BOOL": "boolVal",
    "DT_UINT32": "uint32Val",
    "DT_UINT64": "uint64Val",
    "DT_HALF": "halfVal",
}


def tftensor(arr: np.ndarray, typed: bool = False) -> dict[str, Any]:
    """An array as TensorFlow's TensorProto in protobuf JSON (what make_tensor_proto +
    MessageToJson give): raw ``tensorContent``, or the typed ``*Val`` field."""
    name = next(k for k, v in TF_DTYPES.items() if np.dtype(v) == arr.dtype)
    out: dict[str, Any] = {
        "dtype": name,
        "tensorShape": {"dim": [{"size": str(d)} for d in arr.shape]},
    }
    if not typed:
        out["tensorContent"] = base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode()
        return out
    field = TYPED_FIELD[name]
    flat = arr.ravel()
    if name == "DT_HALF":
        out[field] = flat.view(np.uint16).astype(int).tolist()
    elif name in ("DT_INT64", "DT_UINT64"):
        out[field] = [str(x) for x in flat.tolist()]
    else:
        out[field] = flat.tolist()
    return out


def to_numpy(data: dict[str, Any]) -> np.ndarray:
    """The array in a reply's ``data`` (ndarray, tensor or tftensor)."""
    if "ndarray" in data:
        return np.array(data["ndarray"])
    if "tensor" in data:
        t = data["tensor"]
        return np.array(t.get("values", []), dtype=float).reshape(t["shape"])
    t = data["tftensor"]
    dtype = np.dtype(TF_DTYPES[t["dtype"]])
    shape = [int(d.get("size", 0)) for d in t.get("tensorShape", {}).get("dim", [])]
    if "tensorContent" in t:
        return np.frombuffer(base64.b64decode(t["tensorContent"]), dtype=dtype).reshape(shape)
    field = TYPED_FIELD[t["dtype"]]
    values = t.get(field, [])
    if t["dtype"] == "DT_HALF":
        return np.array(values, dtype=np.uint16).view(np.float16).reshape(shape)
    return np.array([int(v) if isinstance(v, str) else v for v in values], dtype=dtype).reshape(
        shape
    )


def rest(url: str, body: Any, path: str = "/api/v1.0/predictions", **kw: Any) -> httpx.Response:
    if isinstance(body, (bytes, str)):
        return httpx.post(url + path, content=body, timeout=30, **kw)
    return httpx.post(url + path, json=body, timeout=30, **kw)


def grpc_call(
    channel: grpc.Channel,
    pb: Any,
    body: dict[str, Any],
    service: str = "Seldon",
    method: str = "Predict",
) -> dict[str, Any]:
    """Sends ``body`` as a SeldonMessage (or Feedback) and returns the reply as a dict."""
    stub = getattr(pb.grpc, f"{service}Stub")(channel)
    kind = pb.msgs.Feedback if method == "SendFeedback" else pb.msgs.SeldonMessage
    request = json_format.ParseDict(body, kind())
    reply = getattr(stub, method)(request, timeout=30)
    return json_format.MessageToDict(reply)


def send(protocol: str, server: Any, pb: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Predict over ``protocol`` ("rest" or "grpc"), asserting success."""
    if protocol == "rest":
        r = rest(server.url, body)
        assert r.status_code == 200, r.text
        return r.json()  # type: ignore[no-any-return]
    with server.channel() as ch:
        return grpc_call(ch, pb, body)
