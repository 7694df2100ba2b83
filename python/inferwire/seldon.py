"""The Seldon model API: how a user's class is called, as the Seldon Python wrapper
calls it. The Rust core calls these methods on its model thread, with the GIL held only
for the call; everything around them (parsing, encoding, networking) stays in Rust."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from . import content_types
from .error_log import errors
from .errors import ModelLoadError

# (output, output names, tags, metrics): what the core turns into a reply.
Result = tuple[Any, list[str] | None, dict[str, Any] | None, list[dict[str, Any]] | None]


def _accepts_meta(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "meta" or p.kind is p.VAR_KEYWORD for p in params)


def _positional_count(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 2
    return sum(1 for p in params if p.kind in kinds)


class SeldonAdapter:
    """Wraps a user model with Seldon's calling conventions."""

    def __init__(self, model: Any, name: str, raw_arrays: str = "numpy") -> None:
        self.model = model
        self.name = name
        # predict_raw's dict holds numpy arrays (no per-element objects) unless asked.
        self.raw_arrays_as_lists = raw_arrays == "list"
        raw = getattr(model, "predict_raw", None)
        predict = getattr(model, "predict", None)
        self.has_predict_raw = callable(raw)
        if not self.has_predict_raw and not callable(predict):
            raise ModelLoadError(f"{type(model).__name__} has neither predict() nor predict_raw()")
        self._predict: Callable[..., Any] = predict if callable(predict) else _no_predict
        self.wants_meta = _accepts_meta(self._predict)
        self._positional = _positional_count(self._predict)
        self._tags = getattr(model, "tags", None)
        self._metrics = getattr(model, "metrics", None)
        self._metadata = self._init_metadata()
        # `async def` methods run to completion on an event loop kept per model thread.
        self._loops = threading.local()

    def _resolve(self, out: Any) -> Any:
        if not inspect.isawaitable(out):
            return out
        loop = getattr(self._loops, "loop", None)
        if loop is None:
            loop = self._loops.loop = asyncio.new_event_loop()
        return loop.run_until_complete(out)

    # -- called by the core ------------------------------------------------------------

    def predict(self, X: Any, names: list[str], meta: dict[str, Any] | None) -> Result:
        try:
            if self.wants_meta:
                out = self._predict(X, names, meta=meta)
            elif self._positional >= 2:
                out = self._predict(X, names)
            else:
                out = self._predict(X)
            out = self._resolve(out)
            return out, self._class_names(out), self._call_tags(), self._call_metrics()
        except Exception as e:
            errors.error(f"{self.name}.predict", e)
            raise

    def infer(
        self,
        inputs: dict[str, Any],
        parameters: dict[str, Any],
        requested: list[str],
        input_parameters: dict[str, dict[str, Any]],
    ) -> list[tuple[str, Any]]:
        """A V2 request through the Seldon ``predict``: ``X`` is one input's value, a dict
        of them by name, or a DataFrame (content types: ``content_types``); ``names`` are
        the input names. A dict or DataFrame result gives one output per key or column;
        anything else is one output, named as the request's single requested output, else
        ``output-0``."""
        X = content_types.decode_request(inputs, parameters, input_parameters)
        names = list(inputs)
        try:
            if self.wants_meta:
                out = self._predict(X, names, meta={"parameters": parameters})
            elif self._positional >= 2:
                out = self._predict(X, names)
            else:
                out = self._predict(X)
            out = self._resolve(out)
        except Exception as e:
            errors.error(f"{self.name}.predict", e)
            raise
        return content_types.encode_outputs(out, requested)

    def predict_raw(self, request: dict[str, Any]) -> Any:
        try:
            return self._resolve(self.model.predict_raw(request))
        except Exception as e:
            errors.error(f"{self.name}.predict_raw", e)
            raise

    def send_feedback(
        self, features: Any, names: list[str], reward: float, truth: Any, routing: dict[str, int]
    ) -> Result:
        fn = getattr(self.model, "send_feedback", None)
        if not callable(fn):
            return None, None, None, None
        try:
            out = self._resolve(fn(features, names, reward, truth, routing=routing or None))
        except Exception as e:
            errors.error(f"{self.name}.send_feedback", e)
            raise
        return out, self._class_names(out), self._call_tags(), self._call_metrics()

    def health_status(self) -> Result:
        fn = getattr(self.model, "health_status", None)
        if not callable(fn):
            return {"status": "ok"}, None, None, None
        out = fn()
        return out, self._class_names(out), None, None

    def metadata(self) -> dict[str, Any]:
        return self._metadata

    # -- helpers -------------------------------------------------------------------------

    def _class_names(self, out: Any) -> list[str] | None:
        """Seldon's names for a 2-D result: the model's ``class_names``, else ``t:0..``."""
        if not isinstance(out, (np.ndarray, list)):
            return None
        shape: tuple[int, ...] = np.shape(out) if isinstance(out, list) else out.shape
        if len(shape) < 2:
            return None
        names = getattr(self.model, "class_names", None)
        if callable(names):
            names = names()
        if names is not None:
            return [str(n) for n in names]
        return [f"t:{i}" for i in range(shape[1])]

    def _call_tags(self) -> dict[str, Any] | None:
        if not callable(self._tags):
            return None
        tags = self._tags()
        if tags is not None and not isinstance(tags, dict):
            raise TypeError(f"tags() must return a dict, not {type(tags).__name__}")
        return tags

    def _call_metrics(self) -> list[dict[str, Any]] | None:
        if not callable(self._metrics):
            return None
        metrics = self._metrics()
        if metrics is not None and not isinstance(metrics, list):
            raise TypeError(f"metrics() must return a list of dicts, not {type(metrics).__name__}")
        return metrics

    def _init_metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "name": self.name,
            "versions": [],
            "platform": "inferwire",
            "inputs": [],
            "outputs": [],
        }
        fn = getattr(self.model, "init_metadata", None)
        if callable(fn):
            custom = fn()
            if not isinstance(custom, dict):
                raise ModelLoadError(
                    f"init_metadata() must return a dict, not {type(custom).__name__}"
                )
            meta.update(custom)
        return meta


def _no_predict(*_args: Any, **_kwargs: Any) -> Any:
    raise NotImplementedError("this model defines only predict_raw()")
