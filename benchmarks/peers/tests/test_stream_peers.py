"""The streaming benchmark's peers (benchmarks/streaming.py) answer as the benchmark
expects: their smoke tests start each real server on 127.0.0.1 and read its streams with
that project's own clients (MLServer: httpx and MLServer's generated gRPC stubs;
PyTriton: tritonclient's stream API and httpx), counting 256 pieces of
``0123456789abcdef``, checking errors, the process tree and that nothing is left behind.

Opt-in: each runs only where its peer is installed (``bash
benchmarks/peers/mlserver/install.sh``, ``bash benchmarks/peers/pytriton/install.sh``);
CI installs no peers, so there they are skipped. About 5 s and 25 s (PyTriton's also
checks its unary models: benchmarks/peers/pytriton/README.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from peer_smoke import run_smoke

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.optin
def test_mlserver_streams() -> None:
    out = run_smoke("mlserver", "mlserver", "smoke_stream.py")
    assert "REST infer_stream: 256 pieces" in out, out
    assert "gRPC ModelStreamInfer (bare ModelInferResponse): 256 pieces" in out, out
    assert "streaming checks passed" in out, out


@pytest.mark.optin
@pytest.mark.slow
def test_pytriton_streams() -> None:
    out = run_smoke("pytriton", "pytriton")
    assert "gRPC stream, 1 request: 256 pieces" in out, out
    assert "HTTP generate_stream: 256 pieces" in out, out
    assert "pieces=-1: error" in out, out
    assert "streaming checks passed" in out, out
    # The same smoke test checks the unary models of issue 22's comparison (noop, images).
    assert "noop gRPC raw, 100,000 INT64: echoed" in out, out
    assert "images HTTP binary: answered" in out, out
    assert "unary checks passed" in out, out


def _has_streaming() -> bool:
    try:
        import inferwire.streaming  # noqa: F401  (the server side of issue 21)
    except ImportError:
        return False
    return True


def _events(reply: httpx.Response) -> list[dict[str, Any]]:
    assert reply.status_code == 200, reply.text[:500]
    assert reply.headers["content-type"].startswith("text/event-stream")
    return [json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:")]


@pytest.mark.skipif(not _has_streaming(), reason="this inferwire does not stream yet")
@pytest.mark.parametrize("cls", ["Tokens", "TokensSync"])
def test_inferwire_serves_the_benchmark_model(cls: str) -> None:
    """benchmarks/models/stream_tokens.py, as benchmarks/streaming.py serves it: the same
    pieces as the peers, and the same request parameters."""
    sys.path.insert(0, str(ROOT / "tests"))  # tests/conftest.py, also when run on its own
    from conftest import Served

    server = Served(f"../benchmarks/models/stream_tokens.py:{cls}", "--model-name", "tokens")
    url = f"{server.url}/v2/models/tokens/infer_stream"
    body: dict[str, Any] = {
        "inputs": [{"name": "text_input", "shape": [1], "datatype": "BYTES", "data": ["hi"]}]
    }
    try:
        events = _events(httpx.post(url, json=body, timeout=30))
        assert len(events) == 256
        for event in events:
            (out,) = event["outputs"]
            assert (out["name"], out["datatype"], out["data"]) == (
                "text",
                "BYTES",
                ["0123456789abcdef"],
            ), out
        few = {**body, "parameters": {"pieces": 3, "piece_bytes": 4, "delay_s": 0}}
        events = _events(httpx.post(url, json=few, timeout=30))
        assert [e["outputs"][0]["data"] for e in events] == [["0123"]] * 3
        bad = httpx.post(url, json={**body, "parameters": {"pieces": -1}}, timeout=30)
        assert "pieces" in bad.text, bad.text[:500]
        assert bad.status_code != 200 or '"error"' in bad.text, bad.text[:500]
    finally:
        server.stop()
