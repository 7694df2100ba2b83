"""The virtualenvs of other projects' clients (seldon-core's, kserve's), made by their
scripts in scripts/ (cached: a second call installs nothing), for tests/dialects/."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def client_venv(script: str) -> str:
    """The python of the virtualenv ``scripts/SCRIPT`` makes (it prints it last)."""
    r = subprocess.run(
        ["bash", str(ROOT / "scripts" / script)], capture_output=True, text=True, timeout=900
    )
    if r.returncode != 0:
        pytest.fail(f"scripts/{script} failed:\n{r.stderr[-3000:]}")
    return r.stdout.strip().splitlines()[-1]


def run_client(python: str, script: Path, *args: str) -> dict[str, Any]:
    """Runs a client's calls script (one that prints a JSON object of its calls' results)
    with that client's ``python``."""
    r = subprocess.run([python, str(script), *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out: dict[str, Any] = json.loads(r.stdout)
    return out
