"""The ``context`` a TorchServe handler is given, with the attributes and methods handlers
call on it (TorchServe 0.12's ``ts.context.Context``): ``model_name``, ``manifest``,
``system_properties``, ``model_yaml_config``, ``request_ids``, ``request_processor``
(one ``RequestProcessor`` per request: its headers in, its status and headers out),
``metrics`` and ``cl_socket``.

Written here rather than imported from ``ts`` so that handlers with no torch dependency
run without the ``torchserve`` package; a handler that imports ``ts`` itself gets the
real one, and both agree on this interface. ``metrics`` keeps what handlers record
(``Metrics.samples``) instead of printing it to a log for a frontend to scrape."""

from __future__ import annotations

import logging
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("inferwire")

# The TorchServe release whose behaviour is served: ``system_properties["server_version"]``
# (handlers that test it expect a TorchServe version), ``--version``, and the API
# description (crates/inferwire-server/src/rest/torchserve_openapi.rs says the same).
TORCHSERVE_VERSION = "0.12.0"


# What a handler gets of each part of TorchServe's ``Context`` (for the migration guide;
# tests/docs checks every public name of Context, RequestProcessor and Metrics is here).
CONTEXT: dict[str, str] = {
    "model_name": "the name served (`--models NAME=...`, else the manifest's `modelName`)",
    "manifest": "MANIFEST.json as the archive holds it",
    "system_properties": "`model_dir` (the archive's extracted folder, private to the "
    "server), `gpu_id` (None on CPU; from `deviceType`/`deviceIds`), `batch_size` (the "
    'archive\'s `batchSize`), `server_name` "MMS", `server_version` "0.12.0", '
    "`limit_max_image_pixels`",
    "model_yaml_config": "`model-config.yaml` as read (a handler's own keys too)",
    "request_ids": "`{index: id}` for the batch: the client's `x-request-id`, else a new UUID",
    "request_processor": "one per request of the batch: its headers in, its status and headers out",
    "metrics": "records what the handler adds; served on the metrics port "
    "([metrics](#metrics)) instead of TorchServe's `model_metrics.log`",
    "cl_socket": "during `handle`, where `send_intermediate_predict_response` writes its "
    "pieces (sent to the client as the handler sends them: see the inference API above)",
    "stopping_criteria": "read after `handle`: a request whose criterion says it is not "
    "finished is marked `ts_stream_next: true` (continuous batching's marker)",
    "header_key_sequence_id": "`TS_REQUEST_SEQUENCE_ID` or `ts_request_sequence_id`",
    "header_key_sequence_start": "`TS_REQUEST_SEQUENCE_START` or `ts_request_sequence_start`",
    "header_key_sequence_end": "`TS_REQUEST_SEQUENCE_END` or `ts_request_sequence_end`",
    "get_request_id": "the request's id",
    "get_request_header": "a request header, any case (the body's content type under the "
    "field's name, as TorchServe)",
    "get_all_request_header": "every header of the request",
    "get_sequence_id": "the request's sequence id header",
    "set_response_content_type": "the reply's Content-Type",
    "get_response_content_type": "what was set",
    "get_response_status": "`(code, phrase)` set so far (200 by default)",
    "set_response_status": "the reply's status and reason phrase",
    "set_all_response_status": "the same for every request of the batch",
    "get_response_headers": "the reply's headers set so far",
    "set_response_header": "a header of the reply (Content-Length and Transfer-Encoding "
    "stay the server's)",
    "RequestProcessor": "`get_request_property`, `get_request_properties`, "
    "`report_status`, `get_response_status_code`, `get_response_status_phrase`, "
    "`add_response_property`, `get_response_headers`, `get_response_header`, as "
    "TorchServe's",
    "Metrics": "`add_counter`, `add_time`, `add_size`, `add_percent`, `add_metric`, "
    "`add_error`, `add_metric_to_cache`, `get_metric`, `set_request_ids`; a cached "
    "metric's `add_or_update` and `update`",
}


def markdown_table() -> str:
    """``CONTEXT`` as the migration guide's table (tests/docs checks the guide holds it)."""
    rows = ["| `context`'s | what inferwire gives |", "|---|---|"]
    rows += [f"| `{name}` | {what} |" for name, what in CONTEXT.items()]
    return "\n".join(rows) + "\n"


class Headers(dict[str, Any]):
    """A request's headers as a handler reads them. TorchServe's HTTP/1.1 frontend keeps
    the case a client sent (``Content-Type``), while HTTP/2 and gRPC send names in lower
    case: lookups here ignore case so a handler written for either finds its header."""

    # Lower-case name -> name as kept; made at the first lookup that needs it (most
    # requests' handlers never look a header up in another case). Made as a dict is.
    _lower: dict[str, str] | None = None

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        if self._lower is not None and isinstance(key, str):
            self._lower[key.lower()] = key

    def _key(self, key: object) -> object:
        if isinstance(key, str) and not dict.__contains__(self, key):
            if self._lower is None:
                self._lower = {k.lower(): k for k in self if isinstance(k, str)}
            return self._lower.get(key.lower(), key)
        return key

    def __getitem__(self, key: str) -> Any:
        return super().__getitem__(self._key(key))  # type: ignore[index]

    def __contains__(self, key: object) -> bool:
        return super().__contains__(self._key(key))

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(self._key(key), default)  # type: ignore[call-overload]


class RequestProcessor:
    """One request of a batch: the headers it came with, the status and headers its
    reply will carry (``ts.context.RequestProcessor``)."""

    def __init__(self, request_header: dict[str, Any]) -> None:
        self._status_code = 200
        self._reason_phrase: str | None = None
        self._response_header: dict[str, str] = {}
        self._request_header = request_header

    def get_request_property(self, key: str) -> Any:
        return self._request_header.get(key)

    def get_request_properties(self) -> dict[str, Any]:
        return self._request_header

    def report_status(self, code: int, reason_phrase: str | None = None) -> None:
        self._status_code = code
        self._reason_phrase = reason_phrase

    def get_response_status_code(self) -> int:
        return self._status_code

    def get_response_status_phrase(self) -> str | None:
        return self._reason_phrase

    def add_response_property(self, key: str, value: str) -> None:
        self._response_header[key] = value

    def get_response_headers(self) -> dict[str, str]:
        return self._response_header

    def get_response_header(self, key: str) -> str | None:
        return self._response_header.get(key)


class Context:
    """What a handler's ``initialize(context)`` and ``handle(data, context)`` get. One per
    handler instance, as each TorchServe worker has one; the per-batch parts
    (``request_ids``, ``request_processor``) are replaced before each call."""

    def __init__(
        self,
        model_name: str,
        model_dir: str,
        manifest: dict[str, Any],
        batch_size: int,
        gpu: int | None,
        server_version: str = TORCHSERVE_VERSION,
        limit_max_image_pixels: bool = True,
        metrics: Metrics | None = None,
        model_yaml_config: dict[str, Any] | None = None,
    ) -> None:
        self.model_name = model_name
        self.manifest = manifest
        self._system_properties: dict[str, Any] = {
            "model_dir": model_dir,
            "gpu_id": gpu,
            "batch_size": batch_size,
            # TorchServe still reports the name of the server it grew from.
            "server_name": "MMS",
            "server_version": server_version,
            "limit_max_image_pixels": limit_max_image_pixels,
        }
        # {index in the batch: request id}; None until the first batch.
        self.request_ids: dict[int, str] | None = None
        self._request_processor: list[RequestProcessor] | None = None
        self.metrics = metrics if metrics is not None else Metrics(model_name)
        self.model_yaml_config = model_yaml_config if model_yaml_config is not None else {}
        # Continuous batching's per-request stop tests (handlers set it; see
        # handler_model: a reply whose test says "not yet" is marked ``more``).
        self.stopping_criteria: list[Any] | None = None
        # Where send_intermediate_predict_response writes a piece (HandlerModel sets it).
        self.cl_socket: Any = None
        self.header_key_sequence_id = os.getenv("TS_REQUEST_SEQUENCE_ID", "ts_request_sequence_id")
        self.header_key_sequence_start = os.getenv(
            "TS_REQUEST_SEQUENCE_START", "ts_request_sequence_start"
        )
        self.header_key_sequence_end = os.getenv(
            "TS_REQUEST_SEQUENCE_END", "ts_request_sequence_end"
        )

    @property
    def system_properties(self) -> dict[str, Any]:
        return self._system_properties

    @property
    def request_processor(self) -> list[RequestProcessor] | None:
        return self._request_processor

    @request_processor.setter
    def request_processor(self, value: list[RequestProcessor] | None) -> None:
        self._request_processor = value

    def _processor(self, idx: int) -> RequestProcessor:
        if self._request_processor is None:
            raise IndexError("no request: the context is not in a handle() call")
        return self._request_processor[idx]

    def get_request_id(self, idx: int = 0) -> str | None:
        return None if self.request_ids is None else self.request_ids.get(idx)

    def get_request_header(self, idx: int, key: str) -> Any:
        return self._processor(idx).get_request_property(key)

    def get_all_request_header(self, idx: int) -> dict[str, Any]:
        return self._processor(idx).get_request_properties()

    def get_sequence_id(self, idx: int) -> Any:
        return self._processor(idx).get_request_property(self.header_key_sequence_id)

    def set_response_content_type(self, idx: int, value: str) -> None:
        self._processor(idx).add_response_property("content-type", value)

    def get_response_content_type(self, idx: int) -> str | None:
        return self.get_response_headers(idx).get("content-type")

    def get_response_status(self, idx: int) -> tuple[int, str | None]:
        p = self._processor(idx)
        return p.get_response_status_code(), p.get_response_status_phrase()

    def set_response_status(self, code: int = 200, phrase: str = "", idx: int = 0) -> None:
        if self._request_processor is not None and self._request_processor[idx] is not None:
            self._request_processor[idx].report_status(code, reason_phrase=phrase)

    def set_all_response_status(self, code: int = 200, phrase: str = "") -> None:
        for p in self._request_processor or ():
            p.report_status(code, reason_phrase=phrase)

    def get_response_headers(self, idx: int) -> dict[str, str]:
        return self._processor(idx).get_response_headers()

    def set_response_header(self, idx: int, key: str, value: str) -> None:
        self._processor(idx).add_response_property(key, value)


# -- metrics --------------------------------------------------------------------------

# Series (a metric and one set of dimension values) kept per model: a handler that puts a
# request id in a dimension would otherwise grow the table without end.
MAX_SERIES = 10_000
# Every model's ``Metrics`` in this process, while the model lives.
_live: weakref.WeakSet[Metrics] = weakref.WeakSet()

_TIME_UNITS = ("ms", "s")
# The dimensions of a metric recorded with none of its own (TorchServe's defaults).
_MODEL_DIMENSIONS = ["ModelName", "Level"]
_SIZE_UNITS = ("MB", "kB", "GB", "B")


def _type_name(metric_type: Any) -> str:
    """``ts.metrics.metric_type_enum.MetricTypes`` member, or its value as a string."""
    value = getattr(metric_type, "value", metric_type)
    name = str(value).lower()
    if name not in ("counter", "gauge", "histogram"):
        raise ValueError(f"metric type must be counter, gauge or histogram, not {metric_type!r}")
    return name


@dataclass(frozen=True)
class Sample:
    """One series' value: counters are sums, gauges the last value, histograms the last
    value with ``count`` and ``total`` of every value recorded."""

    name: str
    unit: str
    type: str
    dimensions: tuple[tuple[str, str], ...]
    value: float
    count: int
    total: float


class Metric:
    """A metric handlers get from ``add_metric_to_cache``/``get_metric``, with the two
    methods TorchServe's ``CachingMetric`` gives them."""

    def __init__(
        self, owner: Metrics, name: str, unit: str, dimension_names: list[str], type_: str
    ) -> None:
        self._owner = owner
        self.metric_name = name
        self.unit = unit
        self.dimension_names = list(dimension_names)
        self.metric_type = type_
        self.series: dict[tuple[str, ...], list[float]] = {}

    def add_or_update(
        self, value: float, dimension_values: list[Any] | None = None, request_id: str = ""
    ) -> None:
        values = [str(v) for v in (dimension_values or [])]
        if len(values) != len(self.dimension_names):
            raise ValueError(
                f"metric {self.metric_name}: {len(self.dimension_names)} dimension values "
                f"expected ({', '.join(self.dimension_names)}), got {len(values)}"
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"metric {self.metric_name}: value must be a number, not {value!r}")
        self._owner._record(self, tuple(values), float(value))

    def update(
        self, value: float, request_id: str = "", dimensions: list[Any] | None = None
    ) -> None:
        """TorchServe's older call: dimension objects (``.value``) rather than values."""
        self.add_or_update(value, [getattr(d, "value", d) for d in dimensions or []], request_id)


def live_metrics() -> list[Metrics]:
    """The metrics of every model this process serves (for the metrics page)."""
    return list(_live)


class Metrics:
    """``context.metrics``: the ``add_*`` methods handlers call, each recording into a
    series that ``samples`` reads back (a dialect exposes them with its metrics)."""

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        _live.add(self)
        self.request_ids: dict[int, str] | None = None
        # The dimension values of a metric recorded with none of its own.
        self._model_level = (model_name, "Model")
        self.cache: dict[tuple[str, str], Metric] = {}
        self._lock = threading.Lock()
        self._series = 0
        self._full_warned = False

    def set_request_ids(self, request_ids: dict[int, str] | None) -> None:
        self.request_ids = request_ids

    # -- what handlers call ----------------------------------------------------------

    def add_metric(
        self,
        name: str,
        value: float,
        unit: str,
        idx: Any = None,
        dimensions: list[Any] | None = None,
        metric_type: Any = "counter",
    ) -> None:
        self._add(name, value, unit, dimensions, _type_name(metric_type))

    def add_counter(
        self, name: str, value: float, idx: Any = None, dimensions: list[Any] | None = None
    ) -> None:
        self._add(name, value, "count", dimensions, "counter")

    def add_time(
        self,
        name: str,
        value: float,
        idx: Any = None,
        unit: str = "ms",
        dimensions: list[Any] | None = None,
        metric_type: Any = "gauge",
    ) -> None:
        if unit not in _TIME_UNITS:
            raise ValueError(f"the unit for a timed metric should be one of {list(_TIME_UNITS)}")
        kind = "gauge" if metric_type == "gauge" else _type_name(metric_type)
        self._add(name, value, unit, dimensions, kind)

    def add_size(
        self,
        name: str,
        value: float,
        idx: Any = None,
        unit: str = "MB",
        dimensions: list[Any] | None = None,
        metric_type: Any = "gauge",
    ) -> None:
        if unit not in _SIZE_UNITS:
            raise ValueError(f"the unit for a size metric should be one of {list(_SIZE_UNITS)}")
        self._add(name, value, unit, dimensions, _type_name(metric_type))

    def add_percent(
        self,
        name: str,
        value: float,
        idx: Any = None,
        dimensions: list[Any] | None = None,
        metric_type: Any = "gauge",
    ) -> None:
        self._add(name, value, "percent", dimensions, _type_name(metric_type))

    def add_error(self, name: str, value: float, dimensions: list[Any] | None = None) -> None:
        self._add(name, value, "", dimensions, "counter", level="Error")

    def add_metric_to_cache(
        self,
        metric_name: str,
        unit: str,
        dimension_names: list[str] | None = None,
        metric_type: Any = "counter",
    ) -> Metric:
        kind = _type_name(metric_type)
        metric = Metric(self, metric_name, unit, list(dimension_names or []), kind)
        with self._lock:
            old = self.cache.get((kind, metric_name))
            if old is not None:
                self._series -= len(old.series)
            self.cache[(kind, metric_name)] = metric
        return metric

    def get_metric(self, metric_name: str, metric_type: Any = "counter") -> Metric:
        metric = self.cache.get((_type_name(metric_type), metric_name))
        if metric is None:
            raise KeyError(f"metric {metric_name!r} of type {_type_name(metric_type)} not found")
        return metric

    # -- what a dialect reads --------------------------------------------------------

    def samples(self) -> list[Sample]:
        """Every series' value now (a copy: recording goes on meanwhile)."""
        out = []
        with self._lock:
            for m in self.cache.values():
                for values, (value, count, total) in m.series.items():
                    dims = tuple(zip(m.dimension_names, values, strict=True))
                    out.append(
                        Sample(m.metric_name, m.unit, m.metric_type, dims, value, int(count), total)
                    )
        return out

    # -- inside ------------------------------------------------------------------------

    def _add(
        self,
        name: str,
        value: float,
        unit: str,
        dimensions: list[Any] | None,
        kind: str,
        level: str = "Model",
    ) -> None:
        if not dimensions and level == "Model":
            # The common call (no dimensions of its own, e.g. the PredictionTime of every
            # batch): the series is known, so only the value needs checking.
            metric = self.cache.get((kind, name))
            if metric is not None and metric.dimension_names == _MODEL_DIMENSIONS:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise ValueError(f"metric {name}: value must be a number, not {value!r}")
                self._record(metric, (self.model_name, level), float(value))
                return
        # TorchServe adds ModelName and Level to every metric a handler records.
        dims = [(str(d.name), str(d.value)) for d in dimensions or []]
        names = [n for n, _ in dims]
        if level == "Model" and "ModelName" not in names:
            dims.append(("ModelName", self.model_name))
        if "Level" not in names:
            dims.append(("Level", level))
        metric = self.cache.get((kind, name))
        if metric is None or metric.dimension_names != [n for n, _ in dims]:
            metric = self.add_metric_to_cache(name, unit, [n for n, _ in dims], kind)
        metric.add_or_update(value, [v for _, v in dims])

    def _time(self, name: str, value: float) -> None:
        """``add_time(name, value)`` (a gauge in ms, no dimensions) for a float the
        server measured: each batch's PredictionTime, kept without ``_add``'s checks once
        its series exists."""
        metric = self.cache.get(("gauge", name))
        if metric is not None and metric.dimension_names == _MODEL_DIMENSIONS:
            kept = metric.series.get(self._model_level)
            if kept is not None:
                with self._lock:
                    kept[1] += 1
                    kept[2] += value
                    kept[0] = value
                return
        self._add(name, value, "ms", None, "gauge")

    def _record(self, metric: Metric, values: tuple[str, ...], value: float) -> None:
        with self._lock:
            kept = metric.series.get(values)
            if kept is None:
                if self._series >= MAX_SERIES:
                    if not self._full_warned:
                        self._full_warned = True
                        log.warning(
                            "model %s: more than %d metric series; new ones are dropped",
                            self.model_name,
                            MAX_SERIES,
                        )
                    return
                self._series += 1
                kept = metric.series[values] = [0.0, 0.0, 0.0]
            kept[1] += 1
            kept[2] += value
            kept[0] = kept[2] if metric.metric_type == "counter" else value
