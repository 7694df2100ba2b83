"""The KServe peer (benchmarks/peers/kserve) answers as the benchmarks expect: its smoke
test starts KServe's real model server on 127.0.0.1 with the no-op model, for
``--workers`` 1 and 2, and checks the echo with real clients (httpx for V1 and V2 REST,
JSON and the binary tensor extension; KServe's own InferenceGRPCClient for V2 gRPC with
``raw_input_contents``), that it listens on loopback only, and that nothing is left
after SIGTERM.

Opt-in: runs only where the peer is installed (``bash benchmarks/peers/kserve/install.sh``);
CI installs no peers, so there it is skipped. About 15 s (two starts, 1 s of each load).
"""

from __future__ import annotations

import pytest
from peer_smoke import run_smoke

pytestmark = pytest.mark.optin


def test_kserve_peer_echoes_and_stops() -> None:
    out = run_smoke("kserve", "kserve", "smoke.py", "--seconds", "1", "--calls", "3")
    for workers in (1, 2):
        assert f"workers={workers}: start" in out, out
    assert out.count("echo checks passed") == 2, out
    assert out.count("no KServe process left") == 2, out
