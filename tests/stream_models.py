"""Models that answer in pieces, for the streaming tests (tests/server/v2/test_streaming.py, the gRPC
stream tests). Each reads its knobs from the request's parameters (``meta``): ``n``
pieces, ``delay`` seconds before each, ``size`` bytes per piece, ``fail_at`` (raise
before that piece). What a generator saw is written to the file named by
``STREAM_LOG`` (one line per event), so a test can check the model was stopped."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import numpy as np


def _log(event: str) -> None:
    path = os.environ.get("STREAM_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{event}\n")


def _knobs(meta: dict[str, Any] | None) -> tuple[int, float, int, int]:
    p = (meta or {}).get("parameters") or {}
    return (
        int(p.get("n", 5)),
        float(p.get("delay", 0.0)),
        int(p.get("size", 0)),
        int(p.get("fail_at", -1)),
    )


def _piece(i: int, size: int) -> dict[str, Any]:
    text = f"piece-{i}" if size == 0 else ("x" * size)
    return {"text": np.array([text.encode()], dtype=object), "index": np.array([i])}


class Tokens:
    """A plain generator: ``predict_stream`` with ``time.sleep`` between pieces."""

    def predict_stream(
        self, X: Any, names: list[str], meta: dict[str, Any] | None = None
    ) -> Iterator[Any]:
        n, delay, size, fail_at = _knobs(meta)
        _log(f"start {n}")
        sent = 0
        try:
            for i in range(n):
                if delay:
                    time.sleep(delay)
                if i == fail_at:
                    raise ValueError(f"the model failed at piece {i}")
                yield _piece(i, size)
                sent += 1
            _log(f"done {sent}")
        except GeneratorExit:
            _log(f"closed {sent}")
            raise


class AsyncTokens:
    """An async generator: ``await asyncio.sleep`` between pieces."""

    async def predict_stream(
        self, X: Any, names: list[str], meta: dict[str, Any] | None = None
    ) -> AsyncIterator[Any]:
        n, delay, size, fail_at = _knobs(meta)
        _log(f"start {n}")
        sent = 0
        try:
            for i in range(n):
                if delay:
                    await asyncio.sleep(delay)
                if i == fail_at:
                    raise ValueError(f"the model failed at piece {i}")
                yield _piece(i, size)
                sent += 1
            _log(f"done {sent}")
        except GeneratorExit:
            _log(f"closed {sent}")
            raise


class GeneratorPredict:
    """A Seldon-style class whose ``predict`` itself yields: streams piece by piece, and
    answers unstreamed requests with its pieces joined."""

    def predict(self, X: Any, names: list[str]) -> Iterator[Any]:
        for i in range(3):
            yield np.asarray(X) * (i + 1)


class Echo:
    """No streaming at all: a streamed request gets one piece, its answer."""

    def predict(self, X: Any, names: list[str]) -> Any:
        return X
