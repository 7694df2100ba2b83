"""Kyphosis-like rows for the tree-model benchmark and tests: Age in months, Number of
vertebrae, Start vertebra; labelled absent / present (with a tenth of noise)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def kyphosis(n: int = 400, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "Age": rng.integers(1, 206, n),
            "Number": rng.integers(2, 11, n),
            "Start": rng.integers(1, 19, n),
        }
    ).astype(float)
    present = ((df.Start < 9) & (df.Number > 4)) | (rng.random(n) < 0.1)
    return df, np.where(present, "present", "absent")
