"""What the streaming peers' smoke tests share (benchmarks/peers/mlserver/smoke_stream.py,
benchmarks/peers/pytriton/smoke.py): starting a peer's serve.py on free ports and stopping
it (smoke_checks.py's Started), reading a server-sent-events reply with httpx, and timing
the pieces of one stream.
Runs in a peer's virtualenv (it needs httpx); imports neither mlserver nor tritonclient.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

import httpx
from smoke_checks import Started, free_port, left_running, loopback_only, venv_marker

# left_running, loopback_only and venv_marker: for the streaming smokes, which import them
# from here.
__all__ = [
    "DELAY_S",
    "PIECE",
    "PIECES",
    "Peer",
    "Stream",
    "check_timing",
    "left_running",
    "loopback_only",
    "read_sse",
    "venv_marker",
]

PIECE = b"0123456789abcdef"  # what the peers' models send by default: 16 bytes
PIECES = 256
DELAY_S = 0.001


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


class Peer(Started):
    """A peer's serve.py on free ports, started at construction (it prints
    ``READY http://... grpc HOST:PORT`` when its model is ready)."""

    def __init__(self, argv: list[str], log: TextIO | int = subprocess.DEVNULL) -> None:
        self.http_port, self.grpc_port = free_port(), free_port()
        super().__init__(
            [*argv, "--http-port", str(self.http_port), "--grpc-port", str(self.grpc_port)], log
        )
