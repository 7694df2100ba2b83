"""What the seed-001 and seed-003 peers' serve.py share: a REST server and a gRPC server
started side by side, each in a process group of its own, on 127.0.0.1, on the given
ports or, where left out (or 0), on free ones. It waits until the REST server answers a
probe with 200 and the gRPC server accepts a channel, prints
``READY http://127.0.0.1:PORT grpc 127.0.0.1:GPORT`` and serves until SIGTERM or SIGINT.
Then it sends SIGTERM to both, waits up to ``--stop-grace`` seconds and sends SIGKILL to
whatever is left of either group. The servers' own output goes to stderr; stdout carries
only the READY line. If either server exits by itself, the other is stopped and the exit
status is 1. Runs in the peer's virtualenv (it needs grpcio).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc


class Stop(Exception):
    """Raised in the main thread by the SIGTERM/SIGINT handler."""


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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rest_answers(url: str, probe: bytes | None = None) -> bool:
    """True when ``url`` answers 200: a POST of ``probe`` (JSON), or a GET without one."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    headers = {"Content-Type": "application/json"} if probe is not None else {}
    request = urllib.request.Request(url, data=probe, headers=headers)
    try:
        with opener.open(request, timeout=2) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def grpc_answers(target: str) -> bool:
    with grpc.insecure_channel(target, options=[("grpc.enable_http_proxy", 0)]) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=1)
        except grpc.FutureTimeoutError:
            return False
    return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_all(procs: list[subprocess.Popen[bytes]], grace_s: float) -> None:
    """SIGTERM to each server, up to ``grace_s`` for them to stop, then SIGKILL to what is
    left of their groups."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for proc in procs:
        # Each server leads its own group (start_new_session): its pid is the group's id.
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            proc.poll()  # reaps the server once it exits, so its group can empty
            time.sleep(0.05)
        if _group_alive(proc.pid):
            print(f"pid {proc.pid} still running after {grace_s:.0f} s: SIGKILL", file=sys.stderr)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()


def main(description: str, here: Path, rest_script: str, probe_path: str, probe: bytes) -> int:
    """Runs ``rest_script`` and ``server_grpc.py`` from ``here``; the REST server is ready
    when ``POST probe_path`` with the JSON ``probe`` answers 200."""
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--http-port", type=int, default=0, help="0: a free port")
    p.add_argument("--grpc-port", type=int, default=0, help="0: a free port")
    p.add_argument("--grpc-workers", type=int, default=10, help="the gRPC server's threads")
    p.add_argument("--ready-timeout", type=float, default=60.0)
    p.add_argument("--stop-grace", type=float, default=10.0, help="seconds before SIGKILL")
    args = p.parse_args()
    http_port = args.http_port or free_port()
    grpc_port = args.grpc_port or free_port()

    def on_signal(signum: int, _frame: Any) -> None:
        # Once: a second signal while the servers stop must not interrupt the stopping.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    procs: list[subprocess.Popen[bytes]] = []
    url = f"http://127.0.0.1:{http_port}"
    target = f"127.0.0.1:{grpc_port}"
    started = time.monotonic()
    code = 0
    try:
        for cmd in (
            [sys.executable, str(here / rest_script), "--port", str(http_port)],
            [
                sys.executable,
                str(here / "server_grpc.py"),
                "--port",
                str(grpc_port),
                "--workers",
                str(args.grpc_workers),
            ],
        ):
            procs.append(
                subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=sys.stderr,  # stdout is for the READY line only
                    start_new_session=True,  # its own group, out of reach of a terminal's ^C
                )
            )
        deadline = started + args.ready_timeout
        waiting: dict[str, Callable[[], bool]] = {
            "REST": lambda: rest_answers(url + probe_path, probe),
            "gRPC": lambda: grpc_answers(target),
        }
        while waiting:
            for name, answers in list(waiting.items()):
                if answers():
                    del waiting[name]
            for proc in procs:
                if proc.poll() is not None:
                    print(f"{proc.args!r} exited with {proc.returncode}", file=sys.stderr)
                    return 1
            if waiting and time.monotonic() > deadline:
                print(
                    f"{', '.join(waiting)} not ready in {args.ready_timeout:.0f} s", file=sys.stderr
                )
                return 1
            if waiting:
                time.sleep(0.1)
        print(f"started in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
        print(f"READY {url} grpc {target}", flush=True)
        while all(proc.poll() is None for proc in procs):
            time.sleep(0.2)  # until a signal raises Stop, or a server exits by itself
        for proc in procs:
            if proc.returncode is not None:
                print(f"{proc.args!r} exited with {proc.returncode}", file=sys.stderr)
        code = 1
    except (Stop, KeyboardInterrupt) as why:
        print(f"stopping ({why or 'interrupt'})", file=sys.stderr, flush=True)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        stop_all(procs, args.stop_grace)
    return code


# -- for the smoke tests -------------------------------------------------------------------


def ps(columns: str) -> list[list[str]]:
    out = subprocess.run(["ps", "-eo", columns], capture_output=True, text=True).stdout
    return [line.split(None, columns.count(",")) for line in out.splitlines()[1:]]


def children(ppid: int) -> list[int]:
    return [int(pid) for pid, parent in ps("pid,ppid") if int(parent) == ppid]


def alive(pids: list[int]) -> list[str]:
    return [" ".join(row) for row in ps("pid,args") if int(row[0]) in pids]


def listening(pids: list[int]) -> list[str]:
    """Local addresses of the listening TCP sockets of the given processes."""
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    return sorted(
        line.split()[3] for line in out.splitlines() if any(f"pid={p}," in line for p in pids)
    )


def mean_ms(call: Callable[[], object], calls: int) -> float:
    call()  # warm-up
    started = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - started) / calls * 1000
