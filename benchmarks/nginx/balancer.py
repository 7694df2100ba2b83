"""nginx (Debian's package) in front of inferwire instances on 127.0.0.1: one upstream
for REST over HTTP/1.1 keep-alive, one for gRPC through ``grpc_pass``, with retries on
the next instance (``balancer.conf`` beside this file). Used by tests/deploy/test_scaleout.py
and benchmarks/scaleout.py.

    bash scripts/apt-install.sh nginx    # once
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from lib.servers import free_port  # benchmarks/ is on the path of every user

# The configuration, with why each retry setting is there.
TEMPLATE = Path(__file__).with_name("balancer.conf")


def render(prefix: Path, http_port: int, grpc_port: int, instances: list[tuple[int, int]]) -> str:
    """balancer.conf with its placeholders filled."""

    def servers(ports: list[int]) -> str:
        line = "        server 127.0.0.1:{} max_fails=1 fail_timeout=5s;"
        return "\n".join(line.format(p) for p in ports)

    conf = TEMPLATE.read_text()
    for name, value in {
        "DIR": str(prefix),
        "HTTP_PORT": str(http_port),
        "GRPC_PORT": str(grpc_port),
        "REST_SERVERS": servers([h for h, _ in instances]),
        "GRPC_SERVERS": servers([g for _, g in instances]),
    }.items():
        conf = conf.replace(f"@{name}@", value)
    return conf


class Nginx:
    """nginx in the foreground with its own prefix, balancing over ``instances``
    ((REST port, gRPC port) pairs)."""

    def __init__(self, instances: list[tuple[int, int]]) -> None:
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.dir = Path(tempfile.mkdtemp(prefix="inferwire-nginx-"))
        self.http_port, self.grpc_port = free_port(), free_port()
        conf = render(self.dir, self.http_port, self.grpc_port, instances)
        (self.dir / "nginx.conf").write_text(conf)
        self.proc = subprocess.Popen(
            [binary, "-p", str(self.dir), "-c", "nginx.conf", "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.errors()}")
            try:
                socket.create_connection(("127.0.0.1", self.http_port), timeout=1).close()
                socket.create_connection(("127.0.0.1", self.grpc_port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            self.stop()
            raise RuntimeError("nginx did not listen within 10 s")
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.grpc_target = f"127.0.0.1:{self.grpc_port}"

    def errors(self) -> str:
        log = self.dir / "error.log"
        return log.read_text() if log.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
