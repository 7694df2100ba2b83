"""What the peers' serve.py share: starting a peer's server(s) on 127.0.0.1, each in a
process group of its own with its output on stderr, waiting until probes answer, printing
``READY http://127.0.0.1:PORT [grpc 127.0.0.1:GPORT]`` (the only line on stdout) and
serving until SIGTERM or SIGINT; then sending the peer's stop signal, waiting up to a
grace period and sending SIGKILL to whatever is left of each group.

Each serve.py keeps its peer's own facts (command line, probes, stop signal, temporary
directory and environment) and hands them to :func:`serve` as a :class:`Server`.

Standard library only, so that every peer's virtualenv can import it; grpc is imported
only by :func:`grpc_answers`, which only the peers with a gRPC probe call.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class Stop(Exception):
    """Raised in the main thread by the SIGTERM/SIGINT handler."""


@dataclass
class Server:
    """A peer's server: its commands (name: argv), each started in a process group of its
    own; the probes that all answer once it is ready; what READY names."""

    commands: dict[str, list[str]]
    probes: dict[str, Callable[[], bool]]
    url: str
    grpc: str | None = None  # the gRPC target READY names, if any
    cwd: Path | None = None
    env: dict[str, str] | None = None
    # The signal that stops it gracefully; SIGKILL follows after the grace period.
    stop_signal: signal.Signals = signal.SIGTERM
    # The stop signal to every process of each group, not only its leader (TorchServe's
    # launcher waits on its Java frontend, which must get the signal itself).
    signal_group: bool = False
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)  # serve() starts them

    @property
    def ready_line(self) -> str:
        return f"READY {self.url}" + (f" grpc {self.grpc}" if self.grpc else "")


def arguments(
    description: str, ready_timeout: float = 120.0, stop_grace: float = 15.0
) -> argparse.ArgumentParser:
    """A serve.py's command line, with the options :func:`serve` takes."""
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--ready-timeout", type=float, default=ready_timeout)
    p.add_argument("--stop-grace", type=float, default=stop_grace, help="seconds before SIGKILL")
    return p


def free_port() -> int:
    """A free local port; from INFERWIRE_LOCAL_PORTS' range (LO-HI) when set, as
    inferwire.local picks them, so that test runs side by side never pick the same one."""
    lo, _, hi = os.environ.get("INFERWIRE_LOCAL_PORTS", "").partition("-")
    while True:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", random.randrange(int(lo), int(hi)) if hi else 0))
            except OSError:
                continue
            return int(s.getsockname()[1])


def rest_reply(
    url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> bytes | None:
    """The body of a 200 answer to a GET of ``url`` (a JSON POST of ``body`` if given),
    else None; no proxy."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    sent = {"Content-Type": "application/json"} if body is not None else {}
    request = urllib.request.Request(url, data=body, headers={**sent, **(headers or {})})
    try:
        with opener.open(request, timeout=2) as reply:
            return bytes(reply.read()) if reply.status == 200 else None
    except (urllib.error.URLError, OSError):
        return None


def rest_answers(
    url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> bool:
    """True when ``url`` answers 200 (see :func:`rest_reply`)."""
    return rest_reply(url, body, headers) is not None


def grpc_answers(target: str) -> bool:
    """True when a gRPC server at ``target`` accepts a channel within a second."""
    import grpc  # here: the REST-only peers' virtualenvs have no grpcio

    with grpc.insecure_channel(target, options=[("grpc.enable_http_proxy", 0)]) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=1)
        except grpc.FutureTimeoutError:
            return False
    return True


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_all(
    procs: list[subprocess.Popen[bytes]],
    grace_s: float,
    signum: signal.Signals = signal.SIGTERM,
    whole_group: bool = False,
) -> None:
    """``signum`` to each server (to each server's whole group with ``whole_group``), up
    to ``grace_s`` for their groups to empty, then SIGKILL to what is left of them."""
    for proc in procs:
        if whole_group:
            try:
                os.killpg(proc.pid, signum)
            except ProcessLookupError:
                pass
        elif proc.poll() is None:
            proc.send_signal(signum)
    deadline = time.monotonic() + grace_s
    for proc in procs:
        # Each server leads its own group (start_new_session): its pid is the group's id.
        while group_alive(proc.pid) and time.monotonic() < deadline:
            proc.poll()  # reaps the server once it exits, so its group can empty
            time.sleep(0.05)
        if group_alive(proc.pid):
            print(f"pid {proc.pid} still running after {grace_s:.0f} s: SIGKILL", file=sys.stderr)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()


def _stop_on_signals() -> None:
    def on_signal(signum: int, _frame: Any) -> None:
        # Once: a second signal while the server stops must not interrupt the stopping.
        _ignore_signals()
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def _ignore_signals() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _wait_ready(server: Server, timeout_s: float, started: float) -> bool:
    waiting = dict(server.probes)
    while waiting:
        for name, answers in list(waiting.items()):
            if answers():
                del waiting[name]
        for name, proc in zip(server.commands, server.procs, strict=True):
            if proc.poll() is not None:
                print(f"{name} exited with {proc.returncode} before ready", file=sys.stderr)
                return False
        if waiting and time.monotonic() > started + timeout_s:
            print(f"{', '.join(waiting)} not ready within {timeout_s:.0f} s", file=sys.stderr)
            return False
        if waiting:
            time.sleep(0.1)
    return True


def serve(
    build: Callable[[], Server],
    ready_timeout: float,
    stop_grace: float,
    temp_dir: Path | None = None,
) -> int:
    """Starts ``build()``'s server, prints READY once its probes answer, serves until
    SIGTERM or SIGINT (exit status 0) or until a server exits by itself (1, or that
    server's own status when it runs alone and exits with one), and stops it; then
    removes ``temp_dir``. Not ready within ``ready_timeout`` seconds, or a server exiting
    before: 1. ``build`` runs once the signal handlers are in place (it may write files
    into ``temp_dir``)."""
    _stop_on_signals()
    server: Server | None = None
    started = time.monotonic()
    code = 0
    try:
        server = build()
        for argv in server.commands.values():
            server.procs.append(
                subprocess.Popen(
                    argv,
                    cwd=server.cwd,
                    env=server.env,
                    stdin=subprocess.DEVNULL,
                    stdout=sys.stderr,  # stdout is for the READY line only
                    start_new_session=True,  # its own group, out of reach of a terminal's ^C
                )
            )
        if not _wait_ready(server, ready_timeout, started):
            return 1
        print(f"started in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
        print(server.ready_line, flush=True)
        while all(proc.poll() is None for proc in server.procs):
            time.sleep(0.2)  # until a signal raises Stop, or a server exits by itself
        for name, proc in zip(server.commands, server.procs, strict=True):
            if proc.returncode is not None:
                print(f"{name} exited with {proc.returncode}", file=sys.stderr)
        code = (server.procs[0].returncode or 1) if len(server.procs) == 1 else 1
    except (Stop, KeyboardInterrupt) as why:
        print(f"stopping ({why or 'interrupt'})", file=sys.stderr, flush=True)
    finally:
        _ignore_signals()
        try:
            if server is not None:
                # Each server leads its own group: its workers and multiprocessing's
                # resource tracker go with it.
                stop_all(server.procs, stop_grace, server.stop_signal, server.signal_group)
        finally:
            if temp_dir is not None:
                shutil.rmtree(temp_dir, ignore_errors=True)
    return code
