"""Graph node classes for tests/dialects/seldon/test_graph.py: each leaves a mark in the result so the
test can see which nodes ran, in which order."""

from __future__ import annotations

from typing import Any

import numpy as np


class AddOne:
    """A transformer: X + 1."""

    def transform_input(self, X: Any, names: list[str]) -> Any:
        return np.asarray(X) + 1

    def tags(self) -> dict[str, Any]:
        return {"transformer": "ran"}

    def init_metadata(self) -> dict[str, Any]:
        return {"inputs": [{"name": "x", "datatype": "FP32"}]}


class Double:
    """A model: 2 X, with its own class names."""

    def __init__(self, factor: int = 2) -> None:
        self.factor = factor
        self.feedback: list[float] = []

    def predict(self, X: Any, names: list[str], meta: dict[str, Any] | None = None) -> Any:
        self.seen_meta = meta
        return np.asarray(X) * self.factor

    def class_names(self) -> list[str]:
        return [f"c{i}" for i in range(2)]

    def send_feedback(
        self, features: Any, names: Any, reward: float, truth: Any, routing: Any = None
    ) -> None:
        self.feedback.append(reward)

    def metrics(self) -> list[dict[str, Any]]:
        return [{"type": "COUNTER", "key": "double_calls", "value": 1}]


class Negate:
    def predict(self, X: Any, names: list[str]) -> Any:
        return -np.asarray(X)


class Square:
    def predict(self, X: Any) -> Any:
        return np.asarray(X) ** 2


class RawEcho:
    """A model with only predict_raw: answers its input's ndarray plus 100."""

    def predict_raw(self, msg: dict[str, Any]) -> dict[str, Any]:
        arr = np.asarray(msg["data"]["ndarray"])
        return {"data": {"ndarray": (arr + 100).tolist()}, "meta": {"tags": {"raw": "yes"}}}


class FirstColumnRouter:
    """Routes to child 0 when the first value is below 10, else to child 1."""

    def __init__(self) -> None:
        self.feedback: list[tuple[float, Any]] = []

    def route(self, X: Any, names: list[str]) -> int:
        return 0 if float(np.asarray(X).reshape(-1)[0]) < 10 else 1

    def send_feedback(
        self, features: Any, names: Any, reward: float, truth: Any, routing: Any = None
    ) -> None:
        self.feedback.append((reward, routing))


class BadRouter:
    def route(self, X: Any, names: list[str]) -> Any:
        return "left"


class Sum:
    """A combiner: the element-wise sum of its children's results."""

    def aggregate(self, Xs: list[Any], names: list[list[str]]) -> Any:
        return np.sum([np.asarray(x) for x in Xs], axis=0)


class Round:
    """An output transformer: rounds to 1 decimal and tags the reply."""

    def transform_output(self, X: Any, names: list[str]) -> Any:
        return np.round(np.asarray(X, dtype=float), 1)

    def tags(self) -> dict[str, Any]:
        return {"output": "rounded"}

    def init_metadata(self) -> dict[str, Any]:
        return {"outputs": [{"name": "rounded", "datatype": "FP64"}]}


class Failing:
    def predict(self, X: Any) -> Any:
        raise RuntimeError("the model broke")
