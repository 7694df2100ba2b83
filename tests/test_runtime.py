"""The request path around the model: calls never overlap, a full queue is refused at
once, and slow calls do not stall the other connections."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
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
