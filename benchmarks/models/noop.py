"""The notebook's no-op models (seldontest_predict and seldontest_predict_raw): the same
classes run under inferwire and under the Seldon Python wrapper."""

from __future__ import annotations

from typing import Any

import numpy as np


class NoopPredict:
    """``predict`` that ignores its input: the reply is ``[1]`` in the request's encoding."""

    def predict(self, X: Any, features_names: Any = None, **kwargs: Any) -> Any:
        return np.array([1])


class NoopPredictRaw:
    """``predict_raw`` that ignores its input and returns ``[1]``."""

    def predict_raw(self, request: Any) -> Any:
        if isinstance(request, dict):
            return [1]
        # The Seldon wrapper hands gRPC requests over as protobuf and needs one back.
        from seldon_core.proto import prediction_pb2

        reply = prediction_pb2.SeldonMessage()
        reply.jsonData.list_value.values.add().number_value = 1
        return reply
