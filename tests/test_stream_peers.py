"""The streaming benchmark's peers (benchmarks/streaming.py) answer as the benchmark
expects: their smoke tests start each real server on 127.0.0.1 and read its streams with
that project's own clients (MLServer: httpx and MLServer's generated gRPC stubs;
PyTriton: tritonclient's stream API and httpx), counting 256 pieces of
``0123456789abcdef``, checking errors, the process tree and that nothing is left behind.

Opt-in: each runs only where its peer is installed (``bash
benchmarks/peers/mlserver/install.sh``, ``bash benchmarks/peers/pytriton/install.sh``);
CI installs no peers, so there they are skipped. About 5 s and 15 s.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "benchmarks" / "peers"


def run_smoke(python: Path, script: Path) -> str:
    if not python.exists():
        pytest.skip(f"{python.parent.parent.name} is not installed ({script.parent}/install.sh)")
    out = subprocess.run(
        [str(python), str(script)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert out.returncode == 0, f"{script.name} failed:\n{out.stdout}\n{out.stderr[-3000:]}"
    return out.stdout


def test_mlserver_streams() -> None:
    out = run_smoke(ROOT / ".tools/peers/mlserver/bin/python", PEERS / "mlserver/smoke_stream.py")
    assert "REST infer_stream: 256 pieces" in out, out
    assert "gRPC ModelStreamInfer (bare ModelInferResponse): 256 pieces" in out, out
    assert "streaming checks passed" in out, out


def test_pytriton_streams() -> None:
    out = run_smoke(ROOT / ".tools/peers/pytriton/bin/python", PEERS / "pytriton/smoke.py")
    assert "gRPC stream, 1 request: 256 pieces" in out, out
    assert "HTTP generate_stream: 256 pieces" in out, out
    assert "pieces=-1: error" in out, out
    assert "streaming checks passed" in out, out
