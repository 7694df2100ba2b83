"""A streaming MLServer runtime: the peer model for the streaming benchmark
(benchmarks/streaming.py), the same work as inferwire's benchmarks/models/stream_tokens.py.

``predict_stream`` answers the first request of the stream with ``pieces`` responses (256
unless the request's parameters say otherwise), each one BYTES output ``text`` holding
``piece_bytes`` bytes (16), sleeping ``delay_s`` seconds (0.001) between two pieces. The
request's inputs are not read. ``predict`` answers the pieces joined into one output, so
``/infer`` works too.

MLServer 1.7.1 streams only from a model in the server's own process: with
``parallel_workers`` >= 1 the worker pool's model has no ``predict_stream`` of its own and
MLServer's default answers one ``predict`` instead, hence ``parallel_workers: 0`` in this
folder's settings.json.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from mlserver import MLModel
from mlserver.types import InferenceRequest, InferenceResponse, ResponseOutput

PATTERN = b"0123456789abcdef"
DEFAULTS = {"pieces": 256, "piece_bytes": 16, "delay_s": 0.001}
LIMITS = {"pieces": 100_000, "piece_bytes": 1 << 20, "delay_s": 10.0}


def settings(payload: InferenceRequest) -> tuple[int, bytes, float]:
    """(pieces, one piece's bytes, delay) from the request's parameters, else defaults;
    bounded, so that a request cannot hold the server for long."""
    given: dict[str, Any] = payload.parameters.model_dump() if payload.parameters else {}
    got = {}
    for name, default in DEFAULTS.items():
        value = type(default)(given.get(name, default))
        if not 0 <= value <= LIMITS[name]:
            raise ValueError(f"parameter {name} must be within 0..{LIMITS[name]}, not {value}")
        got[name] = value
    size = int(got["piece_bytes"])
    piece = (PATTERN * (size // len(PATTERN) + 1))[:size]
    return int(got["pieces"]), piece, float(got["delay_s"])


class TokensRuntime(MLModel):
    async def load(self) -> bool:
        return True

    def piece(self, payload: InferenceRequest, data: bytes) -> InferenceResponse:
        return InferenceResponse(
            model_name=self.name,
            id=payload.id,
            outputs=[ResponseOutput(name="text", shape=[1], datatype="BYTES", data=[data])],
        )

    async def predict_stream(
        self, payloads: AsyncIterator[InferenceRequest]
    ) -> AsyncIterator[InferenceResponse]:
        payload = await payloads.__anext__()  # one request per stream, as over REST
        pieces, piece, delay = settings(payload)
        for i in range(pieces):
            if i:
                await asyncio.sleep(delay)
            yield self.piece(payload, piece)

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        pieces, piece, _ = settings(payload)
        return self.piece(payload, piece * pieces)
