"""The streaming benchmark's model (benchmarks/streaming.py), as inferwire serves it:
``inferwire serve benchmarks/models/stream_tokens.py:Tokens``.

Each request is answered with ``pieces`` pieces (256), each the output ``text``: one
BYTES element of ``piece_bytes`` bytes (16: ``0123456789abcdef``), with a sleep of
``delay_s`` seconds (0.001) between two pieces. The request's parameters (V2
``"parameters": {...}``) may change the three, within bounds; its inputs are not read.
The peers do the same work: MLServer's benchmarks/peers/mlserver/tokens and PyTriton's
benchmarks/peers/pytriton/serve.py.

``Tokens`` is an async generator (``await asyncio.sleep``: many streams share one event
loop); ``TokensSync`` is a plain generator (``time.sleep``), for the server to run off its
event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import numpy as np

PATTERN = b"0123456789abcdef"
DEFAULTS: dict[str, int | float] = {"pieces": 256, "piece_bytes": 16, "delay_s": 0.001}
LIMITS: dict[str, int | float] = {"pieces": 100_000, "piece_bytes": 1 << 20, "delay_s": 10.0}


def settings(meta: dict[str, Any] | None) -> tuple[int, dict[str, np.ndarray], float]:
    """(pieces, one piece's outputs, delay) from the request's parameters, else the
    defaults; a value out of bounds is an error naming the parameter."""
    given = (meta or {}).get("parameters") or {}
    got: dict[str, int | float] = {}
    for name, default in DEFAULTS.items():
        value = type(default)(given.get(name, default))
        if not 0 <= value <= LIMITS[name]:
            raise ValueError(f"parameter {name} must be within 0..{LIMITS[name]}, not {value}")
        got[name] = value
    size = int(got["piece_bytes"])
    piece = (PATTERN * (size // len(PATTERN) + 1))[:size]
    return int(got["pieces"]), {"text": np.array([piece], dtype=object)}, float(got["delay_s"])


class Tokens:
    async def predict_stream(
        self, X: Any, names: Any, meta: dict[str, Any] | None = None
    ) -> AsyncIterator[dict[str, np.ndarray]]:
        pieces, piece, delay = settings(meta)
        for i in range(pieces):
            if i:
                await asyncio.sleep(delay)
            yield piece


class TokensSync:
    def predict_stream(
        self, X: Any, names: Any, meta: dict[str, Any] | None = None
    ) -> Iterator[dict[str, np.ndarray]]:
        pieces, piece, delay = settings(meta)
        for i in range(pieces):
            if i:
                time.sleep(delay)
            yield piece
