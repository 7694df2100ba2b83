"""benchmarks/peer_servers.py measures every cell against inferwire: run here with no peer
(``--only inferwire``) and short cells, it starts the real servers, sends every workload
with ``inferwire bench attack`` and writes its tables. The peers' own smoke tests
(test_peer_*.py) check that each peer answers the same requests; CI installs no peers.
About 40 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_every_workload_is_answered_by_inferwire(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            *(sys.executable, "benchmarks/peer_servers.py", "--only", "inferwire"),
            *("--seconds", "0.3", "--out", str(tmp_path)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads((tmp_path / "peer_servers.json").read_text())
    cells = results["cells"]["inferwire"]
    # small: REST JSON and gRPC raw at 1, 8, 64 clients; 100k: three encodings; images:
    # four forms at three sizes.
    assert len(cells) == 6 + 3 + 12, sorted(cells)
    for key, cell in cells.items():
        assert cell["ok"] == 1.0, key
        assert cell["rps"] > 0 and cell["server_cpu_us"] > 0, key
    assert {"100k|REST binary||1", "images|gRPC base64|1080x1920|20"} <= set(cells)
    md = (tmp_path / "peer_servers.md").read_text()
    assert "## Summary" in md and "| inferwire | REST JSON |" in md
    assert "`--workers " in md  # the launch settings stated beside the figures
