"""A Seldon-style model: the same class runs under the Seldon Python wrapper and inferwire."""

from __future__ import annotations

from typing import Any

import numpy as np


class IrisLikeClassifier:
    """Scores rows of 4 features into 3 class probabilities with a fixed linear model."""

    class_names = ["setosa", "versicolor", "virginica"]

    def __init__(self, temperature: float = 1.0) -> None:
        self.temperature = temperature
        self.weights: np.ndarray | None = None

    def load(self) -> None:
        # Stands in for reading a trained model from disk, once, before serving.
        self.weights = np.array(
            [[0.4, -0.1, -0.3], [0.9, -0.2, -0.7], [-1.5, 0.2, 1.3], [-0.8, 0.1, 0.9]]
        )

    def predict(self, X: np.ndarray, features_names: list[str] | None = None) -> np.ndarray:
        assert self.weights is not None
        logits = np.atleast_2d(np.asarray(X, dtype=np.float64)) @ self.weights / self.temperature
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def tags(self) -> dict[str, Any]:
        return {"model": "iris-like", "version": "1"}
