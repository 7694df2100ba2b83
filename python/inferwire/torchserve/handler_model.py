"""A TorchServe model served in this process: an archive (``archive.py``), its
``model-config.yaml`` (``model_config.py``), its handler (``handlers.py``) initialized
once per instance with its ``Context`` (``context.py``), and the one call a dialect
makes, ``HandlerModel.handle_batch(requests) -> replies`` (or, without a ``Request``
record per request, ``prepare`` each and ``handle_prepared`` them: the adapter's way).

What a handler sees is what TorchServe's Python worker gives it: for each request a dict
of its parameters — query parameters, then the body as ``"body"`` (or each form field
by its name, or each gRPC input by its name) — with JSON values decoded for
``application/json``, text decoded for ``text/*``, and every other value a
``bytearray``; ``context`` holds the request ids and each request's headers (plus, per
parameter, ``{"content-type": ...}``). What it returns becomes the replies as TorchServe
encodes them: a list as long as the batch, each item bytes as they are, a string as
UTF-8, a tensor as ``torch.save`` writes it, anything else as indented JSON; the content
type, status and headers the handler set on the context go with each.

Failures are the whole batch's, in TorchServe's words and codes: an exception 503
"Prediction failed" (``PredictionException``: its own code and message; out of memory:
507 "Out of resources"); a result that is not a list, 503 "Invalid model predict output";
one of the wrong length, 503 "number of batch response mismatched". The model goes on
serving.

Streams: a handler that calls TorchServe's ``send_intermediate_predict_response`` writes
TorchServe's response frame to ``context.cl_socket``; here that is an object whose
``sendall`` decodes the frame into pieces handed to ``on_piece`` as they come (or to
``stream_batch``'s iterator), the handler's return being each request's last piece.
``on_piece`` raising ``ReadersGone`` (no request of the batch has a reader left) raises it
in the handler at its ``send_intermediate_predict_response``, as a socket whose peer has
gone raises ``BrokenPipeError``: the handler stops, the batch fails."""

from __future__ import annotations

import io
import json
import logging
import os
import queue
import struct
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

from ..errors import ModelLoadError
from . import handlers, model_config
from .archive import ArchiveError, Limits, ModelArchive, open_archive
from .context import TORCHSERVE_VERSION, Context, Headers, Metrics, RequestProcessor

log = logging.getLogger("inferwire")

# Parts of one multipart or urlencoded form.
MAX_FORM_FIELDS = 1000
# Pieces a stream_batch consumer may fall behind by before the handler waits.
STREAM_BUFFER = 64
# The header that marks a streamed piece (TorchServe's RequestInput.TS_STREAM_NEXT).
STREAM_NEXT = "ts_stream_next"
PREDICTION_METRIC = "PredictionTime"


@dataclass(slots=True)
class Request:
    """One inference request as the dialect hands it over.

    ``body``: the raw body (REST); ``content_type``: its Content-Type header as sent
    (parameters such as charset are dropped as TorchServe's frontend drops them; a
    multipart or urlencoded form is split into its fields); ``headers``: the request's
    headers, name and value (a later duplicate wins, as in TorchServe); ``query``: the
    query parameters in order; ``inputs``: gRPC's named inputs (``PredictionsRequest.
    input``), given instead of a body; ``request_id``: the id handlers see (empty: a new
    UUID)."""

    body: bytes | bytearray | memoryview = b""
    content_type: str = ""
    headers: Sequence[tuple[str, str]] | Mapping[str, str] = ()
    query: Sequence[tuple[str, str]] = ()
    inputs: Sequence[tuple[str, bytes]] | Mapping[str, bytes] | None = None
    request_id: str = ""


@dataclass(slots=True)
class Reply:
    """One request's answer, or one piece of it.

    ``status`` and ``message``: the HTTP status and reason phrase (the handler's, from
    ``set_response_status``; for an ``error`` the failure's message). ``content_type``:
    what the handler set ("" when it set none: TorchServe then sends no Content-Type).
    ``headers``: the other response headers the handler set. ``error``: the batch
    failed; ``body`` is then TorchServe's error JSON ``{"code", "type", "message"}``.
    ``last``: False for an intermediate piece (``send_intermediate_predict_response``).
    ``more``: continuous batching (``context.stopping_criteria``) says this request is
    not finished: the dialect calls the handler with it again. ``pieces``: intermediate
    pieces given before this reply when ``handle_batch`` had no ``on_piece``."""

    body: bytes
    status: int = 200
    message: str = ""
    content_type: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    error: bool = False
    last: bool = True
    more: bool = False
    pieces: list[Reply] = field(default_factory=list)


# Returns False to decline a piece: it is then kept in its final reply's ``pieces``.
OnPiece = Callable[[int, Reply], "bool | None"]


class ReadersGone(BrokenPipeError):
    """Raised by an ``on_piece`` whose batch has no reader left: the handler's
    ``send_intermediate_predict_response`` raises it, as a socket whose peer has gone."""


def error_reply(status: int, message: str, kind: str = "InternalServerException") -> Reply:
    """A failed request's reply as TorchServe's frontend answers it: its error JSON, with
    ``kind`` as the exception's name (a handler's 413 becomes 507, as in TorchServe)."""
    status = 507 if status == 413 else status
    body = {"code": status, "type": kind, "message": message}
    return Reply(
        body=(json.dumps(body, indent=2) + "\n").encode(),
        status=status,
        message=message,
        content_type="application/json",
        error=True,
    )


# A request as the handler gets it: its data dict, its headers, its id (``prepare``).
Prepared = tuple[dict[str, Any], Headers, str]


class _Instance:
    """One initialized handler and its context (a TorchServe worker's worth)."""

    def __init__(self, resolved: handlers.Resolved, context: Context) -> None:
        self.resolved = resolved
        self.context = context


class HandlerModel:
    """A TorchServe archive's handler, ready for requests.

    ``source``: a ``.mar``, a ``.tar.gz`` or a no-archive folder. ``name``: the name
    served (default: the manifest's ``modelName``). ``instances``: handler objects, each
    initialized once with its own context and running one batch at a time (default:
    the config's ``minWorkers``, else 1). ``batch_size``: what ``system_properties``
    says (default: the config's ``batchSize``). ``gpu_id``: default from the config's
    ``deviceType``/``deviceIds`` (None: CPU). ``handler``: overrides the manifest's.
    ``envelope``: TorchServe's ``service_envelope`` (json, body, kserve, kservev2).

    Raises ``ArchiveError`` (a ``ModelLoadError``) for the archive, ``SettingsError``
    for its config file and ``ModelLoadError`` for the handler; the archive's temporary
    files are gone again when it does. ``close()`` removes them after serving."""

    def __init__(
        self,
        source: str | Path,
        *,
        name: str = "",
        instances: int = 0,
        batch_size: int = 0,
        gpu_id: int | str | None = "config",
        handler: str = "",
        envelope: str = "",
        limit_max_image_pixels: bool = True,
        temp_dir: str | Path | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.archive: ModelArchive = open_archive(source, temp_dir=temp_dir, limits=limits)
        try:
            self._load(
                name, instances, batch_size, gpu_id, handler, envelope, limit_max_image_pixels
            )
        except BaseException:
            self.close()
            raise

    def _load(
        self,
        name: str,
        instances: int,
        batch_size: int,
        gpu_id: int | str | None,
        handler: str,
        envelope: str,
        limit_max_image_pixels: bool,
    ) -> None:
        manifest = self.archive.manifest
        self.name = name or manifest.model_name
        self.version = manifest.model_version
        self.folder = self.archive.folder
        if manifest.config_file:
            where = f"{self.archive.source}: {manifest.config_file}"
            self.config = model_config.read(self.folder / manifest.config_file, where)
        else:
            self.config = model_config.ModelConfig()
        self.batch_size = batch_size or self.config.batch_size
        self.gpu_id = self.config.gpu_id if gpu_id == "config" else gpu_id
        self.handler = handler or manifest.handler
        self.metrics = Metrics(self.name)
        self.decode_inputs = os.environ.get("TS_DECODE_INPUT_REQUEST", "true") == "true"
        count = instances or self.config.min_workers or 1
        self._free: queue.SimpleQueue[_Instance] = queue.SimpleQueue()
        self._instances: list[_Instance] = []
        for _ in range(count):
            # Where TorchServe runs a handler's worker (its files by relative path).
            with handlers.in_model_folder(self.folder):
                resolved = handlers.resolve(self.handler, self.folder, self.name, envelope)
                context = Context(
                    self.name,
                    str(self.folder),
                    manifest.raw,
                    self.batch_size,
                    self.gpu_id if isinstance(self.gpu_id, int) else None,
                    TORCHSERVE_VERSION,
                    limit_max_image_pixels,
                    self.metrics,
                    self.config.raw,
                )
                try:
                    resolved.initialize(context)
                except Exception as e:
                    raise ModelLoadError(
                        f"{self.archive.source}: handler {resolved.describe}: initialize failed: "
                        f"{type(e).__name__}: {e}"
                    ) from e
                instance = _Instance(resolved, context)
                self._instances.append(instance)
                self._free.put(instance)
        log.info(
            "TorchServe model %s (version %s): handler %s, %d instance%s, batch size %d",
            self.name,
            self.version,
            self._instances[0].resolved.describe,
            count,
            "s" if count > 1 else "",
            self.batch_size,
        )

    @property
    def manifest(self) -> dict[str, Any]:
        """MANIFEST.json as read (TorchServe's describe API shows parts of it)."""
        return self.archive.manifest.raw

    def close(self) -> None:
        """Unloads: the archive's extracted files go, its folder leaves the import path."""
        self._instances = []
        handlers.forget_folder(self.archive.folder)
        self.archive.close()

    # -- requests --------------------------------------------------------------------

    def handle_batch(
        self, requests: Sequence[Request], on_piece: OnPiece | None = None
    ) -> list[Reply]:
        """One handler call for ``requests``: a reply for each, in order. Intermediate
        pieces the handler sends go to ``on_piece(index, piece)`` as they are sent (from
        the calling thread, inside the handler's call), else (or when it returns False)
        into each final reply's ``pieces``. A request whose form cannot be read gets a
        400 and stays out of the handler's batch. Blocks while every instance is busy."""
        prepare = self.prepare
        return self.handle_prepared(
            [
                prepare(r.body, r.content_type, r.headers, r.query, r.inputs, r.request_id)
                for r in requests
            ],
            on_piece,
        )

    def prepare(
        self,
        body: bytes | bytearray | memoryview,
        content_type: str,
        headers: Sequence[tuple[str, str]] | Mapping[str, str],
        query: Sequence[tuple[str, str]],
        inputs: Sequence[tuple[str, bytes]] | Mapping[str, bytes] | None,
        request_id: str,
    ) -> Prepared | Reply:
        """One request (``Request``'s fields) as the handler gets it: its data dict, its
        headers as the context has them and its id; or the 400 of a form that cannot be
        read."""
        request_id = request_id or str(uuid.uuid4())
        if not query and inputs is None:
            # The common request: a body, no query parameters.
            mime = _mime(content_type) if content_type else ""
            if mime.lower() not in _FORMS:
                fields = Headers(body={"content-type": mime})
                fields.update(headers)
                raw = body if isinstance(body, bytes) else bytes(body)
                return {"body": self._decode(raw, mime)}, fields, request_id
        params: list[tuple[str, bytes, str]] = [(k, v.encode(), "") for k, v in query]
        if inputs is not None:
            params.extend((k, bytes(v), "") for k, v in _items(inputs))
        else:
            try:
                params.extend(_body_params(body, content_type))
            except FormError as e:
                return error_reply(400, str(e), "BadRequestException")
        data: dict[str, Any] = {}
        fields = Headers()
        for name, value, kind in params:
            data[name] = self._decode(value, kind)
            dict.__setitem__(fields, name, {"content-type": kind})
        # The request's own headers after its fields' (a header wins over a field's name).
        fields.update(headers)
        return data, fields, request_id

    def handle_prepared(
        self, items: list[Prepared | Reply], on_piece: OnPiece | None = None
    ) -> list[Reply]:
        """``handle_batch`` for requests already ``prepare``d: those that failed there
        keep their reply; the others go to the handler together."""
        batch = items
        where: list[int] | None = None
        for item in items:
            if type(item) is not tuple:
                where = [i for i, x in enumerate(items) if type(x) is tuple]
                batch = [items[i] for i in where]
                break
        if where is not None:
            replies = list(items)
            if not batch:
                return replies  # type: ignore[return-value]
            if on_piece is not None:
                relay = on_piece
                on_piece = lambda k, piece: relay(where[k], piece)  # noqa: E731
        instance = self._free.get()
        try:
            done = self._run(instance, batch, on_piece)  # type: ignore[arg-type]
        finally:
            self._free.put(instance)
        if where is None:
            return done
        for i, reply in zip(where, done, strict=True):
            replies[i] = reply
        return replies  # type: ignore[return-value]

    def stream_batch(self, requests: Sequence[Request]) -> Iterator[tuple[int, Reply]]:
        """``handle_batch`` as an iterator of ``(index, piece)``, intermediate pieces
        first as the handler sends them, then each request's final reply (``last``).
        The handler runs on a thread of its own and waits when the reader is more than
        ``STREAM_BUFFER`` pieces behind; closing the iterator early lets it finish with
        its pieces dropped."""
        out: queue.Queue[tuple[int, Reply] | BaseException | None] = queue.Queue(STREAM_BUFFER)
        stop = threading.Event()

        def put(item: tuple[int, Reply] | BaseException | None) -> None:
            while not stop.is_set():
                try:
                    out.put(item, timeout=0.1)
                    return
                except queue.Full:
                    continue

        def run() -> None:
            try:
                replies = self.handle_batch(requests, lambda i, piece: put((i, piece)))
                for i, reply in enumerate(replies):
                    put((i, reply))
                put(None)
            except BaseException as e:  # handed to the reader, which raises it
                put(e)

        thread = threading.Thread(target=run, name=f"torchserve-{self.name}", daemon=True)
        thread.start()
        try:
            while True:
                item = out.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()

    def _run(
        self, instance: _Instance, prepared: list[Prepared], on_piece: OnPiece | None
    ) -> list[Reply]:
        ctx = instance.context
        if len(prepared) == 1:
            data, head, rid = prepared[0]
            ids = {0: rid}
            batch = [data]
            ctx._request_processor = [RequestProcessor(head)]
        else:
            ids = {k: p[2] for k, p in enumerate(prepared)}
            batch = [p[0] for p in prepared]
            ctx._request_processor = [RequestProcessor(p[1]) for p in prepared]
        ctx.request_ids = ids
        ctx.stopping_criteria = None
        self.metrics.request_ids = ids
        # Where the handler's intermediate pieces go (and the failures they report).
        sock = ctx.cl_socket = _PieceSocket(ids, on_piece)
        start = time.time()
        try:
            result = instance.resolved.handle(batch, ctx)
        except MemoryError:
            log.error("model %s: out of memory in the handler", self.name, exc_info=True)
            return self._failed(ids, sock.ended, 507, "Out of resources")
        except ReadersGone:
            # Nobody waits for these replies any more.
            log.info("model %s: every client of the batch has gone; handler stopped", self.name)
            return self._failed(ids, sock.ended, 503, "Prediction failed")
        except Exception as e:
            failure = _prediction_exception(e)
            if failure is not None:
                if failure[0] < 500:
                    # The request's fault (an envelope refusing a body): one line, so a
                    # client cannot fill the log with tracebacks.
                    log.warning("model %s: prediction error %d: %s", self.name, *failure)
                else:
                    log.error("model %s: prediction error", self.name, exc_info=True)
                return self._failed(ids, sock.ended, *failure)
            if "CUDA" in str(e):
                log.error("model %s: CUDA out of memory", self.name, exc_info=True)
                return self._failed(ids, sock.ended, 507, "Out of resources")
            log.warning("model %s: invoking the handler failed", self.name, exc_info=True)
            return self._failed(ids, sock.ended, 503, "Prediction failed")
        finally:
            ctx.cl_socket = None
        ended = sock.ended
        if not isinstance(result, list):
            log.warning("model %s: invalid return type: %s", self.name, type(result).__name__)
            return self._failed(ids, ended, 503, "Invalid model predict output")
        if len(result) != len(batch):
            log.warning(
                "model %s: number of batch response mismatched, expect: %d, got: %d",
                self.name,
                len(batch),
                len(result),
            )
            return self._failed(ids, ended, 503, "number of batch response mismatched")
        self.metrics._time(PREDICTION_METRIC, round((time.time() - start) * 1000, 2))
        pieces = sock.pieces
        replies: list[Reply] = []
        for i, value in enumerate(result):
            if ended and i in ended:
                replies.append(ended[i])
                continue
            try:
                body = value if type(value) is bytes else encode(value)
            except TypeError:
                log.warning("model %s: unable to serialize model output", self.name, exc_info=True)
                return self._failed(ids, ended, 503, "Unsupported model output data type.")
            reply = _reply(ctx, i, body, value)
            if pieces and i in pieces:
                reply.pieces = pieces[i]
            replies.append(reply)
        return replies

    def _failed(
        self, ids: dict[int, str], ended: dict[int, Reply] | None, status: int, message: str
    ) -> list[Reply]:
        ended = ended or {}
        return [ended.get(i) or error_reply(status, message) for i in ids]

    def _decode(self, value: bytes, kind: str) -> Any:
        if self.decode_inputs and kind == "application/json":
            try:
                # json.loads without its checks: a str here, default options.
                return _json_decode(value.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                log.warning("failed json decoding of input data; forwarding encoded payload")
        elif self.decode_inputs and kind.startswith("text"):
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                log.warning("failed utf-8 decoding of input data; forwarding encoded payload")
        return bytearray(value)


def _prediction_exception(e: Exception) -> tuple[int, str] | None:
    """``ts.utils.util.PredictionException``'s code and message (matched by name: the
    handler's ``ts`` is the user's)."""
    if type(e).__name__ != "PredictionException":
        return None
    code = getattr(e, "error_code", 500)
    message = getattr(e, "message", str(e))
    if not isinstance(code, int) or isinstance(code, bool):
        code = 500
    return code, str(message)


def _reply(ctx: Context, i: int, body: bytes, value: Any) -> Reply:
    """Request ``i``'s final reply from what the handler set on the context, with
    TorchServe's stream marker: after pieces, ``ts_stream_next: false``; with continuous
    batching, what the request's stopping criterion says."""
    more = False
    criteria = ctx.stopping_criteria
    processor = ctx._processor(i)
    if type(processor) is not RequestProcessor:
        return _reply_of(processor, criteria, i, value, body)
    set_headers = processor._response_header
    if criteria:
        stop = criteria[i](value)
        if stop is not None:
            more = not stop
            set_headers[STREAM_NEXT] = "true" if more else "false"
    elif not set_headers:
        # Nothing set: the reply's own empty headers.
        status = processor._status_code
        return Reply(
            body,
            200 if status is None else status,
            processor._reason_phrase or "",
        )
    elif set_headers.get(STREAM_NEXT) == "true":
        set_headers[STREAM_NEXT] = "false"
    headers = dict(set_headers)
    status = processor._status_code
    return Reply(
        body,
        200 if status is None else status,
        processor._reason_phrase or "",
        headers.pop("content-type", "") or "",
        headers,
        False,
        True,
        more,
    )


def _reply_of(processor: Any, criteria: Any, i: int, value: Any, body: bytes) -> Reply:
    """``_reply`` for a processor a handler put in the context itself (its methods)."""
    more = False
    set_headers = processor.get_response_headers()
    if criteria:
        stop = criteria[i](value)
        if stop is not None:
            more = not stop
            set_headers[STREAM_NEXT] = "true" if more else "false"
    elif set_headers.get(STREAM_NEXT) == "true":
        set_headers[STREAM_NEXT] = "false"
    headers = dict(set_headers)
    status = processor.get_response_status_code()
    return Reply(
        body=body,
        status=status if status is not None else 200,
        message=processor.get_response_status_phrase() or "",
        content_type=headers.pop("content-type", "") or "",
        headers=headers,
        more=more,
    )


def encode(value: Any) -> bytes:
    """One handler output as TorchServe's worker encodes it; TypeError when it cannot."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if type(value).__module__ == "torch" and type(value).__name__ == "Tensor":
        import torch

        buffer = io.BytesIO()
        torch.save(value, buffer)
        return buffer.getvalue()
    return json.dumps(value, indent=2).encode("utf-8")


# -- bodies and forms -------------------------------------------------------------------

# The content types whose body is split into form fields.
_FORMS = frozenset(("multipart/form-data", "application/x-www-form-urlencoded"))
_json_decode = json.JSONDecoder().decode


def _items(
    inputs: Sequence[tuple[str, bytes]] | Mapping[str, bytes],
) -> Iterable[tuple[str, bytes]]:
    return inputs.items() if isinstance(inputs, Mapping) else inputs


def _mime(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip()


def _body_params(
    body: bytes | bytearray | memoryview, content_type: str
) -> list[tuple[str, bytes, str]]:
    """The body as TorchServe's frontend passes it: form fields by name (a field without
    a file name has no content type; a file's has its own, default
    application/octet-stream), else the whole body as ``body``."""
    mime = _mime(content_type)
    raw = body if isinstance(body, bytes) else bytes(body)
    form = mime.lower()
    if form == "multipart/form-data":
        return _multipart(raw, content_type)
    if form == "application/x-www-form-urlencoded":
        pairs = urllib.parse.parse_qsl(
            raw.decode("utf-8", "replace"),
            keep_blank_values=True,
            max_num_fields=MAX_FORM_FIELDS,
        )
        return [(k, v.encode("utf-8"), "") for k, v in pairs]
    return [("body", raw, mime)]


def _multipart(raw: bytes, content_type: str) -> list[tuple[str, bytes, str]]:
    header = Message()
    header["content-type"] = content_type
    boundary = header.get_param("boundary")
    if not isinstance(boundary, str) or not boundary:
        raise FormError("multipart/form-data without a boundary")
    delimiter = b"--" + boundary.encode("latin-1")
    chunks = raw.split(delimiter)
    if len(chunks) - 2 > MAX_FORM_FIELDS:
        raise FormError(f"more than {MAX_FORM_FIELDS} form fields")
    out: list[tuple[str, bytes, str]] = []
    for chunk in chunks[1:]:
        if chunk.startswith(b"--"):
            break
        chunk = chunk[2:] if chunk.startswith(b"\r\n") else chunk
        head, sep, content = chunk.partition(b"\r\n\r\n")
        if not sep:
            raise FormError("a form part without headers")
        content = content[:-2] if content.endswith(b"\r\n") else content
        part = Message()
        for line in head.decode("utf-8", "replace").split("\r\n"):
            key, colon, value = line.partition(":")
            if colon:
                part[key.strip()] = value.strip()
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            raise FormError("a form part without a name")
        filename = part.get_param("filename", header="content-disposition")
        kind = ""
        if filename is not None:
            kind = _mime(part.get("content-type", "")) or "application/octet-stream"
        out.append((name, content, kind))
    return out


class FormError(ValueError):
    """A form body that cannot be split into fields (the dialect answers 400)."""


# -- intermediate responses -------------------------------------------------------------


class _PieceSocket:
    """``context.cl_socket`` during a handler call: TorchServe's
    ``send_intermediate_predict_response`` writes one response frame here (what its
    worker sends its frontend), decoded into a piece per request it names. A piece goes
    to ``on_piece``, else (none, or it declines) into ``pieces``; a failure ends its
    request (``ended``). Both are made at the first piece (most handlers send none)."""

    __slots__ = ("_ids", "_index", "ended", "on_piece", "pieces")

    def __init__(self, ids: dict[int, str], on_piece: OnPiece | None) -> None:
        self._ids = ids
        self._index: dict[str, int] | None = None
        self.on_piece = on_piece
        self.pieces: dict[int, list[Reply]] | None = None
        self.ended: dict[int, Reply] | None = None

    def sendall(self, frame: bytes | bytearray | memoryview) -> None:
        if self._index is None:
            self._index = {rid: i for i, rid in self._ids.items()}
        for rid, reply in decode_frame(bytes(frame)):
            i = self._index.get(rid)
            if i is None:
                log.warning("an intermediate response names request %r, not in the batch", rid)
                continue
            self._deliver(i, reply)

    def send(self, frame: bytes | bytearray | memoryview) -> int:
        self.sendall(frame)
        return len(frame)

    def _deliver(self, i: int, reply: Reply) -> None:
        if self.ended is None:
            self.ended, self.pieces = {}, {}
        if i in self.ended:
            return
        if reply.error:
            self.ended[i] = reply
        elif self.on_piece is None or self.on_piece(i, reply) is False:
            assert self.pieces is not None
            self.pieces.setdefault(i, []).append(reply)


def decode_frame(frame: bytes) -> list[tuple[str, Reply]]:
    """TorchServe's predict response frame (big-endian int32 lengths): code, message,
    then per request its id, content type, status, reason phrase, headers and body, up
    to a -1. A code other than 200 fails every request the frame names."""
    at = 0

    def take(n: int) -> bytes:
        nonlocal at
        if n < 0 or at + n > len(frame):
            raise ValueError("truncated TorchServe response frame")
        out = frame[at : at + n]
        at += n
        return out

    def integer() -> int:
        return int(struct.unpack("!i", take(4))[0])

    def text() -> str:
        return take(integer()).decode("utf-8")

    code = integer()
    message = text()
    out: list[tuple[str, Reply]] = []
    while True:
        length = integer()
        if length == -1:
            break
        rid = take(length).decode("utf-8")
        content_type = text()
        status = integer()
        phrase = text()
        headers = {}
        for _ in range(integer()):
            key = text()
            headers[key] = text()
        body = take(integer())
        if code != 200:
            out.append((rid, error_reply(code, message)))
            continue
        headers.pop("content-type", None)
        out.append(
            (
                rid,
                Reply(
                    body=body,
                    status=status,
                    message=phrase,
                    content_type=content_type,
                    headers=headers,
                    last=False,
                ),
            )
        )
    return out


__all__ = [
    "ArchiveError",
    "FormError",
    "HandlerModel",
    "ReadersGone",
    "Reply",
    "Request",
    "decode_frame",
    "encode",
    "error_reply",
]
