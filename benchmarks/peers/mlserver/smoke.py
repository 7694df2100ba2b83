"""Smoke test of serve.py (MLServer with the no-op model), against 127.0.0.1 only.

For ``--parallel-workers 0`` and MLServer's default (1), in turn: starts serve.py on free
ports and times the start, checks that MLServer listens on 127.0.0.1 only, checks the echo
over V2 REST JSON (1 and 100,000 INT64 elements) and V2 gRPC ModelInfer with
``raw_input_contents`` (100,000 INT64, tritonclient.grpc), measures requests/s of small
REST requests with one client and with 8 client threads (one keep-alive ``http.client``
connection per thread) for a few seconds each, and the mean latency of the
100,000-element REST and gRPC requests, then sends SIGTERM, times the stop and checks that
no MLServer process is left.

    .tools/peers/mlserver/bin/python benchmarks/peers/mlserver/smoke.py [--seconds 5] \\
        [--calls 20] [--only 0]

Rough figures only: the client runs in Python on the same machine as the server. Latency
covers sending the (pre-encoded) request and reading the whole answer, not decoding it.
This script must not import mlserver: it and tritonclient.grpc both register the
protobuf package ``inference`` and cannot live in one process.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import smoke_checks as checks  # noqa: E402

MODEL = "noop"
INFER = f"/v2/models/{MODEL}/infer"
N = 100_000
# 100,000 INT64 values over the whole range, negatives and values past 2**53 included.
BIG = (np.arange(N, dtype=np.int64) - N // 2) * np.int64(92_233_720_368_547)
SMALL = json.dumps(
    {"inputs": [{"name": "input-0", "shape": [1], "datatype": "INT64", "data": [7]}]}
).encode()
LARGE = json.dumps(
    {"inputs": [{"name": "input-0", "shape": [N], "datatype": "INT64", "data": BIG.tolist()}]}
).encode()
HEADERS = {"Content-Type": "application/json"}


def post(conn: http.client.HTTPConnection, body: bytes) -> bytes:
    conn.request("POST", INFER, body=body, headers=HEADERS)
    reply = conn.getresponse()
    data = reply.read()
    if reply.status != 200:
        raise RuntimeError(f"POST {INFER}: {reply.status} {data[:300]!r}")
    return data


def check_rest(port: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for body, data in ((SMALL, [7]), (LARGE, BIG.tolist())):
            answer = json.loads(post(conn, body))
            (out,) = answer["outputs"]
            got = (out["name"], out["shape"], out["datatype"])
            assert got == ("output-0", [len(data)], "INT64"), got
            assert out["data"] == data, "REST echo differs"
    finally:
        conn.close()


def check_grpc(client: grpcclient.InferenceServerClient) -> None:
    result = grpc_infer(client)
    raw = result.get_response()
    assert len(raw.raw_output_contents) == 1, "expected raw_output_contents"
    (out,) = raw.outputs
    got = (out.name, list(out.shape), out.datatype)
    assert got == ("output-0", [N], "INT64"), got
    echoed = result.as_numpy("output-0")
    assert echoed is not None and echoed.dtype == np.int64, "no INT64 output"
    assert np.array_equal(echoed, BIG), "gRPC echo differs"


def grpc_infer(client: grpcclient.InferenceServerClient) -> grpcclient.InferResult:
    inp = grpcclient.InferInput("input-0", [N], "INT64")
    inp.set_data_from_numpy(BIG)  # raw_input_contents
    return client.infer(MODEL, [inp], client_timeout=30)


@contextmanager
def small_client(port: int) -> Iterator[Callable[[], object]]:
    """Small requests over one keep-alive connection."""
    with closing(http.client.HTTPConnection("127.0.0.1", port, timeout=30)) as conn:
        yield lambda: post(conn, SMALL)


def run(workers: int | None, args: argparse.Namespace) -> dict[str, Any]:
    http_port, grpc_port = checks.free_port(), checks.free_port()
    cmd = [
        sys.executable,
        str(HERE / "serve.py"),
        "--http-port",
        str(http_port),
        "--grpc-port",
        str(grpc_port),
    ]
    if workers is not None:
        cmd += ["--parallel-workers", str(workers)]
    serve = checks.Started(cmd, args.server_log)
    row: dict[str, Any] = {"start_s": serve.start_s}
    try:
        sockets = checks.listening(serve.server_group())  # `mlserver start` and its workers
        row["listen"] = sorted(set(sockets))
        checks.loopback_only(sockets)

        check_rest(http_port)
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
        try:
            check_grpc(client)
            row["rest_1c"] = checks.load(1, args.seconds, lambda: small_client(http_port))
            row["rest_8c"] = checks.load(8, args.seconds, lambda: small_client(http_port))
            with closing(http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)) as conn:
                row["rest_100k_ms"] = checks.mean_ms(lambda: post(conn, LARGE), args.calls)
            row["grpc_100k_ms"] = checks.mean_ms(lambda: grpc_infer(client), args.calls)
        finally:
            client.close()
    finally:
        row["stop_s"] = serve.stop(30)
    return row


def report(label: str, row: dict[str, Any]) -> bool:
    print(
        f"{label}: start {row['start_s']:.1f} s, "
        f"REST small {row['rest_1c']:.0f} req/s (1 client), {row['rest_8c']:.0f} req/s "
        f"(8 threads); 100k INT64 mean REST {row['rest_100k_ms']:.1f} ms, gRPC "
        f"{row['grpc_100k_ms']:.1f} ms; stop {row['stop_s']:.1f} s; listening "
        f"{', '.join(row['listen'])}; echo checks passed",
        flush=True,
    )
    return False


def main() -> int:
    p = checks.arguments(__doc__ or "", "MLServer's log", 5.0, 20)
    p.add_argument("--only", help="comma-separated parallel_workers values; 'default' = 1")
    args = p.parse_args()
    configs: list[int | None] = [0, None]
    if args.only:
        configs = [None if w == "default" else int(w) for w in args.only.split(",")]
    labels = {f"parallel_workers={'default (1)' if w is None else w}": w for w in configs}
    return checks.each(labels, lambda w: run(w, args), report, "MLServer")


if __name__ == "__main__":
    raise SystemExit(main())
