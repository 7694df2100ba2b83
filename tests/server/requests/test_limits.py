"""Connection limits, against a real server: a slow sender and an idle keep-alive
connection are closed after --header-timeout, --max-connections makes further connections
wait (REST and gRPC together) until one closes, and HTTP/2 announces --max-streams on
both ports."""

from __future__ import annotations

import signal
import socket
import time
from typing import Any

import grpc
import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings
import httpx
import pytest
from conftest import Served
from grpc_health.v1.health_pb2 import HealthCheckRequest
from grpc_health.v1.health_pb2_grpc import HealthStub

BODY = {"data": {"ndarray": [[1.0, 2.0]]}}


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the server closes ``sock`` (EOF or reset) within ``seconds``."""
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass  # a 408 or similar before the close is fine
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


@pytest.fixture(scope="module")
def strict() -> Any:
    s = Served("models:Echo", "--header-timeout", "1", "--max-connections", "3",
               "--max-streams", "7")  # fmt: skip
    yield s
    s.stop()


def test_a_slow_sender_is_closed(strict: Served) -> None:
    sock = socket.create_connection(("127.0.0.1", strict.http_port))
    sock.sendall(b"POST /api/v1.0/predictions HTTP/1.1\r\nhost: x\r\n")  # never finished
    started = time.monotonic()
    assert closed_within(sock, 5)
    assert 0.8 < time.monotonic() - started < 4
    sock.close()
    assert httpx.post(strict.url + "/api/v1.0/predictions", json=BODY).status_code == 200


def test_an_idle_keep_alive_connection_is_closed(strict: Served) -> None:
    sock = socket.create_connection(("127.0.0.1", strict.http_port))
    sock.sendall(b"GET /health/ping HTTP/1.1\r\nhost: x\r\n\r\n")
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    assert closed_within(sock, 5)  # idle: no next request within the header timeout
    sock.close()


def test_a_request_head_too_large_is_refused(strict: Served) -> None:
    sock = socket.create_connection(("127.0.0.1", strict.http_port), timeout=10)
    try:
        sock.sendall(b"GET /health/ping HTTP/1.1\r\nhost: x\r\nx-big: " + b"x" * 2_000_000)
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused before it was all sent
    try:
        assert sock.recv(200).startswith(b"HTTP/1.1 431")
    except ConnectionResetError:
        pass
    sock.close()
    assert httpx.get(strict.url + "/health/ping").status_code == 200


def test_past_max_connections_new_ones_wait_until_one_closes(strict: Served) -> None:
    # Three open connections take every permit (they are closed after the header
    # timeout, 1 s, silent ones too: each check below stays inside it).
    def health(timeout: float) -> Any:
        with grpc.insecure_channel(strict.grpc_target) as ch:
            return HealthStub(ch).Check(HealthCheckRequest(), timeout=timeout)

    held = [socket.create_connection(("127.0.0.1", strict.http_port)) for _ in range(3)]
    try:
        time.sleep(0.1)
        with pytest.raises(httpx.TimeoutException):
            httpx.post(strict.url + "/api/v1.0/predictions", json=BODY, timeout=0.3)
        # gRPC shares the limit.
        with pytest.raises(grpc.RpcError) as e:
            health(0.3)
        assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    finally:
        for s in held:
            s.close()
    time.sleep(0.2)
    assert httpx.post(strict.url + "/api/v1.0/predictions", json=BODY).status_code == 200
    assert health(5).status == 1  # SERVING


@pytest.mark.parametrize("port", ["http_port", "grpc_port"])
def test_http2_announces_max_streams(strict: Served, port: str) -> None:
    sock = socket.create_connection(("127.0.0.1", getattr(strict, port)), timeout=5)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    announced: dict[int, int] = {}
    deadline = time.monotonic() + 5
    while not announced and time.monotonic() < deadline:
        for event in conn.receive_data(sock.recv(65536)):
            if isinstance(event, h2.events.RemoteSettingsChanged):
                announced = {k: v.new_value for k, v in event.changed_settings.items()}
    sock.close()
    assert announced.get(h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS) == 7, announced


def test_bad_limits_are_start_errors() -> None:
    import subprocess
    import sys

    for args, message in [
        (["--max-connections", "0"], "max_connections: must be at least 1"),
        (["--header-timeout", "0"], "header_timeout: must be above 0"),
    ]:
        r = subprocess.run([sys.executable, "-m", "inferwire", "serve", "noop", *args],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        assert r.returncode != 0 and message in r.stderr, r.stderr


@pytest.mark.parametrize("port", ["http_port", "grpc_port"])
def test_a_rapid_reset_flood_closes_the_connection(strict: Served, port: str) -> None:
    """CVE-2023-44487: streams opened and reset at once, hundreds in one write. The server
    answers GOAWAY (ENHANCE_YOUR_CALM) and keeps serving others."""
    sock = socket.create_connection(("127.0.0.1", getattr(strict, port)), timeout=5)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 100})
    conn.local_settings.acknowledge()
    headers = [(":method", "POST"), (":scheme", "http"), (":authority", "x"),
               (":path", "/seldon.protos.Seldon/Predict"), ("content-type", "application/grpc")]  # fmt: skip
    for _ in range(300):
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, headers)
        conn.reset_stream(stream)
    sock.sendall(conn.data_to_send())
    goaway = None
    deadline = time.monotonic() + 5
    while goaway is None and time.monotonic() < deadline:
        try:
            data = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not data:
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ConnectionTerminated):
                goaway = event.error_code
    sock.close()
    assert goaway == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM, goaway
    assert httpx.post(strict.url + "/api/v1.0/predictions", json=BODY).status_code == 200


def test_an_open_grpc_stream_does_not_hold_shutdown_past_the_grace_period() -> None:
    """A health Watch stream never ends on its own; SIGTERM still stops the server within
    the grace period (plus a little)."""
    s = Served("models:Echo", "--grace-period", "1")
    ch = grpc.insecure_channel(s.grpc_target)
    watch = HealthStub(ch).Watch(HealthCheckRequest())
    assert next(watch).status == 1  # SERVING, and the stream stays open
    started = time.monotonic()
    s.proc.send_signal(signal.SIGTERM)
    # The whole server (the empty service name) turns NOT_SERVING as the drain starts.
    assert next(watch).status == 2
    assert s.stop(timeout=15) == 0
    assert time.monotonic() - started < 5
    ch.close()
