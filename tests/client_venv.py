"""The virtualenvs of other projects' clients (seldon-core's, kserve's), made by their
scripts in scripts/ (cached: a second call installs nothing), for tests/compat/."""

from __future__ import annotations

import subprocess
from pathlib import Path

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
