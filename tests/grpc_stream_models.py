"""Models the gRPC ModelStreamInfer tests serve (tests/server/v2/test_grpc_stream.py)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np


class SleepEcho:
    """Sleeps as many seconds as its input's first element says, then answers the input
    back as ``y``: a request that is still running when its call is cancelled."""

    def predict(self, X: Any, features_names: list[str] | None = None) -> Any:
        a = np.asarray(X)
        if a.size and a.ravel()[0] < 0:
            raise ValueError("negative values are refused by this model")
        time.sleep(float(a.ravel()[0]) if a.size else 0.0)
        return {"y": a}
