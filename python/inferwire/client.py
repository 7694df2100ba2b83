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
from typing import Any

import numpy as np

from .errors import InferwireError

SELDON_PREDICT = "/api/v1.0/predictions"
# Request encodings: Seldon's three, then the array bodies (docs/reference/encodings.md).
ENCODINGS = ("ndarray", "tensor", "tftensor", "npy", "msgpack", "json", "base64")


class ClientError(InferwireError):
    """The server answered with an error; ``status`` is its HTTP status and the message
    is the server's own."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class BadRequestError(ClientError):
    """400, 406, 413, 415: the request was refused as it was sent."""


class AuthError(ClientError):
    """401 (no valid token) or 403 (a token without the route's scope)."""


class NotFoundError(ClientError):
    """404: no such model, version or route."""


class OverloadedError(ClientError):
    """503: the server's queue is full or it is shutting down (retried first)."""


class ServerError(ClientError):
    """500 and other 5xx: the model failed (its message is here) or the server did."""


class UnreachableError(InferwireError):
    """No answer: the connection failed or timed out (after the retries)."""


def _error(status: int, body: bytes) -> ClientError:
    try:
        doc = json.loads(body)
        message = (doc.get("status") or {}).get("info") or doc.get("error") or body.decode()
    except (ValueError, AttributeError):
        message = body.decode(errors="replace")
    kind: type[ClientError]
    if status in (401, 403):
        kind = AuthError
    elif status == 404:
        kind = NotFoundError
    elif status == 503:
        kind = OverloadedError
    elif status >= 500:
        kind = ServerError
    else:
        kind = BadRequestError
    return kind(status, message)


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


class Client:
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
    ) -> None:
        try:
            import httpx
        except ImportError as e:  # pragma: no cover - the extra is missing
            raise InferwireError("the client needs httpx: pip install 'inferwire[client]'") from e
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=url.rstrip("/"), timeout=timeout, verify=verify, http2=http2, headers=headers
        )
        self._httpx = httpx
        self.retries = retries

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport -------------------------------------------------------------------------

    def _post(
        self, path: str, content: bytes, headers: dict[str, str], method: str = "POST"
    ) -> Any:
        """Sends with retries: a connection that could not be made, or a 503, is tried
        again after a short backoff (``Retry-After`` when the server gives one)."""
        attempt = 0
        while True:
            try:
                r = self._http.request(method, path, content=content, headers=headers)
            except self._httpx.TimeoutException as e:
                raise UnreachableError(f"{method} {path}: no answer in time ({e})") from e
            except (self._httpx.ConnectError, self._httpx.RemoteProtocolError) as e:
                if attempt >= self.retries:
                    raise UnreachableError(
                        f"cannot reach {self._http.base_url}: {e} (after {attempt + 1} tries)"
                    ) from e
            else:
                if r.status_code < 400:
                    return r
                if r.status_code != 503 or attempt >= self.retries:
                    raise _error(r.status_code, r.content)
            attempt += 1
            time.sleep(min(0.05 * 2**attempt, 1.0))

    def _get(self, path: str) -> Any:
        r = self._http.get(path)
        if r.status_code >= 400:
            raise _error(r.status_code, r.content)
        return r.json()

    # -- Seldon ----------------------------------------------------------------------------

    def predict(
        self,
        X: Any,
        *,
        names: list[str] | None = None,
        encoding: str = "ndarray",
        path: str = SELDON_PREDICT,
        content_type: str = "application/octet-stream",
    ) -> Any:
        """The model's ``predict`` on ``X``: a numpy array (or list) sent in ``encoding``,
        ``bytes`` sent as they are (with ``content_type``: an image, say), a ``str``
        (``strData``) or a ``dict`` (plain JSON: a data frame's columns, say).

        Arrays come back as numpy arrays in the dtype the server sent; bytes as bytes,
        strings as str, JSON objects as dicts."""
        if isinstance(X, (bytes, bytearray, memoryview)):
            r = self._post(path, bytes(X), {"Content-Type": content_type})
            return self._decode(r)
        if isinstance(X, str):
            return self._seldon_reply(self._post_json(path, {"strData": X}))
        if isinstance(X, dict):
            return self._decode(self._post(path, json.dumps(X).encode(), _JSON))
        a = np.asarray(X)
        if encoding in ("ndarray", "tensor", "tftensor"):
            msg: dict[str, Any] = {"data": _seldon_data(a, encoding)}
            if names:
                msg["data"]["names"] = list(names)
            return self._seldon_reply(self._post_json(path, msg))
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding {encoding!r}: one of {', '.join(ENCODINGS)}")
        body, ctype = _array_body(a, encoding)
        return self._decode(self._post(path, body, {"Content-Type": ctype}))

    def predict_raw(self, message: dict[str, Any], *, path: str = SELDON_PREDICT) -> Any:
        """Sends a SeldonMessage (as a dict) and returns the reply as a dict."""
        return self._post_json(path, message).json()

    def _post_json(self, path: str, doc: Any) -> Any:
        return self._post(path, json.dumps(doc).encode(), _JSON)

    def _seldon_reply(self, r: Any) -> Any:
        doc = r.json()
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

    def _decode(self, r: Any) -> Any:
        ctype = r.headers.get("content-type", "").split(";")[0].strip()
        if ctype == "application/x-npy":
            return np.load(io.BytesIO(r.content), allow_pickle=False)
        if ctype == "application/msgpack":
            import msgpack
            import msgpack_numpy

            return msgpack.unpackb(r.content, object_hook=msgpack_numpy.decode)
        if ctype == "application/json":
            doc = r.json()
            if isinstance(doc, dict) and "dtype" in doc and ("data" in doc or "buffer" in doc):
                return _from_array_json(doc)
            if isinstance(doc, dict) and ("data" in doc or "jsonData" in doc):
                return self._seldon_reply(r)
            return doc
        if ctype.startswith("text/"):
            return r.text
        return r.content

    # -- V2 --------------------------------------------------------------------------------

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
            header["outputs"] = [
                {"name": o, "parameters": {"binary_data": binary}} for o in outputs
            ]
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
        r = self._post(path, head + b"".join(blobs), headers)
        return _v2_outputs(r)

    # -- metadata and health ----------------------------------------------------------------

    def metadata(self, model: str | None = None) -> Any:
        """The V2 model metadata of ``model``, or the Seldon metadata of the default."""
        return self._get(f"/v2/models/{model}" if model else "/api/v1.0/metadata")

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
    body = r.content
    head = json.loads(body[: int(head_len)] if head_len else body)
    at = int(head_len) if head_len else 0
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
