"""`inferwire tritonserver` as a subprocess on 127.0.0.1, started with Triton's options."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

from conftest import TESTS, free_port, wait_ready

VENDOR = TESTS / "vendor" / "triton_python_backend"


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def repository(tmp: Path, *models: str, extra: dict[str, Path] | None = None) -> Path:
    """A Triton repository of the vendored examples' ``models`` (copied: the server
    writes nothing, but the test may), and of ``extra`` model folders by name."""
    root = tmp / "models"
    root.mkdir(exist_ok=True)
    for name in models:
        shutil.copytree(VENDOR / "repository" / name, root / name)
    for name, folder in (extra or {}).items():
        shutil.copytree(folder, root / name)
    return root


class Tritonserver:
    """``inferwire tritonserver --model-repository ROOT OPTIONS...``, ready."""

    def __init__(
        self,
        root: Path,
        *options: str,
        ports: tuple[int, int, int] | None = None,
        env: dict[str, str] | None = None,
        wait: bool = True,
    ) -> None:
        self.http_port, self.grpc_port, self.metrics_port = ports or (
            free_port(),
            free_port(),
            free_port(),
        )
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.grpc_target = f"127.0.0.1:{self.grpc_port}"
        self.log_path = (
            Path(os.environ.get("TMPDIR", "/tmp")) / f"tritonserver-{self.http_port}.log"
        )
        cmd = [
            sys.executable,
            "-m",
            "inferwire",
            "tritonserver",
            f"--model-repository={root}",
            "--http-address=127.0.0.1",
            "--grpc-address=127.0.0.1",
            "--metrics-address=127.0.0.1",
            f"--http-port={self.http_port}",
            f"--grpc-port={self.grpc_port}",
            f"--metrics-port={self.metrics_port}",
            *options,
        ]
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            cmd,
            cwd=TESTS,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float = 60.0) -> None:
        if not wait_ready(self.proc, f"{self.url}/v2/health/ready", self.log, timeout):
            self.stop()
            raise RuntimeError(f"server did not start within {timeout}s:\n{self.log()}")

    def wait_exit(self, timeout: float = 60.0) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self._log.close()

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self._log.closed:
            self._log.close()
        return self.proc.returncode
