"""Three inferwire instances behind nginx (Debian's package), REST through an HTTP/1.1
upstream and gRPC through ``grpc_pass``: requests reach every instance, and while
clients send all along, one instance is killed and another drained (SIGTERM) without a
single request failing, because the balancer retries on the next instance
(benchmarks/nginx/balancer.conf says why each setting is needed).

One kind of call nginx cannot resend: a gRPC call it had already sent to an instance
that then dies (grpc_pass keeps no copy of request bodies). nginx answers it with a
Trailers-Only UNAVAILABLE, which gRPC's standard client retry policy resends; a drain
needs no client retry at all."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import httpx
import pytest
from conftest import ROOT, Served, _children
from nginx.balancer import Nginx

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"),
        reason="nginx is not installed (bash scripts/apt-install.sh nginx)",
    ),
]


@pytest.fixture
def cluster() -> Iterator[tuple[list[Served], Nginx]]:
    # --grace-period 5: a drained instance finishes its open requests, then exits.
    instances = [Served("models.py:Pid", "--grace-period", "5") for _ in range(3)]
    lb = Nginx([(s.http_port, s.grpc_port) for s in instances])
    try:
        yield instances, lb
    finally:
        lb.stop()
        for s in instances:
            s.stop()


def _rest_load(url: str, stop: threading.Event, out: list[tuple[int, str]]) -> None:
    with httpx.Client(timeout=30) as client:
        while not stop.is_set():
            try:
                r = client.post(url + "/api/v1.0/predictions", json={"strData": "0.005"})
                out.append((r.status_code, r.json().get("strData", r.text)))
            except httpx.TransportError as e:
                out.append((0, repr(e)))


# gRPC's standard retry policy (the channel's service config): resends a call that
# comes back UNAVAILABLE, as nginx answers the calls it cannot resend itself.
RETRY_UNAVAILABLE = json.dumps(
    {
        "methodConfig": [
            {
                "name": [{"service": "seldon.protos.Seldon"}],
                "retryPolicy": {
                    "maxAttempts": 3,
                    "initialBackoff": "0.05s",
                    "maxBackoff": "0.5s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            }
        ]
    }
)


def _channel(target: str, retry: bool) -> grpc.Channel:
    if retry:
        options = [("grpc.enable_retries", 1), ("grpc.service_config", RETRY_UNAVAILABLE)]
    else:
        options = [("grpc.enable_retries", 0)]  # not even gRPC's transparent retries
    return grpc.insecure_channel(target, options=options)


def _grpc_load(
    target: str, pb: Any, stop: threading.Event, out: list[tuple[str, str]], retry: bool
) -> None:
    with _channel(target, retry) as channel:
        stub = pb.grpc.SeldonStub(channel)
        while not stop.is_set():
            try:
                reply = stub.Predict(pb.msgs.SeldonMessage(strData="0.005"), timeout=30)
                out.append(("OK", reply.strData))
            except grpc.RpcError as e:
                out.append((e.code().name, e.details() or ""))


def _in_flight(s: Served) -> float:
    text = httpx.get(s.url + "/metrics", timeout=5).text
    lines = [x for x in text.splitlines() if x.startswith("inferwire_in_flight_requests")]
    return float(lines[0].split()[-1]) if lines else 0.0


def _busy(instances: list[Served]) -> Served:
    """The one instance running a call (waits up to 5 s for it)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        busy = [s for s in instances if s.proc.poll() is None and _in_flight(s) > 0]
        if len(busy) == 1:
            return busy[0]
        time.sleep(0.05)
    raise AssertionError("no single instance is running the call")


def _worker(s: Served) -> int:
    """The pid that answers for an instance: its supervisor's one worker."""
    (pid,) = _children(s.proc.pid)
    return pid


def _pids(instances: list[Served]) -> dict[str, int]:
    return {str(_worker(s)): i for i, s in enumerate(instances)}


def _kill(s: Served) -> None:
    """SIGKILL the instance's whole process tree, as the end of a container does (the
    supervisor alone would leave its worker to drain: it gets SIGTERM when orphaned)."""
    for pid in _children(s.proc.pid):
        os.kill(pid, signal.SIGKILL)
    s.proc.kill()


def test_requests_reach_every_instance(cluster: tuple[list[Served], Nginx], pb: Any) -> None:
    instances, lb = cluster
    pids = _pids(instances)
    seen = set()
    with httpx.Client(timeout=10) as client:
        for _ in range(60):
            r = client.post(lb.url + "/api/v1.0/predictions", json={"strData": "0"})
            assert r.status_code == 200, r.text
            seen.add(r.json()["strData"])
    assert seen == set(pids), (seen, pids)
    with grpc.insecure_channel(lb.grpc_target) as channel:
        stub = pb.grpc.SeldonStub(channel)
        got = {
            stub.Predict(pb.msgs.SeldonMessage(strData="0"), timeout=10).strData for _ in range(60)
        }
    assert got == set(pids), (got, pids)
    # V2 routes pass through the same upstreams.
    r = httpx.get(lb.url + "/v2/models/Pid", timeout=10)
    assert r.status_code == 200 and r.json()["name"] == "Pid", r.text


def _under_load(
    lb: Nginx, pb: Any, retry: bool, faults: Callable[[], None]
) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
    """6 REST clients (httpx: no retries of its own) and 4 gRPC clients sending through
    ``lb`` all along, 1.5 s before ``faults()`` and 3 s after; their replies."""
    stop = threading.Event()
    rest: list[tuple[int, str]] = []
    calls: list[tuple[str, str]] = []
    threads = [threading.Thread(target=_rest_load, args=(lb.url, stop, rest)) for _ in range(6)]
    threads += [
        threading.Thread(target=_grpc_load, args=(lb.grpc_target, pb, stop, calls, retry))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    try:
        time.sleep(1.5)
        faults()
        time.sleep(3.0)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not any(t.is_alive() for t in threads), "a client did not finish"
    assert len(rest) > 200 and len(calls) > 100, (len(rest), len(calls))
    return rest, calls


def _assert_all_answered(
    rest: list[tuple[int, str]], calls: list[tuple[str, str]], pids: dict[str, int], lb: Nginx
) -> None:
    failed = [o for o in rest if o[0] != 200]
    assert not failed, (failed[:5], len(failed), lb.errors()[-2000:])
    grpc_failed = [c for c in calls if c[0] != "OK"]
    assert not grpc_failed, (grpc_failed[:5], len(grpc_failed), lb.errors()[-2000:])
    # Every answer is the model's: the pid of an instance that computed it.
    assert {pid for _, pid in rest} <= set(pids), {pid for _, pid in rest} - set(pids)
    assert {pid for _, pid in calls} <= set(pids), {pid for _, pid in calls} - set(pids)


def test_killing_and_draining_instances_under_load_loses_nothing(
    cluster: tuple[list[Served], Nginx], pb: Any
) -> None:
    instances, lb = cluster
    pids = _pids(instances)

    def faults() -> None:
        _kill(instances[0])
        time.sleep(1.5)
        instances[1].proc.send_signal(signal.SIGTERM)  # drains: open requests finish

    rest, calls = _under_load(lb, pb, retry=True, faults=faults)
    assert instances[0].proc.wait(10) == -signal.SIGKILL
    assert instances[1].proc.wait(15) == 0, instances[1].log()
    _assert_all_answered(rest, calls, pids, lb)
    # Before the faults every instance served; after them the survivor serves all.
    assert {pid for _, pid in rest[:100]} == set(pids)
    survivor = str(_worker(instances[2]))
    tail = [pid for _, pid in rest[-50:]] + [pid for _, pid in calls[-50:]]
    assert set(tail) == {survivor}, set(tail)


def test_draining_an_instance_needs_no_client_retry(
    cluster: tuple[list[Served], Nginx], pb: Any
) -> None:
    """A drained instance answers what it accepted and refuses new connections, which
    nginx resends elsewhere: no client retries anything, gRPC included."""
    instances, lb = cluster
    pids = _pids(instances)
    drained = str(_worker(instances[0]))
    rest, calls = _under_load(
        lb, pb, retry=False, faults=lambda: instances[0].proc.send_signal(signal.SIGTERM)
    )
    assert instances[0].proc.wait(15) == 0, instances[0].log()
    _assert_all_answered(rest, calls, pids, lb)
    assert drained in {pid for _, pid in calls[:100]}, "the drained instance never served"
    tail = {pid for _, pid in rest[-50:]} | {pid for _, pid in calls[-50:]}
    assert tail == set(pids) - {drained}, tail


def test_a_call_nginx_cannot_resend_comes_back_unavailable_for_the_client_to_retry(
    cluster: tuple[list[Served], Nginx], pb: Any
) -> None:
    """The one window: a gRPC call nginx had sent to an instance that is then killed.
    nginx answers it UNAVAILABLE (Trailers-Only, from balancer.conf's error_page), and
    gRPC's standard retry policy resends it to a live instance."""
    instances, lb = cluster
    pids = _pids(instances)
    slow = pb.msgs.SeldonMessage(strData="1.5")  # the model sleeps 1.5 s
    with _channel(lb.grpc_target, retry=False) as channel:
        call = pb.grpc.SeldonStub(channel).Predict.future(slow, timeout=30)
        victim = _busy(instances)
        _kill(victim)
        victim.proc.wait(10)
        with pytest.raises(grpc.RpcError) as failed:
            call.result()
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE, failed.value
    assert failed.value.details() == "no instance could complete the call"

    with _channel(lb.grpc_target, retry=True) as channel:
        call = pb.grpc.SeldonStub(channel).Predict.future(slow, timeout=30)
        victim = _busy(instances)
        _kill(victim)
        victim.proc.wait(10)
        answer = call.result().strData
    survivor = [s for s in instances if s.proc.poll() is None]
    assert len(survivor) == 1 and answer == str(_worker(survivor[0])), (answer, pids)


def test_requests_queued_at_sigterm_are_answered() -> None:
    """Connections the kernel completed before SIGTERM (the worker stopped with SIGSTOP
    meanwhile, so they wait in the listen queue) carry requests that are answered in the
    drain: the accept loops take what is queued before the listener closes. Reset
    instead, such a gRPC call behind nginx could not be retried: nginx had sent it."""
    body = b'{"strData": "0"}'
    request = (
        b"POST /api/v1.0/predictions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
        b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    lost = []
    for _ in range(8):  # the race goes either way, about evenly
        server = Served("models.py:Pid", "--grace-period", "5")
        time.sleep(0.2)  # SIGTERM is handled a moment after the server answers
        (worker,) = _children(server.proc.pid)  # the supervisor's one worker
        os.kill(worker, signal.SIGSTOP)
        conns = [socket.create_connection(("127.0.0.1", server.http_port)) for _ in range(20)]
        for c in conns:
            c.settimeout(10)
            c.sendall(request)
        server.proc.send_signal(signal.SIGTERM)
        # Once the supervisor has forwarded it, the worker wakes to a pending SIGTERM.
        deadline = time.monotonic() + 10
        while "SIGTERM: stopping" not in server.log() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(worker, signal.SIGCONT)
        for c in conns:
            try:
                if not c.recv(4096).startswith(b"HTTP/1.1 200"):
                    lost.append("closed unanswered")
            except OSError as e:
                lost.append(repr(e))
            c.close()
        assert server.proc.wait(15) == 0
    assert not lost, (len(lost), lost[:3])


def test_the_scaleout_benchmark_runs(tmp_path: Any) -> None:
    """benchmarks/scaleout.py, very briefly: every cell answers every request."""
    out = tmp_path / "results"
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/scaleout.py"), "--seconds", "1",
         "--repeats", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    text = (out / "scaleout.md").read_text()
    assert "| 3 behind nginx |" in text and "| 1 direct |" in text, text
