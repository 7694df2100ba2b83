"""Streams whose reader never reads (issue 41): rounds of streamed replies to raw sockets
that send their request and then read nothing, the connection left open. Each stream is
ended by ``--stream-idle-timeout``; once ended, what it buffered must be freed and
``inferwire_streams_open`` must come back to 0, round after round, while the clients'
connections stay open (the server closes them: a reply cut short mid-body cannot be
finished on HTTP/1.1). Before the fix, rounds of 32 took the worker's RSS from 118 to
303 MB and the gauge to 148: each stalled connection kept its pieces."""

from __future__ import annotations

import json
import os
import socket
import time
from functools import partial
from typing import Any

import httpx
import numpy as np
import pytest
from conftest import _children, proc_status_kib
from prometheus_client.parser import text_string_to_metric_families
from tritonclient.grpc import service_pb2

ROUNDS = 3
STREAMS = 32
IDLE = 1.0


def gauge(url: str, name: str) -> float:
    text = httpx.get(url + "/metrics", timeout=20).text
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    )


def counted(url: str, name: str, **labels: str) -> float:
    text = httpx.get(url + "/metrics", timeout=20).text
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def unread_stream(port: int, body: bytes) -> socket.socket:
    """A connection that sends a streamed request and never reads its reply."""
    s = socket.socket()
    # Small receive buffers: the server's writes stall after little.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    s.connect(("127.0.0.1", port))
    s.sendall(
        b"POST /v2/models/model/infer_stream HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )
    return s


def round_over(url: str, ended_before: float) -> bool:
    """Whether a round's streams have all ended and none counts as open."""
    return (
        counted(url, "inferwire_streams_total") - ended_before == STREAMS
        and gauge(url, "inferwire_streams_open") == 0
    )


def wait_until(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


@pytest.mark.parametrize("model", ["Tokens", "AsyncTokens"], ids=["generator", "async-generator"])
def test_unread_sse_streams_release_their_buffers(serve: Any, model: str) -> None:
    server = serve(
        f"stream_models:{model}",
        "--model-name",
        "model",
        "--stream-max-open",
        str(STREAMS),
        "--stream-idle-timeout",
        str(IDLE),
    )
    (worker,) = _children(server.proc.pid) or {server.proc.pid}
    # 64 KiB pieces, far more than any buffer holds.
    body = json.dumps(
        {
            "inputs": [{"name": "x", "datatype": "INT64", "shape": [1], "data": [1]}],
            "parameters": {"n": 100_000, "size": 65_536},
        }
    ).encode()
    before = proc_status_kib(worker, "VmRSS")
    held: list[socket.socket] = []
    after: list[int] = []
    try:
        for r in range(ROUNDS):
            ended = counted(server.url, "inferwire_streams_total")
            held += [unread_stream(server.http_port, body) for _ in range(STREAMS)]
            # Every stream started (none refused for --stream-max-open: the last round's
            # are gone) and ended at the idle limit, its reader's connection still open.
            assert wait_until(partial(round_over, server.url, ended), IDLE + 20), (
                f"round {r}: {counted(server.url, 'inferwire_streams_total') - ended} ended, "
                f"{gauge(server.url, 'inferwire_streams_open')} still open"
            )
            after.append(proc_status_kib(worker, "VmRSS"))
        # What a client that reads at last finds: the reply cut off where the server
        # closed the connection, or (when the socket's buffers took the rest of it) the
        # limit's error as its last event.
        for s in held[:4]:
            s.settimeout(10)
            got = b""
            while not got.endswith(b"\r\n0\r\n\r\n"):
                piece = s.recv(1 << 20)
                if not piece:
                    break
                got += piece
            else:
                assert b"--stream-idle-timeout" in got[-300:], got[-300:]
    finally:
        for s in held:
            s.close()
    print(f"worker RSS: {before} KiB before, after each round {after}")
    # What the first round leaves (allocator arenas, the model's thread stacks) may stay;
    # later rounds add next to nothing. Unbounded, each round kept ~32 MB.
    assert after[-1] - after[0] < 16 * 1024, (before, after)
    # The first round's share: 33-50 MB measured (debug and release builds); unbounded,
    # three rounds kept ~100 MB.
    assert after[-1] - before < 64 * 1024, (before, after)


def test_unread_grpc_streams_stop_counting_and_let_go_of_their_pieces(serve: Any) -> None:
    """``ModelStreamInfer`` calls whose client never takes a reply: HTTP/2 flow control
    stops the server writing long before its socket fills, so nothing on the connection
    blocks; the stream is still ended at the idle limit, its queued pieces let go and the
    gauge back to 0, while the calls stay open. What HTTP/2 had already taken for a call
    (hyper's send buffer, about 400 KB a stream, which tonic does not let us set) stays
    until the call ends: bounded per call, so per round."""
    server = serve(
        "stream_models:Tokens",
        "--model-name",
        "model",
        "--stream-max-open",
        str(STREAMS),
        "--stream-idle-timeout",
        str(IDLE),
    )
    (worker,) = _children(server.proc.pid) or {server.proc.pid}
    req = service_pb2.ModelInferRequest(model_name="model", id="unread")
    req.inputs.add(name="x", datatype="INT64", shape=[1])
    req.raw_input_contents.append(np.array([1], np.int64).tobytes())
    req.parameters["n"].int64_param = 100_000
    req.parameters["size"].int64_param = 65_536
    before = proc_status_kib(worker, "VmRSS")
    channels, calls, after = [], [], []
    try:
        for r in range(ROUNDS):
            ended = counted(server.url, "inferwire_streams_total")
            ch = server.channel()
            channels.append(ch)
            method = ch.stream_stream(
                "/inference.GRPCInferenceService/ModelStreamInfer",
                request_serializer=service_pb2.ModelInferRequest.SerializeToString,
                response_deserializer=service_pb2.ModelStreamInferResponse.FromString,
            )
            # Calls left open, their replies never taken.
            calls += [method(iter([req])) for _ in range(STREAMS)]
            # Generous: on a loaded machine the 32 producers take long to fill their windows.
            assert wait_until(partial(round_over, server.url, ended), IDLE + 60), (
                f"round {r}: {counted(server.url, 'inferwire_streams_total') - ended} ended, "
                f"{gauge(server.url, 'inferwire_streams_open')} still open; "
                f"{len(os.listdir(f'/proc/{worker}/task'))} threads in the worker"
            )
            ended_by_limit = counted(server.url, "inferwire_streams_total", end="limited")
            assert ended_by_limit >= (r + 1) * STREAMS, ended_by_limit
            after.append(proc_status_kib(worker, "VmRSS"))
        assert all(c.running() or not c.done() for c in calls)
    finally:
        for c in calls:
            c.cancel()
        for ch in channels:
            ch.close()
    print(f"worker RSS: {before} KiB before, after each round {after}")
    # Each round's calls stay open: what HTTP/2 holds for them stays too, bounded per
    # call (hyper's ~400 KB send buffer, the window, a message being encoded): 1 MiB a
    # call allowed. The gauge above is what this test tells apart from before the fix.
    per_round = (after[-1] - after[0]) / (ROUNDS - 1)
    assert per_round < STREAMS * 1024, (before, after)
