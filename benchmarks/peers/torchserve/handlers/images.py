"""TorchServe handler ``images``: seed 001's server (benchmarks/models/images.py:Seed001).
Every request kind, the structured "basic" JSON, ``{"image": "<base64>"}`` (decoded) and a
raw JPEG body, gets the same small answer; the image itself is not decoded, as in the
seed."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

ANSWER = json.dumps({"prediction1": [0.1, 0.2, 0.3], "prediction2": {"a": 1}}).encode()


class Images:
    def initialize(self, context: Any) -> None:
        self.initialized = True

    def handle(self, data: list[dict[str, Any]], context: Any) -> list[Any]:
        out: list[Any] = []
        for i, row in enumerate(data):
            body = row.get("data", row.get("body"))
            if isinstance(body, dict) and "image" in body:
                try:
                    base64.b64decode(body["image"])
                except (binascii.Error, TypeError) as e:
                    raise ValueError(f'"image" is not base64: {e}') from None
            elif not isinstance(body, (dict, bytes, bytearray)):
                raise ValueError(f"unexpected body: {type(body).__name__}")
            context.set_response_content_type(i, "application/json")
            out.append(ANSWER)
        return out
