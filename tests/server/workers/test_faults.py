"""Faults the server must outlive: a model call that never returns (the request gets its
504, the server stops reporting live, and a worker is replaced), and clients that go away
mid-request (their queued work is dropped, never computed, and nothing stays counted)."""

from __future__ import annotations

import json
import re
import signal
import socket
import time

import grpc
import httpx
from conftest import Served
from test_workers import _children, _pids_seen

HANG = "1000"  # seconds: the Pid and Tally models sleep this long, far past every test


def _metric(url: str, name: str) -> float:
    text = httpx.get(url + "/metrics", timeout=5).text
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    assert m, f"{name} not in /metrics"
    return float(m.group(1))


def _predict(url: str, value: str, timeout: float = 10) -> httpx.Response:
    return httpx.post(url + "/api/v1.0/predictions", json={"strData": value}, timeout=timeout)


def _wait_for(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout}s: {what}")


def test_a_stuck_call_gets_504_and_the_server_reports_not_live_then_still_stops() -> None:
    # One process, nothing to replace it (supervised workers are replaced: next test).
    s = Served(
        "models.py:Pid",
        *("--timeout", "0.5", "--stuck-after", "1.5", "--grace-period", "1"),
        *("--supervisor", "off"),
    )
    try:
        assert httpx.get(s.url + "/live").status_code == 200
        r = _predict(s.url, HANG)
        assert r.status_code == 504, r.text
        assert "deadline" in r.json()["status"]["info"]
        _wait_for(lambda: httpx.get(s.url + "/live").status_code == 503, 10, "/live answers 503")
        live = httpx.get(s.url + "/live").json()
        assert live["status"] == "not live"
        assert 'model "Pid": a call has been running for' in live["error"]
        assert "stuck_after (1.5 s)" in live["error"]
        v2 = httpx.get(s.url + "/v2/health/live")
        assert v2.status_code == 503 and v2.json()["live"] is False, v2.text
        assert httpx.get(s.url + "/ready").status_code == 503
        with s.channel() as channel:
            call = channel.unary_unary(
                "/inference.GRPCInferenceService/ServerLive",
                request_serializer=lambda _: b"",
                response_deserializer=bytes,
            )
            # ServerLiveResponse{live: false}: the field is absent (proto3 default).
            assert call(None, timeout=5) == b""
        assert "no longer live" in s.log()
    finally:
        # The hung call must not keep the server from exiting: SIGTERM ends it within the
        # grace period and the few seconds given to running calls.
        started = time.monotonic()
        s.stop(timeout=20)
        took = time.monotonic() - started
    assert s.proc.returncode == 0, s.log()
    assert took < 12, f"stopping took {took:.1f}s:\n{s.log()}"


def test_a_worker_whose_call_is_stuck_is_replaced_and_the_others_keep_serving() -> None:
    s = Served(
        "models.py:Pid",
        "--workers",
        "2",
        "--timeout",
        "0.5",
        "--stuck-after",
        "1.5",
        "--grace-period",
        "1",
    )
    try:
        before = _children(s.proc.pid)
        assert len(before) == 2
        r = _predict(s.url, HANG)
        assert r.status_code == 504, r.text
        _wait_for(lambda: "restarting it" in s.log(), 20, "the stuck worker is restarted")
        assert "this worker drains and exits; the supervisor replaces it" in s.log()
        assert re.search(r"worker \d \(pid \d+\) exited with status 1", s.log()), s.log()
        _wait_for(lambda: len(_children(s.proc.pid) - before) == 1, 10, "a new worker")
        after = _children(s.proc.pid)
        assert len(after) == 2, (before, after)
        # Every request on a fresh connection now succeeds, on both workers.
        _wait_for(lambda: _pids_seen(s.url, 20) == {str(p) for p in after}, 10, "both serve")
        assert _metric(s.url, "inferwire_worker_restarts_total") == 1
        assert httpx.get(s.url + "/live").status_code == 200
    finally:
        assert s.stop(timeout=20) == 0, s.log()


def _raw_post(port: int, payload: dict[str, object]) -> socket.socket:
    """Sends a Seldon predict on a new connection and returns the open socket."""
    body = json.dumps(payload).encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        b"POST /api/v1.0/predictions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock


def test_queued_work_of_a_client_that_disconnects_is_never_run() -> None:
    # One model thread: a 1 s call runs while the others wait in the queue.
    s = Served("models.py:Tally")
    try:
        assert _predict(s.url, "0").json()["strData"] == "calls 1"
        running = _raw_post(s.http_port, {"strData": "1"})
        time.sleep(0.2)
        gone = [_raw_post(s.http_port, {"strData": "0"}) for _ in range(3)]
        time.sleep(0.2)
        assert (
            _metric(s.url, "inferwire_queue_depth") + _metric(s.url, "inferwire_in_flight_requests")
            == 4
        )
        for sock in gone:
            sock.close()  # the clients give up while their requests wait
        # gRPC: a call cancelled while queued behind the running one.
        with s.channel() as channel:
            predict = channel.unary_unary(
                "/seldon.protos.Model/Predict",
                request_serializer=lambda b: b,
                response_deserializer=bytes,
            )
            # SeldonMessage{strData: "0"}: field 5, length-delimited.
            future = predict.future(b"\x2a\x010", timeout=30)
            time.sleep(0.2)
            assert future.cancel()
        reply = running.recv(65536)
        running.close()
        assert b"calls 2" in reply, reply
        _wait_for(
            lambda: (
                _metric(s.url, "inferwire_queue_depth") == 0
                and _metric(s.url, "inferwire_in_flight_requests") == 0
            ),
            5,
            "nothing stays queued or in flight",
        )
        # The model ran the first two calls and this one: the four that left never ran.
        assert _predict(s.url, "0").json()["strData"] == "calls 3"
    finally:
        assert s.stop() == 0


def test_a_client_that_disconnects_while_its_call_runs_leaves_nothing_behind() -> None:
    s = Served("models.py:Tally")
    try:
        sock = _raw_post(s.http_port, {"strData": "0.5"})
        # The call must have started (not just be queued) before the client leaves.
        _wait_for(lambda: _metric(s.url, "inferwire_in_flight_requests") == 1, 5, "the call runs")
        sock.close()
        time.sleep(0.6)
        _wait_for(
            lambda: _metric(s.url, "inferwire_in_flight_requests") == 0,
            5,
            "the abandoned call is counted out once it returns",
        )
        # The running call could not be interrupted (it is Python) and finished; the
        # server answers the next request at once.
        started = time.monotonic()
        assert _predict(s.url, "0").json()["strData"] == "calls 2"
        assert time.monotonic() - started < 1
        with grpc.insecure_channel(s.grpc_target) as channel:
            grpc.channel_ready_future(channel).result(timeout=5)
    finally:
        assert s.stop() == 0


def test_a_sigterm_the_moment_the_server_answers_still_drains() -> None:
    """The signal handlers exist before the server serves: SIGTERM sent as soon as the
    first health check answers ends it with a drain (exit 0), never by the signal's
    default action (which a run of 20 such starts showed twice before the fix)."""
    import subprocess
    import sys

    from conftest import TESTS, free_port

    codes = []
    for _ in range(12):
        http = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "inferwire", "serve", "models.py:Pid", "--host", "127.0.0.1",
             "--http-port", str(http), "--grpc-port", str(free_port())],
            cwd=TESTS, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", http), timeout=5) as c:
                    c.sendall(b"GET /health/ping HTTP/1.1\r\nHost: x\r\n\r\n")
                    if c.recv(100).startswith(b"HTTP/1.1 200"):
                        proc.send_signal(signal.SIGTERM)
                        break
            except OSError:
                time.sleep(0.001)
        codes.append(proc.wait(20))
    assert codes == [0] * 12, codes
