"""The TorchServe peer (benchmarks/peers/torchserve) answers as the benchmarks expect: its
smoke test starts TorchServe 0.12 (Java frontend, Python backend workers) on 127.0.0.1
with the echo, seed-001 image and densenet161 handlers, checks the process tree, that every
listener is on loopback, the echo element by element, the image answers and densenet161's
top 5 over REST and gRPC (grpcio with stubs from TorchServe's inference.proto), /metrics,
bad input and model errors, token authorization when on, and that nothing is left after
SIGTERM.

Opt-in: runs only where the peer is installed (``bash benchmarks/peers/torchserve/install.sh``,
a 5.5 GB virtualenv: PyPI's torch); CI installs no peers, so there it is skipped. About
30 s (two starts: every model, then the token check).
"""

from __future__ import annotations

import pytest
from peer_smoke import run_smoke

pytestmark = [pytest.mark.optin, pytest.mark.slow]


def test_torchserve_peer_serves_and_stops() -> None:
    out = run_smoke("torchserve", "torchserve", "smoke.py", "--seconds", "1", timeout=600)
    for line in ("workers=2: start", "noop: REST JSON 1 and 100,000 INT64", "densenet161: REST binary",
                 "no TorchServe process left", "token auth: REST without a key -> 400",
                 "smoke checks passed"):  # fmt: skip
        assert line in out, out
