"""What the seed-001 and seed-003 peers' serve.py share: a REST server and a gRPC server
started side by side, each in a process group of its own, on 127.0.0.1, on the given
ports or, where left out (or 0), on free ones. It waits until the REST server answers a
probe with 200 and the gRPC server accepts a channel, prints
``READY http://127.0.0.1:PORT grpc 127.0.0.1:GPORT`` and serves until SIGTERM or SIGINT.
Then it sends SIGTERM to both, waits up to ``--stop-grace`` seconds and sends SIGKILL to
whatever is left of either group. The servers' own output goes to stderr; stdout carries
only the READY line. If either server exits by itself, the other is stopped and the exit
status is 1. Runs in the peer's virtualenv (it needs grpcio); the starting, waiting and
stopping are launch.py's.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import launch  # beside this file: its importers have put this folder on sys.path

MAX_MESSAGE = 64 * 1024 * 1024
GRPC_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.max_receive_message_length", MAX_MESSAGE),
]
DEFAULT_GEN = Path(sys.prefix) / "gen"


def load_generated(stem: str, gen: Path = DEFAULT_GEN) -> tuple[Any, Any]:
    """``STEM_pb2`` and ``STEM_pb2_grpc`` from ``gen``, where install.sh generates them
    (typed Any: generated code)."""
    if not (gen / f"{stem}_pb2_grpc.py").is_file():
        raise SystemExit(f"no generated gRPC modules in {gen}: run install.sh first")
    if str(gen) not in sys.path:
        sys.path.insert(0, str(gen))
    return importlib.import_module(f"{stem}_pb2"), importlib.import_module(f"{stem}_pb2_grpc")


def channel(target: str) -> grpc.Channel:
    """A client's channel to a peer's gRPC server: the same message limits, no proxy."""
    return grpc.insecure_channel(target, options=[*GRPC_OPTIONS, ("grpc.enable_http_proxy", 0)])


def grpc_main(description: str, stem: str, add: Callable[[Any, Any, Any], None]) -> None:
    """A peer's gRPC server: grpcio with a thread pool on 127.0.0.1 (``--port``, else
    ``GRPC_PORT``, else 50051), messages up to 64 MiB; ``add(pb2, pb2_grpc, server)``
    registers the servicer. SIGTERM or SIGINT stops it, giving calls in flight a second."""
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--port", type=int, default=int(os.environ.get("GRPC_PORT", "50051")))
    p.add_argument("--workers", type=int, default=10, help="threads of the pool")
    p.add_argument("--gen", type=Path, default=DEFAULT_GEN, help="the generated modules")
    args = p.parse_args()
    pb2, pb2_grpc = load_generated(stem, args.gen)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=args.workers), options=GRPC_OPTIONS)
    add(pb2, pb2_grpc, server)
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


def main(description: str, here: Path, rest_script: str, probe_path: str, probe: bytes) -> int:
    """Runs ``rest_script`` and ``server_grpc.py`` from ``here``; the REST server is ready
    when ``POST probe_path`` with the JSON ``probe`` answers 200."""
    p = launch.arguments(description, ready_timeout=60.0, stop_grace=10.0)
    p.add_argument("--http-port", type=int, default=0, help="0: a free port")
    p.add_argument("--grpc-port", type=int, default=0, help="0: a free port")
    p.add_argument("--grpc-workers", type=int, default=10, help="the gRPC server's threads")
    args = p.parse_args()
    http_port = args.http_port or launch.free_port()
    grpc_port = args.grpc_port or launch.free_port()
    url = f"http://127.0.0.1:{http_port}"
    target = f"127.0.0.1:{grpc_port}"
    grpc_server = [sys.executable, str(here / "server_grpc.py"), "--port", str(grpc_port)]
    server = launch.Server(
        commands={
            rest_script: [sys.executable, str(here / rest_script), "--port", str(http_port)],
            "server_grpc.py": [*grpc_server, "--workers", str(args.grpc_workers)],
        },
        probes={
            "REST": lambda: launch.rest_answers(url + probe_path, probe),
            "gRPC": lambda: launch.grpc_answers(target),
        },
        url=url,
        grpc=target,
    )
    return launch.serve(lambda: server, args.ready_timeout, args.stop_grace)
