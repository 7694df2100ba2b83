"""The request path around the model: calls never overlap unless model threads are
asked for, a full queue is refused at once (REST and gRPC), slow calls do not stall the
other connections, deadlines drop queued requests, and `async def predict` works."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from seldon_client import rest


def test_model_is_never_called_concurrently(serve: Any) -> None:
    server = serve("models.py:Slow", "--io-threads", "2")
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda _: rest(server.url, {"strData": "0.02"}), range(16)))
    assert all(r.status_code == 200 for r in replies), [r.text for r in replies]
    assert all(r.json()["strData"].endswith("max concurrent calls 1") for r in replies)


def test_full_queue_is_refused_at_once_with_retry_after(serve: Any) -> None:
    server = serve("models.py:Slow", "--max-queue", "1")
    with ThreadPoolExecutor(5) as pool:
        replies = list(pool.map(lambda _: rest(server.url, {"strData": "0.5"}), range(5)))
    codes = sorted(r.status_code for r in replies)
    assert codes.count(200) >= 2 and 503 in codes, codes
    refused = next(r for r in replies if r.status_code == 503)
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["status"]["reason"] == "OVERLOADED"
    assert "already waiting for the model" in refused.json()["status"]["info"]


def test_slow_calls_do_not_stall_other_connections(serve: Any) -> None:
    server = serve("models.py:Slow", "--io-threads", "1")
    for _ in range(3):  # teach the server that this model is slow
        assert rest(server.url, {"strData": "0.05"}).status_code == 200
    done: list[str] = []
    slow = threading.Thread(
        target=lambda: done.append(rest(server.url, {"strData": "1.0"}).json()["strData"])
    )
    slow.start()
    threading.Event().wait(0.2)
    # With a single I/O thread, this answer proves the model ran elsewhere meanwhile.
    with httpx.Client() as client:
        for _ in range(5):
            assert client.get(server.url + "/health/ping").text == "pong"
            assert client.get(server.url + "/ready").status_code == 200
    assert not done, "the ping should have been answered while the model was busy"
    slow.join(10)
    assert done and done[0].startswith("slept 1.0")


def test_model_threads_run_calls_side_by_side(serve: Any) -> None:
    # time.sleep releases the GIL, as numpy and torch do in their kernels.
    server = serve("models.py:Slow", "--model-threads", "4")
    barrier = threading.Barrier(4)

    def call(_: int) -> httpx.Response:
        barrier.wait()
        return rest(server.url, {"strData": "0.3"})

    with ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(call, range(4)))
    assert all(r.status_code == 200 for r in replies), [r.text for r in replies]
    most = max(int(r.json()["strData"].rsplit(" ", 1)[1]) for r in replies)
    assert most >= 3, f"at most {most} calls overlapped with 4 model threads"


def test_async_predict(serve: Any) -> None:
    server = serve("models.py:AsyncEcho", "--model-threads", "2")
    with ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(lambda i: rest(server.url, {"data": {"ndarray": [[i]]}}), range(8)))
    assert [r.json()["data"]["ndarray"] for r in replies] == [[[i]] for i in range(8)]


def test_a_request_past_its_deadline_is_dropped_not_computed(serve: Any, pb: Any) -> None:
    import grpc
    from seldon_client import grpc_call

    server = serve("models.py:Tally", "--timeout", "0.4")
    first: list[httpx.Response] = []
    t = threading.Thread(target=lambda: first.append(rest(server.url, {"strData": "1.0"})))
    t.start()
    threading.Event().wait(0.1)
    # Queued behind the first call; its deadline passes while it waits.
    queued = rest(server.url, {"strData": "0"})
    assert queued.status_code == 504, queued.text
    assert queued.json()["status"]["reason"] == "DEADLINE_EXCEEDED"
    assert "--timeout" in queued.json()["status"]["info"]
    # A gRPC client's own deadline counts too.
    with server.channel() as ch:
        with pytest.raises(grpc.RpcError) as e:
            pb.grpc.SeldonStub(ch).Predict(pb.msgs.SeldonMessage(strData="0"), timeout=0.2)
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    t.join(10)
    assert first and first[0].status_code == 504  # the running call also timed out...
    threading.Event().wait(0.8)  # ...but runs to its end; then:
    later = rest(server.url, {"strData": "0"})
    assert later.status_code == 200
    # Only the first call and this one ran: the two expired requests were never computed.
    assert later.json()["strData"] == "calls 2"
    with server.channel() as ch:
        assert grpc_call(ch, pb, {"strData": "0"})["strData"] == "calls 3"
    metrics = httpx.get(server.url + "/metrics").text
    assert 'code="504"} 2' in metrics and 'code="DEADLINE_EXCEEDED"} 1' in metrics, metrics


def test_overload_is_refused_fast_over_grpc_too(serve: Any, pb: Any) -> None:
    import time

    import grpc

    server = serve("models.py:Slow", "--max-queue", "2")
    channels = [server.channel() for _ in range(12)]
    barrier = threading.Barrier(12)

    def call(ch: Any) -> tuple[str, float]:
        stub = pb.grpc.SeldonStub(ch)
        barrier.wait()
        start = time.monotonic()
        try:
            stub.Predict(pb.msgs.SeldonMessage(strData="0.2"), timeout=30)
            return "OK", time.monotonic() - start
        except grpc.RpcError as e:
            assert "already waiting for the model" in (e.details() or "")
            return e.code().name, time.monotonic() - start

    with ThreadPoolExecutor(12) as pool:
        results = list(pool.map(call, channels))
    for ch in channels:
        ch.close()
    codes = [c for c, _ in results]
    # One running, two waiting: the rest are refused at once.
    assert codes.count("OK") >= 3 and codes.count("RESOURCE_EXHAUSTED") >= 6, codes
    assert set(codes) <= {"OK", "RESOURCE_EXHAUSTED"}, codes
    # Refusals do not wait for the model (one call takes 0.2 s); the accepted wait for at
    # most the queue ahead of them, not for everything that was sent.
    refused = [t for c, t in results if c != "OK"]
    accepted = [t for c, t in results if c == "OK"]
    assert max(refused) < 0.2, refused
    assert max(accepted) < 0.2 * (codes.count("OK") + 1), accepted
