"""Business Logic Scripting: ``pb_utils.InferenceRequest(...).exec()`` from one model's
``execute`` runs another model of this process directly — its adapter's call, the
tensors passed as the arrays they are — where Triton sends each step through its core
and a second stub process.

Every Python-backend model built here is registered by name and version (weakly: a model
the server unloads is gone from here too)."""

from __future__ import annotations

import json
import queue
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..contract import Request
from . import pb_types, pb_utils

_lock = threading.Lock()
# Name → version → the adapter, for every Triton model this process has built.
_models: dict[str, dict[str, weakref.ReferenceType[Any]]] = {}

# Responses a decoupled BLS call may have waiting for the caller, and how long a model's
# sender waits for the caller to take one before the call is given up.
STREAM_BUFFER = 64
STREAM_PATIENCE = 60.0


def register(adapter: Any) -> None:
    with _lock:
        _models.setdefault(adapter.name, {})[adapter.version] = weakref.ref(adapter)
    pb_utils._bls = Executor()


def find(name: str, version: int) -> Any:
    """The served adapter of ``name`` at ``version`` (-1: the newest), or None."""
    versions = _models.get(name)
    if not versions:
        return None
    if version >= 0:
        ref = versions.get(str(version))
        return ref() if ref is not None else None
    refs = list(versions.values())  # a copy: a load may register a version meanwhile
    if len(refs) == 1:  # the usual case: one version, no sorting
        return refs[0]()
    with _lock:
        live = {v: a for v, ref in versions.items() if (a := ref()) is not None}
    if not live:
        return None
    return live[max(live, key=lambda v: int(v) if v.isdigit() else -1)]


def call(target: Any, req: Request) -> Any:
    """One request of ``target``'s: what its ``infer`` gives, or the exception it
    raised (a Python-backend model takes it as a batch of one)."""
    if target.infers_many:
        return target.infer_many([req])[0]
    try:
        return target.infer(req)
    except Exception as e:
        return e


def _error(message: str, code: str = "INTERNAL") -> Any:
    err = pb_utils.TritonError(message, getattr(pb_utils.TritonError, code))
    return pb_utils.InferenceResponse(output_tensors=[], error=err)


def _request(r: Any) -> Request:
    raw = r.parameters()
    parameters = json.loads(raw) if raw and raw != "{}" else {}
    if r.correlation_id():
        parameters["sequence_id"] = r.correlation_id()
    flags = r.flags()
    if flags & pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START:
        parameters["sequence_start"] = True
    if flags & pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END:
        parameters["sequence_end"] = True
    inputs = {t.name(): t.as_numpy() for t in r.inputs()}
    return Request(inputs, parameters, list(r.requested_output_names()), {}, r.request_id())


def _response(outputs: Any) -> Any:
    if isinstance(outputs, dict):
        outputs = outputs.get("outputs", [])
    return pb_utils.InferenceResponse(output_tensors=[_tensor(o[0], o[1]) for o in outputs])


def _tensor(name: str, value: Any) -> Any:
    """An output handed back to the caller: the array itself when it is one."""
    array = value if isinstance(value, np.ndarray) else np.asarray(value)
    code = None if array.dtype.kind == "U" else pb_types.triton_code(array.dtype)
    if code is not None and array.flags.c_contiguous:
        return pb_utils.Tensor._trusted(name, array, code)
    return pb_utils.Tensor(name, array)


class Executor:
    """``pb_utils``' hook for BLS calls."""

    def exec(self, request: Any, decoupled: bool) -> Any:
        name, version = request.model_name(), int(request.model_version())
        target = find(name, version)
        if target is None:
            shown = f"'{name}'" + (f" version {version}" if version >= 0 else "")
            message = f"Failed for execute the inference request. Model {shown} is not ready."
            failed = _error(message, "NOT_FOUND")
            return iter([failed]) if decoupled else failed
        req = _request(request)
        if decoupled:
            return self._stream(target, req)
        if target.streams:
            return _error(
                f"Model {name} is using the decoupled. The current BLS request call doesn't "
                "support models using the decoupled transaction policy. Please use "
                "'decoupled=True' argument to the 'exec' or 'async_exec' calls for decoupled "
                "models.'",
                "INVALID_ARG",
            )
        answer = call(target, req)
        if isinstance(answer, BaseException):
            return _error(str(answer))
        return _response(answer)

    def _stream(self, target: Any, req: Request) -> Iterator[Any]:
        if not target.streams:
            answer = call(target, req)
            yield _error(str(answer)) if isinstance(answer, BaseException) else _response(answer)
            yield pb_utils.InferenceResponse(output_tensors=[])
            return
        sink = _Collect()
        _, start = target.infer_stream(req)
        start(sink, STREAM_PATIENCE)
        while True:
            kind, value = sink.items.get()
            if kind == "piece":
                yield _response(value)
            elif kind == "error":
                yield _error(str(value))
                return
            else:
                yield pb_utils.InferenceResponse(output_tensors=[])
                return

    def is_model_ready(self, name: str, version: int = -1) -> bool:
        return find(name, version) is not None

    def load_model(self, name: str, config: str, files: dict[str, bytes]) -> None:
        raise RuntimeError(
            "a model loads models through the repository API in explicit mode only "
            "(POST /v2/repository/models/NAME/load), not from its own code here"
        )

    def unload_model(self, name: str, unload_dependents: bool) -> None:
        raise RuntimeError(
            "a model unloads models through the repository API in explicit mode only "
            "(POST /v2/repository/models/NAME/unload), not from its own code here"
        )


class _Collect:
    """A stream sink (the core's ``Sink`` interface) that hands a decoupled model's
    responses to the BLS caller's iterator, holding at most ``STREAM_BUFFER``."""

    def __init__(self) -> None:
        self.items: queue.Queue[tuple[str, Any]] = queue.Queue(STREAM_BUFFER)
        self._closed = False

    def has_room(self) -> bool:
        return True

    def when_room(self, callback: Any) -> None:
        callback()

    def send(self, outputs: Any) -> bool:
        try:
            self.items.put(("piece", outputs), timeout=STREAM_PATIENCE)
        except queue.Full:
            return False
        return True

    def fail(self, e: BaseException) -> None:
        if not self._closed:
            self._closed = True
            self.items.put(("error", e))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.items.put(("end", None))
