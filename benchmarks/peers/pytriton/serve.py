"""Starts PyTriton (Triton Inference Server driven from Python) serving the models named
by ``--models``: the Triton peer of the streaming benchmark (benchmarks/streaming.py,
model ``tokens``, the default) and of the unary workloads of issue 22 (``noop``,
``images``).

Run it with the virtualenv from ``install.sh``:

    .tools/peers/pytriton/bin/python benchmarks/peers/pytriton/serve.py \\
        --http-port 8000 --grpc-port 8001 [--models tokens] [--instances 1] [--sync] \\
        [--no-batching] [--max-batch-size 64] [--queue-delay-us 0] \\
        [--metrics [--metrics-port PORT]] [--token TOKEN] [--restricted ENDPOINTS]

Models (README.md has their tensors and what requests look like):

- ``tokens``: decoupled (streaming). It answers each request with ``pieces`` responses
  (256 unless the request's parameters say otherwise), each a BYTES output ``text``
  holding ``piece_bytes`` bytes (16), sleeping ``delay_s`` seconds (0.001) between two
  pieces; its input ``text_input`` (BYTES, shape [1]) is not read. The same work as inferwire's
  benchmarks/models/stream_tokens.py and MLServer's benchmarks/peers/mlserver/tokens.
  ``ModelConfig(decoupled=True, batching=False)``; an async generator (``--sync``: a
  plain generator with ``time.sleep``), so one instance serves many streams at once.
- ``noop``: the V2 echo: input ``input-0`` INT64 of any length, output ``output-0`` the
  same values.
- ``images``: seed 001's server (benchmarks/models/images.py:Seed001): optional inputs
  ``image`` (BYTES, the image's bytes), ``image_b64`` (BYTES, its base64 text, decoded
  here), ``field1``, ``field2`` (BYTES), ``field3`` (INT64), ``field4`` (BYTES, JSON text)
  for the "basic" request; outputs ``prediction1`` (FP64, [0.1, 0.2, 0.3]) and
  ``prediction2`` (BYTES, ``{"a": 1}``), whatever came in.
- ``fail``: raises ``ValueError`` on every request (the smoke test's failing model).

``noop``, ``images`` and ``fail`` use Triton's dynamic batcher unless ``--no-batching``
(``max_batch_size`` ``--max-batch-size``, no queue delay by default): requests then carry
a batch dimension first (``[1, 100000]``, ``[1, 1]``). Their callables are ``async def``
(``--sync``: plain functions). ``--instances`` model instances of each model (default 1).
Triton's HTTP and gRPC endpoints on 127.0.0.1 only; metrics off unless ``--metrics``
(then on 127.0.0.1:``--metrics-port``). PyTriton guards Triton's admin endpoints with a
token (``--token``, else a random one; ``--restricted`` names the endpoints).

PyTriton starts ``tritonserver`` as a child process, and Triton's Python backend starts
one stub process per model instance below it: measure this process's whole tree
(``--server-pid`` of this script) for the server's CPU.

When ``GET /v2/models/NAME/ready`` answers 200 for every model it prints
``READY http://127.0.0.1:PORT grpc 127.0.0.1:GPORT`` (with ``metrics
http://127.0.0.1:MPORT/metrics`` after it when metrics are on; PyTriton's and Triton's
logs go to stderr) and serves until SIGTERM or SIGINT, then stops Triton and its stubs.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import logging
import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import numpy as np
from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from pytriton.proxy.types import Request
from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

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


# ---------------------------------------------------------------- unary models
# With batching on, Triton hands over the requests it joined as a list, each with its own
# batch dimension; an echo answers each with its own arrays, so nothing is concatenated.


def noop_sync(requests: list[Request]) -> list[dict[str, np.ndarray]]:
    return [{"output-0": request["input-0"]} for request in requests]


async def noop(requests: list[Request]) -> list[dict[str, np.ndarray]]:
    return noop_sync(requests)


# Seed 001's answer (benchmarks/models/images.py: ANSWER) as V2 outputs.
PREDICTION1 = np.array([0.1, 0.2, 0.3], dtype=np.float64)
PREDICTION2 = np.array([b'{"a": 1}'], dtype=object)


def images_sync(requests: list[Request]) -> list[dict[str, np.ndarray]]:
    """The same small answer to every request; a base64 image is decoded first, as the
    seed's server does, with the same call as inferwire's and the other peers' image models
    (a bad padding is an error)."""
    out = []
    for request in requests:
        if "image_b64" in request:
            for text in np.ravel(request["image_b64"]):
                base64.b64decode(text)
        # With batching every input is [batch, 1], and so must the outputs be.
        first = request[next(iter(request))]
        batch = first.shape[:1] if first.ndim == 2 else ()
        out.append(
            {
                "prediction1": np.broadcast_to(PREDICTION1, batch + PREDICTION1.shape),
                "prediction2": np.broadcast_to(PREDICTION2, batch + PREDICTION2.shape),
            }
        )
    return out


async def images(requests: list[Request]) -> list[dict[str, np.ndarray]]:
    return images_sync(requests)


def fail_sync(requests: list[Request]) -> list[dict[str, np.ndarray]]:
    raise ValueError("the fail model fails on purpose")


async def fail(requests: list[Request]) -> list[dict[str, np.ndarray]]:
    return fail_sync(requests)


def unary_config(args: argparse.Namespace) -> ModelConfig:
    if not args.batching:
        return ModelConfig(batching=False)
    return ModelConfig(
        batching=True,
        max_batch_size=args.max_batch_size,
        batcher=DynamicBatcher(max_queue_delay_microseconds=args.queue_delay_us),
    )


def bind(triton: Triton, name: str, args: argparse.Namespace) -> None:
    """Binds model ``name`` with ``--instances`` copies of its callable."""
    n = args.instances
    if name == "tokens":
        triton.bind(
            model_name=name,
            infer_func=[tokens_sync if args.sync else tokens] * n,
            inputs=[Tensor(name="text_input", dtype=bytes, shape=(1,))],
            outputs=[Tensor(name="text", dtype=bytes, shape=(1,))],
            config=ModelConfig(decoupled=True, batching=False),
            strict=False,
        )
    elif name == "noop":
        triton.bind(
            model_name=name,
            infer_func=[noop_sync if args.sync else noop] * n,
            inputs=[Tensor(name="input-0", dtype=np.int64, shape=(-1,))],
            outputs=[Tensor(name="output-0", dtype=np.int64, shape=(-1,))],
            config=unary_config(args),
            strict=False,
        )
    elif name == "images":
        field = [
            Tensor(name="image", dtype=bytes, shape=(1,), optional=True),
            Tensor(name="image_b64", dtype=bytes, shape=(1,), optional=True),
            Tensor(name="field1", dtype=bytes, shape=(1,), optional=True),
            Tensor(name="field2", dtype=bytes, shape=(1,), optional=True),
            Tensor(name="field3", dtype=np.int64, shape=(1,), optional=True),
            Tensor(name="field4", dtype=bytes, shape=(1,), optional=True),
        ]
        triton.bind(
            model_name=name,
            infer_func=[images_sync if args.sync else images] * n,
            inputs=field,
            outputs=[
                Tensor(name="prediction1", dtype=np.float64, shape=(3,)),
                Tensor(name="prediction2", dtype=bytes, shape=(1,)),
            ],
            config=unary_config(args),
            strict=False,
        )
    elif name == "fail":
        triton.bind(
            model_name=name,
            infer_func=[fail_sync if args.sync else fail] * n,
            inputs=[Tensor(name="input-0", dtype=np.int64, shape=(-1,))],
            outputs=[Tensor(name="output-0", dtype=np.int64, shape=(-1,))],
            config=unary_config(args),
            strict=False,
        )
    else:
        raise SystemExit(f"unknown model {name!r}: tokens, noop, images or fail")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ready(url: str, token: str | None) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    headers = {"triton-access-token": token} if token else {}
    try:
        with opener.open(urllib.request.Request(url, headers=headers), timeout=2) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--http-port", type=int, default=8000)
    p.add_argument("--grpc-port", type=int, default=8001)
    p.add_argument(
        "--models",
        default="tokens",
        help="comma-separated: tokens (streaming), noop, images, fail (default: tokens)",
    )
    p.add_argument(
        "--instances", type=int, default=1, help="instances of each model (stub processes)"
    )
    p.add_argument(
        "--sync", action="store_true", help="plain functions (tokens: a generator, time.sleep)"
    )
    p.add_argument(
        "--no-batching",
        dest="batching",
        action="store_false",
        help="no dynamic batcher for noop/images/fail (requests then have no batch dimension)",
    )
    p.add_argument("--max-batch-size", type=int, default=64, help="requests per batch at most")
    p.add_argument(
        "--queue-delay-us", type=int, default=0, help="the batcher's max_queue_delay_microseconds"
    )
    p.add_argument(
        "--token",
        help="requests to the --restricted endpoints need the header (gRPC: metadata) "
        "triton-access-token: TOKEN (default: a random token PyTriton makes up)",
    )
    p.add_argument(
        "--restricted",
        default="shared-memory,model-repository,statistics,trace,logging",
        help="the endpoints --token guards (PyTriton's default set here; add inference, "
        "metadata, health to guard those)",
    )
    p.add_argument("--metrics", action="store_true", help="Triton's Prometheus metrics on")
    p.add_argument("--metrics-port", type=int, default=0, help="with --metrics (0: a free one)")
    p.add_argument("--ready-timeout", type=float, default=120.0)
    p.add_argument("--verbose", action="store_true", help="PyTriton's INFO log")
    args = p.parse_args()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
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
        allow_metrics=args.metrics,
        log_verbose=0,
    )
    # PyTriton passes Triton --http-restricted-api / --grpc-restricted-protocol itself
    # (TritonConfig's own fields for them are overwritten), from this.
    security = TritonSecurityConfig(
        access_token=args.token, restricted_endpoints=args.restricted.split(",")
    )
    metrics_port = args.metrics_port or free_port()
    if args.metrics:
        # No GPU here; the CPU/memory gauges keep Triton's 2 s poll.
        config.metrics_address = "127.0.0.1"
        config.metrics_port = metrics_port
        config.allow_gpu_metrics = False
    started = time.monotonic()
    url = f"http://127.0.0.1:{args.http_port}"
    with Triton(config=config, security_config=security) as triton:
        for name in models:
            bind(triton, name, args)
        triton.run()
        deadline = started + args.ready_timeout
        while not all(
            ready(f"{url}/v2/models/{name}/ready", security.access_token) for name in models
        ):
            if stopping.is_set():
                return 0
            if time.monotonic() > deadline or not triton.is_alive():
                print(f"not ready within {args.ready_timeout:.0f} s", file=sys.stderr)
                return 1
            time.sleep(0.1)
        print(f"started in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
        line = f"READY {url} grpc 127.0.0.1:{args.grpc_port}"
        if args.metrics:
            line += f" metrics http://127.0.0.1:{metrics_port}/metrics"
        print(line, file=ready_line, flush=True)
        # Wakes up now and then to notice a Triton that died by itself.
        while not stopping.wait(1.0):
            if not triton.is_alive():
                print("tritonserver is gone", file=sys.stderr)
                return 1
        print("stopping", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
