"""A TorchServe handler as the core serves it: each request of TorchServe's inference API
arrives as a V2 request whose one BYTES input ``body`` is the body as it came, with its
Content-Type, headers and query parameters as the request's parameters
(``crates/inferwire-server/src/rest/torchserve.rs``); the core's batcher gathers up to the
archive's ``batchSize`` of them, and ``infer_many`` hands them to the handler in one call,
as TorchServe's worker does. Each reply goes back as the output ``body`` with its content
type, status and headers as the response's parameters; a failed one as an exception
carrying TorchServe's status and error body. Bodies cross the glue as lists of bytes
(``bytes_as_lists``), and each request goes straight to ``HandlerModel.prepare``: no
numpy and no intermediate request record between the wire and the handler.

A request of TorchServe's gRPC API (``crates/inferwire-server/src/grpc/torchserve.rs``,
parameter ``grpc``) brings its named inputs instead of a body, one BYTES input each: the
handler gets them by name (``{"data": ...}``).

Intermediate responses (``send_intermediate_predict_response``): a request whose
parameter ``torchserve_stream`` holds a token (``crates/inferwire-server/src/stream/handoff.rs``)
has a reader for them while the handler runs; its first piece takes the request's
``PieceSender`` from the core, and each piece, then the reply (or its failure), goes
there as it comes, the transport writing it at once. Without one (no token, or a call
the core runs where nothing reads meanwhile) the pieces are kept: the output ``body``
holds them and then the reply, one element each, with the first piece's status,
content type and headers, as TorchServe's chunked reply has its first chunk's."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .._core import PieceSender, take_piece_sender
from ..contract import Adapter, Request
from .handler_model import STREAM_NEXT, HandlerModel, ReadersGone, Reply

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
    # Bodies in and out as bytes: no numpy between the wire and the handler.
    bytes_as_lists = True

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
        streams = _Streams([request])
        [reply] = self.model.handle_prepared([self._prepare(request)], streams.on_piece)
        if streams.senders is not None and streams.finish(0, reply):
            return STREAMED
        if reply.error:
            raise HandlerError(reply)
        return _answer(reply)

    def infer_many(self, requests: list[Request]) -> list[Any]:
        streams = _Streams(requests)
        replies = self.model.handle_prepared([self._prepare(r) for r in requests], streams.on_piece)
        if streams.senders is None:  # the handler sent no piece (most never do)
            return [_answer(reply) for reply in replies]
        return [
            STREAMED if streams.finish(i, reply) else _answer(reply)
            for i, reply in enumerate(replies)
        ]

    def _prepare(self, r: Request) -> Any:
        """A request as the handler gets it (``HandlerModel.prepare``): TorchServe's REST
        body, or its gRPC call's named inputs, with what the core put in its parameters."""
        p = r.parameters or {}
        # The core builds these from the wire: strings already, and a fresh dict per request.
        if p.get("grpc"):
            inputs = [(str(name), _first(value)) for name, value in r.inputs.items()]
            body = b""
        else:
            inputs = None
            body = _first(r.inputs.get(BODY))
        return self.model.prepare(
            body,
            p.get("content_type") or "",
            p.get("headers") or {},
            p.get("query") or (),
            inputs,
            r.id,
        )

    def __del__(self) -> None:
        # Unloaded: the archive's extracted files go, in the process that extracted them
        # (workers forked from it read the same folder).
        if os.getpid() == self._pid:
            self.model.close()


def _first(value: Any) -> bytes:
    """A BYTES input's one element (b"" when it has none): a list of bytes as the glue
    hands it (``bytes_as_lists``), else a numpy array."""
    if type(value) is list:
        return value[0] if value else b""
    if value is None:
        return b""
    if not isinstance(value, np.ndarray):
        value = np.asarray(value)
    data = value.item(0) if value.size else b""
    return data if isinstance(data, bytes) else bytes(data)


def _answer(reply: Reply) -> Any:
    if reply.error:
        return HandlerError(reply)
    if not reply.pieces:
        body = reply.body
        if reply.headers:
            parameters = _parameters(reply, strip=True)
        else:
            parameters = {"status": reply.status, "content_type": reply.content_type}
        return {
            "outputs": [(BODY, [body if type(body) is bytes else bytes(body)])],
            "parameters": parameters,
        }
    # Intermediate responses kept for the end: each an element before the reply's, the
    # head (status, type, headers) the first one's, as TorchServe's first chunk has.
    parts = [*(bytes(p.body) for p in reply.pieces), bytes(reply.body)]
    return {"outputs": [(BODY, parts)], "parameters": _parameters(reply.pieces[0])}


def _parameters(reply: Reply, strip: bool = False) -> dict[str, Any]:
    """A reply's status, content type and headers (a whole reply's without TorchServe's
    stream marker, which only a streamed reply's head carries)."""
    parameters: dict[str, Any] = {"status": reply.status, "content_type": reply.content_type}
    if reply.headers:
        headers = reply.headers
        if strip:
            headers = {k: v for k, v in headers.items() if k.lower() != STREAM_NEXT}
        if headers:
            parameters["headers"] = headers
    return parameters


# The request parameter holding the token of the request's stream, and the answer of a
# request whose reply went into its stream (its transport reads that instead).
STREAM_TOKEN = "torchserve_stream"
STREAMED: list[Any] = []
_NONE_GONE: set[int] = set()


class _Streams:
    """The streams of one batch's requests, each taken from the core at its request's
    first piece (nothing is made before: most handlers send none)."""

    __slots__ = ("gone", "requests", "senders")

    def __init__(self, requests: list[Request]) -> None:
        self.requests = requests
        # Request index -> its sender, or None where the core gave none (pieces kept).
        self.senders: dict[int, PieceSender | None] | None = None
        # Requests whose reader has gone (the shared empty set until the first piece).
        self.gone: set[int] = _NONE_GONE

    def on_piece(self, i: int, piece: Reply) -> bool:
        if self.senders is None:
            self.senders, self.gone = {}, set()
        elif i in self.gone:
            return True  # its reader has gone: dropped
        if i in self.senders:
            sender = self.senders[i]
        else:
            token = (self.requests[i].parameters or {}).get(STREAM_TOKEN)
            sender = self.senders[i] = _sender(token)
        if sender is None:
            return False
        if not sender.send(_piece(piece, last=False)):
            self.gone.add(i)
            if len(self.gone) == len(self.requests):
                raise ReadersGone("every request of the batch has lost its reader")
        return True

    def finish(self, i: int, reply: Reply) -> bool:
        """Sends request ``i``'s reply (or failure) into its stream: whether it had one."""
        sender = self.senders.get(i) if self.senders is not None else None
        if sender is None:
            return i in self.gone
        if i not in self.gone:
            if reply.error:
                sender.fail(reply.status, reply.message, bytes(reply.body).decode("utf-8"))
            else:
                sender.send(_piece(reply, last=True))
        sender.close()
        return True


def _sender(token: Any) -> PieceSender | None:
    # A V2 client can name any parameter: only a token the core made finds a stream.
    if type(token) is not int:
        return None
    try:
        return take_piece_sender(token)
    except OverflowError:
        return None


def _piece(reply: Reply, last: bool) -> list[tuple[str, Any, dict[str, Any]]]:
    """A piece of a streamed answer: the body as one element, its status, content type
    and headers (and ``last``) as the output's parameters."""
    body = np.empty(1, dtype=object)
    body[0] = bytes(reply.body)
    parameters = _parameters(reply)
    parameters["last"] = last
    return [(BODY, body, parameters)]
