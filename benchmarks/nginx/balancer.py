"""nginx (Debian's package) in front of inferwire instances on 127.0.0.1: one upstream
for REST over HTTP/1.1 keep-alive, one for gRPC through ``grpc_pass``, with retries on
the next instance. Used by tests/test_scaleout.py and benchmarks/scaleout.py.

    bash scripts/apt-install.sh nginx    # once
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

# Why each retry setting is there:
# - error, timeout: an instance that was killed (connection refused or reset) or that
#   closed an idle keep-alive connection as it began to drain;
# - http_502, http_503: an instance that answers it cannot serve right now;
# - non_idempotent: without it nginx never resends a POST it has already written to an
#   upstream, and every prediction is a POST. Predictions are safe to repeat.
# max_fails=1 with fail_timeout takes a failed instance out of rotation for a while, so
# later requests do not pay for the retry.
CONFIG = """\
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    client_max_body_size 64m;

    upstream inferwire_rest {{
{rest_servers}
        keepalive 64;
    }}
    upstream inferwire_grpc {{
{grpc_servers}
        keepalive 64;
    }}
    server {{
        listen 127.0.0.1:{http_port};
        location / {{
            proxy_pass http://inferwire_rest;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_next_upstream error timeout http_502 http_503 non_idempotent;
            proxy_next_upstream_tries 3;
            proxy_connect_timeout 1s;
            proxy_read_timeout 60s;
        }}
    }}
    server {{
        listen 127.0.0.1:{grpc_port} http2;
        location / {{
            grpc_pass grpc://inferwire_grpc;
            grpc_next_upstream error timeout http_502 http_503 non_idempotent;
            grpc_next_upstream_tries 3;
            grpc_connect_timeout 1s;
            grpc_read_timeout 60s;
        }}
    }}
}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Nginx:
    """nginx in the foreground with its own prefix, balancing over ``instances``
    ((REST port, gRPC port) pairs)."""

    def __init__(self, instances: list[tuple[int, int]]) -> None:
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.dir = Path(tempfile.mkdtemp(prefix="inferwire-nginx-"))
        self.http_port, self.grpc_port = free_port(), free_port()
        servers = "\n".join
        conf = CONFIG.format(
            dir=self.dir,
            http_port=self.http_port,
            grpc_port=self.grpc_port,
            rest_servers=servers(
                f"        server 127.0.0.1:{h} max_fails=1 fail_timeout=5s;" for h, _ in instances
            ),
            grpc_servers=servers(
                f"        server 127.0.0.1:{g} max_fails=1 fail_timeout=5s;" for _, g in instances
            ),
        )
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
