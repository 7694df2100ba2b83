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
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import smoke_checks as checks  # noqa: E402

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


@contextmanager
def small_client(url: str) -> Iterator[Callable[[], object]]:
    """Small requests over one keep-alive connection."""
    with httpx.Client(base_url=url, timeout=30, trust_env=False) as c:
        yield lambda: post(c, SMALL)


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
    port = checks.free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, str(HERE / "serve.py"), "--port", str(port), *CONFIGS[name]]
    env = dict(os.environ)
    if name == "features":
        env["LIT_SERVER_API_KEY"] = API_KEY
    serve = checks.Started(cmd, args.server_log, env)
    row: dict[str, Any] = {"name": name, "start_s": serve.start_s}
    try:
        pids = serve.server_group()  # LitServe's main process and all it started
        row["processes"] = len(pids)
        row["listen"] = sorted(set(checks.listening(pids)))
        checks.loopback_only(row["listen"])
        if name == "features":
            row["facts"] = check_features(url)
        else:
            check_echo(url)
            with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
                row["facts"] = bad_input(client, HEADERS)
            row["rest_1c"] = checks.load(1, args.seconds, lambda: small_client(url))
            row["rest_8c"] = checks.load(8, args.seconds, lambda: small_client(url))
            with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
                row["rest_100k_ms"] = checks.mean_ms(lambda: post(client, LARGE).read(), args.calls)
    finally:
        row["stop_s"] = serve.stop(30)
    return row


def report(name: str, row: dict[str, Any]) -> bool:
    head = (
        f"{name}: start {row['start_s']:.1f} s, {row['processes']} processes, stop "
        f"{row['stop_s']:.1f} s; listening {', '.join(row['listen'])}"
    )
    if name == "features":
        print(head + "; feature checks passed", flush=True)
    else:
        print(
            head + f"; REST small {row['rest_1c']:.0f} req/s (1 client), "
            f"{row['rest_8c']:.0f} req/s (8 threads); 100k INT64 mean "
            f"{row['rest_100k_ms']:.1f} ms; echo checks passed",
            flush=True,
        )
    for fact in row["facts"]:
        print(f"  {fact}", flush=True)
    return False


def main() -> int:
    p = checks.arguments(__doc__ or "", "LitServe's log", 2.0, 10)
    p.add_argument("--only", help="comma-separated configurations: " + ",".join(CONFIGS))
    args = p.parse_args()
    names = args.only.split(",") if args.only else list(CONFIGS)
    # relative: serve.py's processes may be named `.tools/peers/litserve/bin/python`.
    return checks.each(
        {n: n for n in names}, lambda n: run(n, args), report, "LitServe", relative=True
    )


if __name__ == "__main__":
    raise SystemExit(main())
