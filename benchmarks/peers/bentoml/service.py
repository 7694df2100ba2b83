"""The BentoML peer's service: the same no-op / echo model as the other peers, and the
seed 001 image requests, as one ``@bentoml.service`` class (``Echo``).

Served by serve.py (``bentoml serve service:Echo`` in this folder); the settings come as
BentoML's template arguments (``bentoml serve --arg workers=2 ...``, read with
``bentoml.use_arguments``), so serve.py changes them without editing this file.

Routes (all ``POST``, JSON unless said otherwise; the answer is JSON):

- ``/echo`` ``{"data": [INT64, ...]}`` -> the same list: the small request (one element)
  and the 100,000-element echo. The elements are checked as strict integers within INT64.
- ``/echo_ndarray`` ``{"data": [...]}``: the same through BentoML's numpy type (the list
  becomes an ``int64`` array and goes back to a list).
- ``/echo_batched``: ``/echo`` through BentoML's adaptive batching (``batchable=True``):
  requests that arrive together are joined into one list, the method sees it once, and each
  request gets its own slice back.
- ``/basic``, ``/base64`` ``{"image": "<base64>"}``, ``/binary`` (the raw body: the
  image's bytes, any content type), ``/upload`` (multipart/form-data, file field
  ``image``): seed 001's requests; each answers ``{"prediction1": [0.1, 0.2, 0.3],
  "prediction2": {"a": 1}}``. The image is never decoded (as in the seed); the base64 text
  is, and bad base64 or an empty image is a 400.
- ``/pieces`` ``{"n": 3}``: a streamed answer (``text/plain``, one 16-byte piece per
  yield), to check that BentoML streams.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Annotated, Any, Literal

import bentoml
import numpy as np
from bentoml.exceptions import InvalidArgument
from bentoml.validators import DType
from pydantic import BaseModel, Field

INT64 = Annotated[int, Field(strict=True, ge=-(2**63), le=2**63 - 1)]
ANSWER: dict[str, Any] = {"prediction1": [0.1, 0.2, 0.3], "prediction2": {"a": 1}}
PIECE = "0123456789abcdef"


class Args(BaseModel):
    """serve.py's settings (``bentoml serve --arg NAME=VALUE``)."""

    # Worker processes; BentoML's docs advise one per core for CPU work ("cpu_count").
    workers: int | Literal["cpu_count"] = "cpu_count"
    # /echo_batched's adaptive batching: BentoML's defaults are 100 and 60,000 ms.
    max_batch_size: int = 100
    max_latency_ms: int = 60_000
    # Per-request limit in seconds (BentoML's default: 60).
    timeout: float = 60.0


ARGS = bentoml.use_arguments(Args)


def b64decode(text: str) -> bytes:
    # The same decode as inferwire's Seed001 and LitServe's peer (strict mode costs about
    # 1.7x the time on a 3 MB image), so that the servers do the same work.
    try:
        return base64.b64decode(text)
    except binascii.Error as e:
        raise InvalidArgument(f"image: not base64 ({e})") from None


@bentoml.service(
    workers=ARGS.workers,
    traffic={"timeout": ARGS.timeout},
    # No per-request access log line: the other peers log no requests either.
    logging={"access": {"enabled": False}},
)
class Echo:
    # async: the method runs on the worker's event loop. A plain ``def`` would run in a
    # thread pool of ``threads`` (default 1) threads, one request at a time per worker.
    @bentoml.api
    async def echo(self, data: list[INT64]) -> list[int]:
        return data

    @bentoml.api
    async def echo_ndarray(
        self, data: Annotated[np.ndarray, DType("int64")]
    ) -> Annotated[np.ndarray, DType("int64")]:
        return data

    @bentoml.api(
        batchable=True,
        batch_dim=0,
        max_batch_size=ARGS.max_batch_size,
        max_latency_ms=ARGS.max_latency_ms,
    )
    async def echo_batched(self, data: list[INT64]) -> list[int]:
        return data

    @bentoml.api
    async def basic(
        self, field1: str, field2: str, field3: int, field4: dict[str, int]
    ) -> dict[str, Any]:
        return ANSWER

    @bentoml.api
    async def base64(self, image: str) -> dict[str, Any]:
        if not b64decode(image):
            raise InvalidArgument("image: empty")
        return ANSWER

    # A positional-only parameter is BentoML's "root input": the whole body, no JSON key.
    @bentoml.api
    async def binary(self, image: bytes, /) -> dict[str, Any]:
        if not image:
            raise InvalidArgument("image: empty body")
        return ANSWER

    # A Path parameter is a file: BentoML takes it as multipart/form-data and writes it
    # to a temporary file before the method runs.
    @bentoml.api
    async def upload(self, image: Path) -> dict[str, Any]:
        if image.stat().st_size == 0:
            raise InvalidArgument("image: empty file")
        return ANSWER

    @bentoml.api
    async def pieces(
        self, n: Annotated[int, Field(ge=0, le=10_000)] = 3
    ) -> AsyncGenerator[str, None]:
        for i in range(n):
            if i:
                await asyncio.sleep(0.001)
            yield PIECE
