"""The notebook's two no-op models (images seldontest_predict and seldontest_predict_raw)
for the Seldon Python wrapper: ``seldon-core-microservice noop.NoopPredict`` with this
folder on the Python path.

inferwire runs the equivalent classes in ``benchmarks/models/noop.py``; the only
difference is that the wrapper hands ``predict_raw`` a protobuf ``SeldonMessage`` for gRPC
requests and sends back whatever it returns, so it must return a ``SeldonMessage`` there.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class NoopPredict:
    """``predict`` ignores its input and returns ``[1]``; the wrapper encodes the reply in
    the request's encoding (``{"data":{"names":[],"ndarray":[1]}, ...}``)."""

    def predict(self, X: Any, features_names: Any = None, **kwargs: Any) -> np.ndarray:
        return np.array([1])


class NoopPredictRaw:
    """``predict_raw`` ignores its input and returns ``[1]``: the JSON ``[1]`` over REST
    (as the notebook's smoke test shows), a ``SeldonMessage`` whose ``jsonData`` is
    ``[1]`` over gRPC.

    Over gRPC the wrapper reads ``reply.meta`` (custom metrics) and then serializes the
    reply as a ``SeldonMessage``: a list or a dict fails there with an AttributeError.
    """

    def predict_raw(self, request: Any) -> Any:
        if isinstance(request, dict):
            return [1]
        return _one_as_seldon_message()


def _one_as_seldon_message() -> Any:
    from seldon_core.proto import prediction_pb2

    reply = prediction_pb2.SeldonMessage()
    reply.jsonData.list_value.values.add().number_value = 1
    return reply
