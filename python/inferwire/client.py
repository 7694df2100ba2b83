"""``inferwire.Client``: calls an inferwire server (or any Seldon / Open Inference Protocol
server) over REST with numpy in and out, in any encoding the server takes, with a bearer
token, timeouts, retries of refused or failed connections, and typed errors carrying the
server's message. One connection pool per client, reused across calls (``httpx``:
``pip install 'inferwire[client]'``)."""

from __future__ import annotations

import base64
import io
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import (  # noqa: F401 - the error names stay importable from here
    AuthError,
    BadRequest,
    BadRequestError,
    ClientError,
    InferwireError,
    NotFoundError,
    OverloadedError,
    ServerError,
    UnreachableError,
)

SELDON_PREDICT = "/api/v1.0/predictions"
# Request encodings: Seldon's three, then the array bodies (docs/reference/encodings.md).
ENCODINGS = ("ndarray", "tensor", "tftensor", "npy", "msgpack", "json", "base64")


def server_message(body: bytes) -> str:
    """The message of an error reply: a Seldon FAILURE's ``status.info``, V2's ``error``,
    or the body as text."""
    try:
        doc = json.loads(body)
        return str((doc.get("status") or {}).get("info") or doc.get("error") or body.decode())
    except (ValueError, AttributeError):
        return body.decode(errors="replace")


def _error(status: int, body: bytes) -> ClientError:
    return ClientError.reply(status, server_message(body))


def _dtype_v2(a: np.ndarray) -> str:
    names = {
        "b": "BOOL", "u1": "UINT8", "u2": "UINT16", "u4": "UINT32", "u8": "UINT64",
        "i1": "INT8", "i2": "INT16", "i4": "INT32", "i8": "INT64",
        "f2": "FP16", "f4": "FP32", "f8": "FP64",
    }  # fmt: skip
    key = "b" if a.dtype.kind == "b" else f"{a.dtype.kind}{a.dtype.itemsize}"
    if a.dtype.kind in "OSU":
        return "BYTES"
    if key not in names:
        raise TypeError(f"a {a.dtype} array has no V2 datatype")
    return names[key]


_NUMPY_V2 = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32,
    "UINT64": np.uint64, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32,
    "INT64": np.int64, "FP16": np.float16, "FP32": np.float32, "FP64": np.float64,
}  # fmt: skip


@dataclass
class _Call:
    """One request, built without I/O: what to send, and how to read the answer."""

    path: str
    body: bytes
    headers: dict[str, str]
    # "seldon": a SeldonMessage reply; "media": by the reply's Content-Type; "raw": the
    # reply JSON as it is; "v2": V2 outputs.
    reply: str
    method: str = "POST"


def _predict_call(
    X: Any, names: list[str] | None, encoding: str, path: str, content_type: str
) -> _Call:
    if isinstance(X, (bytes, bytearray, memoryview)):
        return _Call(path, bytes(X), {"Content-Type": content_type}, "media")
    if isinstance(X, str):
        return _Call(path, json.dumps({"strData": X}).encode(), dict(_JSON), "seldon")
    if isinstance(X, dict):
        return _Call(path, json.dumps(X).encode(), dict(_JSON), "media")
    a = np.asarray(X)
    if encoding in ("ndarray", "tensor", "tftensor"):
        msg: dict[str, Any] = {"data": _seldon_data(a, encoding)}
        if names:
            msg["data"]["names"] = list(names)
        return _Call(path, json.dumps(msg).encode(), dict(_JSON), "seldon")
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding {encoding!r}: one of {', '.join(ENCODINGS)}")
    body, ctype = _array_body(a, encoding)
    return _Call(path, body, {"Content-Type": ctype}, "media")


def _infer_call(
    inputs: dict[str, Any] | Any,
    model: str,
    version: str | None,
    outputs: list[str] | None,
    binary: bool,
    parameters: dict[str, Any] | None,
) -> _Call:
    if not isinstance(inputs, dict):
        inputs = {"input-0": inputs}
    header: dict[str, Any] = {"inputs": []}
    blobs: list[bytes] = []
    for name, value in inputs.items():
        a = np.asarray(value)
        entry: dict[str, Any] = {"name": name, "shape": list(a.shape), "datatype": _dtype_v2(a)}
        if binary and entry["datatype"] != "BYTES":
            raw = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False)
            blob = raw.tobytes()
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        elif entry["datatype"] == "BYTES":
            entry["data"] = [
                v.decode() if isinstance(v, bytes) else str(v) for v in a.ravel().tolist()
            ]
        else:
            entry["data"] = a.ravel().tolist()
        header["inputs"].append(entry)
    if outputs:
        header["outputs"] = [{"name": o, "parameters": {"binary_data": binary}} for o in outputs]
    params = dict(parameters or {})
    if binary:
        params["binary_data_output"] = True
    if params:
        header["parameters"] = params
    head = json.dumps(header).encode()
    path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/infer"
    headers = dict(_JSON)
    if blobs:
        headers["Inference-Header-Content-Length"] = str(len(head))
    return _Call(path, head + b"".join(blobs), headers, "v2")


def _read(call: _Call, r: Any) -> Any:
    if call.reply == "v2":
        return _v2_outputs(r)
    if call.reply == "raw":
        return r.json()
    if call.reply == "seldon":
        return _seldon_reply(r.json())
    return _decode(r)


def _seldon_reply(doc: Any) -> Any:
    if not isinstance(doc, dict):
        return doc
    data = doc.get("data")
    if data is not None:
        return _from_seldon_data(data)
    for key, conv in (
        ("binData", lambda v: base64.b64decode(v)),
        ("strData", lambda v: v),
        ("jsonData", lambda v: v),
    ):
        if key in doc:
            return conv(doc[key])
    return doc


def _decode(r: Any) -> Any:
    return _decode_bytes(r.headers.get("content-type", ""), r.content)


def _decode_bytes(content_type: str, content: bytes) -> Any:
    """A reply body by its media type (the same over REST and in a gRPC ``binData``)."""
    ctype = content_type.split(";")[0].strip()
    if ctype == "application/x-npy":
        try:
            return np.load(io.BytesIO(content), allow_pickle=False)
        except ValueError as e:
            # numpy refuses object arrays without allow_pickle, which is never given.
            raise InferwireError(f"the reply is not a .npy the client reads: {e}") from e
    if ctype == "application/msgpack":
        import msgpack

        try:
            return msgpack.unpackb(content, object_hook=_msgpack_numpy)
        except (ValueError, TypeError, msgpack.UnpackException) as e:
            raise InferwireError(f"the reply is not msgpack-numpy the client reads: {e}") from e
    if ctype == "application/json":
        doc = json.loads(content)
        if isinstance(doc, dict) and "dtype" in doc and ("data" in doc or "buffer" in doc):
            return _from_array_json(doc)
        if isinstance(doc, dict) and ("data" in doc or "jsonData" in doc):
            return _seldon_reply(doc)
        return doc
    if ctype.startswith("text/"):
        return content.decode()
    return content


def _msgpack_numpy(obj: dict[Any, Any]) -> Any:
    """msgpack-numpy's layout ({nd, type, kind, shape, data}) read without
    ``msgpack_numpy.decode``, which unpickles object arrays (kind ``O``): a reply is data
    from the network, and the client never unpickles it."""

    def get(key: str) -> Any:
        return obj.get(key.encode(), obj.get(key))

    nd = get("nd")
    if nd is None:
        if get("complex") is not None and get("data") is not None:
            data = get("data")
            return complex(data.decode() if isinstance(data, bytes) else data)
        return obj
    kind = get("kind")
    if kind in (b"O", "O"):
        raise InferwireError(
            "the reply holds a numpy object array (pickled in msgpack-numpy); the client "
            "never unpickles what a server sends"
        )
    descr = get("type")
    if kind in (b"V", "V") and isinstance(descr, list):
        descr = [tuple(t.decode() if isinstance(t, bytes) else t for t in d) for d in descr]
    elif isinstance(descr, bytes):
        descr = descr.decode()
    dtype = np.dtype(descr)
    if dtype.hasobject:
        raise InferwireError(
            f"the reply's msgpack-numpy dtype {dtype} holds Python objects; the client never "
            "unpickles what a server sends"
        )
    values = np.frombuffer(get("data"), dtype=dtype)
    if nd is True:
        return values.reshape(get("shape"))
    return values[0]


def _httpx() -> Any:
    try:
        import httpx
    except ImportError as e:  # pragma: no cover - the extra is missing
        raise InferwireError("the client needs httpx: pip install 'inferwire[client]'") from e
    return httpx


def _outcome(httpx: Any, call: _Call, r: Any, error: Exception | None, attempt: int,
             retries: int, base: Any) -> Any:  # fmt: skip
    """What one try came to: the response, an error to raise, or None to try again (a
    connection that failed, or a 503, while retries are left)."""
    if error is not None:
        if isinstance(error, httpx.TimeoutException):
            raise UnreachableError(f"{call.method} {call.path}: no answer in time ({error})")
        if attempt >= retries:
            raise UnreachableError(f"cannot reach {base}: {error} (after {attempt + 1} tries)")
        return None
    if r.status_code < 400:
        return r
    if r.status_code != 503 or attempt >= retries:
        raise _error(r.status_code, r.content)
    return None


def _backoff(attempt: int) -> float:
    return float(min(0.05 * 2 ** (attempt + 1), 1.0))


class _Api:
    """The calls, each built by ``_predict_call`` / ``_infer_call`` and read by ``_read``;
    ``Client`` and ``AsyncClient`` differ only in how a call is sent."""

    _doc_predict = """The model's ``predict`` on ``X``: a numpy array (or list) sent in
        ``encoding``, ``bytes`` sent as they are (with ``content_type``: an image, say), a
        ``str`` (``strData``) or a ``dict`` (plain JSON: a data frame's columns, say).
        Arrays come back as numpy arrays in the dtype the server sent; bytes as bytes,
        strings as str, JSON objects as dicts."""

    def __init__(
        self,
        url: str,
        token: str | None,
        timeout: float,
        retries: int,
        verify: bool | str,
        http2: bool,
        asynchronous: bool,
    ) -> None:
        httpx = _httpx()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        kind = httpx.AsyncClient if asynchronous else httpx.Client
        self._http = kind(
            base_url=url.rstrip("/"), timeout=timeout, verify=verify, http2=http2, headers=headers
        )
        self._httpx = httpx
        self.retries = retries
        self._token = token
        self._timeout = timeout

    def _grpc_request(self, call: _Call) -> tuple[str, bytes, list[tuple[str, str]], Any]:
        """The gRPC method, message and metadata for ``call``, and how to read the reply
        (``finish(reply_bytes, initial_metadata)``)."""
        from . import _core

        meta = [("authorization", f"Bearer {self._token}")] if self._token else []
        if call.reply == "v2":
            parts = call.path.split("/")  # /v2/models/M[/versions/V]/infer
            model, version = parts[3], (parts[5] if parts[4] == "versions" else "")
            head = call.headers.get("Inference-Header-Content-Length")
            pb = _core.v2_request_to_pb(call.body, int(head) if head else None, model, version)

            def finish_v2(reply: bytes, _meta: Any) -> Any:
                return _v2_from_body(*_core.v2_response_from_pb(reply))

            return "/inference.GRPCInferenceService/ModelInfer", pb, meta, finish_v2
        if call.path != SELDON_PREDICT:
            raise ValueError(f"over gRPC, predict calls the Seldon service; {call.path} is REST")
        ctype = call.headers.get("Content-Type", "application/json")
        body = call.body
        doc = json.loads(body) if call.reply == "media" and ctype == "application/json" else None
        if isinstance(doc, dict) and "dtype" not in doc:
            # A plain JSON object (not an array layout) is Seldon's jsonData.
            body = json.dumps({"jsonData": doc}).encode()
        elif call.reply == "media":
            # The REST body travels in binData; x-content-type says what it is.
            body = json.dumps({"binData": base64.b64encode(body).decode()}).encode()
            meta.append(("x-content-type", ctype))

        def finish_seldon(reply: bytes, initial: Any) -> Any:
            doc = json.loads(_core.seldon_from_pb(reply))
            if call.reply == "raw":
                return doc
            kind = dict(initial or ()).get("x-content-type")
            if kind and "binData" in doc:
                return _decode_bytes(kind, base64.b64decode(doc["binData"]))
            return _seldon_reply(doc)

        return "/seldon.protos.Seldon/Predict", _core.seldon_to_pb(body), meta, finish_seldon


_GRPC_STATUS = {
    "INVALID_ARGUMENT": 400, "OUT_OF_RANGE": 400, "FAILED_PRECONDITION": 400,
    "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "NOT_FOUND": 404,
    "UNIMPLEMENTED": 404, "RESOURCE_EXHAUSTED": 503, "DEADLINE_EXCEEDED": 504,
}  # fmt: skip


def _grpc_error(e: Any) -> InferwireError:
    code = e.code().name
    message = e.details() or code
    if code == "UNAVAILABLE":
        return UnreachableError(f"gRPC UNAVAILABLE: {message}")
    status = _GRPC_STATUS.get(code, 500)
    return _error(status, json.dumps({"error": message}).encode())


def _grpc_channel(target: str, asynchronous: bool, url: str, verify: bool | str) -> Any:
    """A channel to ``target``: TLS when the REST ``url`` is https (trusting the CA file
    ``verify`` names, else the system's roots), plaintext otherwise."""
    import grpc

    options = [
        ("grpc.max_send_message_length", -1),
        ("grpc.max_receive_message_length", -1),
    ]
    kind = grpc.aio if asynchronous else grpc
    if not url.startswith("https://"):
        return kind.insecure_channel(target, options=options)
    roots = Path(verify).read_bytes() if isinstance(verify, str) else None
    creds = grpc.ssl_channel_credentials(root_certificates=roots)
    return kind.secure_channel(target, creds, options=options)


class Client(_Api):
    """A REST client for one server.

    ``predict`` speaks the Seldon protocol (and inferwire's array bodies), ``infer`` the
    Open Inference Protocol (V2, with the binary tensor extension by default).

    Example::

        with inferwire.Client("http://127.0.0.1:9000") as c:
            probabilities = c.predict(np.array([[5.1, 3.5, 1.4, 0.2]]))
            out = c.infer({"x": np.ones((2, 3), np.float32)}, model="iris")
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:9000",
        *,
        token: str | None = None,
        timeout: float = 30.0,
        retries: int = 2,
        verify: bool | str = True,
        http2: bool = False,
        grpc: str | None = None,
    ) -> None:
        super().__init__(url, token, timeout, retries, verify, http2, asynchronous=False)
        self._channel = _grpc_channel(grpc, False, url, verify) if grpc else None

    def close(self) -> None:
        self._http.close()
        if self._channel is not None:
            self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send_grpc(self, call: _Call) -> Any:
        import grpc

        method, message, meta, finish = self._grpc_request(call)
        assert self._channel is not None
        stub = self._channel.unary_unary(method)
        attempt = 0
        while True:
            try:
                reply, rpc = stub.with_call(message, metadata=meta, timeout=self._timeout)
                return finish(reply, rpc.initial_metadata())
            except grpc.RpcError as e:
                retry = e.code() in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                )
                if not retry or attempt >= self.retries:
                    raise _grpc_error(e) from None
            time.sleep(_backoff(attempt))
            attempt += 1

    def _send(self, call: _Call) -> Any:
        if self._channel is not None and call.method == "POST":
            return self._send_grpc(call)
        attempt = 0
        while True:
            r, error = None, None
            try:
                r = self._http.request(call.method, call.path, content=call.body,
                                       headers=call.headers)  # fmt: skip
            except self._httpx.TransportError as e:
                error = e
            done = _outcome(self._httpx, call, r, error, attempt, self.retries,
                            self._http.base_url)  # fmt: skip
            if done is not None:
                return _read(call, done)
            time.sleep(_backoff(attempt))
            attempt += 1

    def predict(
        self,
        X: Any,
        *,
        names: list[str] | None = None,
        encoding: str = "ndarray",
        path: str = SELDON_PREDICT,
        content_type: str = "application/octet-stream",
    ) -> Any:
        return self._send(_predict_call(X, names, encoding, path, content_type))

    predict.__doc__ = _Api._doc_predict

    def predict_raw(self, message: dict[str, Any], *, path: str = SELDON_PREDICT) -> Any:
        """Sends a SeldonMessage (as a dict) and returns the reply as a dict."""
        return self._send(_Call(path, json.dumps(message).encode(), dict(_JSON), "raw"))

    def infer(
        self,
        inputs: dict[str, Any] | Any,
        *,
        model: str,
        version: str | None = None,
        outputs: list[str] | None = None,
        binary: bool = True,
        parameters: dict[str, Any] | None = None,
    ) -> dict[str, np.ndarray]:
        """A V2 inference on ``model``: ``inputs`` by name (one array is named ``input-0``),
        sent with the binary tensor extension (``binary=False``: plain JSON). Returns the
        outputs by name, as numpy arrays (BYTES as object arrays of bytes)."""
        out: dict[str, np.ndarray] = self._send(
            _infer_call(inputs, model, version, outputs, binary, parameters)
        )
        return out

    def metadata(self, model: str | None = None) -> Any:
        """The V2 model metadata of ``model``, or the Seldon metadata of the default."""
        path = f"/v2/models/{model}" if model else "/api/v1.0/metadata"
        return self._send(_Call(path, b"", {}, "raw", method="GET"))

    def ready(self) -> bool:
        try:
            return bool(self._http.get("/ready").status_code == 200)
        except self._httpx.TransportError:
            return False

    def live(self) -> bool:
        try:
            return bool(self._http.get("/live").status_code == 200)
        except self._httpx.TransportError:
            return False


class AsyncClient(_Api):
    """``Client`` for asyncio: the same calls, awaited (``httpx.AsyncClient``)."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:9000",
        *,
        token: str | None = None,
        timeout: float = 30.0,
        retries: int = 2,
        verify: bool | str = True,
        http2: bool = False,
        grpc: str | None = None,
    ) -> None:
        super().__init__(url, token, timeout, retries, verify, http2, asynchronous=True)
        self._channel = _grpc_channel(grpc, True, url, verify) if grpc else None

    async def aclose(self) -> None:
        await self._http.aclose()
        if self._channel is not None:
            await self._channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send_grpc(self, call: _Call) -> Any:
        import asyncio

        import grpc

        method, message, meta, finish = self._grpc_request(call)
        assert self._channel is not None
        stub = self._channel.unary_unary(method)
        attempt = 0
        while True:
            try:
                rpc = stub(message, metadata=meta, timeout=self._timeout)
                reply = await rpc
                return finish(reply, await rpc.initial_metadata())
            except grpc.RpcError as e:
                retry = e.code() in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                )
                if not retry or attempt >= self.retries:
                    raise _grpc_error(e) from None
            await asyncio.sleep(_backoff(attempt))
            attempt += 1

    async def _send(self, call: _Call) -> Any:
        import asyncio

        if self._channel is not None and call.method == "POST":
            return await self._send_grpc(call)
        attempt = 0
        while True:
            r, error = None, None
            try:
                r = await self._http.request(call.method, call.path, content=call.body,
                                             headers=call.headers)  # fmt: skip
            except self._httpx.TransportError as e:
                error = e
            done = _outcome(self._httpx, call, r, error, attempt, self.retries,
                            self._http.base_url)  # fmt: skip
            if done is not None:
                return _read(call, done)
            await asyncio.sleep(_backoff(attempt))
            attempt += 1

    async def predict(
        self,
        X: Any,
        *,
        names: list[str] | None = None,
        encoding: str = "ndarray",
        path: str = SELDON_PREDICT,
        content_type: str = "application/octet-stream",
    ) -> Any:
        return await self._send(_predict_call(X, names, encoding, path, content_type))

    predict.__doc__ = _Api._doc_predict

    async def predict_raw(self, message: dict[str, Any], *, path: str = SELDON_PREDICT) -> Any:
        """Sends a SeldonMessage (as a dict) and returns the reply as a dict."""
        return await self._send(_Call(path, json.dumps(message).encode(), dict(_JSON), "raw"))

    async def infer(
        self,
        inputs: dict[str, Any] | Any,
        *,
        model: str,
        version: str | None = None,
        outputs: list[str] | None = None,
        binary: bool = True,
        parameters: dict[str, Any] | None = None,
    ) -> dict[str, np.ndarray]:
        """As ``Client.infer``."""
        out: dict[str, np.ndarray] = await self._send(
            _infer_call(inputs, model, version, outputs, binary, parameters)
        )
        return out

    async def metadata(self, model: str | None = None) -> Any:
        """As ``Client.metadata``."""
        path = f"/v2/models/{model}" if model else "/api/v1.0/metadata"
        return await self._send(_Call(path, b"", {}, "raw", method="GET"))


_JSON = {"Content-Type": "application/json"}


def _seldon_data(a: np.ndarray, encoding: str) -> dict[str, Any]:
    if encoding == "ndarray":
        return {"ndarray": a.tolist()}
    if encoding == "tensor":
        return {"tensor": {"shape": list(a.shape), "values": a.ravel().tolist()}}
    dtypes = {"f4": "DT_FLOAT", "f8": "DT_DOUBLE", "i4": "DT_INT32", "i8": "DT_INT64"}
    key = f"{a.dtype.kind}{a.dtype.itemsize}"
    if key not in dtypes:
        a, key = a.astype(np.float64), "f8"
    return {
        "tftensor": {
            "dtype": dtypes[key],
            "tensorShape": {"dim": [{"size": str(d)} for d in a.shape]},
            "tensorContent": base64.b64encode(np.ascontiguousarray(a).tobytes()).decode(),
        }
    }


def _from_seldon_data(data: dict[str, Any]) -> Any:
    if "ndarray" in data:
        return np.asarray(data["ndarray"])
    if "tensor" in data:
        t = data["tensor"]
        return np.asarray(t.get("values", []), dtype=np.float64).reshape(t.get("shape") or [-1])
    if "tftensor" in data:
        t = data["tftensor"]
        kinds = {"DT_FLOAT": "<f4", "DT_DOUBLE": "<f8", "DT_INT32": "<i4", "DT_INT64": "<i8"}
        shape = [int(d.get("size", 0)) for d in t.get("tensorShape", {}).get("dim", [])]
        raw = base64.b64decode(t.get("tensorContent", ""))
        return np.frombuffer(raw, dtype=kinds[t["dtype"]]).reshape(shape)
    return data


def _array_body(a: np.ndarray, encoding: str) -> tuple[bytes, str]:
    if encoding == "npy":
        buf = io.BytesIO()
        np.save(buf, a, allow_pickle=False)
        return buf.getvalue(), "application/x-npy"
    if encoding == "msgpack":
        import msgpack
        import msgpack_numpy

        return msgpack.packb(a, default=msgpack_numpy.encode), "application/msgpack"
    if encoding == "json":
        return json.dumps({"data": a.tolist(), "dtype": a.dtype.str}).encode(), "application/json"
    doc = {
        "buffer": base64.b64encode(np.ascontiguousarray(a).tobytes()).decode(),
        "dtype": a.dtype.str,
        "shape": list(a.shape),
    }
    return json.dumps(doc).encode(), "application/json"


def _from_array_json(doc: dict[str, Any]) -> np.ndarray:
    if "buffer" in doc:
        raw = base64.b64decode(doc["buffer"])
        out: np.ndarray = np.frombuffer(raw, dtype=doc["dtype"]).reshape(doc["shape"])
        return out
    return np.array(doc["data"], dtype=doc["dtype"])


def _v2_outputs(r: Any) -> dict[str, np.ndarray]:
    head_len = r.headers.get("inference-header-content-length")
    return _v2_from_body(r.content, int(head_len) if head_len else None)


def _v2_from_body(body: bytes, head_len: int | None) -> dict[str, np.ndarray]:
    head = json.loads(body[:head_len] if head_len is not None else body)
    at = head_len or 0
    out: dict[str, np.ndarray] = {}
    for o in head.get("outputs", []):
        shape = o["shape"]
        size = (o.get("parameters") or {}).get("binary_data_size")
        if size is not None:
            blob = body[at : at + size]
            at += size
            if o["datatype"] == "BYTES":
                items, i = [], 0
                while i < len(blob):
                    n = int.from_bytes(blob[i : i + 4], "little")
                    items.append(blob[i + 4 : i + 4 + n])
                    i += 4 + n
                out[o["name"]] = np.array(items, dtype=object).reshape(shape)
            else:
                dtype = np.dtype(_NUMPY_V2[o["datatype"]]).newbyteorder("<")
                out[o["name"]] = np.frombuffer(blob, dtype=dtype).reshape(shape)
        elif o["datatype"] == "BYTES":
            data = [d.encode() if isinstance(d, str) else d for d in o.get("data", [])]
            out[o["name"]] = np.array(data, dtype=object).reshape(shape)
        else:
            out[o["name"]] = np.asarray(o.get("data", []), dtype=_NUMPY_V2[o["datatype"]]).reshape(
                shape
            )
    return out


# -- inferwire predict ---------------------------------------------------------------------


def add_parser(sub: Any) -> None:
    p = sub.add_parser("predict", help="call a server once and print the answer (a quick check)")
    p.add_argument("--url", default="http://127.0.0.1:9000")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help="JSON: an array ([[1, 2]]), a SeldonMessage, or columns")
    source.add_argument("--file", type=Path, help="a file to send as it is (an image, a .npy)")
    p.add_argument("--encoding", default="ndarray", choices=ENCODINGS, help="for an array")
    p.add_argument("--content-type", help="for --file (default: from its suffix)")
    p.add_argument("--model", help="call this model over V2 (/v2/models/MODEL/infer)")
    p.add_argument("--path", default=SELDON_PREDICT, help="the Seldon route to call")
    p.add_argument("--token", help="a bearer token (or INFERWIRE_TOKEN)")
    p.add_argument("--timeout", type=float, default=30.0)


def _printable(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return _printable(v.tolist())
    if isinstance(v, dict):
        return {k: _printable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_printable(x) for x in v]
    if isinstance(v, bytes):
        try:
            return v.decode()
        except UnicodeDecodeError:
            return {"bytes": len(v), "base64": base64.b64encode(v).decode()}
    return v


def run(args: dict[str, Any]) -> int:
    import mimetypes
    import os
    import sys

    token = args["token"] or os.environ.get("INFERWIRE_TOKEN")
    try:
        with Client(args["url"], token=token, timeout=args["timeout"], retries=0) as c:
            if args["file"] is not None:
                data = args["file"].read_bytes()
                ctype = args["content_type"] or (
                    "application/x-npy"
                    if args["file"].suffix == ".npy"
                    else mimetypes.guess_type(args["file"].name)[0] or "application/octet-stream"
                )
                out = c.predict(data, content_type=ctype, path=args["path"])
            else:
                doc = json.loads(args["data"])
                if args["model"]:
                    out = c.infer(np.asarray(doc), model=args["model"])
                elif isinstance(doc, dict) and set(doc) & {"data", "strData", "jsonData",
                                                          "binData", "meta"}:  # fmt: skip
                    out = c.predict_raw(doc, path=args["path"])
                else:
                    out = c.predict(doc, encoding=args["encoding"], path=args["path"])
    except (InferwireError, ValueError, OSError) as e:
        print(f"inferwire: {e}", file=sys.stderr)
        return 1
    print(json.dumps(_printable(out)))
    return 0
