"""Triton Python-backend models served unchanged, in this process: a ``model.py`` whose
``TritonPythonModel`` has ``initialize(args)``, ``execute(requests)`` and ``finalize()``
(and optionally ``auto_complete_config``), importing ``triton_python_backend_utils`` —
``pb_utils`` here, registered under that name. Where Triton runs each model instance in a
stub process and copies every tensor through shared memory, the instances here are
objects of this process: the core's numpy arrays are the tensors ``execute`` reads, and a
BLS call (``pb_utils.InferenceRequest(...).exec()``) is a call of the other model's
adapter (``bls.py``)."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import json
import logging
import os
import queue
import sys
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .. import streaming
from ..contract import Adapter, Request
from ..error_log import errors
from ..errors import BadRequest, ModelLoadError
from . import pb_types, pb_utils
from .config import ModelConfig, to_json, v2_datatype
from .sequences import Controls, Instances

log = logging.getLogger("inferwire")

# What a Triton model imports; registered once, when the first Python model loads.
MODULE_NAME = "triton_python_backend_utils"


def install() -> None:
    """Makes ``import triton_python_backend_utils`` give ``pb_utils`` (a real Triton
    stub's module, if one is somehow importable, is not replaced)."""
    sys.modules.setdefault(MODULE_NAME, pb_utils)


# Modules imported, by file, with the modification time they were imported at:
# auto-complete and the build import a file once; an edited file (a reload) is imported
# afresh, and replaces the one before.
_imported: dict[str, tuple[int, ModuleType]] = {}


def import_model(path: Path, name: str, version: str) -> ModuleType:
    """``model.py`` as a module of its own (every model's file has the same name); its
    folder goes on the import path, as the stub has it, for the modules beside it."""
    install()
    try:
        key, mtime = str(path.resolve()), path.stat().st_mtime_ns
    except OSError as e:
        raise ModelLoadError(f"{path}: {e.strerror or e}") from None
    seen = _imported.get(key)
    if seen is not None and seen[0] == mtime:
        return seen[1]
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module_name = f"_triton_model_{name}_{version}".replace("-", "_").replace(".", "_")
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        sys.modules.pop(module_name, None)
        raise ModelLoadError(f"{path}: importing it failed: {type(e).__name__}: {e}") from e
    if not isinstance(getattr(module, "TritonPythonModel", None), type):
        raise ModelLoadError(f"{path}: defines no class TritonPythonModel")
    _imported[key] = (mtime, module)
    return module


def auto_complete(cls: type) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """The class's ``auto_complete_config`` as ``config.read``'s hook: the partial
    config in, the completed one out (None: the class has none)."""
    method = getattr(cls, "auto_complete_config", None)
    if method is None:
        return None

    def complete(raw: dict[str, Any]) -> dict[str, Any]:
        given = pb_utils.ModelConfig(raw)
        out = method(given)
        if out is None:
            raise ModelLoadError("auto_complete_config returned None (return the config)")
        return dict(out.as_dict())

    return complete


# Every Python-backend model this process serves, for finalize() at shutdown.
_live: weakref.WeakSet[Any] = weakref.WeakSet()
# Whether this process forked workers from itself (its models then serve there).
_forked = False


def _forked_workers() -> None:
    global _forked
    _forked = True


os.register_at_fork(after_in_parent=_forked_workers)


def finalize_all() -> None:
    """Each served model's instances' ``finalize()``, as Triton runs them at shutdown."""
    for adapter in list(_live):
        adapter.close()


class TritonPythonAdapter(Adapter):
    """A Python-backend model: ``instances`` objects of its class (config's
    ``instance_group`` counts), each running one ``execute`` at a time, as each of
    Triton's instances does."""

    infers_many = True

    def __init__(
        self,
        cls: type,
        config: ModelConfig,
        version: str,
        model_folder: Path,
    ) -> None:
        super().__init__(config.name)
        self.config = config
        self.version = version
        self.streams = config.decoupled
        self._json = to_json(config)
        batch = [-1] if config.max_batch_size > 0 else []
        self._metadata = {
            "name": config.name,
            "versions": [version],
            "platform": config.platform or config.backend or "python",
            "inputs": [_tensor(t, batch) for t in config.inputs],
            "outputs": [_tensor(t, batch) for t in config.outputs],
        }
        self._output_names = [t.name for t in config.outputs]
        self._all: list[Any] = []
        self._controls = Controls(config)
        count = max(config.instance_count, 1)
        for i in range(count):
            instance = cls()
            args = {
                "model_config": json.dumps(self._json),
                "model_instance_kind": "CPU",
                "model_instance_name": f"{config.name}_{i}_0",
                "model_instance_device_id": "0",
                "model_repository": str(model_folder),
                "model_version": version,
                "model_name": config.name,
            }
            initialize = getattr(instance, "initialize", None)
            if initialize is not None:
                try:
                    initialize(args)
                except Exception as e:
                    self.close()
                    raise ModelLoadError(
                        f"{config.name}: initialize() failed: {type(e).__name__}: {e}"
                    ) from e
            self._all.append(instance)
        idle_us = (config.sequence_batching or {}).get("max_sequence_idle_microseconds")
        self._instances = Instances(self._all, (idle_us or 1_000_000) / 1e6)
        # Without sequence batching any free instance serves: a queue of them is the
        # cheapest way to wait for one.
        self._sequences = config.sequence_batching is not None
        self._free: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for instance in self._all:
            self._free.put(instance)
        self._version_number = int(version) if version.isdigit() else -1
        _live.add(self)

    def model_config(self) -> dict[str, Any]:
        return self._json

    # -- unary requests: a batch is one execute ------------------------------------------

    def infer(self, request: Request) -> Any:
        answer = self.infer_many([request])[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def infer_many(self, requests: list[Request]) -> list[Any]:
        if self.streams:
            # Triton's answer: a decoupled model answers on streams only (501).
            err = Refused(
                501, "HTTP end point doesn't support models with decoupled transaction policy"
            )
            return [err for _ in requests]
        # A model in the default mode may answer through the sender instead of returning
        # its responses (Triton 24.06 on): one response each, collected here.
        sent: list[list[Any]] = [[] for _ in requests]
        incoming = [self._incoming(r, _Collected(sent[i])) for i, r in enumerate(requests)]
        try:
            if self._sequences:
                # One request of a sequence runs on the sequence's instance (a sequence
                # model is never batched: one request per call).
                one = incoming[0] if len(incoming) == 1 else None
                sequence, flags = (one.correlation_id(), one.flags()) if one else (0, 0)
                try:
                    self._instances.check(sequence, flags, self.name)
                except BadRequest as e:
                    return [e for _ in requests]
                with (
                    self._instances.take(sequence, flags) as instance,
                    pb_utils._model_scope(self.name),
                ):
                    responses = _run(instance.execute(incoming))
            else:
                instance = self._free.get()
                try:
                    with pb_utils._model_scope(self.name):
                        responses = _run(instance.execute(incoming))
                finally:
                    self._free.put(instance)
        except Exception as e:
            errors.error(f"{self.name}.execute", e)
            return [_failed(self.name, e) for _ in requests]
        if responses is None and all(sent):
            responses = [got[0] for got in sent]
        if not isinstance(responses, (list, tuple)) or len(responses) != len(requests):
            got = len(responses) if isinstance(responses, (list, tuple)) else type(responses)
            wrong = ModelError(
                f"Failed to process the request(s) for model '{self.name}', message: "
                f"execute() returned {got} responses for {len(requests)} requests"
            )
            return [wrong for _ in requests]
        return [
            self._answer(resp, r.requested) for resp, r in zip(responses, requests, strict=True)
        ]

    def _answer(self, response: Any, requested: list[str]) -> Any:
        if not isinstance(response, pb_utils.InferenceResponse):
            return ModelError(
                f"model '{self.name}': execute() must return InferenceResponse objects, "
                f"got {type(response).__name__}"
            )
        if response.has_error():
            return TritonErrorReply(response.error())
        return self._outputs_of(response, requested)

    def _outputs_of(self, response: Any, requested: list[str]) -> list[tuple[Any, ...]]:
        # Each output as the model made it: Triton's Python backend sends a tensor's own
        # datatype, whatever the config says (its examples rely on it).
        return [
            (t.name(), t.as_numpy())
            for t in response.output_tensors()
            if not requested or t.name() in requested
        ]

    # -- decoupled models: each request answered through its sender ----------------------

    def infer_stream(self, request: Request) -> tuple[Any, Any]:
        def start(sink: Any, patience: float) -> None:
            # execute may block (sending while the reader is slow): on a thread of its
            # own, not the one that admitted the stream (the server bounds open streams).
            threading.Thread(
                target=self._start, args=(request, sink, patience), name="triton-decoupled"
            ).start()

        return None, start

    def _start(self, request: Request, sink: Any, patience: float) -> None:
        sender = _Sender(sink, patience)
        incoming = self._incoming(request, sender)
        sequence, flags = incoming.correlation_id(), incoming.flags()
        if self._sequences:
            try:
                self._instances.check(sequence, flags, self.name)
            except BadRequest as e:
                sender.fail(e)
                return
        try:
            with (
                self._instances.take(sequence, flags) as instance,
                pb_utils._model_scope(self.name),
            ):
                out = _run(instance.execute([incoming]))
        except Exception as e:
            errors.error(f"{self.name}.execute", e)
            sender.fail(_failed(self.name, e))
            return
        if out:  # a decoupled model returns None; anything else is Triton's error too
            sender.fail(
                ModelError(
                    f"model '{self.name}' is decoupled: execute() must return None and answer "
                    "through the requests' response senders"
                )
            )

    # -- what execute is handed ------------------------------------------------------------

    def _incoming(self, request: Request, sender: _Sender | _Collected) -> Any:
        parameters: Any = request.parameters
        correlation: int | str = 0
        flags = 0
        if parameters:
            parameters = dict(parameters)
            correlation = parameters.pop("sequence_id", 0)
            if parameters.pop("sequence_start", False):
                flags |= pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START
            if parameters.pop("sequence_end", False):
                flags |= pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END
            parameters.pop("headers", None)
        tensors = [_input(name, a) for name, a in request.inputs.items()]
        if self._sequences:
            # Triton's sequence batcher adds the control inputs the config names.
            controls = self._controls.tensors(
                flags, correlation, model=self.name, request_id=request.id
            )
            tensors += [pb_utils.Tensor(name, a) for name, a in controls]
        # As Triton's core fills it in: no outputs asked for means every output.
        requested = request.requested or self._output_names

        def response_sender() -> Any:
            return pb_utils.InferenceResponseSender(
                sender.sink,
                sender.cancelled,
                decoupled=self.streams,
                requested_output_names=requested,
            )

        return pb_utils.InferenceRequest._incoming(
            inputs=tensors,
            requested_output_names=requested,
            request_id=request.id,
            correlation_id=correlation,
            flags=flags,
            parameters=parameters,
            model_name=self.name,
            model_version=self._version_number,
            timeout=0,
            # A decoupled model always sends; one in the default mode rarely asks.
            sender=response_sender() if self.streams else response_sender,
            cancelled=sender.cancelled,
        )

    # -- unloading -----------------------------------------------------------------------

    def close(self) -> None:
        """Each instance's ``finalize()``, once."""
        instances, self._all = self._all, []
        for instance in instances:
            finalize = getattr(instance, "finalize", None)
            if finalize is None:
                continue
            try:
                finalize()
            except Exception as e:
                log.warning("%s: finalize() failed: %s: %s", self.name, type(e).__name__, e)

    def __del__(self) -> None:
        # Unloaded: finalize now. A process that forked the workers (the supervisor) holds
        # copies that never served: their finalize runs in the workers (``finalize_all``).
        if not _forked:
            self.close()

    def error_reply(self, exc: BaseException) -> tuple[int, str, str | None] | None:  # type: ignore[override]
        if isinstance(exc, (TritonErrorReply, Refused)):
            return exc.status, str(exc), json.dumps({"error": str(exc)})
        return super().error_reply(exc)


def _run(out: Any) -> Any:
    """``execute``'s result; an ``async def execute``'s coroutine run to its end on this
    process's loop (where its ``async_exec`` calls run side by side)."""
    if inspect.iscoroutine(out):
        return asyncio.run_coroutine_threadsafe(out, streaming.event_loop()).result()
    return out


def _input(name: str, array: Any) -> Any:
    """A request's input as the tensor ``execute`` reads: the core's array itself."""
    code = None if array.dtype.kind in ("S", "U") else pb_types.triton_code(array.dtype)
    if code is not None and array.flags.c_contiguous:
        return pb_utils.Tensor._trusted(name, array, code)
    return pb_utils.Tensor(name, _as_triton(array))


def _as_triton(array: Any) -> Any:
    """An input as Triton's stub hands it over: BYTES as an object array of bytes (the
    core's may be ``S``-typed, which would drop trailing NUL bytes)."""
    array = np.asarray(array)
    if array.dtype.kind in ("S", "U"):
        return np.array(
            [x.encode() if isinstance(x, str) else bytes(x) for x in array.reshape(-1)],
            dtype=object,
        ).reshape(array.shape)
    return array


class _Collected:
    """The sender of a request in the default mode: its one response, kept."""

    def __init__(self, into: list[Any]) -> None:
        self._into = into

    def sink(self, response: Any, final: bool) -> None:
        if response is not None:
            self._into.append(response)

    @staticmethod
    def cancelled() -> bool:
        return False


def _tensor(t: Any, batch: list[int]) -> dict[str, Any]:
    return {"name": t.name, "datatype": v2_datatype(t.data_type), "shape": batch + list(t.dims)}


class ModelError(Exception):
    """A model's answer inferwire cannot send (500, with its message)."""


# Triton's error codes as HTTP statuses (tritonserver's HTTP front end: the codes it has
# no status of its own for are 400).
STATUS_OF_CODE = {
    "UNKNOWN": 400,
    "INTERNAL": 500,
    "NOT_FOUND": 404,
    "INVALID_ARG": 400,
    "UNAVAILABLE": 503,
    "UNSUPPORTED": 501,
    "ALREADY_EXISTS": 400,
    "CANCELLED": 400,
}


class Refused(Exception):
    """A request the model cannot take, with Triton's status for it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class TritonErrorReply(Exception):
    """An ``InferenceResponse(error=TritonError(...))``: its message, with the status
    its code maps to."""

    def __init__(self, error: Any) -> None:
        message = error.message() if hasattr(error, "message") else str(error)
        super().__init__(message)
        self.status = STATUS_OF_CODE.get(code_name(error), 500)


def code_name(error: Any) -> str:
    """A ``TritonError``'s code by its constant's name (``INVALID_ARG``, ...)."""
    code = error.code() if callable(getattr(error, "code", None)) else None
    for name in STATUS_OF_CODE:
        if getattr(pb_utils.TritonError, name, object()) == code:
            return name
    return "INTERNAL"


def _failed(name: str, e: BaseException) -> ModelError:
    """``execute`` raised: every request of the call fails with Triton's words."""
    return ModelError(
        f"Failed to process the request(s) for model '{name}', message: {type(e).__name__}: {e}"
    )


class _Sender:
    """Where a decoupled model's responses go: the core's stream sink, waiting (up to
    the stream's patience) while it is full, so a model cannot buffer without bound."""

    def __init__(self, sink: Any, patience: float) -> None:
        self._sink = sink
        self._patience = patience
        self._gone = False
        self._lock = threading.Lock()

    def cancelled(self) -> bool:
        return self._gone

    def sink(self, response: Any, final: bool) -> None:
        if response is not None and not self._gone:
            if response.has_error():
                self._sink.fail(TritonErrorReply(response.error()))
                self._gone = True
                return
            outputs = [(t.name(), t.as_numpy()) for t in response.output_tensors()]
            if not self._wait_for_room() or not self._sink.send(outputs):
                self._gone = True
        if final:
            self._sink.close()

    def _wait_for_room(self) -> bool:
        if self._sink.has_room():
            return True
        room = threading.Event()
        self._sink.when_room(room.set)
        if not room.wait(self._patience):
            return False
        return True

    def fail(self, e: BaseException) -> None:
        self._sink.fail(e)
