"""Models for the runtime benchmarks (benchmarks/runtime.py): one that costs real CPU per
call and per row, and one that holds a large array (memory shared by forked workers)."""

from __future__ import annotations

from typing import Any

import numpy as np


class NoopRows:
    """The no-op model, batchable: returns ``1`` for every input row (Ray Serve's no-op
    backend, which answers each request of a batch)."""

    def predict(self, X: Any, features_names: Any = None) -> np.ndarray:
        return np.ones(len(X))


class Scorer:
    """A small two-layer network behind Python-level feature steps, as a scikit-learn
    pipeline is: a fixed cost per call (about 0.3 ms of numpy calls on small arrays)
    plus a cost per row (two matrix products). Batching amortises the fixed part."""

    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        self.w1 = rng.standard_normal((64, 256)).astype(np.float32)
        self.w2 = rng.standard_normal((256, 4)).astype(np.float32)
        self.scale = rng.uniform(0.5, 1.5, 64).astype(np.float32)

    def predict(self, X: Any, features_names: Any = None) -> np.ndarray:
        x = np.asarray(X, dtype=np.float32)
        for _ in range(60):  # the pipeline's steps: cheap each, but one call each
            x = np.clip(x * self.scale, -10.0, 10.0)
        h = np.maximum(x @ self.w1, 0.0)
        return h @ self.w2


class Big:
    """Holds 256 MiB of weights, built before the workers are forked."""

    def __init__(self) -> None:
        self.weights = np.ones(64 * 1024 * 1024, dtype=np.float32)

    def predict(self, X: Any, features_names: Any = None) -> np.ndarray:
        return np.asarray(X) * float(self.weights[0])
