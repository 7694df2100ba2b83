"""The tritonserver peer (benchmarks/peers/tritonserver): the tritonserver binary of
PyTriton's wheel, run directly on a Triton model repository, answers the benchmark's
models (``blank``, ``bls_pipeline``, python_backend's ``add_sub``) through tritonclient
over HTTP and gRPC, stops on SIGTERM with nothing left, and Triton's own example clients
pass unchanged against the vendored python_backend examples (skipped by the smoke test
when ports 8000-8002 are taken: the clients call them).

Opt-in: runs only where the peer is installed (``bash benchmarks/peers/tritonserver/install.sh``);
CI installs no peers, so there it is skipped. About 15 s.
"""

from __future__ import annotations

import pytest
from peer_smoke import ROOT, run_smoke

pytestmark = pytest.mark.optin


def test_tritonserver_peer_answers_and_stops() -> None:
    site = ROOT / ".tools/peers/pytriton/lib"
    stub = (
        "python3.*/site-packages/pytriton/tritonserver/backends/python/triton_python_backend_stub"
    )
    stubs = list(site.glob(stub))
    if not stubs:
        pytest.skip(
            "no stub in the wheel's backends: bash benchmarks/peers/tritonserver/install.sh"
        )
    out = run_smoke("pytriton", "tritonserver", "smoke.py", "--vendored")
    for model in ("blank", "bls_pipeline", "add_sub"):
        for how in ("http:", "http binary:", "grpc:"):
            assert f"ok   {model:<12} {how}" in out, out
    assert "FAIL" not in out, out
    assert "none of its" in out, out
    assert "client.py (unchanged) exit 0" in out or "skip the vendored clients" in out, out
