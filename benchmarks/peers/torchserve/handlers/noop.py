"""TorchServe handler ``noop``: the echo every peer serves. A JSON body ``{"data": [...]}``
is answered with the list (``[7]`` for ``{"data": [7]}``); any other body (bytes) with the
same bytes. TorchServe hands ``handle`` a batch: one dict per request, the body under
"body" (REST) or under the input's name (gRPC, "data" here); a JSON body arrives already
parsed (TorchServe's backend decodes ``application/json``)."""

from __future__ import annotations

import json
from typing import Any


class Noop:
    def initialize(self, context: Any) -> None:
        self.initialized = True

    def handle(self, data: list[dict[str, Any]], context: Any) -> list[Any]:
        out: list[Any] = []
        for i, row in enumerate(data):
            body = row.get("data", row.get("body"))
            if isinstance(body, dict):
                if "data" not in body:
                    raise ValueError('a JSON body must be {"data": [...]}')
                # Written here, compactly: TorchServe's own encoder indents (2 spaces).
                context.set_response_content_type(i, "application/json")
                out.append(json.dumps(body["data"], separators=(",", ":")).encode())
            elif isinstance(body, (bytes, bytearray)):
                context.set_response_content_type(i, "application/octet-stream")
                out.append(bytes(body))
            else:
                raise ValueError(f"unexpected body: {type(body).__name__}")
        return out
