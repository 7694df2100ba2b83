"""Smoke test of MLServer's streaming (serve.py with the ``tokens/`` model folder), against
127.0.0.1 only.

Starts serve.py on free ports with ``--folder tokens --model tokens`` (its settings.json
has ``parallel_workers: 0``: MLServer 1.7.1 streams only from the server's own process),
then checks, counting pieces and their content:

- REST ``POST /v2/models/tokens/infer_stream`` read as server-sent events with httpx: 256
  pieces of ``0123456789abcdef`` by default, each a V2 InferenceResponse with the request's
  id; 5 pieces of 4 bytes when the request's parameters ask for them; 8 streams at once;
- gRPC ``ModelStreamInfer`` with MLServer's own generated stubs
  (``mlserver.grpc.dataplane_pb2_grpc``): one request per call, answered with bare
  ``ModelInferResponse`` messages, 256 of them;
- that it listens on loopback only, and that nothing of it is left after SIGTERM.

    .tools/peers/mlserver/bin/python benchmarks/peers/mlserver/smoke_stream.py \\
        [--server-log FILE]

Prints the time to the first piece and the median gap between pieces (rough: the client
is Python on the same machine). Imports mlserver's gRPC modules, so not tritonclient.grpc
(both register the protobuf package ``inference``).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import httpx
from mlserver.grpc import dataplane_pb2 as pb
from mlserver.grpc import dataplane_pb2_grpc as pb_grpc

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from smoke_checks import add_server_log  # noqa: E402
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
BODY = {"inputs": [{"name": "text_input", "shape": [1], "datatype": "BYTES", "data": ["hi"]}]}


def check_rest_piece(event: dict[str, Any], piece: bytes, request_id: str | None = None) -> None:
    (out,) = event["outputs"]
    got = (out["name"], out["datatype"], out["shape"], out["data"])
    assert got == ("text", "BYTES", [1], [piece.decode()]), got
    assert event["model_name"] == MODEL, event["model_name"]
    if request_id is not None:
        assert event["id"] == request_id, (event["id"], request_id)


def rest(peer: Peer) -> list[str]:
    url = f"{peer.url}/v2/models/{MODEL}/infer_stream"
    lines = []
    with httpx.Client(timeout=30) as client:
        stream = checked(client, url, {**BODY, "id": "req-1"}, request_id="req-1")
        lines.append(check_timing("REST infer_stream", stream))
        body = {**BODY, "parameters": {"pieces": 5, "piece_bytes": 4}}
        few = checked(client, url, body, PIECE[:4])
        lines.append(check_timing("REST infer_stream, pieces=5 piece_bytes=4", few, 5))
    streams: list[Stream] = []
    started = time.monotonic()

    def one() -> None:
        with httpx.Client(timeout=60) as client:
            streams.append(checked(client, url, BODY))

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(streams) == 8, f"{8 - len(streams)} of 8 concurrent streams failed"
    for s in streams:
        check_timing("REST concurrent", s)
    took = time.monotonic() - started
    lines.append(f"REST 8 streams at once: all {8 * PIECES} pieces in {took:.2f} s")
    return lines


def checked(
    client: httpx.Client,
    url: str,
    body: dict[str, Any],
    piece: bytes = PIECE,
    request_id: str | None = None,
) -> Stream:
    """One REST stream, every event checked."""
    stream = read_sse(client, url, body)
    for event in stream.pieces:
        check_rest_piece(event, piece, request_id)
    return stream


def grpc_stream(peer: Peer) -> str:
    request = pb.ModelInferRequest(model_name=MODEL, id="g-1")
    text = request.inputs.add(name="text_input", datatype="BYTES", shape=[1])
    text.contents.bytes_contents.append(b"hi")
    stream = Stream()
    with grpc.insecure_channel(peer.grpc) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        started = time.monotonic()
        for reply in stub.ModelStreamInfer(iter([request]), timeout=60):
            (out,) = reply.outputs
            got = (out.name, out.datatype, list(out.shape), list(out.contents.bytes_contents))
            assert got == ("text", "BYTES", [1], [PIECE]), got
            assert reply.model_name == MODEL and reply.id == "g-1", (reply.model_name, reply.id)
            stream.add(got[3][0], started)
    return check_timing("gRPC ModelStreamInfer (bare ModelInferResponse)", stream)


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_server_log(p, "MLServer's log")
    args = p.parse_args()
    argv = [sys.executable, str(HERE / "serve.py"), "--folder", str(HERE / MODEL)]
    peer = Peer([*argv, "--model", MODEL], args.server_log)
    try:
        print(f"started in {peer.start_s:.1f} s, listening on {', '.join(peer.listening())}")
        loopback_only(peer.listening())
        for line in rest(peer):
            print(line, flush=True)
        print(grpc_stream(peer), flush=True)
    finally:
        print(f"stopped in {peer.stop():.1f} s")
    left = left_running(venv_marker())
    if left:
        print(f"LEFT RUNNING: {left}")
        return 1
    print("no MLServer process left; streaming checks passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
