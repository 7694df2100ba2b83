"""Models the Triton/KServe compatibility tests serve: an identity model that answers
every input back under the same name with ``_out`` appended (every datatype), one that
sleeps (perf_analyzer), and a stateful one that keeps a running total per sequence."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import numpy as np


class Identity:
    """Every input back as ``NAME_out``; a negative number fails with a message."""

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        inputs = X if isinstance(X, dict) else {(features_names or ["x"])[0]: X}
        for v in inputs.values():
            a = np.asarray(v)
            if a.dtype.kind in "if" and a.size and (a < 0).any():
                raise ValueError("negative values are refused by this model")
        return {f"{k}_out": v for k, v in inputs.items()}


class Sleep5ms:
    """Sleeps 5 ms and returns its input: a model whose cost is known. Its fixed shapes
    let perf_analyzer make its own inputs."""

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        time.sleep(0.005)
        return X

    def init_metadata(self) -> dict[str, Any]:
        return {
            "inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 16]}],
            "outputs": [{"name": "y", "datatype": "FP32", "shape": [1, 16]}],
        }


class Accumulate:
    """Triton's sequence batching parameters as a stateful model sees them: the running
    total of one sequence's inputs (``sequence_start`` begins it at zero, ``sequence_end``
    forgets it), answered with the pid of the process that holds it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.totals: dict[Any, float] = {}

    def predict(self, X: Any, features_names: list[str] | None = None, meta: Any = None) -> Any:
        params = (meta or {}).get("parameters") or {}
        seq = params.get("sequence_id")
        if seq is None:
            raise ValueError("sequence_id is missing")
        value = float(np.asarray(X).sum())
        with self.lock:
            if params.get("sequence_start"):
                self.totals[seq] = 0.0
            if seq not in self.totals:
                raise ValueError(f"sequence {seq!r} was not started here")
            total = self.totals[seq] = self.totals[seq] + value
            if params.get("sequence_end"):
                del self.totals[seq]
        return {
            "total": np.array([total], np.float64),
            "pid": np.array([os.getpid()], np.int64),
        }
