"""``inferwire.local``: an inferwire server in a child process on free local ports, for
examples, notebooks and tests: started on entering a ``with`` block, ready when the block
starts, stopped (SIGTERM, drained) when it ends."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

_given: set[int] = set()
# INFERWIRE_LOCAL_PORTS=LO-HI: draw ports from [LO, HI) instead of the kernel's ephemeral
# range, so that processes given disjoint ranges (test runs side by side) never pick the
# same port between choosing it and their server binding it.
_RANGE = "INFERWIRE_LOCAL_PORTS"


def _port_range() -> tuple[int, int] | None:
    raw = os.environ.get(_RANGE, "").strip()
    if not raw:
        return None
    lo, sep, hi = raw.partition("-")
    if not (sep and lo.isdigit() and hi.isdigit() and 1024 <= int(lo) < int(hi) <= 65536):
        raise ValueError(f"{_RANGE}={raw!r}: want LO-HI, 1024 <= LO < HI <= 65536")
    return int(lo), int(hi)


def _free_port() -> int:
    """A port nothing listens on now, never one this process was given before: the
    kernel hands a just-closed port out again, and a server given the same port for REST
    and gRPC (or two servers the same one) would fail to start."""
    span = _port_range()
    for _ in range(10_000):
        with socket.socket() as s:
            if span is None:
                s.bind(("127.0.0.1", 0))
            else:
                try:
                    s.bind(("127.0.0.1", random.randrange(*span)))
                except OSError:
                    continue
            port = int(s.getsockname()[1])
        if port not in _given:
            _given.add(port)
            return port
    raise RuntimeError(f"no free port left ({_RANGE}={os.environ.get(_RANGE, '')!r})")


class local:
    """``with inferwire.local("model.joblib", "--workers", "2") as server:`` runs
    ``inferwire serve`` with these arguments; ``server.url`` and ``server.grpc`` are its
    REST URL and gRPC address, and ``server.log()`` what it printed. With ``--tls-cert``
    among the arguments the URL is ``https://``, checked against the CA file ``ca``."""

    def __init__(
        self,
        *args: Any,
        timeout: float = 60.0,
        env: dict[str, str] | None = None,
        ca: Any = None,
    ):
        self.args = [str(a) for a in args]
        self.timeout = timeout
        self.env = env
        self._tls = None
        if "--tls-cert" in self.args:
            import ssl

            self._tls = ssl.create_default_context(cafile=str(ca) if ca else None)
        http, grpc = _free_port(), _free_port()
        scheme = "https" if self._tls else "http"
        self.url = f"{scheme}://127.0.0.1:{http}"
        self.grpc = f"127.0.0.1:{grpc}"
        self._ports = ["--host", "127.0.0.1", "--http-port", str(http), "--grpc-port", str(grpc)]
        self._log = tempfile.TemporaryFile(mode="w+")
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> local:
        cmd = [sys.executable, "-m", "inferwire", "serve", *self.args, *self._ports]
        self._proc = subprocess.Popen(
            cmd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **(self.env or {})},
        )
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"inferwire serve exited with {self._proc.returncode}:\n"
                                   f"{self.log()}")  # fmt: skip
            try:
                with urllib.request.urlopen(self.url + "/ready", timeout=1, context=self._tls) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        self.__exit__()
        raise RuntimeError(f"inferwire serve was not ready in {self.timeout} s:\n{self.log()}")

    def __exit__(self, *exc: Any) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def log(self) -> str:
        self._log.flush()
        self._log.seek(0)
        return self._log.read()
