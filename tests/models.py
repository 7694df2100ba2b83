"""Models the end-to-end tests serve (plain classes, as Seldon users write them)."""

from __future__ import annotations

from typing import Any

import numpy as np
from inferwire import BadRequest


class Echo:
    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        return X


class EchoRaw:
    def predict_raw(self, request: dict[str, Any]) -> dict[str, Any]:
        return request


class Noop:
    """The notebook's no-op model: whatever comes in, ``[1]`` goes out."""

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        return np.array([1])


class NoopRaw:
    def predict_raw(self, request: dict[str, Any]) -> Any:
        return [1]


class Failing:
    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        if isinstance(X, str) and X == "ok":
            return "fine"
        raise ValueError("model exploded: bad luck")


class Rejecting:
    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        raise BadRequest("feature 'age' must be positive")


class Annotated:
    """Uses every optional Seldon method."""

    class_names = ["no", "yes"]

    def __init__(self, threshold: float = 0.5, label: str = "x") -> None:
        self.threshold = threshold
        self.label = label
        self.feedback: list[Any] = []
        self.loaded = False

    def load(self) -> None:
        self.loaded = True

    def predict(self, X: Any, features_names: list[str] | None = None, meta: Any = None) -> Any:
        X = np.asarray(X, dtype=float)
        p = (X.sum(axis=1, keepdims=True) > self.threshold).astype(float)
        return np.hstack([1 - p, p])

    def tags(self) -> dict[str, Any]:
        return {"label": self.label, "threshold": self.threshold, "loaded": self.loaded}

    def metrics(self) -> list[dict[str, Any]]:
        return [
            {"type": "COUNTER", "key": "calls", "value": 1},
            {"type": "GAUGE", "key": "threshold", "value": self.threshold},
        ]

    def send_feedback(
        self, features: Any, feature_names: Any, reward: float, truth: Any, routing: Any = None
    ) -> Any:
        self.feedback.append(reward)
        return np.array([[len(self.feedback), reward]])

    def health_status(self) -> Any:
        return {"healthy": True, "feedback_seen": len(self.feedback)}

    def init_metadata(self) -> dict[str, Any]:
        return {
            "versions": ["v7"],
            "inputs": [{"messagetype": "tensor", "schema": {"names": ["a", "b"]}}],
        }


class MetaEcho:
    """Returns what it was given besides X, to check names and meta reach the model."""

    def predict(self, X: Any, features_names: list[str] | None = None, meta: Any = None) -> Any:
        return {"names": features_names, "meta": meta, "dtype": str(np.asarray(X).dtype)}


class Types:
    """Reports the type and dtype the model received, as strData."""

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        return f"{type(X).__name__}:{getattr(X, 'dtype', '')}:{getattr(X, 'shape', '')}"


class Slow:
    """Sleeps ``X`` seconds (strData) and reports how many calls overlapped it."""

    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()
        self.active = 0
        self.max_active = 0

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        import time

        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            time.sleep(float(X))
        finally:
            with self.lock:
                self.active -= 1
        return f"slept {X}; max concurrent calls {self.max_active}"


class RawTypes:
    """Reports the types predict_raw received for the array fields."""

    def predict_raw(self, request: dict[str, Any]) -> Any:
        data = request.get("data", {})
        if "ndarray" in data:
            value = data["ndarray"]
        elif "tensor" in data:
            value = data["tensor"]["values"]
        else:
            return {"strData": "none"}
        kind = type(value).__name__
        dtype = getattr(value, "dtype", "")
        return {"strData": f"{kind}:{dtype}:{np.asarray(value).tolist()}"}


class Doubler:
    """Returns ``2 * X`` after 20 ms, and reports every batch's row count in a tag."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        import time

        X = np.asarray(X)
        self.batches.append(int(X.shape[0]))
        time.sleep(0.02)
        return X * 2

    def tags(self) -> dict[str, Any]:
        return {"largest_batch": max(self.batches)}


class NoNegatives:
    """Fails on any negative value (in a batch: the batch fails, then each runs alone)."""

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        import time

        X = np.asarray(X)
        time.sleep(0.02)
        if (X < 0).any():
            raise ValueError("negative values are not allowed")
        return X + 1


class Total:
    """Returns one number for the whole input: fine alone, wrong for a batch."""

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        import time

        time.sleep(0.05)
        return np.array([float(np.asarray(X).sum())])


class Tally:
    """Sleeps ``X`` seconds (strData) and answers how many calls it has run."""

    def __init__(self) -> None:
        self.calls = 0

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        import time

        self.calls += 1
        time.sleep(float(X))
        return f"calls {self.calls}"


class AsyncEcho:
    """``async def predict``, as FastAPI-style code is written."""

    async def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        import asyncio

        await asyncio.sleep(0.001)
        return X


class Pid:
    """Answers the worker process' pid (strData), after ``X`` seconds."""

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        import os
        import time

        time.sleep(float(X))
        return str(os.getpid())


class BuiltOnce:
    """Writes the pid of the process that built it to ``$BUILT_ONCE_FILE``, then answers
    the pid of the worker that serves each request."""

    def __init__(self) -> None:
        import os

        with open(os.environ["BUILT_ONCE_FILE"], "a") as f:
            f.write(f"{os.getpid()}\n")

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        import os
        import time

        time.sleep(float(X))
        return str(os.getpid())


class Timed:
    """Reports a Seldon TIMER metric (milliseconds) with a tag."""

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        return X

    def metrics(self) -> list[dict[str, Any]]:
        return [
            {"type": "TIMER", "key": "model_step_seconds", "value": 25, "tags": {"step": "score"}}
        ]


class TwoInputs:
    """Two V2 inputs in, two named outputs out."""

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        return {"sum": X["a"] + X["b"], "diff": X["a"] - X["b"], "names": np.array(features_names)}


class Describe:
    """Reports what it received (type, dtype, columns) as a BYTES output, and echoes a
    DataFrame back with a derived column."""

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        import pandas as pd

        if isinstance(X, pd.DataFrame):
            out = X.copy()
            out["n_cols"] = len(X.columns)
            return out
        if isinstance(X, list):
            return {"kind": np.array([f"list:{type(X[0]).__name__}:{X[0]!r}"], dtype=object)}
        return {"kind": np.array([f"{type(X).__name__}:{getattr(X, 'dtype', '')}"], dtype=object)}


class Transposed:
    """Returns a Fortran-ordered array and a strided view: replies must be row-major."""

    def predict(self, X: Any, names: Any = None) -> Any:
        a = np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3))
        return a if X.shape[-1] == 1 else np.arange(12.0).reshape(3, 4)[:, ::2]


class EchoPid:
    """Answers ``X@pid`` (strData); ``exit`` ends the process at once (os._exit(3)) and
    ``leak:N`` keeps N MiB more alive for good."""

    def __init__(self) -> None:
        self.kept: list[bytes] = []

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        import os

        if X == "exit":
            os._exit(3)
        if str(X).startswith("leak:"):
            self.kept.append(b"x" * (int(str(X)[5:]) * 1024 * 1024))
        return f"{X}@{os.getpid()}"
