"""The notebook's two no-op models (images seldontest_predict and seldontest_predict_raw),
as inferwire serves them: ``inferwire serve benchmarks/models/noop.py:NoopPredict``.

The Seldon wrapper runs the same classes from ``benchmarks/seldon_wrapper/noop.py``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np


class NoopPredict:
    """``predict`` ignores its input and returns ``[1]``, which the server encodes in the
    request's encoding: ``{"data":{"names":[],"ndarray":[1]},"meta":{...}}``."""

    def predict(self, X: Any, features_names: Any = None, **kwargs: Any) -> np.ndarray:
        return np.array([1])


class NoopPredictRaw:
    """``predict_raw`` ignores the request and returns ``[1]`` (the JSON ``[1]`` over
    REST, as in the notebook's smoke test)."""

    def predict_raw(self, request: Any) -> list[int]:
        return [1]


class Sleep5ms:
    """Sleeps 5 ms (releasing the GIL) and returns ``[1]``: a service slow enough that a
    load tool's own overhead barely changes the latency it reports, so that two tools'
    figures for it can be compared (``benchmarks/generator_overhead.py``)."""

    def predict(self, X: Any, features_names: Any = None, **kwargs: Any) -> np.ndarray:
        time.sleep(0.005)
        return np.array([1])


class Echo:
    """Returns its input unchanged: the V2 no-op (MLServer's peer runtime in
    benchmarks/peers/mlserver/noop echoes its first input the same way)."""

    def predict(self, X: Any, features_names: Any = None) -> Any:
        return X


class SleepFor:
    """Sleeps as many seconds as ``strData`` says, then answers them back: a model that
    hangs on demand, for the fault runs in ``benchmarks/reliability.py``."""

    def predict(self, X: Any, features_names: Any = None, **kwargs: Any) -> Any:
        time.sleep(float(X))
        return X
