"""Smoke test of noop_app.py: starts it with each of the seed's six configurations in
turn, times the start, measures requests/s roughly (one client, then 8 client threads,
each over one keep-alive connection, for a few seconds each, GET with no body as Ray's
microbenchmark sends and POST with a small JSON body), sends SIGTERM and checks that no
Ray process (raylet, gcs_server, workers) is left.

    .tools/peers/ray/bin/python benchmarks/peers/ray/smoke.py [--seconds 5] [--only 1,4]

Rough figures only: the client runs in Python on the same machine as the server.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import smoke_checks as checks  # noqa: E402

# The seed's six configurations: (max_batch_size, max_concurrent_queries, num_replicas).
CONFIGS = [(1, 1, 1), (1, 10000, 1), (10000, 10000, 1), (1, 1, 8), (1, 10000, 8), (10000, 10000, 8)]
BODY = json.dumps({"data": {"ndarray": [1]}}).encode()


def ray_processes() -> list[str]:
    """Ray's daemons (gcs_server, raylet), its Python helpers and its workers (ray::...)."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    left = []
    for line in out.splitlines()[1:]:
        words = line.split()[1:4]  # the executable and its first arguments
        if words and (
            words[0].startswith("ray::")
            or words[0].endswith(("/raylet", "/gcs_server"))
            or any("/site-packages/ray/" in w for w in words[1:])
        ):
            left.append(line.strip())
    return left


@contextmanager
def noop_client(port: int, method: str) -> Iterator[Callable[[], object]]:
    """``method /noop`` (POST with a small JSON body) over one keep-alive connection."""
    body = BODY if method == "POST" else None
    headers = {"Content-Type": "application/json"} if body else {}
    with closing(http.client.HTTPConnection("127.0.0.1", port, timeout=30)) as conn:

        def call() -> None:
            conn.request(method, "/noop", body=body, headers=headers)
            reply = conn.getresponse()
            reply.read()
            if reply.status != 200:
                raise RuntimeError(f"{method} /noop: {reply.status}")

        yield call


def load(port: int, method: str, clients: int, seconds: float) -> float:
    return checks.load(clients, seconds, lambda: noop_client(port, method))


def trial(
    batch: int, queries: int, replicas: int, seconds: float, ready_s: float
) -> dict[str, Any]:
    port = checks.free_port()
    argv = [
        sys.executable, str(HERE / "noop_app.py"), "--port", str(port),
        "--num-replicas", str(replicas), "--max-batch-size", str(batch),
        "--max-concurrent-queries", str(queries), "--ready-timeout", str(ready_s),
    ]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True)
    result: dict[str, Any] = {"config": (batch, queries, replicas)}
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("READY "):
                break
        else:
            raise RuntimeError(f"exited with {proc.wait()} before READY")
        result["start_s"] = round(time.monotonic() - started, 1)
        load(port, "GET", 1, 1.0)  # warm-up
        for method in ("GET", "POST"):
            for clients in (1, 8):
                result[f"{method} {clients}c"] = round(load(port, method, clients, seconds))
    finally:
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)  # the app alone, not its group: it must clean up
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            result["stop"] = "KILLED after 60 s"
        result["stop_s"] = round(time.monotonic() - t, 1)
        time.sleep(1)
        left = ray_processes()
        result["left"] = left
        if left:  # clean up for the next trial
            for line in left:
                try:
                    os.kill(int(line.split()[0]), signal.SIGKILL)
                except ProcessLookupError:
                    pass
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--only", default="", help="comma-separated 1-based config numbers")
    p.add_argument("--ready-timeout", type=float, default=150.0)
    args = p.parse_args()
    if ray_processes():
        print("Ray processes already running:\n" + "\n".join(ray_processes()), file=sys.stderr)
        return 1
    chosen = [int(i) for i in args.only.split(",") if i] or range(1, len(CONFIGS) + 1)
    for i in chosen:
        try:
            r = trial(*CONFIGS[i - 1], args.seconds, args.ready_timeout)
        except Exception as e:
            r = {"config": CONFIGS[i - 1], "error": str(e)}
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
