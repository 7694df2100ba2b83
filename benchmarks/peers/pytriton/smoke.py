"""Smoke test of serve.py (PyTriton serving the decoupled ``tokens`` model), against
127.0.0.1 only.

Starts serve.py on free ports, then checks, counting pieces and their content:

- gRPC ``ModelStreamInfer`` with tritonclient's stream API (``start_stream``,
  ``async_stream_infer(..., enable_empty_final_response=True)``): one request answered with
  256 pieces of ``0123456789abcdef`` and then one empty response flagged
  ``triton_final_response``; 8 requests in flight on one stream at once; the request's
  parameters (5 pieces of 4 bytes); a request whose parameter is out of range gets an error
  and the stream goes on serving;
- HTTP ``POST /v2/models/tokens/generate_stream`` (Triton's generate extension, flat JSON
  body) read as server-sent events with httpx: 256 ``{"text": ...}`` events;
- that Triton listens on loopback only, that serve.py's process tree holds tritonserver
  and the Python backend's stub (so ``--server-pid`` of serve.py measures them all), and
  that nothing is left after SIGTERM.

    .tools/peers/pytriton/bin/python benchmarks/peers/pytriton/smoke.py \\
        [--instances 1] [--sync] [--server-log FILE]

Prints the time to the first piece and the median gap between pieces (rough: the client
is Python on the same machine).
"""

from __future__ import annotations

import argparse
import queue
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import tritonclient.grpc as grpcclient

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from stream_check import (  # noqa: E402
    PIECE,
    PIECES,
    Peer,
    Stream,
    check_timing,
    left_running,
    loopback_only,
    read_sse,
    venv_marker,
)

MODEL = "tokens"


def text_input() -> grpcclient.InferInput:
    inp = grpcclient.InferInput("text_input", [1], "BYTES")
    inp.set_data_from_numpy(np.array([b"hi"], dtype=object))
    return inp


def is_final(result: Any) -> bool:
    final = result.get_response().parameters.get("triton_final_response")
    return bool(final is not None and final.bool_param)


def grpc_streams(peer: Peer) -> list[str]:
    replies: queue.Queue[tuple[float, Any, Any]] = queue.Queue()
    client = grpcclient.InferenceServerClient(peer.grpc)
    lines = []
    try:
        client.start_stream(
            callback=lambda result, error: replies.put((time.monotonic(), result, error))
        )

        def run(ids: list[str], parameters: dict[str, Any] | None = None) -> dict[str, Stream]:
            """Sends the requests at once; collects their pieces until each has its final
            (empty) response or an error."""
            streams = {i: Stream() for i in ids}
            started = time.monotonic()
            for i in ids:
                client.async_stream_infer(
                    MODEL,
                    [text_input()],
                    request_id=i,
                    parameters=parameters,
                    enable_empty_final_response=True,
                )
            open_ = set(ids)
            while open_:
                at, result, error = replies.get(timeout=60)
                if error is not None:
                    # Triton's error replies carry no id here: one request in flight.
                    assert len(open_) == 1, f"error with {len(open_)} requests open: {error}"
                    (i,) = open_
                    streams[i].error = str(error)
                    open_.clear()
                    continue
                i = result.get_response().id
                assert i in open_, f"a reply for {i!r}, which is not open"
                if is_final(result):
                    assert result.as_numpy("text") is None, "the final response has outputs"
                    open_.discard(i)
                    continue
                streams[i].pieces.append(result.as_numpy("text").tolist())
                streams[i].times.append(at - started)
            return streams

        (one,) = run(["g-1"]).values()
        assert all(p == [PIECE] for p in one.pieces), one.pieces[:3]
        lines.append(check_timing("gRPC stream, 1 request", one))
        many = run([f"m-{i}" for i in range(8)])
        for s in many.values():
            assert all(p == [PIECE] for p in s.pieces), s.pieces[:3]
            check_timing("gRPC stream, 8 requests", s)
        slowest = max(s.total_ms for s in many.values())
        lines.append(f"gRPC stream, 8 requests at once: all {8 * PIECES} in {slowest:.0f} ms")
        (few,) = run(["p-1"], {"pieces": 5, "piece_bytes": 4}).values()
        assert all(p == [PIECE[:4]] for p in few.pieces), few.pieces
        lines.append(check_timing("gRPC stream, pieces=5 piece_bytes=4", few, 5))
        (bad,) = run(["e-1"], {"pieces": -1}).values()
        assert bad.error and "pieces" in bad.error, bad.error
        lines.append(f"gRPC stream, pieces=-1: error {bad.error.splitlines()[-1][:100]!r}")
        (after,) = run(["a-1"]).values()
        lines.append(check_timing("gRPC stream after the error", after))
    finally:
        client.stop_stream()
        client.close()
    return lines


def rest(peer: Peer) -> list[str]:
    url = f"{peer.url}/v2/models/{MODEL}/generate_stream"
    lines = []
    with httpx.Client(timeout=60) as client:
        stream = read_sse(client, url, {"text_input": "hi"})
        for event in stream.pieces:
            got = (event["model_name"], event["text"])
            assert got == (MODEL, PIECE.decode()), event
        lines.append(check_timing("HTTP generate_stream", stream))
        few = read_sse(client, url, {"text_input": "hi", "parameters": {"pieces": 3}})
        lines.append(check_timing("HTTP generate_stream, pieces=3", few, 3))
        bad = read_sse(client, url, {"text_input": "hi", "parameters": {"pieces": -1}})
        message = bad.error or (bad.pieces and bad.pieces[-1].get("error"))
        assert message and "pieces" in str(message), (bad.error, bad.pieces)
        status = bad.error.split()[0] if bad.error else "200, an error event"
        lines.append(f"HTTP generate_stream, pieces=-1: {status}, the message names 'pieces'")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--instances", type=int, default=1)
    p.add_argument("--sync", action="store_true", help="serve.py --sync (a plain generator)")
    p.add_argument(
        "--server-log",
        type=argparse.FileType("w"),
        default=subprocess.DEVNULL,
        help="file for PyTriton's and Triton's log (default: discarded)",
    )
    args = p.parse_args()
    argv = [sys.executable, str(HERE / "serve.py"), "--instances", str(args.instances)]
    peer = Peer(argv + (["--sync"] if args.sync else []), args.server_log)
    try:
        listening = peer.listening()
        print(f"started in {peer.start_s:.1f} s, listening on {', '.join(listening)}")
        loopback_only(listening)
        tree = subprocess.run(
            ["ps", "-ww", "-o", "args=", "-p", ",".join(map(str, peer.tree()))],
            capture_output=True,
            text=True,
        ).stdout
        assert "bin/tritonserver" in tree, f"tritonserver is not below serve.py:\n{tree}"
        assert "triton_python_backend_stub" in tree, f"no backend stub below serve.py:\n{tree}"
        for check in (grpc_streams, rest):
            for line in check(peer):
                print(line, flush=True)
    finally:
        print(f"stopped in {peer.stop():.1f} s")
    left = left_running(venv_marker()) + left_running("tritonserver")
    if left:
        print(f"LEFT RUNNING: {left}")
        return 1
    print("no PyTriton or tritonserver process left; streaming checks passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
