"""Shared fixtures: real inferwire servers in subprocesses, and gRPC stubs generated from
the repository's own ``proto/`` files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from inferwire.local import _free_port as free_port  # never the same port twice

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

# Other projects' files, vendored unchanged for the tests that run them: their own test
# modules are not this suite's.
collect_ignore = ["vendor"]
# The benchmarks' helpers (data sets, the notebook's payloads) are shared with the tests.
sys.path.insert(0, str(ROOT / "benchmarks"))


def proc_status_kib(pid: int, key: str) -> int:
    """A memory figure of process ``pid`` from /proc/PID/status: ``VmRSS`` (resident now)
    or ``VmHWM`` (the peak since start, or since ``reset_peak_rss``), in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {key} in /proc/{pid}/status")


def _children(pid: int) -> set[int]:
    """The pids whose parent is ``pid`` (from /proc; tests/server/workers, tests/deploy)."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # Field 4 (after the parenthesised name) is the parent pid.
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry.name))
    return out


def reset_peak_rss(pid: int) -> None:
    """Sets the peak RSS the kernel reports (VmHWM) back to the current RSS."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def wait_ready(proc: subprocess.Popen[Any], url: str, log: Any, timeout: float) -> bool:
    """Whether GET ``url`` answered 200 within ``timeout`` seconds; raises with the
    server's ``log()`` if its process exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{log()}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    return False


@pytest.fixture(scope="session")
def perf_analyzer() -> str:
    """Triton's perf_analyzer (tritonclient 2.41's binary, in its own cached virtualenv,
    installed by scripts/install-perf-analyzer.sh): its path."""
    out = subprocess.run(
        ["bash", str(ROOT / "scripts/install-perf-analyzer.sh")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    path = out.stdout.strip().splitlines()[-1]
    assert Path(path).is_file(), out
    return path


def run_perf_analyzer(pa: str, *args: str) -> str:
    """One bounded perf_analyzer run (``pa``: the ``perf_analyzer`` fixture's path): its
    report. 500 ms windows, at most 10 of them per concurrency, and a loose stability
    band (a loaded CI machine is noisy; tests check what it did, not its figures)."""
    cmd = [
        pa,
        "--measurement-interval",
        "500",
        "--max-trials",
        "10",
        "--stability-percentage",
        "100",
        *args,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{cmd}\n{r.stdout}\n{r.stderr}"
    return r.stdout


class Served:
    """One `inferwire serve` subprocess on 127.0.0.1."""

    def __init__(
        self,
        spec: str,
        *args: str,
        env: dict[str, str] | None = None,
        command: str = "serve",
        python: str = sys.executable,
    ) -> None:
        self.http_port = free_port()
        self.grpc_port = free_port()
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.grpc_target = f"127.0.0.1:{self.grpc_port}"
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"inferwire-{self.http_port}.log"
        cmd = [
            python,
            "-m",
            "inferwire",
            command,
            *([spec] if spec else []),
            "--host",
            "127.0.0.1",
            "--http-port",
            str(self.http_port),
            "--grpc-port",
            str(self.grpc_port),
            *args,
        ]
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            cmd,
            cwd=TESTS,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 30.0) -> None:
        if not wait_ready(self.proc, f"{self.url}/health/ping", self.log, timeout):
            self.stop()
            raise RuntimeError(f"server did not start within {timeout}s:\n{self.log()}")

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text()

    def channel(self) -> grpc.Channel:
        return grpc.insecure_channel(self.grpc_target)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


# Each test is marked with its tier, the folder it lives in: `pytest -m dialects`.
TIERS = ("server", "dialects", "client", "tools", "deploy", "docs")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.resolve().relative_to(ROOT).parts
        if parts[0] == "tests" and parts[1] in TIERS:
            item.add_marker(parts[1])
        elif parts[:3] == ("benchmarks", "peers", "tests"):
            item.add_marker("peers")


@pytest.fixture(scope="session")
def serve() -> Iterator[Any]:
    """Starts servers on demand; every one is stopped at the end of the session."""
    started: list[Served] = []

    def start(
        spec: str,
        *args: str,
        env: dict[str, str] | None = None,
        command: str = "serve",
        python: str = sys.executable,
    ) -> Served:
        s = Served(spec, *args, env=env, command=command, python=python)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


@pytest.fixture(scope="session")
def pb(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Python protobuf + gRPC modules generated from proto/ (as a Seldon client has them)."""
    from grpc_tools import protoc

    out = tmp_path_factory.mktemp("pb")
    protos = [
        "prediction.proto",
        *(str(p.relative_to(ROOT / "proto")) for p in (ROOT / "proto/tensorflow").rglob("*.proto")),
    ]
    import grpc_tools

    include = Path(grpc_tools.__file__).parent / "_proto"
    rc = protoc.main(
        [
            "protoc",
            f"-I{ROOT / 'proto'}",
            f"-I{include}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            *protos,
        ]
    )
    assert rc == 0, "protoc failed"
    sys.path.insert(0, str(out))
    import prediction_pb2
    import prediction_pb2_grpc

    class Modules:
        msgs = prediction_pb2
        grpc = prediction_pb2_grpc

    return Modules
