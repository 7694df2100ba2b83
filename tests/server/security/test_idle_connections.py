"""Idle-connection limits on every listener (issue 41): on the REST port, the gRPC port
and the metrics-only port, a client that connects and sends nothing, and one that sends
its request's first bytes one a second (slowloris: an HTTP/1.1 head, or HTTP/2's
preface), is closed once the head's time limit has passed (``--header-timeout`` on the
REST and gRPC ports; 10 s on the metrics port). A flood of idle connections to the
metrics port, more than it serves at once and kept coming, cannot keep a scrape from
being answered: each new connection pushes out the oldest."""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from conftest import free_port

HEAD = 2.0  # --header-timeout
METRICS_HEAD = 10.0  # the metrics port's own
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HTTP1_HEAD = b"GET /prometheus HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 64 + b"\r\n\r\n"


def closed_after(port: int, trickle: bytes, limit: float) -> float:
    """Seconds until the server closed a connection that sends `trickle` a byte a
    second (nothing, if empty) and reads only to see the close; fails past `limit`."""
    s = socket.create_connection(("127.0.0.1", port))
    started = time.monotonic()
    try:
        for i in range(int(limit) + 5):
            s.settimeout(1.0)
            if i < len(trickle):
                try:
                    s.send(trickle[i : i + 1])
                except OSError:
                    return time.monotonic() - started
            try:
                while data := s.recv(65536):
                    del data  # the server's HTTP/2 settings, or its error reply
                return time.monotonic() - started
            except TimeoutError:
                continue
            except OSError:
                return time.monotonic() - started
        raise AssertionError(f"port {port} kept the connection open past {limit} s")
    finally:
        s.close()


def test_silent_and_trickling_connections_are_closed_on_every_listener(serve: Any) -> None:
    metrics_port = free_port()
    server = serve("noop", "--header-timeout", str(HEAD), "--metrics-port", str(metrics_port))
    cases = {
        "rest, silent": (server.http_port, b"", HEAD),
        "rest, HTTP/1.1 head a byte a second": (server.http_port, HTTP1_HEAD, HEAD),
        "rest, h2c preface a byte a second": (server.http_port, H2_PREFACE, HEAD),
        "grpc, silent": (server.grpc_port, b"", HEAD),
        "grpc, preface a byte a second": (server.grpc_port, H2_PREFACE, HEAD),
        "metrics, silent": (metrics_port, b"", METRICS_HEAD),
        "metrics, head a byte a second": (metrics_port, HTTP1_HEAD, METRICS_HEAD),
    }
    with ThreadPoolExecutor(len(cases)) as pool:
        took = {
            name: pool.submit(closed_after, port, trickle, limit + 3)
            for name, (port, trickle, limit) in cases.items()
        }
        took_s = {name: round(f.result(), 1) for name, f in took.items()}
    print(took_s)
    for name, (_, _, limit) in cases.items():
        assert limit - 0.5 <= took_s[name] <= limit + 3, (name, took_s[name])
    # Still serving.
    assert httpx.get(server.url + "/health/ping").status_code == 200


def test_a_flood_of_idle_connections_cannot_blind_a_scrape(serve: Any) -> None:
    metrics_port = free_port()
    server = serve("noop", "--metrics-port", str(metrics_port))
    stop = threading.Event()
    opened = [0]

    def flood() -> None:
        held: list[socket.socket] = []
        try:
            while not stop.is_set():
                try:
                    held.append(socket.create_connection(("127.0.0.1", metrics_port)))
                    opened[0] += 1
                except OSError:
                    pass
                held = held[-400:]  # the attacker's own file descriptors
                time.sleep(0.01)
        finally:
            for s in held:
                s.close()

    flooder = threading.Thread(target=flood)
    flooder.start()
    try:
        time.sleep(2)  # far more than the 32 it serves at once, and more coming
        for _ in range(5):
            started = time.monotonic()
            r = httpx.get(f"http://127.0.0.1:{metrics_port}/prometheus", timeout=5)
            assert r.status_code == 200 and "inferwire_" in r.text
            assert time.monotonic() - started < 2
            time.sleep(0.5)
    finally:
        stop.set()
        flooder.join()
    assert opened[0] > 100, opened
    assert httpx.get(server.url + "/health/ping").status_code == 200
