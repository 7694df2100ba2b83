"""The BentoML peer (benchmarks/peers/bentoml) answers as the benchmarks expect: its smoke
test starts the real server (``bentoml serve``) on 127.0.0.1 with one worker per core and
with one worker, and checks with httpx and BentoML's own client the echo (1 and 100,000
INT64, plain, numpy and adaptive batching), seed 001's image requests, a streamed answer,
/metrics, the process tree and that nothing is left behind.

Opt-in: it runs only where the peer is installed (``bash
benchmarks/peers/bentoml/install.sh``); CI installs no peers, so there it is skipped.
About 15 s.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".tools/peers/bentoml/bin/python"
SMOKE = ROOT / "benchmarks/peers/bentoml/smoke.py"


def test_bentoml_peer() -> None:
    if not PYTHON.exists():
        pytest.skip(f"BentoML is not installed ({SMOKE.parent}/install.sh)")
    out = subprocess.run(
        [str(PYTHON), str(SMOKE)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert out.returncode == 0, f"smoke.py failed:\n{out.stdout}\n{out.stderr[-3000:]}"
    for workers in ("cpu_count", "1"):
        assert f"workers={workers}:" in out.stdout, out.stdout
    assert out.stdout.count("echo: /echo 1 and 100,000 INT64") == 2, out.stdout
    assert out.stdout.count("images: /basic, /base64, /binary") == 2, out.stdout
    assert out.stdout.count("stream: /pieces n=50 -> ") == 2, out.stdout
    assert out.stdout.count("no BentoML process left") == 2, out.stdout
    assert "BentoML checks passed" in out.stdout, out.stdout
