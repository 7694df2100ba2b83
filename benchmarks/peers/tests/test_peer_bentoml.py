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

import pytest
from peer_smoke import run_smoke

pytestmark = pytest.mark.optin


def test_bentoml_peer() -> None:
    out = run_smoke("bentoml", "bentoml")
    for workers in ("cpu_count", "1"):
        assert f"workers={workers}:" in out, out
    assert out.count("echo: /echo 1 and 100,000 INT64") == 2, out
    assert out.count("images: /basic, /base64, /binary") == 2, out
    assert out.count("stream: /pieces n=50 -> ") == 2, out
    assert out.count("no BentoML process left") == 2, out
    assert "BentoML checks passed" in out, out
