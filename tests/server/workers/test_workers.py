"""``--workers N``: the model is built once and N forked workers share the ports; a worker
killed under load is restarted while the others keep answering; SIGTERM under load
drains every worker and loses no request already in flight."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from pathlib import Path

import httpx
from conftest import Served, _children


def _pids_seen(url: str, n: int = 40) -> set[str]:
    seen = set()
    for _ in range(n):
        # A new connection each time: the kernel spreads connections, not requests.
        r = httpx.post(url + "/api/v1.0/predictions", json={"strData": "0"}, timeout=10)
        assert r.status_code == 200, r.text
        seen.add(r.json()["strData"])
    return seen


def _load(url: str, stop: threading.Event, out: list[tuple[float, str]], delay: str) -> None:
    """Requests on one keep-alive connection until ``stop``; records (start, outcome)."""
    with httpx.Client(timeout=10) as client:
        while not stop.is_set():
            start = time.monotonic()
            try:
                r = client.post(url + "/api/v1.0/predictions", json={"strData": delay})
                out.append((start, str(r.status_code)))
            except httpx.TransportError as e:
                out.append((start, type(e).__name__))
                time.sleep(0.02)


def test_the_model_is_built_once_and_workers_share_the_ports(tmp_path: Path) -> None:
    built = tmp_path / "built"
    s = Served("models.py:BuiltOnce", "--workers", "2", env={"BUILT_ONCE_FILE": str(built)})
    try:
        workers = _children(s.proc.pid)
        assert len(workers) == 2, workers
        assert built.read_text().split() == [str(s.proc.pid)]  # built by the supervisor only
        seen = _pids_seen(s.url)
        assert seen == {str(p) for p in workers}, (seen, workers)
        metrics = httpx.get(s.url + "/metrics").text
        assert re.search(r"^inferwire_workers 2$", metrics, re.M), metrics
        # Every worker counts into one set of metrics, whichever worker is scraped.
        totals = {
            re.search(
                r'route="predict",encoding="strData",code="200"\} (\d+)',
                httpx.get(s.url + "/metrics").text,
            ).group(1)  # type: ignore[union-attr]
            for _ in range(6)
        }
        assert totals == {"40"}, totals
    finally:
        assert s.stop() == 0


def test_a_killed_worker_is_restarted_and_the_others_keep_serving(tmp_path: Path) -> None:
    built = tmp_path / "built"
    s = Served("models.py:BuiltOnce", "--workers", "2", env={"BUILT_ONCE_FILE": str(built)})
    try:
        before = _children(s.proc.pid)
        stop = threading.Event()
        outcomes: list[tuple[float, str]] = []
        loaders = [
            threading.Thread(target=_load, args=(s.url, stop, outcomes, "0.01")) for _ in range(4)
        ]
        for t in loaders:
            t.start()
        time.sleep(0.5)
        victim = min(before)
        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()
        time.sleep(2.0)
        stop.set()
        for t in loaders:
            t.join(10)
        after = _children(s.proc.pid)
        assert len(after) == 2 and victim not in after, (before, after)
        # Requests after the restart all succeeded (connections on the killed worker
        # broke; the load threads reconnected to a live one).
        late = [o for start, o in outcomes if start > killed_at + 1.0]
        assert late and set(late) == {"200"}, late
        assert sum(1 for _, o in outcomes if o == "200") > 50
        assert f"(pid {victim}) was killed by SIGKILL" in s.log()
        assert _pids_seen(s.url) == {str(p) for p in after}
        metrics = httpx.get(s.url + "/metrics").text
        assert re.search(r"^inferwire_worker_restarts_total 1$", metrics, re.M), metrics
        assert re.search(r"^inferwire_workers 2$", metrics, re.M), metrics
        assert built.read_text().split() == [str(s.proc.pid)]  # restarts fork; no rebuild
    finally:
        assert s.stop() == 0


def test_sigterm_under_load_drains_every_worker(tmp_path: Path) -> None:
    built = tmp_path / "built"
    s = Served(
        "models.py:BuiltOnce",
        "--workers",
        "2",
        "--grace-period",
        "10",
        env={"BUILT_ONCE_FILE": str(built)},
    )
    stop = threading.Event()
    outcomes: list[tuple[float, str]] = []
    loaders = [
        threading.Thread(target=_load, args=(s.url, stop, outcomes, "0.3")) for _ in range(6)
    ]
    for t in loaders:
        t.start()
    time.sleep(1.0)
    sent_term = time.monotonic()
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(15) == 0
    stop.set()
    for t in loaders:
        t.join(15)
    # Every request that reached a worker was answered 200: the ones in flight at SIGTERM
    # (each takes 0.3 s) finished; later ones could only fail to connect.
    in_flight = [o for start, o in outcomes if start < sent_term - 0.05]
    assert len(in_flight) >= 6 and set(in_flight) == {"200"}, in_flight
    answered = [o for _, o in outcomes if o.isdigit()]
    assert set(answered) == {"200"}, answered
    assert "stopping 2 workers" in s.log()
    assert not _children(s.proc.pid)
