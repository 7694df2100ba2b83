"""Seed 001's server as an inferwire model: every request kind (the structured "basic"
request, a base64 image, a binary image) gets the same small structured answer, and a
base64 image is decoded first, as the seed's FastAPI server must. The peer servers in
benchmarks/peers/fastapi_images do the same work.

    inferwire serve benchmarks/models/images.py:Seed001
"""

from __future__ import annotations

import base64
from typing import Any

ANSWER = {"prediction1": [0.1, 0.2, 0.3], "prediction2": {"a": 1}}


class Seed001:
    def predict(self, X: Any, features_names: Any = None, **kwargs: Any) -> dict[str, Any]:
        if isinstance(X, dict) and "image" in X:
            base64.b64decode(X["image"])
        return ANSWER
