"""Smoke test of serve.py (LitServe with the no-op model), against 127.0.0.1 only.

Three servers in turn, each started with serve.py on a free port (start timed) and
stopped with SIGTERM to serve.py (stop timed; then no process of the virtualenv may be
left), each checked to listen on 127.0.0.1 only:

- ``fastest`` (serve.py's defaults: the CPU settings LitServe documents as fastest): the
  echo of 1 and of 100,000 INT64 values over REST JSON with httpx (content checked, with
  and without ``Accept-Encoding: gzip``), requests/s of small requests with 1 client and
  with 8 client threads (one keep-alive httpx client each) for ``--seconds``, the mean
  latency of ``--calls`` 100,000-element requests;
- ``batching`` (``--max-batch-size 8 --batch-timeout 0.001``): the same;
- ``features`` (``--stream``, with ``LIT_SERVER_API_KEY`` set): a request without the key
  is refused, the streamed answer arrives as one piece per element, and what LitServe
  answers to a bad body, a missing field and ``GET /metrics`` is printed.

    .tools/peers/litserve/bin/python benchmarks/peers/litserve/smoke.py [--seconds 2] \\
        [--calls 10] [--only fastest,batching,features] [--server-log FILE]

Rough figures only: the client runs in Python on the same machine as the server.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
N = 100_000
# 100,000 INT64 values over the whole range, negatives and values past 2**53 included.
BIG = [(i - N // 2) * 92_233_720_368_547 for i in range(N)]
SMALL = json.dumps({"data": [7]}).encode()
LARGE = json.dumps({"data": BIG}).encode()
# No Accept-Encoding: as `inferwire bench attack` sends (LitServe gzips answers of 1,000
# bytes or more for clients that accept gzip; see README.md).
HEADERS = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
API_KEY = "smoke-key"
CONFIGS: dict[str, list[str]] = {
    "fastest": [],
    "batching": ["--max-batch-size", "8", "--batch-timeout", "0.001"],
    "features": ["--stream"],
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ps(columns: str) -> list[list[str]]:
    out = subprocess.run(["ps", "-eo", columns], capture_output=True, text=True).stdout
    return [line.split(None, columns.count(",")) for line in out.splitlines()[1:]]


def venv_processes() -> list[str]:
    """Processes, other than this one, running the virtualenv's Python (serve.py,
    LitServe's main process, API servers, inference workers, its multiprocessing manager
    and resource tracker)."""
    venv = str(Path(sys.executable).parent.parent) + "/"
    # serve.py runs as `.tools/peers/litserve/bin/python` when started so: relative too.
    rel = os.path.relpath(venv) + "/"
    return [
        " ".join(row)
        for row in ps("pid,args")
        if (venv in row[1] or row[1].startswith(rel)) and int(row[0]) != os.getpid()
    ]


def group_pids(pgid: int) -> list[int]:
    return [int(pid) for pid, group in ps("pid,pgid") if int(group) == pgid]


def listening(pids: list[int]) -> list[str]:
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    return sorted(
        {line.split()[3] for line in out.splitlines() if any(f"pid={p}," in line for p in pids)}
    )


def post(client: httpx.Client, body: bytes, **kw: Any) -> httpx.Response:
    reply = client.post("/predict", content=body, headers=HEADERS, **kw)
    if reply.status_code != 200:
        raise RuntimeError(f"POST /predict: {reply.status_code} {reply.text[:300]!r}")
    return reply


def check_echo(url: str) -> None:
    with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
        for body, data in ((SMALL, [7]), (LARGE, BIG)):
            reply = post(client, body)
            assert reply.json() == {"data": data}, "REST echo differs"
            assert "content-encoding" not in reply.headers, reply.headers
        # httpx's own default (Accept-Encoding: gzip, deflate): LitServe compresses.
        reply = client.post("/predict", content=LARGE, headers={"Content-Type": "application/json"})
        assert reply.status_code == 200 and reply.headers.get("content-encoding") == "gzip"
        assert reply.json() == {"data": BIG}, "gzipped REST echo differs"


def load(url: str, clients: int, seconds: float) -> float:
    counts = [0] * clients
    errors: list[str] = []
    stop = time.monotonic() + seconds

    def client(i: int) -> None:
        try:
            with httpx.Client(base_url=url, timeout=30, trust_env=False) as c:
                while time.monotonic() < stop:
                    post(c, SMALL)
                    counts[i] += 1
        except Exception as e:
            errors.append(repr(e))

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(errors[0])
    return sum(counts) / (time.monotonic() - started)


def mean_ms(call: Callable[[], object], calls: int) -> float:
    call()  # warm-up
    started = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - started) / calls * 1000


def bad_input(client: httpx.Client, headers: dict[str, str]) -> list[str]:
    """What LitServe answers to a body that is not JSON and to one without ``data``; then
    checks that it still answers a good request."""
    facts = []
    for what, content in (("bad JSON", b"{"), ("no data field", b'{"x": 1}')):
        reply = client.post("/predict", content=content, headers=headers)
        facts.append(f"{what}: {reply.status_code} {reply.text[:200]!r}")
    reply = client.post("/predict", content=SMALL, headers=headers)
    assert reply.status_code == 200 and reply.text, (reply.status_code, reply.text)
    return facts


def check_features(url: str) -> list[str]:
    facts = []
    with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
        reply = client.post("/predict", content=SMALL, headers=HEADERS)
        assert reply.status_code == 401, (reply.status_code, reply.text)
        facts.append(f"no X-API-Key: {reply.status_code} {reply.text}")
        keyed = {**HEADERS, "X-API-Key": API_KEY}
        pieces = []
        data = [3, -1, 2**62]
        body = json.dumps({"data": data}).encode()
        with client.stream("POST", "/predict", content=body, headers=keyed) as reply:
            assert reply.status_code == 200, reply.status_code
            facts.append(f"stream content-type {reply.headers.get('content-type')}")
            for chunk in reply.iter_bytes():
                pieces.append(chunk)
        # LitServe ends each encode_response item with a newline (JSON lines).
        text = b"".join(pieces).decode()
        values = [json.loads(line)["data"] for line in text.splitlines()]
        assert values == data, (values, text)
        facts.append(f"stream: {len(values)} pieces {text!r}")
        facts += bad_input(client, keyed)
        reply = client.get("/metrics")
        facts.append(f"GET /metrics: {reply.status_code}")
        reply = client.get("/health")
        facts.append(f"GET /health (no key): {reply.status_code} {reply.text!r}")
    return facts


def run(name: str, args: argparse.Namespace) -> dict[str, Any]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, str(HERE / "serve.py"), "--port", str(port), *CONFIGS[name]]
    env = dict(os.environ)
    if name == "features":
        env["LIT_SERVER_API_KEY"] = API_KEY
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=args.server_log, text=True, env=env)
    row: dict[str, Any] = {"name": name}
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # serve.py gives up after its --ready-timeout
        if not line.startswith("READY"):
            raise RuntimeError(f"serve.py did not start: {line!r}")
        row["start_s"] = time.monotonic() - started
        children = [int(pid) for pid, ppid in ps("pid,ppid") if int(ppid) == proc.pid]
        (server_pid,) = children  # LitServe's main process, its group's leader
        pids = group_pids(server_pid)
        row["processes"] = len(pids)
        row["listen"] = listening(pids)
        bad = [a for a in row["listen"] if a.rsplit(":", 1)[0] != "127.0.0.1"]
        assert not bad, f"listens beyond 127.0.0.1: {bad}"
        if name == "features":
            row["facts"] = check_features(url)
        else:
            check_echo(url)
            with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
                row["facts"] = bad_input(client, HEADERS)
            row["rest_1c"] = load(url, 1, args.seconds)
            row["rest_8c"] = load(url, 8, args.seconds)
            with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
                row["rest_100k_ms"] = mean_ms(lambda: post(client, LARGE).read(), args.calls)
    finally:
        stopping = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        row["stop_s"] = time.monotonic() - stopping
    row["left"] = venv_processes()
    return row


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seconds", type=float, default=2.0, help="per requests/s measurement")
    p.add_argument("--calls", type=int, default=10, help="100,000-element calls timed")
    p.add_argument("--only", help="comma-separated configurations: " + ",".join(CONFIGS))
    p.add_argument(
        "--server-log",
        type=argparse.FileType("w"),
        default=subprocess.DEVNULL,
        help="file for LitServe's log (default: discarded)",
    )
    args = p.parse_args()
    names = args.only.split(",") if args.only else list(CONFIGS)
    failed = False
    for name in names:
        try:
            row = run(name, args)
        except Exception as e:
            failed = True
            print(f"{name}: FAILED {e!r}", flush=True)
            continue
        head = (
            f"{name}: start {row['start_s']:.1f} s, {row['processes']} processes, stop "
            f"{row['stop_s']:.1f} s; listening {', '.join(row['listen'])}"
        )
        if name == "features":
            print(head + "; feature checks passed", flush=True)
            for fact in row["facts"]:
                print(f"  {fact}", flush=True)
        else:
            print(
                head + f"; REST small {row['rest_1c']:.0f} req/s (1 client), "
                f"{row['rest_8c']:.0f} req/s (8 threads); 100k INT64 mean "
                f"{row['rest_100k_ms']:.1f} ms; echo checks passed",
                flush=True,
            )
            for fact in row["facts"]:
                print(f"  {fact}", flush=True)
        if row["left"]:
            failed = True
            print(f"  LEFT RUNNING: {row['left']}", flush=True)
        else:
            print("  no LitServe process left", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
