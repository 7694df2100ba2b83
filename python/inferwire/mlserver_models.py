"""MLServer ``MLModel`` subclasses served unchanged: the class is built with MLServer's own
``ModelSettings`` (read from its model-settings file as MLServer reads it), its async
``load`` and ``predict`` run on one event loop per process (as in an MLServer worker), and
each V2 request reaches it as an ``mlserver.types.InferenceRequest`` with the request's
and inputs' parameters, so that ``decode_request``, ``decode_args``, ``encode_response``
and the codecs by content type work as they do in MLServer. Needs the ``mlserver``
package, which such a class imports anyway."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import Any

import numpy as np

from .errors import BadRequest, ModelLoadError
from .mlserver_settings import MLServerModel
from .seldon import SeldonAdapter


class _Loop:
    """One event loop for the model's coroutines, run by a thread of this process (made
    at the first call after a fork: the workers fork after ``load``)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._pid = 0
        self._lock = threading.Lock()

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
        threading.Thread(target=self.loop.run_forever, name="mlmodel-loop", daemon=True).start()
        self._pid = os.getpid()


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


async def in_context(model: Any, coro: Coroutine[Any, Any, Any]) -> Any:
    """Runs ``coro`` in MLServer's model context, as MLServer runs load and predict: what
    ``mlserver.log`` labels its metrics with."""
    from mlserver.context import model_context

    with model_context(model.settings):
        return await coro


class _Predict:
    """The Seldon protocol's ``predict`` for an MLModel: its array as the one input."""

    def __init__(self) -> None:
        self.adapter: MLModelAdapter | None = None

    def predict(self, X: Any, features_names: list[str] | None = None, **kwargs: Any) -> Any:
        assert self.adapter is not None
        out = self.adapter.infer({"input-0": np.asarray(X)}, {}, [], {})
        return out[0][1] if len(out) == 1 else {o[0]: o[1] for o in out}


class MLModelAdapter(SeldonAdapter):
    def __init__(self, model: Any, name: str, loop: _Loop) -> None:
        predict = _Predict()
        super().__init__(predict, name)
        predict.adapter = self
        self.mlmodel = model
        self._mlloop = loop
        meta = loop.run(model.metadata())
        self._metadata = meta.model_dump(exclude_none=True)

    def infer(
        self,
        inputs: dict[str, Any],
        parameters: dict[str, Any],
        requested: list[str],
        input_parameters: dict[str, dict[str, Any]],
    ) -> list[tuple[Any, ...]]:
        from mlserver.codecs.numpy import to_datatype
        from mlserver.types import InferenceRequest, Parameters, RequestInput, RequestOutput

        parameters, input_parameters = self.with_defaults(parameters, input_parameters)
        request_inputs = []
        for name, arr in inputs.items():
            arr = np.asarray(arr)
            if arr.dtype == object:
                datatype, data = "BYTES", arr.ravel().tolist()
            else:
                datatype, data = to_datatype(arr.dtype), arr.ravel().tolist()
            own = input_parameters.get(name)
            request_inputs.append(
                RequestInput(
                    name=name,
                    datatype=datatype,
                    shape=list(arr.shape),
                    data=data,
                    parameters=Parameters(**own) if own else None,
                )
            )
        request = InferenceRequest(
            inputs=request_inputs,
            parameters=Parameters(**parameters) if parameters else None,
            outputs=[RequestOutput(name=n) for n in requested] or None,
        )
        self._mlloop.serve()
        try:
            response = self._mlloop.run(in_context(self.mlmodel, self.mlmodel.predict(request)))
        except Exception as e:
            status = getattr(e, "status_code", 500)
            if isinstance(status, int) and 400 <= status < 500:
                raise BadRequest(str(e)) from e
            from .error_log import errors

            errors.error(f"{self.name}.predict", e)
            raise
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
