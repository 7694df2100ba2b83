"""The LitServe peer (benchmarks/peers/litserve) answers as the peer benchmarks expect: its
smoke test starts the real LitServe on 127.0.0.1 with serve.py's settings (the fastest on
CPU, per LitServe's docs), with batching on, and with streaming and an API key, and talks
to it with httpx: the echo of 1 and 100,000 INT64 values (content checked), the 401
without the key, the streamed pieces, bad input, listening on loopback only, and that no
process is left after SIGTERM.

Opt-in: it runs only where the peer is installed (``bash
benchmarks/peers/litserve/install.sh``); CI installs no peers, so there it is skipped.
About 25 s.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".tools/peers/litserve/bin/python"
SMOKE = ROOT / "benchmarks/peers/litserve/smoke.py"


def test_litserve_peer_smoke() -> None:
    if not PYTHON.exists():
        pytest.skip(f"LitServe is not installed ({SMOKE.parent}/install.sh)")
    # Short load phases: the figures are not asserted, only that requests succeed.
    out = subprocess.run(
        [str(PYTHON), str(SMOKE), "--seconds", "1", "--calls", "3"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert out.returncode == 0, f"smoke.py failed:\n{out.stdout}\n{out.stderr[-3000:]}"
    for name in ("fastest", "batching"):
        assert f"{name}: start" in out.stdout and "echo checks passed" in out.stdout, out.stdout
    assert "feature checks passed" in out.stdout, out.stdout
    assert "no X-API-Key: 401" in out.stdout, out.stdout
    assert "stream: 3 pieces" in out.stdout, out.stdout
    assert out.stdout.count("no LitServe process left") == 3, out.stdout
    assert "LEFT RUNNING" not in out.stdout and "FAILED" not in out.stdout, out.stdout
