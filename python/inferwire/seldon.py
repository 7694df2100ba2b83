"""The Seldon model API: how a user's class is called, as the Seldon Python wrapper
calls it. The Rust core calls these methods on its model thread, with the GIL held only
for the call; everything around them (parsing, encoding, networking) stays in Rust."""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from . import content_types, streaming
from .contract import Adapter, Request
from .error_log import errors
from .errors import ModelLoadError

log = logging.getLogger("inferwire.model")

# (output, output names, tags, metrics): what the core turns into a reply. Names given as
# a count n are Seldon's default "t:0".."t:n-1", which the core writes (a wide result's
# names would otherwise cost more in Python than the rest of the request).
Result = tuple[Any, list[str] | int | None, dict[str, Any] | None, list[dict[str, Any]] | None]


def _accepts_meta(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "meta" or p.kind is p.VAR_KEYWORD for p in params)


def _call(
    fn: Callable[..., Any], wants_meta: bool, positional: int, X: Any, names: Any, meta: Any
) -> Any:
    """``fn`` called as Seldon's wrapper calls ``predict``: with ``meta`` when it takes it,
    else with the names when it takes two arguments, else with ``X`` alone."""
    if wants_meta:
        return fn(X, names, meta=meta)
    if positional >= 2:
        return fn(X, names)
    return fn(X)


def _positional_count(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 2
    return sum(1 for p in params if p.kind in kinds)


class SeldonAdapter(Adapter):
    """Wraps a user model with Seldon's calling conventions: every operation of Seldon's
    protocol (predict, the graph components', feedback, the low-level ``*_raw``,
    ``*_rest`` and ``*_grpc`` methods), and V2 requests through its ``predict``."""

    def __init__(self, model: Any, name: str, raw_arrays: str = "numpy") -> None:
        super().__init__(name)
        self.model = model
        # predict_raw's dict holds numpy arrays (no per-element objects) unless asked.
        self.raw_arrays_as_lists = raw_arrays == "list"
        # Seldon's low-level methods, per operation: `*_rest` before `*_grpc` before
        # `*_raw`, as seldon_methods.py looks them up.
        self._low: dict[str, tuple[str, Callable[..., Any]]] = _low_level(model)
        self.raw_ops = sorted(self._low)
        raw = _own(model, "predict_raw")
        predict = _own(model, "predict")
        # A method that yields answers streamed requests piece by piece; unstreamed ones
        # get its pieces joined (`streaming.gather`).
        predict_stream = _own(model, "predict_stream")
        if not callable(predict_stream) and callable(predict) and streaming.streams(predict):
            predict_stream = predict
        if not callable(predict) and callable(predict_stream):
            predict = predict_stream
        self.streams = callable(predict_stream)
        self._predict_stream: Callable[..., Any] = predict_stream if self.streams else _no_predict
        self._stream_meta = _accepts_meta(self._predict_stream)
        self._stream_positional = _positional_count(self._predict_stream)
        self.has_predict_raw = callable(raw) or "predict" in self._low
        self.service_type = service_type(model)
        if not self.has_predict_raw and not callable(predict):
            if self.service_type == "MODEL":
                # Served as Seldon's wrapper serves it (a class with only feedback, say):
                # each operation it lacks answers as the wrapper's does.
                log.warning(
                    "%s has none of predict(), predict_raw(), transform_input(), "
                    "transform_output(), route(), aggregate(): predict answers [] as "
                    "Seldon's wrapper does",
                    type(model).__name__,
                )
            # A graph component that is no model: Seldon answers predict with [].
            predict = _empty_predict
        self._predict: Callable[..., Any] = predict if callable(predict) else _no_predict
        self.wants_meta = _accepts_meta(self._predict)
        self._positional = _positional_count(self._predict)
        self._tags = _own(model, "tags")
        self._metrics = _own(model, "metrics")
        self._send_feedback = _own(model, "send_feedback")
        self._transform_input = _own(model, "transform_input")
        self._transform_output = _own(model, "transform_output")
        self._route = _own(model, "route")
        self._aggregate = _own(model, "aggregate")
        # Router feedback gets this unit's entry of the response's routing, as Seldon
        # reads it (the unit's id from PREDICTIVE_UNIT_ID, else the served name).
        self.unit_id = os.environ.get("PREDICTIVE_UNIT_ID") or name
        self._forms: dict[str, str] = {}
        self._health_status = _own(model, "health_status")
        # Looked up per call (a model may set ``self.class_names`` in ``load()``); only
        # whether it is SeldonComponent's stub is decided here.
        self._class_names_stub = _own(model, "class_names") is None
        self._metadata = self._init_metadata()
        # `async def` methods run to completion on an event loop kept per model thread.
        self._loops = threading.local()

    def _resolve(self, out: Any) -> Any:
        if streaming.is_stream(out):
            return streaming.gather(out, self._run_async)
        if not inspect.isawaitable(out):
            return out
        return self._run_async(out)

    def _run_async(self, out: Any) -> Any:
        loop = getattr(self._loops, "loop", None)
        if loop is None:
            loop = self._loops.loop = asyncio.new_event_loop()
        return loop.run_until_complete(out)

    # -- called by the core ------------------------------------------------------------

    def predict(self, X: Any, names: list[str], meta: dict[str, Any] | None) -> Result:
        try:
            out = _call(self._predict, self.wants_meta, self._positional, X, names, meta)
            return self._result(self._resolve(out))
        except Exception as e:
            errors.error(f"{self.name}.predict", e)
            raise

    def infer(self, request: Request) -> list[tuple[Any, ...]] | dict[str, Any]:
        """A V2 request through the Seldon ``predict``: ``X`` is one input's value, a dict
        of them by name, or a DataFrame (content types: ``content_types``); ``names`` are
        the input names. A dict or DataFrame result gives one output per key or column;
        anything else is one output, named as the request's single requested output, else
        ``output-0``. (An adapter whose response has parameters of its own answers
        ``{"outputs": [...], "parameters": {...}}`` instead: ``mlserver.models``.)"""
        X, parameters = self.decode(request)
        names = list(request.inputs)
        try:
            meta = {"parameters": parameters}
            out = _call(self._predict, self.wants_meta, self._positional, X, names, meta)
            # V2 replies have no tags or metrics: a SeldonResponse gives its data.
            out, _, _ = _runtime_parts(self._resolve(out))
        except Exception as e:
            errors.error(f"{self.name}.predict", e)
            raise
        return content_types.encode_outputs(out, request.requested)

    def infer_stream(self, request: Request) -> tuple[Any, Any]:
        """Starts a streamed V2 request, as ``infer`` reads it: ``(pieces, None)`` for a
        plain generator, whose items are the outputs of each piece, or ``(None, start)``
        for an async one, which the core starts with ``start(sink, patience)``."""
        X, parameters = self.decode(request)
        names = list(request.inputs)
        meta = {"parameters": parameters}
        try:
            out = _call(
                self._predict_stream, self._stream_meta, self._stream_positional, X, names, meta
            )
            if inspect.isawaitable(out) and not streaming.is_stream(out):
                out = self._run_async(out)
        except Exception as e:
            errors.error(f"{self.name}.predict_stream", e)
            raise
        call = f"{self.name}.predict_stream"
        if hasattr(out, "__anext__"):
            return None, functools.partial(streaming.start_async, out, request.requested, call)
        return streaming.encoded(iter(out), request.requested, call), None

    def predict_raw(self, request: dict[str, Any]) -> Any:
        if "predict" in self._low:
            return self.call_raw("predict", request)
        try:
            return self._resolve(self.model.predict_raw(request))
        except Exception as e:
            errors.error(f"{self.name}.predict_raw", e)
            raise

    def send_feedback(
        self, features: Any, names: list[str], reward: float, truth: Any, routing: dict[str, int]
    ) -> Result:
        fn = self._send_feedback
        if not callable(fn):
            return None, None, None, None
        try:
            out = self._resolve(fn(features, names, reward, truth, routing=self._routing(routing)))
            return self._result(out)
        except Exception as e:
            if _not_implemented(e):
                self._send_feedback = None
                return None, None, None, None
            errors.error(f"{self.name}.send_feedback", e)
            raise

    # -- Seldon's other graph component types ---------------------------------------------

    def transform_input(self, X: Any, names: list[str], meta: dict[str, Any]) -> Result:
        """A TRANSFORMER; without ``transform_input`` Seldon answers the input unchanged."""
        return self._transform("transform_input", X, names, meta)

    def transform_output(self, X: Any, names: list[str], meta: dict[str, Any]) -> Result:
        """An OUTPUT_TRANSFORMER; without ``transform_output``, the input unchanged."""
        return self._transform("transform_output", X, names, meta)

    def route(self, X: Any, names: list[str], meta: dict[str, Any]) -> Result:
        """A ROUTER: the child's index (``-1``: every child), answered as ``[[child]]``."""
        fn = self._route
        if not callable(fn):
            raise SeldonError("Route not defined")
        child, tags, metrics = _runtime_parts(self._call_step("route", fn, X, names, meta))
        if isinstance(child, np.integer):
            child = int(child)
        if not isinstance(child, int) or isinstance(child, bool):
            raise SeldonError(f"Routing response must be int but got {child!r}")
        return self._result(SeldonResponse(np.array([[child]]), tags, metrics))

    def aggregate(self, Xs: list[Any], names: list[list[str]]) -> Result:
        """A COMBINER over its children's payloads and their column names."""
        fn = self._aggregate
        if not callable(fn):
            raise SeldonError("Aggregate not defined")
        try:
            out = self._resolve(fn(Xs, names))
        except Exception as e:
            errors.error(f"{self.name}.aggregate", e)
            raise
        return self._result(out)

    def call_raw(self, op: str, request: Any) -> Any:
        """``op``'s low-level method on the request dict: ``*_rest`` and ``*_raw`` get it
        as it is; ``*_grpc`` gets the protobuf message (``SeldonMessage``, or
        ``SeldonMessageList`` / ``Feedback`` for aggregate / send_feedback) and its reply
        is read back as a dict. ``NotImplemented`` when a ``*_raw`` method raised
        SeldonNotImplementedError (now or before): the caller then takes the ordinary
        method, as Seldon falls back."""
        if op not in self._low:
            return NotImplemented
        kind, fn = self._low[op]
        try:
            if op == "health_status":  # health_status_raw() takes nothing
                return self._resolve(fn())
            if kind == "grpc":
                from . import seldon_proto

                reply = self._resolve(fn(seldon_proto.to_message(op, request)))
                return seldon_proto.to_dict(reply)
            if op == "send_feedback" and kind == "rest":
                # Seldon hands send_feedback_rest the Feedback as a JSON string.
                from .seldon_proto import as_json

                return self._resolve(fn(as_json(request)))
            return self._resolve(fn(request))
        except Exception as e:
            if kind == "raw" and _not_implemented(e):
                del self._low[op]
                return NotImplemented
            errors.error(f"{self.name}.{op}_{kind}", e)
            raise

    def _transform(self, op: str, X: Any, names: list[str], meta: dict[str, Any]) -> Result:
        fn = getattr(self, f"_{op}")
        if callable(fn):
            try:
                out = self._call_step(op, fn, X, names, meta)
            except Exception as e:
                if not _not_implemented(e):
                    raise
                setattr(self, f"_{op}", None)
                out = X
        else:
            out = X
        return self._result(out)

    def _call_step(
        self, op: str, fn: Callable[..., Any], X: Any, names: list[str], meta: dict[str, Any]
    ) -> Any:
        """``fn(X, names, meta=meta)`` where it takes meta, else ``fn(X, names)``, as
        Seldon calls transform_input, transform_output and route."""
        form = self._forms.get(op)
        if form is None:  # read once per method: a signature costs more than the call
            form = self._forms[op] = (
                "meta" if _accepts_meta(fn) else "names" if _positional_count(fn) >= 2 else "X"
            )
        try:
            if form == "meta":
                out = fn(X, names, meta=meta)
            elif form == "names":
                out = fn(X, names)
            else:
                out = fn(X)
            return self._resolve(out)
        except Exception as e:
            if not _not_implemented(e):
                errors.error(f"{self.name}.{op}", e)
            raise

    def health_status(self) -> Result:
        fn = self._health_status
        if callable(fn):
            try:
                out = fn()
            except Exception as e:
                if not _not_implemented(e):
                    raise
                self._health_status = fn = None
        if not callable(fn):
            return {"status": "ok"}, None, None, None
        return out, self._class_names(out), None, None

    def metadata(self) -> dict[str, Any]:
        if isinstance(self._metadata, str):
            # Seldon's wrapper starts with invalid metadata and answers 500 for it.
            raise MetadataError(self._metadata)
        return self._metadata

    # -- helpers -------------------------------------------------------------------------

    def _routing(self, routing: dict[str, int] | None) -> int | None:
        """This unit's routing decision in the feedback's response (Seldon's
        ``response.meta.routing[PREDICTIVE_UNIT_ID]``), or None."""
        if not routing:
            return None
        return routing.get(self.unit_id)

    def _class_names(self, out: Any) -> list[str] | int | None:
        """Seldon's names for a 2-D result: the model's ``class_names``, else the column
        count, for ``t:0..``."""
        if not isinstance(out, (np.ndarray, list)):
            return None
        shape: tuple[int, ...] = np.shape(out) if isinstance(out, list) else out.shape
        if len(shape) < 2:
            return None
        names = getattr(self.model, "class_names", None)
        if callable(names):
            if self._class_names_stub:
                names = None
            else:
                try:
                    names = names()
                except Exception as e:
                    if not _not_implemented(e):
                        raise
                    self._class_names_stub = True
                    names = None
        if names is not None:
            return [str(n) for n in names]
        return int(shape[1])

    def _result(self, out: Any) -> Result:
        """An operation's reply: its data (a SeldonResponse's, or ``out`` itself), column
        names, and the class's tags and metrics merged with a SeldonResponse's."""
        out, tags, metrics = _runtime_parts(out)
        return out, self._class_names(out), self._merged_tags(tags), self._merged_metrics(metrics)

    def _merged_tags(self, runtime: dict[str, Any] | None) -> dict[str, Any] | None:
        """The class's ``tags()`` with a SeldonResponse's runtime tags over them."""
        tags = self._call_tags()
        if not runtime:
            return tags
        return {**(tags or {}), **runtime}

    def _merged_metrics(self, runtime: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        """The class's ``metrics()`` then a SeldonResponse's runtime metrics, as Seldon
        lists them."""
        metrics = self._call_metrics()
        if not runtime:
            return metrics
        return [*(metrics or []), *runtime]

    def _call_tags(self) -> dict[str, Any] | None:
        return self._call_own("_tags", dict, "tags() must return a dict")  # type: ignore[no-any-return]

    def _call_metrics(self) -> list[dict[str, Any]] | None:
        return self._call_own("_metrics", list, "metrics() must return a list of dicts")  # type: ignore[no-any-return]

    def _call_own(self, attr: str, kind: type, must: str) -> Any:
        """The class's ``tags()`` or ``metrics()`` (``attr`` holds it): None without one,
        or once it raised SeldonNotImplementedError (then never called again)."""
        fn = getattr(self, attr)
        if not callable(fn):
            return None
        try:
            value = fn()
        except Exception as e:
            if not _not_implemented(e):
                raise
            setattr(self, attr, None)
            return None
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"{must}, not {type(value).__name__}")
        return value

    def _init_metadata(self) -> dict[str, Any] | str:
        """The class's ``init_metadata()`` with ``MODEL_METADATA`` (YAML or JSON) over it,
        checked as Seldon checks it: a reason string where it is invalid."""
        meta = self._own_metadata()
        env = os.environ.get("MODEL_METADATA")
        if env:
            from .bounded_yaml import load_yaml
            from .errors import SettingsError

            try:
                extra = load_yaml(env, "MODEL_METADATA")
            except SettingsError as e:
                log.warning("%s; ignored", e)
                extra = None
            if isinstance(extra, dict):
                meta = {**meta, **extra}
            elif extra is not None:
                log.warning("MODEL_METADATA is not a mapping, ignored")
        problem = metadata_problem(meta)
        if problem is not None:
            log.error("%s: invalid model metadata, /metadata answers 500: %s", self.name, problem)
            # The wrapper's words exactly; the problem itself is in the log above.
            return "Model metadata unavailable"
        return meta

    def _own_metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "name": self.name,
            "versions": [],
            "platform": "inferwire",
            "inputs": [],
            "outputs": [],
        }
        fn = _own(self.model, "init_metadata")
        if callable(fn):
            try:
                custom = fn()
            except Exception as e:
                if not _not_implemented(e):
                    raise
                return meta  # Seldon: no metadata of the model's own
            if not isinstance(custom, dict):
                raise ModelLoadError(
                    f"init_metadata() must return a dict, not {type(custom).__name__}"
                )
            meta.update(custom)
        return meta


class SeldonResponse:
    """A result with the request's runtime tags and metrics beside it, as seldon_core's
    ``SeldonResponse``: return one from ``predict`` (or ``send_feedback``) and ``tags``
    go into the reply's ``meta.tags`` over the class's ``tags()``, ``metrics`` after its
    ``metrics()``. seldon_core's own class is accepted as well (matched by name)."""

    def __init__(
        self,
        data: Any,
        tags: dict[str, Any] | None = None,
        metrics: list[dict[str, Any]] | None = None,
    ) -> None:
        self.data = data
        self.tags = tags if tags is not None else {}
        self.metrics = metrics if metrics is not None else []

    @classmethod
    def create(cls, data: Any) -> SeldonResponse:
        return data if isinstance(data, cls) else cls(data)


def _runtime_parts(out: Any) -> tuple[Any, dict[str, Any] | None, list[dict[str, Any]] | None]:
    """``(data, tags, metrics)`` of a SeldonResponse (ours or seldon_core's); anything
    else is the data itself."""
    if not any(c.__name__ == "SeldonResponse" for c in type(out).__mro__):
        return out, None, None
    tags = getattr(out, "tags", None) or None
    metrics = getattr(out, "metrics", None) or None
    if tags is not None and not isinstance(tags, dict):
        raise TypeError(f"SeldonResponse.tags must be a dict, not {type(tags).__name__}")
    if metrics is not None and not isinstance(metrics, list):
        raise TypeError(
            f"SeldonResponse.metrics must be a list of dicts, not {type(metrics).__name__}"
        )
    return out.data, tags, metrics


# The operations with low-level methods, and the suffixes in Seldon's order of preference.
_LOW_LEVEL_OPS = (
    "predict",
    "transform_input",
    "transform_output",
    "route",
    "aggregate",
    "send_feedback",
)
_LOW_LEVEL_KINDS = ("rest", "grpc", "raw")
# The method that makes a class each graph component type (--service-type's choices are
# in settings.py).
_TYPE_METHODS = (
    ("COMBINER", "aggregate"),
    ("ROUTER", "route"),
    ("TRANSFORMER", "transform_input"),
    ("OUTPUT_TRANSFORMER", "transform_output"),
)


def _low_level(model: Any) -> dict[str, tuple[str, Callable[..., Any]]]:
    found = {}
    for op in _LOW_LEVEL_OPS:
        for kind in _LOW_LEVEL_KINDS:
            fn = _own(model, f"{op}_{kind}")
            if callable(fn):
                found[op] = (kind, fn)
                break
    fn = _own(model, "health_status_raw")
    if callable(fn):
        found["health_status"] = ("raw", fn)
    return found


def service_type(model: Any) -> str:
    """The component type a class is, by the methods it has (Seldon's wrapper serves
    every type's routes on every component; the type says what the class is for): a
    class with ``predict`` is a MODEL, else the first of aggregate, route,
    transform_input, transform_output it defines (or their low-level forms)."""

    def has(name: str) -> bool:
        return callable(_own(model, name)) or any(
            callable(_own(model, f"{name}_{k}")) for k in _LOW_LEVEL_KINDS
        )

    if has("predict") or callable(_own(model, "predict_stream")):
        return "MODEL"
    for kind, method in _TYPE_METHODS:
        if has(method):
            return kind
    return "MODEL"


def announce_type(adapter: SeldonAdapter, chosen: str) -> str:
    """Logs the component type the model serves as: the one chosen (``--service-type`` /
    ``SERVICE_TYPE``), else the one its methods make it; warns where the chosen type's
    method is missing (Seldon serves it anyway, and so does inferwire: the routes of every
    type are served, a missing method answering as Seldon's does). Returns the type."""
    found = adapter.service_type
    if not chosen:
        log.info("%s: serving as a Seldon %s (from its methods)", adapter.name, found)
        return found
    log.info("%s: serving as a Seldon %s (service_type)", adapter.name, chosen)
    method = dict(_TYPE_METHODS).get(chosen)
    if method and not (callable(_own(adapter.model, method)) or method in adapter.raw_ops):
        log.warning(
            "%s: service_type is %s but %s has no %s(): %s answers as Seldon's does without it",
            adapter.name,
            chosen,
            type(adapter.model).__name__,
            method,
            method,
        )
    return chosen


class _StatusError(Exception):
    """An error answered as Seldon's wrapper answers its SeldonMicroserviceException: its
    HTTP status, and a body with its message and reason."""

    status_code = 500
    reason = "MICROSERVICE_INTERNAL_ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": {
                "status": 1,
                "info": self.message,
                "code": -1,
                "reason": self.reason,
            }
        }


class SeldonError(_StatusError):
    """A graph operation the class lacks, or a router that answered no child index: 400,
    as Seldon's wrapper answers them."""

    status_code = 400
    reason = "MICROSERVICE_BAD_DATA"


class MetadataError(_StatusError):
    """Invalid model metadata, answered on /metadata as Seldon's wrapper does: 500,
    reason MICROSERVICE_BAD_METADATA."""

    status_code = 500
    reason = "MICROSERVICE_BAD_METADATA"


def _empty_predict(X: Any, names: Any) -> Any:
    return []


# -- Seldon's metadata schema (seldon_core.metadata), checked without jsonschema ---------

_ARRAY_KINDS = ("tensor", "ndarray", "tftensor")
_SELDON_KINDS = (*_ARRAY_KINDS, "jsonData", "strData", "binData")
_V2_DATATYPES = (
    "BOOL UINT8 UINT16 UINT32 UINT64 INT8 INT16 INT32 INT64 FP16 FP32 FP64 BYTES".split()
)


def _is_str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _is_int_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


def _io_ok(item: Any) -> bool:
    """One entry of ``inputs``/``outputs``: a Seldon message type or a V2 tensor."""
    if not isinstance(item, dict):
        return False
    kind = item.get("messagetype")
    if isinstance(kind, str):
        keys = set(item)
        schema = item.get("schema", {})
        if kind in _ARRAY_KINDS:
            return (
                keys <= {"messagetype", "schema"}
                and isinstance(schema, dict)
                and set(schema) <= {"names", "shape"}
                and _is_str_list(schema.get("names", []))
                and _is_int_list(schema.get("shape", []))
            )
        if kind in ("strData", "binData"):
            return keys == {"messagetype"}
        return keys <= {"messagetype", "schema"} and isinstance(schema, dict)
    return (
        set(item) <= {"name", "datatype", "shape"}
        and isinstance(item.get("name", ""), str)
        and item.get("datatype", "FP32") in _V2_DATATYPES
        and _is_int_list(item.get("shape", []))
    )


def metadata_problem(meta: dict[str, Any]) -> str | None:
    """Why ``meta`` fails seldon-core 1.x's metadata schema, or None."""
    checks: dict[str, Callable[[Any], bool]] = {
        "name": lambda v: isinstance(v, str),
        "versions": _is_str_list,
        "platform": lambda v: isinstance(v, str),
        "inputs": lambda v: isinstance(v, list) and all(_io_ok(i) for i in v),
        "outputs": lambda v: isinstance(v, list) and all(_io_ok(i) for i in v),
        "custom": lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
    }
    for key, value in meta.items():
        check = checks.get(key)
        if check is None:
            return f"unknown key {key!r} (allowed: {', '.join(checks)})"
        if not check(value):
            return f"{key}: {json.dumps(value, default=str)[:200]} does not match Seldon's schema"
    return None


def default_names(n: int) -> list[str]:
    """Seldon's names for ``n`` columns without ``class_names``: ``t:0`` .. ``t:n-1``."""
    # A few widths are kept (at most 4 x 131072 short strings): a graph passes the same
    # width from node to node, request after request.
    return list(_default_names(n)) if n <= 131072 else [f"t:{i}" for i in range(n)]


@functools.lru_cache(maxsize=4)
def _default_names(n: int) -> tuple[str, ...]:
    return tuple(f"t:{i}" for i in range(n))


def _no_predict(*_args: Any, **_kwargs: Any) -> Any:
    raise NotImplementedError("this model defines only predict_raw()")


# -- seldon_core's SeldonComponent and its exceptions -----------------------------------
# Matched by class name, not imported: seldon_core pins old Python and Flask, and a class
# written against it must also load where it is not installed (with a stand-in base).

_STUB_BASE = "SeldonComponent"
_NOT_IMPLEMENTED = "SeldonNotImplementedError"


def _own(model: Any, name: str) -> Any:
    """``model.name``, or None where that is ``SeldonComponent``'s stub, which only
    raises SeldonNotImplementedError: Seldon then falls back as if it were absent, so
    inferwire decides that once here instead of catching the error on every call."""
    value = getattr(model, name, None)
    if value is None or not callable(value):
        return value
    for cls in type(model).__mro__:
        if name in vars(cls):
            return None if cls.__name__ == _STUB_BASE else value
    return value


def _not_implemented(exc: BaseException) -> bool:
    """Whether ``exc`` is seldon_core's SeldonNotImplementedError (or a subclass): a method
    that overrides the stub but still says it has nothing (e.g. by calling ``super()``)."""
    return any(cls.__name__ == _NOT_IMPLEMENTED for cls in type(exc).__mro__)
