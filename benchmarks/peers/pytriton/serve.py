"""Starts PyTriton (Triton Inference Server driven from Python) serving a decoupled
streaming model named ``tokens``: the Triton peer of the streaming benchmark
(benchmarks/streaming.py).

Run it with the virtualenv from ``install.sh``:

    .tools/peers/pytriton/bin/python benchmarks/peers/pytriton/serve.py \\
        --http-port 8000 --grpc-port 8001 [--instances 1] [--sync]

The model answers each request with ``pieces`` responses (256 unless the request's
parameters say otherwise), each a BYTES output ``text`` holding ``piece_bytes`` bytes
(16), sleeping ``delay_s`` seconds (0.001) between two pieces; its input ``text_input``
(BYTES, shape [1]) is not read. It is the same work as inferwire's
benchmarks/models/stream_tokens.py and MLServer's benchmarks/peers/mlserver/tokens.

Settings (README.md says why): ``ModelConfig(decoupled=True, batching=False)``; the
inference callable is an async generator (``--sync``: a plain generator with
``time.sleep``), so one model instance serves many streams at once on one event loop;
``--instances`` model instances (default 1); Triton's HTTP and gRPC endpoints on
127.0.0.1 only, metrics off. PyTriton starts ``tritonserver`` as a child process, and
Triton's Python backend starts one stub process per model instance below it: measure
this process's whole tree (``--server-pid`` of this script) for the server's CPU.

When ``GET /v2/models/tokens/ready`` answers 200 it prints
``READY http://127.0.0.1:PORT grpc 127.0.0.1:GPORT`` (PyTriton's and Triton's logs go to
stderr) and serves until SIGTERM or SIGINT, then stops Triton and its stubs.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import numpy as np
from pytriton.model_config import ModelConfig, Tensor
from pytriton.proxy.types import Request
from pytriton.triton import Triton, TritonConfig

MODEL = "tokens"
PATTERN = b"0123456789abcdef"
DEFAULTS: dict[str, int | float] = {"pieces": 256, "piece_bytes": 16, "delay_s": 0.001}
LIMITS: dict[str, int | float] = {"pieces": 100_000, "piece_bytes": 1 << 20, "delay_s": 10.0}


def settings(request: Request) -> tuple[int, np.ndarray, float]:
    """(pieces, the piece as a BYTES output, delay) from the request's parameters, else
    the defaults; bounded, so that one request cannot hold the server for long."""
    given = request.parameters or {}
    got: dict[str, int | float] = {}
    for name, default in DEFAULTS.items():
        value = type(default)(given.get(name, default))
        if not 0 <= value <= LIMITS[name]:
            raise ValueError(f"parameter {name} must be within 0..{LIMITS[name]}, not {value}")
        got[name] = value
    size = int(got["piece_bytes"])
    piece = (PATTERN * (size // len(PATTERN) + 1))[:size]
    return int(got["pieces"]), np.array([piece], dtype=object), float(got["delay_s"])


async def tokens(requests: list[Request]) -> AsyncIterator[list[dict[str, np.ndarray]]]:
    """Decoupled: every yield is one response per request. Without batching Triton hands
    over one request at a time."""
    (request,) = requests
    pieces, piece, delay = settings(request)
    for i in range(pieces):
        if i:
            await asyncio.sleep(delay)
        yield [{"text": piece}]


def tokens_sync(requests: list[Request]) -> Iterator[list[dict[str, np.ndarray]]]:
    """The same as a plain generator: a sleeping generator holds its instance's thread."""
    (request,) = requests
    pieces, piece, delay = settings(request)
    for i in range(pieces):
        if i:
            time.sleep(delay)
        yield [{"text": piece}]


def ready(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=2) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--http-port", type=int, default=8000)
    p.add_argument("--grpc-port", type=int, default=8001)
    p.add_argument("--instances", type=int, default=1, help="model instances (stub processes)")
    p.add_argument("--sync", action="store_true", help="a plain generator with time.sleep")
    p.add_argument("--ready-timeout", type=float, default=120.0)
    p.add_argument("--verbose", action="store_true", help="PyTriton's INFO log")
    args = p.parse_args()
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )

    # tritonserver inherits stdout and logs there: stdout is for the READY line only, so
    # it keeps a copy of stdout and gives everything else (fd 1) stderr.
    sys.stdout.flush()
    ready_line = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    stopping = threading.Event()

    def on_signal(_signum: int, _frame: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    config = TritonConfig(
        http_address="127.0.0.1",
        http_port=args.http_port,
        grpc_address="127.0.0.1",
        grpc_port=args.grpc_port,
        allow_metrics=False,
        log_verbose=0,
    )
    started = time.monotonic()
    url = f"http://127.0.0.1:{args.http_port}"
    with Triton(config=config) as triton:
        infer = tokens_sync if args.sync else tokens
        triton.bind(
            model_name=MODEL,
            infer_func=[infer] * args.instances,
            inputs=[Tensor(name="text_input", dtype=bytes, shape=(1,))],
            outputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
            config=ModelConfig(decoupled=True, batching=False),
            strict=False,
        )
        triton.run()
        deadline = started + args.ready_timeout
        while not ready(f"{url}/v2/models/{MODEL}/ready"):
            if stopping.is_set():
                return 0
            if time.monotonic() > deadline or not triton.is_alive():
                print(f"not ready within {args.ready_timeout:.0f} s", file=sys.stderr)
                return 1
            time.sleep(0.1)
        print(f"started in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
        print(f"READY {url} grpc 127.0.0.1:{args.grpc_port}", file=ready_line, flush=True)
        # Wakes up now and then to notice a Triton that died by itself.
        while not stopping.wait(1.0):
            if not triton.is_alive():
                print("tritonserver is gone", file=sys.stderr)
                return 1
        print("stopping", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
