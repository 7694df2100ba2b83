"""What the peers' smoke tests share: starting a peer's serve.py and reading its READY
line (:class:`Started`), the processes it started and the sockets they listen on (all on
loopback), stopping it and timing the start and stop, the processes left behind, and
rough figures (requests/s of client threads, the mean latency of calls).

Standard library only, so that every peer's virtualenv can import it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TextIO, TypeVar

from launch import free_port

__all__ = [
    "Started",
    "add_server_log",
    "alive",
    "arguments",
    "children",
    "each",
    "free_port",
    "group",
    "left_running",
    "listening",
    "load",
    "loopback_only",
    "mean_ms",
    "report_left",
    "smoke_pair",
    "tree",
    "venv_marker",
    "venv_processes",
]


def ps(columns: str) -> list[list[str]]:
    """``ps -eo COLUMNS``, a row a process; the last column keeps its spaces."""
    out = subprocess.run(["ps", "-ww", "-eo", columns], capture_output=True, text=True).stdout
    return [line.split(None, columns.count(",")) for line in out.splitlines()[1:]]


def children(ppid: int) -> list[int]:
    return [int(pid) for pid, parent in ps("pid,ppid") if int(parent) == ppid]


def group(pgid: int) -> list[int]:
    """The processes of a process group."""
    return [int(pid) for pid, pg in ps("pid,pgid") if int(pg) == pgid]


def tree(pid: int) -> dict[int, str]:
    """``pid`` and every process below it, with their command lines."""
    below: dict[int, list[int]] = {}
    args: dict[int, str] = {}
    for row in ps("pid,ppid,args"):
        below.setdefault(int(row[1]), []).append(int(row[0]))
        args[int(row[0])] = row[2] if len(row) > 2 else ""
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        found[p] = args.get(p, "")
        todo += below.get(p, [])
    return found


def alive(pids: Iterable[int]) -> list[str]:
    """Those of ``pids`` still running, with their command lines."""
    wanted = set(pids)
    return [" ".join(row) for row in ps("pid,args") if int(row[0]) in wanted]


def listening(pids: Iterable[int]) -> list[str]:
    """Local addresses of the listening TCP sockets of the given processes (``ss``)."""
    wanted = set(pids)
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    return sorted(
        line.split()[3] for line in out.splitlines() if any(f"pid={p}," in line for p in wanted)
    )


def loopback_only(addresses: list[str]) -> None:
    # gRPC may bind the IPv4-mapped form of 127.0.0.1 on a dual-stack socket: loopback too.
    bad = [a for a in addresses if a.rsplit(":", 1)[0] not in ("127.0.0.1", "[::ffff:127.0.0.1]")]
    assert not bad, f"listens beyond 127.0.0.1: {bad}"


def left_running(marker: str) -> list[str]:
    """Processes, other than this one, whose command line contains ``marker`` (the
    virtualenv's folder, PyTriton's workspace)."""
    return [
        " ".join(row) for row in ps("pid,args") if marker in row[1] and int(row[0]) != os.getpid()
    ]


def venv_marker() -> str:
    return str(Path(sys.executable).parent.parent) + "/"


def venv_processes(relative: bool = False) -> list[str]:
    """Processes, other than this one, running the virtualenv's Python (serve.py, the
    server, its workers, multiprocessing's resource tracker), named by the virtualenv's
    absolute path or, with ``relative``, also by its path relative to here (as when
    started as ``.tools/peers/NAME/bin/python``; that matches other checkouts' too)."""
    venv = venv_marker()
    rel = os.path.relpath(venv) + "/" if relative else venv
    return [
        " ".join(row)
        for row in ps("pid,args")
        if (venv in row[1] or row[1].startswith(rel)) and int(row[0]) != os.getpid()
    ]


def report_left(name: str, relative: bool = False) -> bool:
    """Prints what of the virtualenv is still running (:func:`venv_processes`), or that
    nothing of ``name`` is; True when something is."""
    left = venv_processes(relative)
    if left:
        print(f"  LEFT RUNNING: {left}", flush=True)
    else:
        print(f"  no {name} process left", flush=True)
    return bool(left)


class Started:
    """A peer's serve.py, started at construction; it prints
    ``READY http://HOST:PORT [grpc HOST:GPORT]`` once its server is ready (else it gives
    up after its --ready-timeout and this raises RuntimeError)."""

    def __init__(
        self,
        argv: list[str],
        log: TextIO | int = subprocess.DEVNULL,
        env: dict[str, str] | None = None,
    ) -> None:
        started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("READY"):
            self.stop()
            raise RuntimeError(f"{argv[1]} did not start: {line!r}")
        self.start_s = time.monotonic() - started
        words = line.split()
        self.url = words[1]
        self.grpc = words[3] if len(words) > 3 else ""

    def tree(self) -> set[int]:
        """serve.py and every process below it."""
        return set(tree(self.proc.pid))

    def listening(self) -> list[str]:
        """Addresses the tree listens on (TCP), each once."""
        return sorted(set(listening(self.tree())))

    def server_group(self) -> list[int]:
        """The process group of the server serve.py started (its only child, the group's
        leader): the server, its workers, multiprocessing's resource tracker."""
        (server,) = children(self.proc.pid)
        return group(server)

    def stop(self, timeout_s: float = 60.0) -> float:
        """SIGTERM, then the seconds it took to exit (SIGKILL after ``timeout_s``)."""
        stopping = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return time.monotonic() - stopping


C = TypeVar("C")
R = TypeVar("R")


def each(
    configs: dict[str, C],
    run: Callable[[C], R],
    report: Callable[[str, R], bool],
    peer: str,
    relative: bool = False,
) -> int:
    """Runs each configuration in turn (labelled by its key): ``run(config)``, then
    ``report(label, result)`` prints what it found (True: a failure); an exception is the
    configuration's ``LABEL: FAILED`` line. After each, nothing of the virtualenv may be
    left (:func:`report_left`, ``relative`` passed on). The exit status: 1 when anything failed."""
    failed = False
    for label, config in configs.items():
        try:
            result = run(config)
        except Exception as e:
            failed = True
            print(f"{label}: FAILED {e!r}", flush=True)
        else:
            failed |= report(label, result)
        failed |= report_left(peer, relative)
    return 1 if failed else 0


def smoke_pair(serve_py: Path, log: TextIO | int, check: Callable[[str, str], None]) -> int:
    """The smoke test of a serve.py built on pair.py (a REST and a gRPC server): starts it,
    checks that its two servers listen on loopback only, runs ``check(url, grpc_target)``,
    stops it and checks that neither server nor serve.py is left. Prints OK or FAILED;
    returns the exit status (1: failed)."""
    try:
        serve = Started([sys.executable, str(serve_py)], log)
    except RuntimeError as e:
        print(f"FAILED: {e!r}", flush=True)
        return 1
    print(f"READY {serve.url} grpc {serve.grpc} (started in {serve.start_s:.1f} s)", flush=True)
    pids = [serve.proc.pid]
    failed = False
    try:
        servers = children(serve.proc.pid)
        pids += servers
        sockets = listening(servers)
        assert len(servers) == 2 and len(sockets) == 2, (servers, sockets)
        loopback_only(sockets)
        print(f"listening on {', '.join(sockets)} only", flush=True)
        check(serve.url, serve.grpc)
    except Exception as e:
        failed = True
        print(f"FAILED: {e!r}", flush=True)
    finally:
        took = serve.stop(30)
        print(f"stopped in {took:.1f} s, exit {serve.proc.returncode}")
    time.sleep(0.2)
    left = alive(pids)
    if left:
        failed = True
        print(f"LEFT RUNNING: {left}", flush=True)
    else:
        print(f"no process left (serve.py and servers, pids {pids})", flush=True)
    print("FAILED" if failed else "OK", flush=True)
    return 1 if failed else 0


def load(
    clients: int,
    seconds: float,
    connect: Callable[[], AbstractContextManager[Callable[[], object]]],
) -> float:
    """Requests/s of ``clients`` threads, each calling in a loop for ``seconds`` through its
    own ``connect()`` (a connection, closed at the end); the first error is raised."""
    counts = [0] * clients
    errors: list[str] = []
    stop = time.monotonic() + seconds

    def client(i: int) -> None:
        try:
            with connect() as call:
                while time.monotonic() < stop:
                    call()
                    counts[i] += 1
        except Exception as e:
            errors.append(repr(e))

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(errors[0])
    return sum(counts) / (time.monotonic() - started)


def mean_ms(call: Callable[[], object], calls: int) -> float:
    call()  # warm-up
    started = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - started) / calls * 1000


def arguments(
    description: str, whose_log: str, seconds: float, calls: int | None = None
) -> argparse.ArgumentParser:
    """A smoke test's command line: ``--seconds`` of each load, ``--calls`` timed (where
    given) and ``--server-log``."""
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seconds", type=float, default=seconds, help="per requests/s measurement")
    if calls is not None:
        p.add_argument("--calls", type=int, default=calls, help="100,000-element calls timed")
    add_server_log(p, whose_log)
    return p


def add_server_log(parser: argparse.ArgumentParser, whose: str) -> None:
    parser.add_argument(
        "--server-log",
        type=argparse.FileType("w"),
        default=subprocess.DEVNULL,
        help=f"file for {whose} (default: discarded)",
    )
