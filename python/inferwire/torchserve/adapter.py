"""A TorchServe handler as the core serves it: each request of TorchServe's inference API
arrives as a V2 request whose one BYTES input ``body`` is the body as it came, with its
Content-Type, headers and query parameters as the request's parameters
(``crates/inferwire-server/src/rest/torchserve.rs``); the core's batcher gathers up to the
archive's ``batchSize`` of them, and ``infer_many`` hands them to the handler in one call,
as TorchServe's worker does. Each reply goes back as the output ``body`` with its content
type, status and headers as the response's parameters; a failed one as an exception
carrying TorchServe's status and error body.

A request of TorchServe's gRPC API (``crates/inferwire-server/src/grpc/torchserve.rs``,
parameter ``grpc``) brings its named inputs instead of a body, one BYTES input each: the
handler gets them by name (``{"data": ...}``). With the parameter ``pieces`` the output
``body`` holds the handler's intermediate responses and then its reply, one element
each (``StreamPredictions`` sends each as a message)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..contract import Adapter, Request
from .handler_model import STREAM_NEXT, HandlerModel, Reply
from .handler_model import Request as HandlerRequest

BODY = "body"


class HandlerError(Exception):
    """A request the handler failed: TorchServe's status and ``{"code", "type",
    "message"}`` body (``errors.error_reply`` reads ``status_code`` and ``to_dict``)."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.message)
        self.status_code = reply.status
        self.message = reply.message
        self._body = reply.body

    def to_dict(self) -> Any:
        import json

        try:
            return json.loads(self._body)
        except ValueError:
            return {"code": self.status_code, "type": "InternalServerException",
                    "message": self.message}  # fmt: skip


class HandlerAdapter(Adapter):
    infers_many = True

    def __init__(self, model: HandlerModel) -> None:
        super().__init__(model.name)
        self.model = model
        self._pid = os.getpid()
        self._metadata = {
            "name": model.name,
            "versions": [model.version] if model.version else [],
            "platform": "torchserve",
            "inputs": [{"name": BODY, "datatype": "BYTES", "shape": [1]}],
            "outputs": [{"name": BODY, "datatype": "BYTES", "shape": [1]}],
            # What TorchServe's describe API shows of the archive.
            "torchserve": {
                "modelUrl": Path(str(model.archive.source)).name,
                "runtime": str(model.manifest.get("runtime", "python")),
                "minWorkers": model.config.min_workers or 1,
                "maxWorkers": model.config.max_workers or model.config.min_workers or 1,
                "batchSize": model.batch_size or 1,
                "maxBatchDelay": model.config.max_batch_delay_ms,
                "responseTimeout": model.config.response_timeout_s,
                "handler": model.handler,
            },
        }

    def infer(self, request: Request) -> Any:
        answer = self.infer_many([request])[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def infer_many(self, requests: list[Request]) -> list[Any]:
        replies = self.model.handle_batch([_handler_request(r) for r in requests])
        return [
            _answer(reply, bool((r.parameters or {}).get("pieces")))
            for r, reply in zip(requests, replies, strict=True)
        ]

    def __del__(self) -> None:
        # Unloaded: the archive's extracted files go, in the process that extracted them
        # (workers forked from it read the same folder).
        if os.getpid() == self._pid:
            self.model.close()


def _first(value: Any) -> bytes:
    """A BYTES input's one element (b"" when it has none)."""
    if value is None:
        return b""
    if not isinstance(value, np.ndarray):
        value = np.asarray(value)
    data = value.item(0) if value.size else b""
    return data if isinstance(data, bytes) else bytes(data)


def _handler_request(r: Request) -> HandlerRequest:
    p = r.parameters or {}
    # The core builds these from the wire: strings already, and a fresh dict per request.
    query = p.get("query") or ()
    inputs = None
    if p.get("grpc"):
        inputs = [(str(name), _first(value)) for name, value in r.inputs.items()]
    return HandlerRequest(
        body=b"" if inputs is not None else _first(r.inputs.get(BODY)),
        content_type=p.get("content_type") or "",
        headers=p.get("headers") or {},
        query=query,
        inputs=inputs,
        request_id=r.id,
    )


def _answer(reply: Reply, pieces: bool = False) -> Any:
    if reply.error:
        return HandlerError(reply)
    # A handler's intermediate responses (send_intermediate_predict_response) come
    # first, as TorchServe's chunks do; they are sent together with the last one, one
    # element each when the request asked for ``pieces`` (gRPC's StreamPredictions).
    if not reply.pieces:
        body = np.empty(1, dtype=object)
        body[0] = bytes(reply.body)
    else:
        parts = [*(bytes(p.body) for p in reply.pieces), bytes(reply.body)]
        if pieces:
            body = np.empty(len(parts), dtype=object)
            body[:] = parts
        else:
            body = np.empty(1, dtype=object)
            body[0] = b"".join(parts)
    parameters: dict[str, Any] = {"status": reply.status, "content_type": reply.content_type}
    if reply.headers:
        headers = {k: v for k, v in reply.headers.items() if k.lower() != STREAM_NEXT}
        if headers:
            parameters["headers"] = headers
    return {"outputs": [(BODY, body)], "parameters": parameters}
