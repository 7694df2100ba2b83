"""``inferwire torchserve`` as a test starts it: a real server on free ports, configured
by a config.properties as TorchServe's users write one (inference, management, metrics
and gRPC ports), shared by the tests of its APIs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from conftest import free_port


class TorchServe:
    """``inferwire torchserve --start --foreground`` on free ports (its config.properties)."""

    def __init__(self, store: Path, *models: str, extra: str = "", tokens: bool = False) -> None:
        self.port, self.mgmt, self.metrics = free_port(), free_port(), free_port()
        self.grpc, self.grpc_mgmt = free_port(), free_port()
        props = store.parent / "config.properties"
        props.write_text(
            f"inference_address=http://127.0.0.1:{self.port}\n"
            f"management_address=http://127.0.0.1:{self.mgmt}\n"
            f"metrics_address=http://127.0.0.1:{self.metrics}\n"
            f"grpc_inference_port={self.grpc}\ngrpc_management_port={self.grpc_mgmt}\n"
            f"default_workers_per_model=1\n{extra}"
        )
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = store.parent / "server.log"
        cmd = [sys.executable, "-m", "inferwire", "torchserve", "--start", "--foreground"]
        cmd += ["--model-store", str(store), "--ts-config", str(props), "--ncs"]
        cmd += [] if tokens else ["--disable-token-auth"]
        cmd += ["--models", *models] if models else []
        self.headers: dict[str, str] = {}
        env = {**os.environ, "TMPDIR": str(store.parent)}  # its own pid file
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                cmd, cwd=store.parent, stdout=out, stderr=subprocess.STDOUT, env=env
            )
        deadline = time.monotonic() + 60
        while True:
            try:
                if tokens and (store.parent / "key_file.json").exists():
                    keys = json.loads((store.parent / "key_file.json").read_text())
                    self.headers = {"Authorization": f"Bearer {keys['inference']['key']}"}
                r = httpx.get(f"{self.url}/ping", headers=self.headers, timeout=2)
                if r.status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"inferwire torchserve did not start:\n{self.log.read_text()}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
