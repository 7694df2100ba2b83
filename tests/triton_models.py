"""Models for the Triton extension tests: one that describes its tensors in
``init_metadata`` (as the model configuration reports them) and fails on request."""

from __future__ import annotations

from typing import Any

import numpy as np


class Described:
    """Returns ``X + 1``; raises on a negative value."""

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        X = np.asarray(X)
        if (X < 0).any():
            raise ValueError("negative values are not allowed")
        return X + 1

    def init_metadata(self) -> dict[str, Any]:
        return {
            "platform": "sklearn",
            "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}],
            "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1, 4]}],
        }


class AddPid:
    """Returns ``X + pid`` (FP64): which worker process answered (the shared-memory test
    with several workers)."""

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        import os

        return np.asarray(X, dtype=np.float64) + os.getpid()
