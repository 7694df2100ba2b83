"""MLServer ``MLModel`` subclasses served unchanged: the class is built with MLServer's own
``ModelSettings`` (read from its model-settings file as MLServer reads it), its async
``load`` and ``predict`` run on one event loop per process (as in an MLServer worker), and
each V2 request reaches it as an ``mlserver.types.InferenceRequest`` with the request's
and inputs' parameters, so that ``decode_request``, ``decode_args``, ``encode_response``
and the codecs by content type work as they do in MLServer. Needs the ``mlserver``
package, which such a class imports anyway."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import os
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Coroutine
from typing import Any, NoReturn

import numpy as np

from .. import streaming
from ..contract import Adapter, Request
from ..error_log import errors
from ..errors import BadRequest, ModelLoadError
from .settings import MLServerModel

log = logging.getLogger("inferwire")


class _Loop:
    """One event loop for the model's coroutines, run by a thread of this process (made
    at the first call after a fork: the workers fork after ``load``)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._made_in = os.getpid()
        self._pid = 0
        self._lock = threading.Lock()

    def _own(self) -> asyncio.AbstractEventLoop:
        """This process's loop: one made before a fork shares its wake-up pipe with the
        process that made it and its other forks (a call handed to it could wake another
        worker's loop and wait for ever), so a worker makes its own."""
        if self._made_in != os.getpid():
            self.loop = asyncio.new_event_loop()
            self._made_in = os.getpid()
        return self.loop

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        if self._pid == os.getpid():
            return asyncio.run_coroutine_threadsafe(coro, self.loop).result()
        # Before serving (load, metadata): here, in the caller's thread.
        return self.loop.run_until_complete(coro)

    def serve(self) -> None:
        """From now on, coroutines run on the loop's own thread."""
        with self._lock:
            if self._pid != os.getpid():
                self._start()

    def _start(self) -> None:
        self._own()
        threading.Thread(target=self._run, name="mlmodel-loop", daemon=True).start()
        self._pid = os.getpid()

    def _run(self) -> None:
        self.loop.run_forever()
        self.loop.close()

    def close(self, model: Any) -> None:
        """The model is no longer served (unloaded, or replaced by a reload): its
        ``unload()`` runs, as MLServer runs it, then the loop (and its thread) ends."""
        with self._lock:
            if self.loop.is_closed():
                return
            if self._pid == os.getpid():
                self.loop.call_soon_threadsafe(_spawn_shutdown, self.loop, model)
                return
        # Its thread never started in this process (no request came): a thread of its own
        # runs it, since a finalizer may run on a thread already inside an event loop.
        threading.Thread(target=self._unload_here, args=(model,), name="mlmodel-unload").start()

    def _unload_here(self, model: Any) -> None:
        loop = self._own()
        try:
            loop.run_until_complete(_unload(model))
        finally:
            loop.close()


_shutdowns: set[asyncio.Task[None]] = set()


def _spawn_shutdown(loop: asyncio.AbstractEventLoop, model: Any) -> None:
    task = loop.create_task(_shutdown(loop, model))
    _shutdowns.add(task)
    task.add_done_callback(_shutdowns.discard)


async def _shutdown(loop: asyncio.AbstractEventLoop, model: Any) -> None:
    try:
        await _unload(model)
    finally:
        loop.stop()


async def _unload(model: Any) -> None:
    try:
        await asyncio.wait_for(in_context(model, model.unload()), UNLOAD_PATIENCE)
    except Exception as e:  # an unload that fails still ends the loop
        log.warning("%s.unload() failed: %s: %s", type(model).__name__, type(e).__name__, e)


# Seconds an MLModel's unload() may take before its loop ends anyway.
UNLOAD_PATIENCE = 30.0


def settings_for(ml: MLServerModel, name: str) -> Any:
    """MLServer's ``ModelSettings`` for the model, as ``mlserver start`` makes them: the
    file's keys (the environment's fill the rest), its name, its uri defaulting to the
    model's folder."""
    from mlserver.settings import ModelParameters, ModelSettings

    raw = {**ml.raw, "name": name, "implementation": ml.implementation}
    if ml.source:
        raw["_source"] = ml.source
    settings = ModelSettings.model_validate(raw)
    if settings.parameters is None:
        settings.parameters = ModelParameters()
    if not settings.parameters.uri:
        settings.parameters.uri = str(ml.folder)
    return settings


def adapter(cls: type, name: str, ml: MLServerModel) -> MLModelAdapter:
    try:
        settings = settings_for(ml, name)
    except ImportError as e:
        raise ModelLoadError(f"model {name}: {ml.implementation} needs mlserver: {e}") from e
    except Exception as e:
        raise ModelLoadError(f"model {name}: MLServer's settings: {e}") from e
    loop = _Loop()
    try:
        model = cls(settings)
        loaded = loop.run(in_context(model, model.load()))
    except Exception as e:
        raise ModelLoadError(f"{ml.implementation}.load() failed: {type(e).__name__}: {e}") from e
    if loaded is False:
        raise ModelLoadError(f"{ml.implementation}.load() returned False")
    return MLModelAdapter(model, name, loop)


async def in_context(model: Any, coro: Awaitable[Any]) -> Any:
    """Runs ``coro`` in MLServer's model context, as MLServer runs load and predict: what
    ``mlserver.log`` labels its metrics with."""
    from mlserver.context import model_context

    with model_context(model.settings):
        return await coro


class MLModelAdapter(Adapter):
    """An MLModel's V2 requests as MLServer makes them; Seldon's predict is its one array
    as ``input-0`` (``Adapter.seldon_predict``)."""

    # Every MLModel answers in pieces (MLModel.predict_stream yields its predict's).
    streams = True

    def __init__(self, model: Any, name: str, loop: _Loop) -> None:
        super().__init__(name)
        self.mlmodel = model
        self._mlloop = loop
        meta = loop.run(model.metadata())
        self._metadata = meta.model_dump(exclude_none=True)
        self._handlers = custom_handlers(model)
        # What the core serves on this model's behalf: (method, path).
        self.custom_routes = sorted(self._handlers)
        # Unloaded or reloaded: the model's unload() and the end of its loop's thread.
        weakref.finalize(self, loop.close, model).atexit = False

    def _request(self, request: Request) -> Any:
        """The V2 request as MLServer hands it to a model: an ``InferenceRequest`` with the
        request's and inputs' parameters (``parameters.headers``: its headers). The
        settings' content types are the model's own to apply (``MLModel.decode`` reads
        them), as in MLServer."""
        from mlserver.codecs.numpy import to_datatype
        from mlserver.types import (
            InferenceRequest,
            Parameters,
            RequestInput,
            RequestOutput,
            TensorData,
        )

        request_inputs = []
        for name, arr in request.inputs.items():
            arr = np.asarray(arr)
            own = request.input_parameters.get(name)
            own_parameters = Parameters(**own) if own else None
            if arr.dtype == object:
                request_inputs.append(
                    RequestInput(
                        name=name,
                        datatype="BYTES",
                        shape=list(arr.shape),
                        data=arr.ravel().tolist(),
                        parameters=own_parameters,
                    )
                )
                continue
            # The array the core filled, flat and uncopied, as the data: MLServer's codecs
            # read it as they read a list (np.array(data, dtype), pd.Series(data, dtype)),
            # with none of a list's per-element objects and none of its validation.
            request_inputs.append(
                RequestInput.model_construct(
                    name=name,
                    datatype=to_datatype(arr.dtype).value,
                    shape=list(arr.shape),
                    data=TensorData.model_construct(root=arr.reshape(-1)),
                    parameters=own_parameters,
                )
            )
        return InferenceRequest(
            inputs=request_inputs,
            parameters=Parameters(**request.parameters) if request.parameters else None,
            outputs=[RequestOutput(name=n) for n in request.requested] or None,
        )

    def infer(self, request: Request) -> list[tuple[Any, ...]] | dict[str, Any]:
        """The outputs; with the response's own parameters (``parameters.headers``: its
        reply's headers, as MLServer sends them) as ``{"outputs", "parameters"}``."""
        payload = self._request(request)
        self._mlloop.serve()
        try:
            response = self._mlloop.run(in_context(self.mlmodel, self.mlmodel.predict(payload)))
        except Exception as e:
            _raise_reported(self.name, "predict", e)
        if response.parameters is None:
            return _outputs(response)
        own = response.parameters.model_dump(exclude_none=True)
        return {"outputs": _outputs(response), "parameters": own}

    def infer_stream(self, request: Request) -> tuple[Any, Any]:
        """``predict_stream`` (``infer_stream``, ``generate_stream``, ``ModelStreamInfer``):
        the request as its one payload, each ``InferenceResponse`` it yields a piece, on
        the model's own loop."""
        payload = self._request(request)
        self._mlloop.serve()
        pieces = _responses(self.mlmodel, self.name, payload)
        start = functools.partial(
            streaming.start_async,
            pieces,
            request.requested,
            f"{self.name}.predict_stream",
            loop=self._mlloop.loop,
            encode=lambda response, _requested: _outputs(response),
        )
        return None, start

    def custom(self, method: str, path: str, body: bytes) -> bytes:
        """A request on one of the model's ``@custom_handler`` routes, as FastAPI calls
        it in MLServer: one parameter takes the whole JSON body, several take its keys,
        each checked against its type hint; the result is answered as JSON."""
        handler = self._handlers[(method, path)]
        try:
            payload = json.loads(body) if body.strip() else None
        except ValueError as e:
            raise _Reply(422, f"the body is not JSON: {e}") from e
        arguments = _arguments(handler, payload)
        self._mlloop.serve()
        try:
            out = handler(**arguments)
            if inspect.isawaitable(out):
                out = self._mlloop.run(in_context(self.mlmodel, out))
        except Exception as e:
            status = getattr(e, "status_code", 500)
            if not isinstance(status, int) or not 400 <= status < 600:
                status = 500
            if status >= 500:
                errors.error(f"{self.name}.{handler.__name__}", e)
            raise _Reply(status, str(e)) from e
        return json.dumps(_jsonable(out)).encode()


def custom_handlers(model: Any) -> dict[tuple[str, str], Any]:
    """The model's methods marked by MLServer's ``@custom_handler``, by (method, path)."""
    found: dict[tuple[str, str], Any] = {}
    for attr in dir(type(model)):
        marker = getattr(getattr(type(model), attr, None), "__custom_handler__", None)
        if marker is not None:
            method = str(getattr(marker, "rest_method", "POST")).upper()
            found[(method, str(marker.rest_path))] = getattr(model, attr)
    return found


class _Reply(Exception):
    """A custom route's error answer: the status, and ``{"error": ...}``."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.message}


def _arguments(handler: Any, payload: Any) -> dict[str, Any]:
    """The handler's arguments from the JSON body, as FastAPI binds ``Body`` parameters:
    a single one is the whole body, several are its keys; each validated against its
    type hint (pydantic), a mismatch being a 422 naming the parameter."""
    import pydantic

    params = [
        p
        for p in inspect.signature(handler).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    if not params:
        return {}
    if len(params) == 1 and not getattr(params[0].default, "embed", False):
        given = {params[0].name: payload}
    elif isinstance(payload, dict):
        given = {p.name: payload[p.name] for p in params if p.name in payload}
    else:
        raise _Reply(422, "the body must be a JSON object of " + ", ".join(p.name for p in params))
    out: dict[str, Any] = {}
    for p in params:
        if p.name not in given:
            if _required(p):
                raise _Reply(422, f"body.{p.name}: missing")
            if hasattr(p.default, "is_required"):  # Body(default): its default
                out[p.name] = p.default.default
            continue
        value = given[p.name]
        if p.annotation is not inspect.Parameter.empty:
            try:
                value = pydantic.TypeAdapter(p.annotation).validate_python(value)
            except pydantic.ValidationError as e:
                raise _Reply(422, f"body.{p.name}: {e.errors()[0]['msg']}") from e
            except Exception:  # a hint pydantic cannot check: the value as it came
                pass
        out[p.name] = value
    return out


def _required(p: inspect.Parameter) -> bool:
    """No default, or FastAPI's ``Body(...)`` (a default that is itself required)."""
    if p.default is inspect.Parameter.empty:
        return True
    is_required = getattr(p.default, "is_required", None)
    return bool(is_required()) if callable(is_required) else False


def _jsonable(value: Any) -> Any:
    try:
        from fastapi.encoders import jsonable_encoder  # type: ignore[import-not-found]
    except ImportError:  # mlserver brings fastapi; without it, plain JSON types
        return value
    return jsonable_encoder(value)


async def _responses(model: Any, name: str, request: Any) -> AsyncIterator[Any]:
    """The model's ``predict_stream`` of one payload, in MLServer's model context; an
    ``MLServerError`` with a 4xx status is the client's error."""
    from mlserver.context import model_context

    async def payloads() -> AsyncIterator[Any]:
        yield request

    with model_context(model.settings):
        try:
            async for response in model.predict_stream(payloads()):
                yield response
        except Exception as e:
            _raise_reported(name, "predict_stream", e)


def _raise_reported(name: str, method: str, e: Exception) -> NoReturn:
    """Raises a model's exception as the server answers it: MLServer's errors with a 4xx
    status are the client's (400, with the message); anything else is logged, a 500."""
    status = getattr(e, "status_code", 500)
    if isinstance(status, int) and 400 <= status < 500:
        raise BadRequest(str(e)) from e
    errors.error(f"{name}.{method}", e)
    raise e


def _outputs(response: Any) -> list[tuple[Any, ...]]:
    return [(o.name, _array(o), _parameters(o)) for o in response.outputs]


def _parameters(output: Any) -> dict[str, Any]:
    """A ResponseOutput's parameters (its content type, as MLServer's codecs mark it)."""
    if output.parameters is None:
        return {}
    out: dict[str, Any] = output.parameters.model_dump(exclude_none=True)
    return out


def _array(output: Any) -> Any:
    """A ResponseOutput's data as an array of its shape: BYTES as bytes."""
    data = getattr(output.data, "root", output.data)
    shape = list(output.shape)
    if output.datatype == "BYTES":
        values = [
            v.encode() if isinstance(v, str) else v
            for v in np.ravel(np.asarray(data, dtype=object))
        ]
        return np.array(values, dtype=object).reshape(shape)
    from mlserver.codecs.numpy import to_dtype

    return np.asarray(data, dtype=to_dtype(output)).reshape(shape)
