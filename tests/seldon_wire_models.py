"""Models for test_seldon_wire.py, written as for seldon-core 1.x's wrapper."""

from __future__ import annotations

from typing import Any

import numpy as np
from inferwire.seldon import SeldonResponse


class Kinds:
    """Answers with the kind of value the request names in its tags' `answer`."""

    def tags(self) -> dict[str, Any]:
        return {"static": "s", "shared": "from tags()"}

    def metrics(self) -> list[dict[str, Any]]:
        return [{"type": "COUNTER", "key": "kinds_calls", "value": 1}]

    def predict(self, X: Any, names: list[str], meta: dict[str, Any] | None = None) -> Any:
        # Seldon requests carry it in meta.tags, V2 ones in parameters.
        given = (meta or {}).get("tags") or (meta or {}).get("parameters") or {}
        answer = given.get("answer", "describe")
        if answer == "strings":
            return np.array([["a", "b"]])
        if answer == "flags":
            return np.array([[True, False]])
        if answer == "runtime":
            return SeldonResponse(
                np.array([[1.0, 2.0]]),
                tags={"shared": "from the response", "runtime": 1},
                metrics=[{"type": "GAUGE", "key": "kinds_runtime", "value": 3}],
            )
        if answer == "echo":
            return X
        if answer == "array":
            return np.array([[1.0, 2.0]])
        if isinstance(X, (bytes, bytearray)):
            return {"bytes": len(X), "first": X[:1].decode("latin-1")}
        return {"text": X}


class RawStatus:
    """predict_raw answering with a `status` whose code the wrapper makes the HTTP status."""

    def predict_raw(self, request: dict[str, Any]) -> Any:
        code = request.get("jsonData", {}).get("code", 200)
        return {"status": {"code": code, "info": "as asked", "status": "FAILURE"}, "jsonData": {}}


class WithMetadata:
    def init_metadata(self) -> dict[str, Any]:
        return {"versions": ["v2"], "inputs": [{"messagetype": "ndarray"}]}

    def predict(self, X: Any, names: list[str]) -> Any:
        return X


class BadMetadata(WithMetadata):
    def init_metadata(self) -> dict[str, Any]:
        return {"inputs": [{"messagetype": "tensor", "schema": {"colour": "red"}}]}


class RawMetrics:
    """predict_raw answering a message with its own meta.metrics, which Seldon counts."""

    def predict_raw(self, msg: dict[str, Any]) -> dict[str, Any]:
        return {
            "data": {"ndarray": [[1]]},
            "meta": {
                "metrics": [
                    {"key": "raw_gauge", "type": "GAUGE", "value": 5},
                    {"key": "raw_calls", "type": "COUNTER", "value": 1},
                ]
            },
        }
