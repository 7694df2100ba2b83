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

import pytest
from peer_smoke import run_smoke

pytestmark = [pytest.mark.optin, pytest.mark.slow]


def test_litserve_peer_smoke() -> None:
    # Short load phases: the figures are not asserted, only that requests succeed.
    out = run_smoke("litserve", "litserve", "smoke.py", "--seconds", "1", "--calls", "3")
    for name in ("fastest", "batching"):
        assert f"{name}: start" in out and "echo checks passed" in out, out
    assert "feature checks passed" in out, out
    assert "no X-API-Key: 401" in out, out
    assert "stream: 3 pieces" in out, out
    assert out.count("no LitServe process left") == 3, out
    assert "LEFT RUNNING" not in out and "FAILED" not in out, out
