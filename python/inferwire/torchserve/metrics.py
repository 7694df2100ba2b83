"""The handlers' own metrics (``context.metrics``: ``add_counter``, ``add_time``, …,
``PredictionTime`` and ``HandlerTime`` among them) on the metrics page, as TorchServe 0.12
exports its backend metrics in ``metrics_mode=prometheus``: a family per metric name,
helped ``Torchserve prometheus <type> metric with unit: <unit>``, labelled with the
metric's dimensions then ``Hostname``, written as Prometheus simpleclient 0.9 writes them
(a trailing comma after the labels, values as Java doubles). The frontend's series
(``ts_inference_requests_total``, …) are the core's (``dialect/torchserve.rs``).

TorchServe exposes only the backend metrics its metrics configuration lists (by default
``HandlerTime`` and ``PredictionTime``) unless ``model_metrics_auto_detect`` is on; here
every metric a handler records is exposed, as with auto-detection. Counters add, gauges
keep the last value; a histogram has only its ``+Inf`` bucket (no bucket counts are kept).
"""

from __future__ import annotations

import decimal
import math
import re
import socket

from .context import Sample, live_metrics

# Families TorchServe's default metrics.yaml declares (model_metrics): always on the page,
# with the unit the file gives them.
DECLARED = {"HandlerTime": ("gauge", "ms"), "PredictionTime": ("gauge", "ms")}

# What TorchServe's backend writes for a unit (``ts.metrics.unit.Units``).
UNITS = {
    "ms": "Milliseconds",
    "s": "Seconds",
    "percent": "Percent",
    "count": "Count",
    "MB": "Megabytes",
    "GB": "Gigabytes",
    "kB": "Kilobytes",
    "B": "Bytes",
    "": "unit",
}

# The frontend's families (the core writes them): a handler metric by one of these names
# is left out rather than written twice.
FRONTEND = frozenset(
    {
        "Requests2XX",
        "Requests4XX",
        "Requests5XX",
        "ts_inference_requests_total",
        "ts_inference_latency_microseconds",
        "ts_queue_latency_microseconds",
        "CPUUtilization",
        "MemoryUsed",
        "MemoryAvailable",
        "MemoryUtilization",
    }
)

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")


def metrics_text() -> str:
    """Every model's handler metrics in this process, in Prometheus' text format."""
    return render([s for m in live_metrics() for s in m.samples()], socket.gethostname())


def render(samples: list[Sample], hostname: str) -> str:
    """``samples`` as TorchServe's Prometheus page has them. As TorchServe's registry, a
    family takes the type and dimension names it was first recorded with; a sample of
    another type or other dimensions, or a name Prometheus refuses, is left out."""
    families: dict[str, tuple[str, str, tuple[str, ...], list[Sample]]] = {
        name: (kind, unit, ("ModelName", "Level"), []) for name, (kind, unit) in DECLARED.items()
    }
    for s in samples:
        names = tuple(n for n, _ in s.dimensions)
        if s.name in FRONTEND or not _NAME.match(s.name):
            continue
        if not all(_LABEL.match(n) for n in names) or "Hostname" in names:
            continue
        family = families.setdefault(s.name, (s.type, UNITS.get(s.unit, s.unit), names, []))
        if family[0] == s.type and family[2] == names:
            family[3].append(s)
    lines: list[str] = []
    for name, (kind, unit, _, kept) in families.items():
        lines.append(f"# HELP {name} Torchserve prometheus {kind} metric with unit: {unit}")
        lines.append(f"# TYPE {name} {kind}")
        for s in kept:
            labels = "".join(
                f'{n}="{_escape(v)}",' for n, v in (*s.dimensions, ("Hostname", hostname))
            )
            if kind == "histogram":
                lines.append(f'{name}_bucket{{{labels}le="+Inf",}} {java_double(s.count)}')
                lines.append(f"{name}_count{{{labels}}} {java_double(s.count)}")
                lines.append(f"{name}_sum{{{labels}}} {java_double(s.total)}")
            else:
                lines.append(f"{name}{{{labels}}} {java_double(s.value)}")
    return "\n".join(lines) + "\n"


def java_double(value: float) -> str:
    """``value`` as Java's ``Double.toString`` writes it: ``3.0``, ``82.93``,
    ``1.2345678E7``, ``1.0E-4``."""
    v = float(value)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == 0 or 1e-3 <= abs(v) < 1e7:
        return repr(v)
    sign, digits, exponent = decimal.Decimal(repr(v)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    mantissa = f"{text[0]}.{text[1:] or '0'}"
    return f"{'-' if sign else ''}{mantissa}E{exponent + len(text) - 1}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
