"""What the streaming peers' smoke tests share (benchmarks/peers/mlserver/smoke_stream.py,
benchmarks/peers/pytriton/smoke.py): starting a peer's serve.py on free ports and stopping
it, reading a server-sent-events reply with httpx, and timing the pieces of one stream.
Runs in a peer's virtualenv (it needs httpx); imports neither mlserver nor tritonclient.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx

PIECE = b"0123456789abcdef"  # what the peers' models send by default: 16 bytes
PIECES = 256
DELAY_S = 0.001


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Stream:
    """One stream's pieces as they arrived: their data and when (seconds since the
    request was sent)."""

    pieces: list[Any] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    error: str | None = None

    def add(self, piece: Any, started: float) -> None:
        self.pieces.append(piece)
        self.times.append(time.monotonic() - started)

    @property
    def first_ms(self) -> float:
        return self.times[0] * 1000 if self.times else float("nan")

    @property
    def gap_p50_ms(self) -> float:
        gaps = sorted(b - a for a, b in zip(self.times, self.times[1:], strict=False))
        return gaps[len(gaps) // 2] * 1000 if gaps else float("nan")

    @property
    def total_ms(self) -> float:
        return self.times[-1] * 1000 if self.times else float("nan")


def read_sse(client: httpx.Client, url: str, body: dict[str, Any]) -> Stream:
    """POSTs ``body`` as JSON and reads the reply as server-sent events, one piece per
    ``data:`` event (its JSON); a non-200 answer is the stream's error."""
    stream = Stream()
    started = time.monotonic()
    with client.stream("POST", url, json=body, headers={"Accept": "text/event-stream"}) as reply:
        if reply.status_code != 200:
            stream.error = f"{reply.status_code} {reply.read()[:4000].decode(errors='replace')}"
            return stream
        ctype = reply.headers.get("content-type", "")
        assert ctype.startswith("text/event-stream"), f"content-type {ctype!r}"
        data: list[str] = []
        for line in reply.iter_lines():
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif line == "" and data:
                stream.add(json.loads("\n".join(data)), started)
                data = []
        if data:
            stream.add(json.loads("\n".join(data)), started)
    return stream


def check_timing(label: str, stream: Stream, pieces: int = PIECES) -> str:
    """Asserts the count and that the model's sleeps show (the pieces cannot arrive
    faster than one delay apart on average); returns a line with the figures."""
    assert stream.error is None, f"{label}: {stream.error}"
    assert len(stream.pieces) == pieces, f"{label}: {len(stream.pieces)} pieces, not {pieces}"
    if pieces > 1:
        assert stream.total_ms >= (pieces - 1) * DELAY_S * 1000 * 0.9, f"{label}: too fast"
    return (
        f"{label}: {pieces} pieces, first after {stream.first_ms:.1f} ms, gap p50 "
        f"{stream.gap_p50_ms:.2f} ms, all in {stream.total_ms:.0f} ms"
    )


class Peer:
    """A peer's serve.py on free ports, started at construction (it prints
    ``READY http://... grpc HOST:PORT`` when its model is ready)."""

    def __init__(self, argv: list[str], log: TextIO | int = subprocess.DEVNULL) -> None:
        self.http_port, self.grpc_port = free_port(), free_port()
        argv = [*argv, "--http-port", str(self.http_port), "--grpc-port", str(self.grpc_port)]
        started = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # serve.py gives up after its --ready-timeout
        if not line.startswith("READY"):
            self.stop()
            raise RuntimeError(f"{argv[1]} did not start: {line!r}")
        self.start_s = time.monotonic() - started
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.grpc = f"127.0.0.1:{self.grpc_port}"

    def tree(self) -> set[int]:
        """serve.py and every process below it."""
        out = subprocess.run(["ps", "-eo", "pid,ppid"], capture_output=True, text=True).stdout
        children: dict[int, list[int]] = {}
        for a, b in (line.split() for line in out.splitlines()[1:]):
            children.setdefault(int(b), []).append(int(a))
        tree, todo = set(), [self.proc.pid]
        while todo:
            pid = todo.pop()
            tree.add(pid)
            todo += children.get(pid, [])
        return tree

    def listening(self) -> list[str]:
        """Addresses the tree listens on (TCP), from ``ss -ltnpH``."""
        pids = self.tree()
        out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
        return sorted(
            {line.split()[3] for line in out.splitlines() if any(f"pid={p}," in line for p in pids)}
        )

    def stop(self) -> float:
        """SIGTERM, then the seconds it took to exit (SIGKILL after 60 s)."""
        stopping = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return time.monotonic() - stopping


def loopback_only(addresses: list[str]) -> None:
    # gRPC may bind the IPv4-mapped form of 127.0.0.1 on a dual-stack socket: loopback too.
    bad = [a for a in addresses if a.rsplit(":", 1)[0] not in ("127.0.0.1", "[::ffff:127.0.0.1]")]
    assert not bad, f"listens beyond 127.0.0.1: {bad}"


def left_running(marker: str) -> list[str]:
    """Processes, other than this one, whose command line contains ``marker`` (the
    virtualenv's folder, PyTriton's workspace)."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [
        line.strip()
        for line in out.splitlines()[1:]
        if marker in line and int(line.split()[0]) != os.getpid()
    ]


def venv_marker() -> str:
    return str(Path(sys.executable).parent.parent) + "/"
