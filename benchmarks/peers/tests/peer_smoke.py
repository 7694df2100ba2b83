"""Runs a peer server's smoke test (benchmarks/peers/NAME/SCRIPT) with that peer's own
virtualenv: skipped where the peer is not installed (CI installs none), failed with the
script's output where it fails; returns its stdout for the caller's assertions."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def run_smoke(
    venv: str, folder: str, script: str = "smoke.py", *args: str, timeout: float = 300
) -> str:
    """``venv``: the folder under .tools/peers; ``folder``: under benchmarks/peers."""
    python = ROOT / ".tools/peers" / venv / "bin/python"
    path = ROOT / "benchmarks/peers" / folder / script
    if not python.exists():
        pytest.skip(f"{venv} is not installed (bash {path.parent}/install.sh)")
    out = subprocess.run(
        [str(python), str(path), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )
    assert out.returncode == 0, f"{script} failed:\n{out.stdout}\n{out.stderr[-3000:]}"
    return out.stdout
