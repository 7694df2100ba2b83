"""Models written as a seldon-core 1.x user writes them, served to seldon-core's own
SeldonClient in test_seldon_client_compat.py. seldon_core itself is not importable here
(it runs on Python 3.10 only), so SeldonResponse comes from inferwire, which also
accepts seldon_core's class of that name."""

from __future__ import annotations

from typing import Any

import numpy as np
from inferwire.seldon import SeldonResponse


class Doubler:
    """Doubles arrays; says what it got for strings, bytes and dicts; remembers the
    rewards it is sent."""

    def __init__(self) -> None:
        self.rewards: list[float] = []

    def tags(self) -> dict[str, Any]:
        return {"model": "doubler"}

    def metrics(self) -> list[dict[str, Any]]:
        return [{"type": "COUNTER", "key": "doubler_calls", "value": 1}]

    def init_metadata(self) -> dict[str, Any]:
        return {
            "name": "doubler",
            "versions": ["v1"],
            "platform": "seldon",
            "inputs": [{"messagetype": "tensor", "schema": {"names": ["a", "b"]}}],
            "outputs": [{"messagetype": "tensor", "schema": {"shape": [2]}}],
        }

    def predict(self, X: Any, names: list[str], meta: dict[str, Any] | None = None) -> Any:
        if isinstance(X, str):
            return X.upper()
        if isinstance(X, (bytes, bytearray)):
            return bytes(reversed(X))
        if isinstance(X, dict):
            if X.get("runtime"):
                return SeldonResponse(
                    np.array([[1.0, 2.0]]),
                    tags={"runtime": X["runtime"]},
                    metrics=[{"type": "GAUGE", "key": "doubler_runtime", "value": 7}],
                )
            return {"got": X, "names": names, "tags": (meta or {}).get("tags", {})}
        return np.asarray(X) * 2

    def send_feedback(
        self, features: Any, names: list[str], reward: float, truth: Any, routing: Any = None
    ) -> Any:
        self.rewards.append(float(reward))
        return [self.rewards[-1], float(len(self.rewards))]


class Component:
    """Every graph component type's method at once: Seldon serves them all on one
    microservice, and SeldonClient's ``microservice(method=...)`` calls each."""

    def transform_input(self, X: Any, names: list[str]) -> Any:
        return np.asarray(X) + 1

    def transform_output(self, X: Any, names: list[str]) -> Any:
        return np.asarray(X) * 10

    def route(self, X: Any, names: list[str]) -> int:
        return 1 if float(np.asarray(X).sum()) > 2 else 0

    def aggregate(self, Xs: list[Any], names: list[list[str]]) -> Any:
        return np.sum([np.asarray(x) for x in Xs], axis=0)
