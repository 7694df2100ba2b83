"""The model the trace tests serve (tests/server/observability/test_traces.py): every
input back, and the trace context the server handed it in the request's parameters
(``traceparent``, ``tracestate``) as BYTES outputs, so a test can see which span the
model would continue."""

from __future__ import annotations

from typing import Any

import numpy as np


class TraceEcho:
    def predict(self, X: Any, features_names: list[str] | None = None, meta: Any = None) -> Any:
        inputs = X if isinstance(X, dict) else {(features_names or ["x"])[0]: X}
        out = {f"{k}_out": v for k, v in inputs.items()}
        parameters = (meta or {}).get("parameters") or {}
        for key in ("traceparent", "tracestate"):
            if key in parameters:
                out[key] = np.array([str(parameters[key]).encode()], dtype=np.object_)
        return out


class TraceBatchEcho:
    """Every input back, slowly enough (20 ms a call) that concurrent requests queue and
    the server joins them into batches."""

    def predict(self, X: Any, features_names: list[str] | None = None, meta: Any = None) -> Any:
        import time

        time.sleep(0.02)
        return X
