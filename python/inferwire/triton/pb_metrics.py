"""Custom metrics of Triton Python-backend models (``pb_utils.MetricFamily``), kept in one
process-wide registry that ``metrics_text()`` renders in Prometheus' text format for the
server's metrics page. Re-exported by ``pb_utils``.

As in Triton (prometheus-cpp underneath): families are registered by name and never
removed; two ``Metric`` objects with the same labels share one series, and a series goes
when the last ``Metric`` object for it is garbage-collected. Unlike Triton's, a ``Metric``
keeps working after its ``MetricFamily`` object is gone. The registry is bounded
(``MAX_FAMILIES``, ``MAX_METRICS``) so labels built from request data cannot grow memory
without limit: creating past a bound raises ``TritonModelException``."""

from __future__ import annotations

import enum
import itertools
import math
import numbers
import re
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

from inferwire.triton.pb_errors import TritonModelException, _ArgumentTypeError

MAX_FAMILIES = 1_000
MAX_METRICS = 10_000

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")


class MetricKind(enum.IntEnum):
    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2


Labels = tuple[tuple[str, str], ...]


@dataclass
class _Series:
    labels: Labels
    buckets: tuple[float, ...] = ()
    value: float = 0.0  # counter and gauge
    counts: list[int] = field(default_factory=list)  # histogram, per bucket, not cumulative
    total: float = 0.0  # histogram sum
    observations: int = 0
    refs: int = 0


@dataclass
class _Family:
    name: str
    description: str
    kind: MetricKind
    series: dict[Labels, _Series] = field(default_factory=dict)


# Reentrant: a Metric's finalizer (which takes it) may run from a garbage collection
# that starts while this thread already holds it.
_lock = threading.RLock()
_families: dict[str, _Family] = {}
_metric_count = 0


class MetricFamily:
    """``MetricFamily(name, description, kind)``: ``kind`` is ``MetricFamily.COUNTER``,
    ``GAUGE`` or ``HISTOGRAM``. Creating a family whose name is registered gives the
    registered one when description and kind agree, and is refused otherwise."""

    __slots__ = ("_family",)

    COUNTER = MetricKind.COUNTER
    GAUGE = MetricKind.GAUGE
    HISTOGRAM = MetricKind.HISTOGRAM

    def __init__(self, name: str, description: str, kind: int) -> None:
        for arg, value in (("name", name), ("description", description)):
            if not isinstance(value, str):
                raise _ArgumentTypeError(
                    f"MetricFamily {arg} must be a str, got {type(value).__name__}"
                )
        try:
            metric_kind = MetricKind(kind)
        except ValueError:
            raise _ArgumentTypeError(
                "MetricFamily kind must be MetricFamily.COUNTER, MetricFamily.GAUGE or"
                f" MetricFamily.HISTOGRAM, got {kind!r}"
            ) from None
        if not _METRIC_NAME.match(name) or name.startswith("__"):
            raise TritonModelException(
                f"Error when creating MetricFamily: invalid metric name {name!r}; a"
                " Prometheus name is letters, digits, '_' and ':', not starting with a digit"
                " or '__'"
            )
        with _lock:
            family = _families.get(name)
            if family is None:
                if len(_families) >= MAX_FAMILIES:
                    raise TritonModelException(
                        f"Error when creating MetricFamily: {MAX_FAMILIES} metric families"
                        " are registered, the most this server keeps; reuse a family (the"
                        " same name, description and kind give the registered one)"
                    )
                family = _families[name] = _Family(name, description, metric_kind)
            elif (family.description, family.kind) != (description, metric_kind):
                raise TritonModelException(
                    f"Error when creating MetricFamily: a metric family named {name!r} is"
                    f" registered as a {family.kind.name} described as"
                    f" {family.description!r}; use another name, or the same kind and"
                    " description"
                )
        self._family = family

    def Metric(  # Triton's name
        self, labels: dict[str, str] | None = None, buckets: list[float] | None = None
    ) -> Metric:
        """A metric of this family with these labels (``{"name": "value"}``);
        ``buckets``, the upper bounds in increasing order, only for a HISTOGRAM."""
        family = self._family
        if labels is None:
            labels = {}
        if not isinstance(labels, dict):
            raise TritonModelException("Failed to create metric. Labels must be a dictionary.")
        if buckets is not None:
            if not isinstance(buckets, list):
                raise TritonModelException("Failed to create metric. Buckets must be a list.")
            if family.kind != MetricKind.HISTOGRAM:
                raise TritonModelException("Failed to create metric. Unexpected buckets found.")
        elif family.kind == MetricKind.HISTOGRAM:
            raise TritonModelException("Failed to create metric. Missing required buckets.")
        key = _labels_key(labels)
        bounds = _bucket_bounds(buckets) if buckets is not None else ()

        global _metric_count
        with _lock:
            series = family.series.get(key)
            if series is None:
                if _metric_count >= MAX_METRICS:
                    raise TritonModelException(
                        f"Error when creating Metric: {MAX_METRICS} metrics are registered,"
                        " the most this server keeps; keep label values to a small set (not"
                        " request ids or client input) and drop Metric objects no longer"
                        " needed"
                    )
                series = _Series(key, bounds, counts=[0] * len(bounds))
                family.series[key] = series
                _metric_count += 1
            series.refs += 1
        metric = Metric(family, series)
        weakref.finalize(metric, _release, family, series)
        return metric


def _labels_key(labels: dict[Any, Any]) -> Labels:
    for name, value in labels.items():
        if not isinstance(name, str) or not _LABEL_NAME.match(name) or name.startswith("__"):
            raise TritonModelException(
                f"Error when creating Metric: invalid label name {name!r}; a Prometheus"
                " label name is letters, digits and '_', not starting with a digit or '__'"
            )
        if not isinstance(value, str):
            raise TritonModelException(
                f"Error when creating Metric: Parameter [{name}] must have a type of"
                " TRITONSERVER_PARAMETER_STRING to be added as a label."
            )
    return tuple(sorted(labels.items()))


def _bucket_bounds(buckets: list[Any]) -> tuple[float, ...]:
    try:
        bounds = tuple(float(_number(b, "bucket")) for b in buckets)
    except TritonModelException:
        raise TritonModelException(
            f"Error when creating Metric: buckets must be numbers, got {buckets!r}"
        ) from None
    if any(math.isnan(b) for b in bounds) or any(a >= b for a, b in itertools.pairwise(bounds)):
        raise TritonModelException(
            f"Error when creating Metric: buckets must be in strictly increasing order, got"
            f" {buckets!r}"
        )
    return tuple(b for b in bounds if b != math.inf)  # +Inf is always the last bucket


def _release(family: _Family, series: _Series) -> None:
    global _metric_count
    with _lock:
        series.refs -= 1
        if series.refs == 0 and family.series.get(series.labels) is series:
            del family.series[series.labels]
            _metric_count -= 1


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _ArgumentTypeError(f"a metric {what} must be a number, got {type(value).__name__}")
    return float(value)


class Metric:
    """One series of a ``MetricFamily``: ``increment`` (COUNTER, GAUGE), ``set`` (GAUGE),
    ``observe`` (HISTOGRAM), ``value`` (COUNTER, GAUGE)."""

    __slots__ = ("__weakref__", "_family", "_series")

    def __init__(self, family: _Family, series: _Series) -> None:
        self._family = family
        self._series = series

    @staticmethod
    def _unsupported(failure: str, kind: MetricKind, operation: str) -> TritonModelException:
        return TritonModelException(
            f"{failure}: TRITONSERVER_METRIC_KIND_{kind.name} does not support {operation}"
        )

    def increment(self, value: float) -> None:
        failure = "Failed to increment metric value"
        amount = _number(value, "value")
        kind = self._family.kind
        if kind == MetricKind.HISTOGRAM:
            raise self._unsupported(failure, kind, "Increment")
        if kind == MetricKind.COUNTER and amount < 0:
            raise TritonModelException(
                f"{failure}: TRITONSERVER_METRIC_KIND_COUNTER can only be incremented"
                " monotonically by non-negative values."
            )
        with _lock:
            self._series.value += amount

    def set(self, value: float) -> None:
        failure = "Failed to set metric value"
        amount = _number(value, "value")
        kind = self._family.kind
        if kind != MetricKind.GAUGE:
            raise self._unsupported(failure, kind, "Set")
        with _lock:
            self._series.value = amount

    def observe(self, value: float) -> None:
        failure = "Failed to observe metric value"
        amount = _number(value, "value")
        kind = self._family.kind
        if kind != MetricKind.HISTOGRAM:
            raise self._unsupported(failure, kind, "Observe")
        series = self._series
        with _lock:
            for i, bound in enumerate(series.buckets):
                if amount <= bound:
                    series.counts[i] += 1
                    break
            series.total += amount
            series.observations += 1

    def value(self) -> float:
        failure = "Failed to get metric value"
        kind = self._family.kind
        if kind == MetricKind.HISTOGRAM:
            raise self._unsupported(failure, kind, "Value")
        with _lock:
            return self._series.value


def _format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _label_text(labels: Labels, *extra: tuple[str, str]) -> str:
    pairs = (*labels, *extra)
    if not pairs:
        return ""
    return "{" + ",".join(f'{name}="{_escape_label(value)}"' for name, value in pairs) + "}"


def metrics_text() -> str:
    """Every registered family with at least one series, in Prometheus' text exposition
    format (a histogram as ``_bucket``, ``_sum`` and ``_count``); "" when there is none."""
    lines: list[str] = []
    with _lock:
        for family in _families.values():
            if not family.series:
                continue
            name = family.name
            help_text = family.description.replace("\\", "\\\\").replace("\n", "\\n")
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {family.kind.name.lower()}")
            for series in family.series.values():
                if family.kind != MetricKind.HISTOGRAM:
                    lines.append(
                        f"{name}{_label_text(series.labels)} {_format_value(series.value)}"
                    )
                    continue
                cumulative = 0
                for bound, count in zip(series.buckets, series.counts, strict=True):
                    cumulative += count
                    le = _label_text(series.labels, ("le", _format_value(bound)))
                    lines.append(f"{name}_bucket{le} {cumulative}")
                le = _label_text(series.labels, ("le", "+Inf"))
                lines.append(f"{name}_bucket{le} {series.observations}")
                labels = _label_text(series.labels)
                lines.append(f"{name}_sum{labels} {_format_value(series.total)}")
                lines.append(f"{name}_count{labels} {series.observations}")
    return "\n".join(lines) + "\n" if lines else ""


def _clear() -> None:
    """Forgets every family and series (tests; a server that starts afresh)."""
    global _metric_count
    with _lock:
        for family in _families.values():
            family.series.clear()  # so that live Metric objects' finalizers find nothing
        _families.clear()
        _metric_count = 0
