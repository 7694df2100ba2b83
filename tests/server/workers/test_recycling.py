"""Workers replaced with nothing lost: recycled after ``--max-requests`` or
``--max-worker-memory`` while a client keeps sending, restarted when the model ends the
process (even with one worker: it runs under the supervisor too), and a SIGKILLed
worker's share of the shared accept queue answered by the others."""

from __future__ import annotations

import os
import signal
from typing import Any

import grpc
import httpx
from conftest import Served
from test_faults import _metric, _wait_for
from test_workers import _children

PREDICT = "/api/v1.0/predictions"


def test_recycling_loses_no_request_over_rest_and_grpc(pb: Any) -> None:
    """One worker recycled after 20-22 answered requests while one client alternates
    REST (keep-alive) and gRPC calls: every reply is right, none fails."""
    s = Served("models.py:EchoPid", "--max-requests", "20", "--max-requests-jitter", "2")
    try:
        pids = set()
        with httpx.Client(timeout=10) as client, s.channel() as ch:
            stub = pb.grpc.SeldonStub(ch)
            for i in range(200):
                if i % 2:
                    reply = stub.Predict(pb.msgs.SeldonMessage(strData=f"g{i}"), timeout=10)
                    value = reply.strData
                    assert value.startswith(f"g{i}@"), value
                else:
                    r = client.post(s.url + PREDICT, json={"strData": f"r{i}"})
                    assert r.status_code == 200, r.text
                    value = r.json()["strData"]
                    assert value.startswith(f"r{i}@"), value
                pids.add(value.split("@")[1])
        # A worker stops taking connections within 0.1 s of its limit: a few more.
        assert len(pids) >= 4, pids
        assert _metric(s.url, "inferwire_worker_recycles_total") >= 3
        assert _metric(s.url, "inferwire_worker_restarts_total") == 0
        assert "recycling this worker: answered" in s.log()
        assert httpx.post(s.url + PREDICT, json={"strData": "after"}).status_code == 200
    finally:
        assert s.stop() == 0


def test_a_worker_over_max_worker_memory_is_replaced() -> None:
    s = Served("models.py:EchoPid", "--max-worker-memory", "400")
    try:
        first = httpx.post(s.url + PREDICT, json={"strData": "a"}).json()["strData"]
        pid = first.split("@")[1]
        seen = {pid}
        for _ in range(40):  # 50 MiB each: over the limit long before the end
            r = httpx.post(s.url + PREDICT, json={"strData": "leak:50"}, timeout=10)
            assert r.status_code == 200, r.text
            seen.add(r.json()["strData"].split("@")[1])
            if len(seen) > 1:
                break
        assert len(seen) > 1, "the leaking worker was never replaced"
        assert "is over max_worker_memory (400.0 MiB)" in s.log()
        assert _metric(s.url, "inferwire_worker_recycles_total") >= 1
    finally:
        assert s.stop() == 0


def test_a_single_worker_that_exits_is_restarted(pb: Any) -> None:
    """The model calls os._exit(3): that request fails, then the supervisor's new worker
    answers REST and gRPC again."""
    s = Served("models.py:EchoPid")
    try:
        (worker,) = _children(s.proc.pid)
        try:
            r = httpx.post(s.url + PREDICT, json={"strData": "exit"}, timeout=10)
            assert r.status_code >= 500, r.text
        except httpx.TransportError:
            pass  # the connection closed with the process: acceptable for this one

        def answers() -> bool:
            try:
                r = httpx.post(s.url + PREDICT, json={"strData": "b"}, timeout=2)
            except httpx.TransportError:
                return False
            return r.status_code == 200 and r.json()["strData"].startswith("b@")

        _wait_for(answers, 10, "the restarted worker answers REST")
        with s.channel() as ch:
            reply = pb.grpc.SeldonStub(ch).Predict(pb.msgs.SeldonMessage(strData="c"), timeout=10)
        assert reply.strData.startswith("c@") and not reply.strData.endswith(f"@{worker}")
        assert "exited with status 3" in s.log()
        assert _metric(s.url, "inferwire_worker_restarts_total") == 1
    finally:
        assert s.stop() == 0


def test_a_sigkilled_worker_loses_no_queued_connection() -> None:
    """300 requests, each on a new connection, with one of two workers SIGKILLed midway:
    all 300 answered (one accept queue for both, kept by the supervisor)."""
    s = Served("models.py:EchoPid", "--workers", "2")
    try:
        answered = 0
        for i in range(300):
            if i == 150:
                os.kill(min(_children(s.proc.pid)), signal.SIGKILL)
            r = httpx.post(s.url + PREDICT, json={"strData": str(i)}, timeout=10)
            assert r.status_code == 200, (i, r.text)
            assert r.json()["strData"].startswith(f"{i}@")
            answered += 1
        assert answered == 300
        _wait_for(lambda: len(_children(s.proc.pid)) == 2, 10, "a replacement worker")
    finally:
        assert s.stop() == 0


def test_grpc_unavailable_is_not_seen_in_recycling(pb: Any) -> None:
    """A gRPC-only client across recycles: no call fails."""
    s = Served("models.py:EchoPid", "--max-requests", "10")
    try:
        with s.channel() as ch:
            stub = pb.grpc.SeldonStub(ch)
            for i in range(60):
                try:
                    reply = stub.Predict(pb.msgs.SeldonMessage(strData=str(i)), timeout=10)
                except grpc.RpcError as e:
                    raise AssertionError(f"call {i}: {e.code()} {e.details()}") from e
                assert reply.strData.startswith(f"{i}@")
        assert _metric(s.url, "inferwire_worker_recycles_total") >= 2
    finally:
        assert s.stop() == 0


def test_workers_of_a_killed_supervisor_drain_and_exit() -> None:
    """SIGKILL to the supervisor (which cannot pass it on): its workers are told by the
    kernel (SIGTERM when orphaned), drain and exit, instead of serving on unsupervised."""
    s = Served("models.py:Echo", "--workers", "2", "--grace-period", "2")
    try:
        _wait_for(lambda: len(_children(s.proc.pid)) == 2, 10, "two workers")
        workers = _children(s.proc.pid)
        s.proc.kill()
        s.proc.wait(10)

        def gone() -> bool:
            return not any(os.path.exists(f"/proc/{pid}") and
                           "Z" not in open(f"/proc/{pid}/stat").read().split(")")[1][:3]
                           for pid in workers)  # fmt: skip

        _wait_for(gone, 10, "the orphaned workers to exit")
        try:
            httpx.get(s.url + "/health/ping", timeout=2)
            raise AssertionError("an orphaned worker still answers")
        except httpx.TransportError:
            pass
    finally:
        for pid in _children(s.proc.pid):
            os.kill(pid, signal.SIGKILL)
        s.stop()
