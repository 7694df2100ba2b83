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

import sys
from pathlib import Path
from typing import Any

import grpc
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import pair  # noqa: E402


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
    pair.grpc_main(
        __doc__ or "",
        "echo",
        lambda pb2, pb2_grpc, server: pb2_grpc.add_NumpyEchoServicer_to_server(
            NumpyEcho(pb2), server
        ),
    )


if __name__ == "__main__":
    main()
