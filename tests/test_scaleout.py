"""Three inferwire instances behind nginx (Debian's package), REST through an HTTP/1.1
upstream and gRPC through ``grpc_pass``: requests reach every instance, and while
clients send all along, one instance is killed and another drained (SIGTERM) without a
single request failing, because the balancer retries on the next instance
(benchmarks/nginx/balancer.py says why each retry setting is needed). A gRPC call in
flight on the instance that is killed is the one exception nginx cannot retry: it comes
back UNAVAILABLE, and the client resends it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import pytest
from conftest import ROOT, Served
from nginx.balancer import Nginx

pytestmark = pytest.mark.skipif(
    shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"),
    reason="nginx is not installed (bash scripts/apt-install.sh nginx)",
)


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


# nginx cannot resend a gRPC call whose request it had begun streaming to an instance
# that then dies (grpc_pass never buffers request bodies): such a call comes back
# UNAVAILABLE (HTTP 502 from nginx), and the client resends it, as gRPC clients do for
# UNAVAILABLE. Only calls in flight on the killed instance can need it.
def _grpc_load(target: str, pb: Any, stop: threading.Event, out: list[tuple[str, str]]) -> None:
    with grpc.insecure_channel(target) as channel:
        stub = pb.grpc.SeldonStub(channel)
        while not stop.is_set():
            for attempt in range(3):
                try:
                    reply = stub.Predict(pb.msgs.SeldonMessage(strData="0.005"), timeout=30)
                    out.append(("OK" if attempt == 0 else "OK after a retry", reply.strData))
                    break
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.UNAVAILABLE or attempt == 2:
                        out.append((e.code().name, e.details() or ""))
                        break


def _pids(instances: list[Served]) -> dict[str, int]:
    return {str(s.proc.pid): i for i, s in enumerate(instances)}


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


def test_killing_and_draining_instances_under_load_loses_nothing(
    cluster: tuple[list[Served], Nginx], pb: Any
) -> None:
    instances, lb = cluster
    pids = _pids(instances)
    stop = threading.Event()
    rest: list[tuple[int, str]] = []
    calls: list[tuple[str, str]] = []
    threads = [threading.Thread(target=_rest_load, args=(lb.url, stop, rest)) for _ in range(6)]
    threads += [
        threading.Thread(target=_grpc_load, args=(lb.grpc_target, pb, stop, calls))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    time.sleep(1.5)
    instances[0].proc.send_signal(signal.SIGKILL)
    time.sleep(1.5)
    instances[1].proc.send_signal(signal.SIGTERM)  # drains: open requests finish
    time.sleep(3.0)
    stop.set()
    for t in threads:
        t.join(30)
    assert instances[0].proc.wait(10) == -signal.SIGKILL
    assert instances[1].proc.wait(15) == 0, instances[1].log()

    failed = [o for o in rest if o[0] != 200]
    assert not failed, (failed[:5], len(failed), lb.errors()[-2000:])
    assert {pid for _, pid in rest} <= set(pids)
    grpc_failed = [c for c in calls if not c[0].startswith("OK")]
    assert not grpc_failed, (grpc_failed[:5], len(grpc_failed), lb.errors()[-2000:])
    # Only calls in flight on the killed instance could need their client's retry.
    assert sum(1 for c in calls if c[0] == "OK after a retry") <= 4
    assert {pid for _, pid in calls} <= set(pids)
    assert len(rest) > 200 and len(calls) > 100, (len(rest), len(calls))
    # After both faults the survivor answers everything.
    survivor = str(instances[2].proc.pid)
    tail = [pid for _, pid in rest[-50:]] + [pid for _, pid in calls[-50:]]
    assert set(tail) == {survivor}, set(tail)


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
