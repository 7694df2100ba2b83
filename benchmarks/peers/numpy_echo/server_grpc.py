"""The gRPC server of seed 003's numpy echo benchmark: grpcio, synchronous, a thread pool.

    .tools/peers/numpy-echo/bin/python benchmarks/peers/numpy_echo/server_grpc.py \\
        [--port 50051] [--workers 10]

Serves ``numpy_echo.NumpyEcho`` (``echo.proto``) on 127.0.0.1 (port from ``--port``, else
the ``GRPC_PORT`` environment variable, else 50051) with a ``ThreadPoolExecutor`` of 10
threads and message limits raised from 4 MiB to 64 MiB each way (the seed's largest
array is 64 KiB; the raised limit lets larger ones through). ``Echo(Array)`` decodes the
array into numpy (``numpy.frombuffer(buffer, dtype).reshape(shape)``) and answers it
encoded again (``tobytes()``, ``dtype.str``, ``shape``); an array that does not decode is
answered ``INVALID_ARGUMENT``.

The generated modules (``echo_pb2``, ``echo_pb2_grpc``) are in the virtualenv's ``gen/``
folder, where ``install.sh`` puts them (``--gen`` names another). SIGTERM or SIGINT stops
the server, giving calls in flight one second.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import numpy as np

MAX_MESSAGE = 64 * 1024 * 1024
OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.max_receive_message_length", MAX_MESSAGE),
]
DEFAULT_GEN = Path(sys.prefix) / "gen"


def load_generated(gen: Path = DEFAULT_GEN) -> tuple[Any, Any]:
    """``echo_pb2`` and ``echo_pb2_grpc`` from ``gen`` (typed Any: generated code)."""
    if not (gen / "echo_pb2_grpc.py").is_file():
        raise SystemExit(f"no generated gRPC modules in {gen}: run install.sh first")
    if str(gen) not in sys.path:
        sys.path.insert(0, str(gen))
    return importlib.import_module("echo_pb2"), importlib.import_module("echo_pb2_grpc")


class NumpyEcho:
    """The one method; grpcio calls it from its thread pool."""

    def __init__(self, pb2: Any) -> None:
        self.array = pb2.Array

    def Echo(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            arr = np.frombuffer(request.buffer, dtype=request.dtype).reshape(tuple(request.shape))
        except (ValueError, TypeError) as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{type(e).__name__}: {e}")
        return self.array(buffer=arr.tobytes(), dtype=arr.dtype.str, shape=arr.shape)


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--port", type=int, default=int(os.environ.get("GRPC_PORT", "50051")))
    p.add_argument("--workers", type=int, default=10, help="threads of the pool")
    p.add_argument("--gen", type=Path, default=DEFAULT_GEN, help="the generated modules")
    args = p.parse_args()
    pb2, pb2_grpc = load_generated(args.gen)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=args.workers), options=OPTIONS)
    pb2_grpc.add_NumpyEchoServicer_to_server(NumpyEcho(pb2), server)
    address = f"127.0.0.1:{args.port}"
    if server.add_insecure_port(address) == 0:
        raise SystemExit(f"cannot listen on {address}")
    server.start()

    stopping = threading.Event()

    def on_signal(_signum: int, _frame: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    stopping.wait()
    server.stop(grace=1.0).wait()


if __name__ == "__main__":
    main()
