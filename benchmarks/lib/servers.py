"""The servers the notebook's workloads run against, started as subprocesses on 127.0.0.1.

A server is a command line template (shell words) with the placeholders ``{model}``
(NoopPredict or NoopPredictRaw), ``{http_port}``, ``{grpc_port}`` and ``{metrics_port}``,
run from the repository root; inferwire's template also has ``{inferwire}`` (the
executable) and the wrapper's ``{venv}``. A server is ready when ``GET /health/ping``
answers 200 and its gRPC port accepts connections.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from lib.proc_cpu import cpu_seconds

ROOT = Path(__file__).resolve().parents[2]
INFERWIRE_TEMPLATE = (
    "{inferwire} serve benchmarks/models/noop.py:{model} "
    "--http-port {http_port} --grpc-port {grpc_port} --host 127.0.0.1"
)
# The wrapper always binds 0.0.0.0; it is only ever addressed on 127.0.0.1 here.
SELDON_TEMPLATE = (
    "{venv}/bin/seldon-core-microservice noop.{model} --service-type MODEL "
    "--http-port {http_port} --grpc-port {grpc_port} --metrics-port {metrics_port}"
)
# The notebook's SeldonDeployment: container "classifier", one gunicorn worker and thread.
SELDON_ENV = {
    "GUNICORN_WORKERS": "1",
    "GUNICORN_THREADS": "1",
    "PYTHONPATH": str(ROOT / "benchmarks/seldon_wrapper"),
    "PREDICTIVE_UNIT_ID": "classifier",
    "PREDICTIVE_UNIT_IMAGE": "{image}",
}
NOTEBOOK_IMAGES = {
    "NoopPredict": "seldonio/seldontest_predict:1.10.0-dev",
    "NoopPredictRaw": "seldonio/seldontest_predict_raw:1.10.0-dev",
}


@dataclass(frozen=True)
class ServerSpec:
    """How to start one kind of server."""

    name: str
    template: str
    env: dict[str, str] = field(default_factory=dict)

    def argv(self, values: dict[str, str]) -> list[str]:
        return shlex.split(self.template.format(**values))


def inferwire_spec(executable: list[str] | None = None, template: str | None = None) -> ServerSpec:
    """inferwire; the executable defaults to ``python -m inferwire`` of this interpreter."""
    exe = shlex.join(executable or [sys.executable, "-m", "inferwire"])
    return ServerSpec("inferwire", (template or INFERWIRE_TEMPLATE).replace("{inferwire}", exe))


def seldon_spec(venv: Path | None = None, template: str | None = None) -> ServerSpec:
    """The Seldon Python wrapper in ``benchmarks/seldon_wrapper/setup.sh``'s virtualenv."""
    where = shlex.quote(str(venv or ROOT / ".venv-seldon"))
    return ServerSpec("seldon", (template or SELDON_TEMPLATE).replace("{venv}", where), SELDON_ENV)


def free_port() -> int:
    """inferwire.local's: never a port this process was given, from INFERWIRE_LOCAL_PORTS'
    range when set (test runs side by side)."""
    from inferwire.local import _free_port

    return _free_port()


# The release builds of the do-nothing servers (crates/inferwire-server/examples).
FLOOR_EXAMPLES = ROOT / "target/release/examples"


def floor_command(examples: Path = FLOOR_EXAMPLES) -> tuple[list[str], str, str]:
    """The floor under any server here: ``http_floor`` and ``grpc_floor`` on free ports as
    two children of one ``bash`` (its PID's tree holds both, so one /proc reading measures
    them; stopping its process group stops both). Returns the argv and the HTTP and gRPC
    addresses. Both answer every request, whatever its path or method, with the same
    small reply."""
    servers = [examples / "http_floor", examples / "grpc_floor"]
    missing = [str(s) for s in servers if not s.exists()]
    if missing:
        raise RuntimeError(
            f"not built: {', '.join(missing)} (cargo build --release -p inferwire-server "
            "--example http_floor --example grpc_floor)"
        )
    http, grpc = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    http_floor, grpc_floor = (shlex.quote(str(s)) for s in servers)
    return ["bash", "-c", f"{http_floor} {http} & {grpc_floor} {grpc} & wait"], http, grpc


def _http_ok(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=2) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def tcp_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class ServerProcess:
    """One running server; stop() sends SIGTERM to its process group."""

    def __init__(self, spec: ServerSpec, model: str, timeout: float = 120.0) -> None:
        self.spec, self.model = spec, model
        self.http_port, self.grpc_port = free_port(), free_port()
        values = {
            "model": model,
            "http_port": str(self.http_port),
            "grpc_port": str(self.grpc_port),
            "metrics_port": str(free_port()),
            "image": NOTEBOOK_IMAGES.get(model, model),
        }
        self.argv = spec.argv(values)
        env = {**os.environ, **{k: v.format(**values) for k, v in spec.env.items()}}
        # A model may be a path or `file.py:Class`: only its name's safe characters.
        label = re.sub(r"[^\w.-]+", "_", model)[-60:]
        self.log_path = Path(tempfile.mkstemp(prefix=f"{spec.name}-{label}-", suffix=".log")[1])
        with self.log_path.open("w") as log:
            self.proc = subprocess.Popen(
                self.argv,
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.keep_log = False
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.keep_log = True  # named in the error
            self.stop()
            raise

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_target(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def predictions_url(self) -> str:
        return f"{self.url}/api/v1.0/predictions"

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.describe()} exited with {self.proc.returncode}")
            if _http_ok(f"{self.url}/health/ping") and tcp_open(self.grpc_port):
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.describe()} not ready within {timeout:.0f} s")

    def describe(self) -> str:
        tail = self.log_path.read_text(errors="replace")[-3000:]
        return f"{self.spec.name} ({shlex.join(self.argv)}); log {self.log_path}:\n{tail}"

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.proc.pid)

    def stop(self, timeout: float = 20.0) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        # Children that outlived their parent (the wrapper's workers) share the group.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if not self.keep_log:
            self.log_path.unlink(missing_ok=True)
