"""Smoke test of serve.py (BentoML serving service.py's ``Echo``), against 127.0.0.1 only.

For ``--workers cpu_count`` (serve.py's default) and ``--workers 1``, in turn: starts
serve.py on a free port and times the start, checks that the process tree holds the
expected worker processes and listens on 127.0.0.1 only, then checks with httpx, and with
BentoML's own client (``bentoml.SyncHTTPClient``), asserting on content:

- the echo: ``/echo`` with 1 and 100,000 INT64 (negatives and values past 2**53
  included), ``/echo_ndarray`` with 100,000, ``/echo_batched`` with 8 requests at once of
  different lengths (each gets its own slice back); a value past INT64 and bad JSON: 400;
- seed 001's requests: ``/basic``, ``/base64``, ``/binary`` (the raw body), ``/upload``
  (multipart); bad base64 and an empty image: 400;
- a streamed answer (``/pieces``): the pieces, and that the sleeps between them show;
- ``/metrics`` (Prometheus text), ``/readyz``, ``/livez``;
- requests/s of small ``/echo`` requests, 1 client and 8 client threads (one keep-alive
  connection each), for ``--seconds`` each (1 s): rough, the client is Python on the same
  machine;

then sends SIGTERM, times the stop and checks that no process of the virtualenv is left.

    .tools/peers/bentoml/bin/python benchmarks/peers/bentoml/smoke.py [--seconds 1] \\
        [--only cpu_count,1] [--server-log FILE]
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from pathlib import Path

import bentoml
import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import smoke_checks as checks  # noqa: E402

N = 100_000
# 100,000 INT64 values over the whole range, negatives and values past 2**53 included.
BIG = [(i - N // 2) * 92_233_720_368_547 for i in range(N)]
SMALL = json.dumps({"data": [7]}).encode()
ANSWER = {"prediction1": [0.1, 0.2, 0.3], "prediction2": {"a": 1}}
BASIC = {"field1": "a" * 100, "field2": "b" * 100, "field3": 42, "field4": {"x": 1, "y": 2}}
# Not a real JPEG: the service never decodes the image (as in seed 001).
IMAGE = bytes(range(256)) * 1024
PIECE = "0123456789abcdef"


def cpu_count() -> int:
    """The workers ``cpu_count`` starts: BentoML counts the CPUs its cgroup may use (a
    container's quota), which os.cpu_count() does not (pinned version's internals)."""
    from bentoml._internal.resource import system_resources

    return int(system_resources()["cpu"]) or 1


def check_echo(client: httpx.Client) -> list[str]:
    for data in ([7], BIG):
        reply = client.post("/echo", json={"data": data})
        assert reply.status_code == 200, reply.text[:300]
        assert reply.json() == data, "/echo differs"
    reply = client.post("/echo_ndarray", json={"data": BIG})
    assert reply.status_code == 200 and reply.json() == BIG, reply.text[:300]

    # Batched: 8 requests at once, each of its own length, each answered with its own data.
    sent = [BIG[i * 1000 : i * 1000 + 1 + i] for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda d: client.post("/echo_batched", json={"data": d}), sent))
    for reply, data in zip(got, sent, strict=True):
        assert reply.status_code == 200 and reply.json() == data, reply.text[:300]
    reply = client.post("/echo_batched", json={"data": BIG})
    assert reply.status_code == 200 and reply.json() == BIG, reply.text[:300]

    for body, what in ((b'{"data": [9223372036854775808]}', "less than"), (b'{"data": [1', "JSON")):
        reply = client.post("/echo", content=body, headers={"Content-Type": "application/json"})
        assert reply.status_code == 400 and what in reply.text, (reply.status_code, reply.text)
    return [
        "echo: /echo 1 and 100,000 INT64, /echo_ndarray, /echo_batched (8 at once and 100,000) "
        "echoed; past INT64 and bad JSON -> 400"
    ]


def check_images(client: httpx.Client) -> list[str]:
    b64 = base64.b64encode(IMAGE).decode()
    for path, kwargs in (
        ("/basic", {"json": BASIC}),
        ("/base64", {"json": {"image": b64}}),
        ("/binary", {"content": IMAGE, "headers": {"Content-Type": "image/jpeg"}}),
        ("/binary", {"content": IMAGE, "headers": {"Content-Type": "application/octet-stream"}}),
        ("/upload", {"files": {"image": ("image.jpg", IMAGE, "image/jpeg")}}),
    ):
        reply = client.post(path, **kwargs)
        assert reply.status_code == 200 and reply.json() == ANSWER, (path, reply.text[:300])
    for path, kwargs in (
        ("/base64", {"json": {"image": "not base64!"}}),
        ("/base64", {"json": {"image": ""}}),
        ("/upload", {"files": {"image": ("image.jpg", b"", "image/jpeg")}}),
        ("/basic", {"json": {**BASIC, "field3": "x"}}),
    ):
        reply = client.post(path, **kwargs)
        assert reply.status_code == 400, (path, reply.status_code, reply.text[:300])
        assert "image" in reply.text or "field3" in reply.text, (path, reply.text[:300])
    # BentoML parses an empty body as "{}" (app.py's JSON serde), so an empty raw body
    # reaches the method as the two bytes b"{}": /binary cannot see that it was empty.
    reply = client.post("/binary", content=b"", headers={"Content-Type": "image/jpeg"})
    assert reply.status_code == 200, (reply.status_code, reply.text[:300])
    return [
        "images: /basic, /base64, /binary (image/jpeg, octet-stream), /upload (multipart) "
        "answered; bad base64, empty base64 or upload, bad field -> 400; an empty /binary "
        "body arrives as b'{}' (200)"
    ]


def check_stream(client: httpx.Client) -> list[str]:
    pieces, times = [], []
    started = time.monotonic()
    with client.stream("POST", "/pieces", json={"n": 50}) as reply:
        assert reply.status_code == 200, reply.read()[:300]
        ctype = reply.headers["content-type"]
        for chunk in reply.iter_text():
            pieces.append(chunk)
            times.append(time.monotonic() - started)
    assert "".join(pieces) == PIECE * 50, pieces[:3]
    assert times[-1] >= 49 * 0.001 * 0.9, "too fast for 49 sleeps of 1 ms"
    reply = client.post("/pieces", json={"n": -1})
    assert reply.status_code == 400 and "greater_than_equal" in reply.text, reply.text[:300]
    return [
        f"stream: /pieces n=50 -> {len(pieces)} chunks ({ctype}), first after "
        f"{times[0] * 1000:.1f} ms, all in {times[-1] * 1000:.0f} ms; n=-1 -> 400"
    ]


def check_endpoints(client: httpx.Client) -> list[str]:
    for path in ("/readyz", "/livez"):
        assert client.get(path).status_code == 200, path
    metrics = client.get("/metrics")
    assert metrics.status_code == 200, metrics.text[:300]
    assert 'bentoml_service_request_duration_seconds_count{endpoint="/echo"' in metrics.text
    # The batch-size histogram (one per worker) observes the jobs in each call. BentoML's
    # max_batch_size (100 here) counts elements along the batch dimension, not requests:
    # check_echo's 100,000-element request was cut into 1,000 jobs of 100, its 8 small
    # ones (36 elements) stayed whole.
    sizes = {"sum": 0.0, "count": 0.0}
    for line in metrics.text.splitlines():
        for key in sizes:
            if line.startswith(f"bentoml_service_adaptive_batch_size_{key}{{"):
                sizes[key] += float(line.rsplit(None, 1)[1])
    assert sizes["sum"] == 8 + N // 100, sizes
    return [
        "/readyz, /livez 200; /metrics: Prometheus text with per-endpoint histograms; "
        f"/echo_batched: {sizes['sum']:.0f} jobs (8 requests, 1 of 100,000 cut into 1,000) "
        f"in {sizes['count']:.0f} calls"
    ]


def check_own_client(url: str) -> list[str]:
    with bentoml.SyncHTTPClient(url, timeout=30) as client:
        assert client.echo(data=[7]) == [7]
        assert client.echo(data=BIG) == BIG
        assert client.basic(**BASIC) == ANSWER
    return ["bentoml.SyncHTTPClient: echo 1 and 100,000, basic answered"]


@contextmanager
def echo_client(port: int) -> Iterator[Callable[[], object]]:
    """Small /echo requests over one keep-alive connection."""
    with closing(http.client.HTTPConnection("127.0.0.1", port, timeout=30)) as conn:

        def echo() -> None:
            conn.request("POST", "/echo", SMALL, {"Content-Type": "application/json"})
            reply = conn.getresponse()
            body = reply.read()
            if reply.status != 200 or body != b"[7]":
                raise RuntimeError(f"/echo: {reply.status} {body[:100]!r}")

        yield echo


def say(line: str) -> None:
    print(f"  {line}", flush=True)


def run(workers: str, args: argparse.Namespace) -> None:
    port = checks.free_port()
    cmd = [sys.executable, str(HERE / "serve.py"), "--port", str(port), "--workers", workers]
    serve = checks.Started(cmd, args.server_log)
    try:
        procs = checks.tree(serve.proc.pid)
        service = [p for p, cmdline in procs.items() if "_bentoml_impl.worker.service" in cmdline]
        expected = cpu_count() if workers == "cpu_count" else int(workers)
        assert len(service) == expected, f"{len(service)} workers, not {expected}: {procs}"
        # Beside the service's port, the supervisor (circus) listens on two more ports for
        # its own control and pub/sub (ZeroMQ), on 127.0.0.1 too.
        addresses = serve.listening()
        assert f"127.0.0.1:{port}" in addresses, f"{port} is not among {addresses}"
        checks.loopback_only(addresses)
        say(
            f"started in {serve.start_s:.1f} s: {len(procs)} processes (serve.py, bentoml, "
            f"{len(service)} workers), listening on {', '.join(addresses)}"
        )
        with httpx.Client(base_url=serve.url, timeout=30) as client:
            for check in (check_echo, check_images, check_stream, check_endpoints):
                for line in check(client):
                    say(line)
        for line in check_own_client(serve.url):
            say(line)
        one = checks.load(1, args.seconds, lambda: echo_client(port))
        eight = checks.load(8, args.seconds, lambda: echo_client(port))
        say(f"/echo small: {one:.0f} req/s (1 client), {eight:.0f} req/s (8 threads)")
    finally:
        say(f"stopped in {serve.stop(30):.1f} s")


def main() -> int:
    p = checks.arguments(__doc__ or "", "BentoML's log", 1.0)
    p.add_argument("--only", default="cpu_count,1", help="comma-separated --workers values")
    args = p.parse_args()
    failed = False
    for workers in args.only.split(","):
        print(f"workers={workers}:", flush=True)
        try:
            run(workers, args)
        except Exception as e:
            failed = True
            say(f"FAILED {e!r}")
        failed |= checks.report_left("BentoML")
    if not failed:
        print("BentoML checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
