"""Smoke test of serve.py (KServe's model server with the no-op model), 127.0.0.1 only.

For ``--workers`` 1 (KServe's default) and 2 (one REST process per core here), in turn:
starts serve.py on free ports and times the start, checks that every socket of its
process group listens on 127.0.0.1 only, then checks the echo with real clients:

- REST (httpx): V1 ``POST /v1/models/noop:predict`` with a small ``{"instances": [[7]]}``;
  V2 ``POST /v2/models/noop/infer`` as JSON with 1 and with 100,000 INT64 elements; V2
  with the binary tensor extension (``Inference-Header-Content-Length``), 100,000 INT64
  as 800,000 raw bytes, asked to answer in binary too.
- gRPC (KServe's own ``kserve.InferenceGRPCClient``): ``ModelInfer`` with the 100,000
  INT64 in ``raw_input_contents``, answered as ``raw_output_contents``.

Then a few seconds of load (small V1 requests, 1 client and 8 client threads, one
keep-alive connection each; ``--seconds`` each) and the mean latency of ``--calls``
100,000-element calls per form, all rough: the Python client shares the machine with the
server. Last it sends SIGTERM to serve.py, times the stop and checks that no process of
the virtualenv is left.

    .tools/peers/kserve/bin/python benchmarks/peers/kserve/smoke.py [--seconds 2] \\
        [--calls 10] [--only 1] [--server-log FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np

HERE = Path(__file__).resolve().parent
MODEL = "noop"
sys.path.insert(0, str(HERE.parent))
import smoke_checks as checks  # noqa: E402

V1 = f"/v1/models/{MODEL}:predict"
V2 = f"/v2/models/{MODEL}/infer"
N = 100_000
# 100,000 INT64 values over the whole range, negatives and values past 2**53 included.
BIG = (np.arange(N, dtype=np.int64) - N // 2) * np.int64(92_233_720_368_547)
SMALL_V1 = json.dumps({"instances": [[7]]}).encode()
SMALL_V2 = json.dumps(
    {"inputs": [{"name": "input-0", "shape": [1], "datatype": "INT64", "data": [7]}]}
).encode()
LARGE_V2 = json.dumps(
    {"inputs": [{"name": "input-0", "shape": [N], "datatype": "INT64", "data": BIG.tolist()}]}
).encode()
JSON = {"Content-Type": "application/json"}


def binary_request() -> tuple[bytes, dict[str, str]]:
    """The V2 binary tensor extension: a JSON header naming the input's byte size, then
    the raw little-endian bytes; the header's length goes in Inference-Header-Content-Length."""
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "input-0",
                    "shape": [N],
                    "datatype": "INT64",
                    "parameters": {"binary_data_size": BIG.nbytes},
                }
            ],
            "parameters": {"binary_data_output": True},
        }
    ).encode()
    headers = {
        "Content-Type": "application/octet-stream",
        "Inference-Header-Content-Length": str(len(header)),
    }
    return header + BIG.astype("<i8").tobytes(), headers


LARGE_BINARY, BINARY_HEADERS = binary_request()


def post(client: httpx.Client, path: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    reply = client.post(path, content=body, headers=headers)
    if reply.status_code != 200:
        raise RuntimeError(f"POST {path}: {reply.status_code} {reply.content[:300]!r}")
    return reply


def check_rest(client: httpx.Client) -> None:
    answer = post(client, V1, SMALL_V1, JSON).json()
    assert answer == {"predictions": [[7]]}, answer
    for body, data in ((SMALL_V2, [7]), (LARGE_V2, BIG.tolist())):
        (out,) = post(client, V2, body, JSON).json()["outputs"]
        got = (out["name"], out["shape"], out["datatype"])
        assert got == ("output-0", [len(data)], "INT64"), got
        assert out["data"] == data, "V2 JSON echo differs"
    reply = post(client, V2, LARGE_BINARY, BINARY_HEADERS)
    length = int(reply.headers["inference-header-content-length"])
    (out,) = json.loads(reply.content[:length])["outputs"]
    binary = (out["name"], out["shape"], out["datatype"], out["parameters"]["binary_data_size"])
    assert binary == ("output-0", [N], "INT64", BIG.nbytes), binary
    echoed = np.frombuffer(reply.content[length:], dtype="<i8")
    assert np.array_equal(echoed, BIG), "V2 binary echo differs"


async def grpc_calls(target: str, calls: int) -> float:
    """Checks the gRPC echo, then the mean ms of ``calls`` more (after one warm-up)."""
    # Imported here: kserve parses sys.argv at import (parse_known_args), and it is heavy.
    from kserve import InferenceGRPCClient, InferInput, InferRequest

    def request() -> InferRequest:
        inp = InferInput(name="input-0", shape=[N], datatype="INT64")
        inp.set_data_from_numpy(BIG, binary_data=True)  # raw_input_contents
        return InferRequest(model_name=MODEL, infer_inputs=[inp], request_id="smoke")

    # retries counts attempts: gRPC refuses a retry policy of fewer than 2 (retries=1 fails).
    client = InferenceGRPCClient(target, timeout=30, retries=2)
    try:
        result = await client.infer(request())
        (out,) = result.outputs
        got = (result.id, out.name, list(out.shape), out.datatype)
        assert got == ("smoke", "output-0", [N], "INT64"), got
        assert out._raw_data is not None, "expected raw_output_contents"
        echoed = out.as_numpy()
        assert echoed.dtype == np.int64 and np.array_equal(echoed, BIG), "gRPC echo differs"
        await client.infer(request())  # warm-up
        started = time.perf_counter()
        for _ in range(calls):
            await client.infer(request())
        return (time.perf_counter() - started) / calls * 1000
    finally:
        await client.close()


@contextmanager
def v1_client(base: str) -> Iterator[Callable[[], object]]:
    """Small V1 requests over one keep-alive connection."""
    with httpx.Client(base_url=base, timeout=30) as c:
        yield lambda: post(c, V1, SMALL_V1, JSON)


def run(workers: int, args: argparse.Namespace) -> dict[str, Any]:
    http_port, grpc_port = checks.free_port(), checks.free_port()
    cmd = [sys.executable, str(HERE / "serve.py"), f"--http-port={http_port}"]
    cmd += [f"--grpc-port={grpc_port}", f"--workers={workers}"]
    serve = checks.Started(cmd, args.server_log)
    row: dict[str, Any] = {"workers": workers, "start_s": serve.start_s}
    try:
        group = serve.server_group()  # noop_server.py, REST workers, resource tracker
        row["processes"] = len(group)
        sockets = checks.listening(group)
        row["listen"] = sorted(set(sockets))
        checks.loopback_only(sockets)
        assert f"127.0.0.1:{http_port}" in sockets, sockets

        base = f"http://127.0.0.1:{http_port}"
        with httpx.Client(base_url=base, timeout=30) as client:
            check_rest(client)
            row["grpc_100k_ms"] = asyncio.run(grpc_calls(f"127.0.0.1:{grpc_port}", args.calls))
            row["rest_1c"] = checks.load(1, args.seconds, lambda: v1_client(base))
            row["rest_8c"] = checks.load(8, args.seconds, lambda: v1_client(base))
            row["json_100k_ms"] = checks.mean_ms(
                lambda: post(client, V2, LARGE_V2, JSON), args.calls
            )
            row["binary_100k_ms"] = checks.mean_ms(
                lambda: post(client, V2, LARGE_BINARY, BINARY_HEADERS), args.calls
            )
    finally:
        row["stop_s"] = serve.stop(30)
        row["exit"] = serve.proc.returncode
    return row


def report(label: str, row: dict[str, Any]) -> bool:
    print(
        f"{label}: start {row['start_s']:.1f} s, {row['processes']} processes, "
        f"listening {', '.join(row['listen'])}; V1 small {row['rest_1c']:.0f} req/s "
        f"(1 client), {row['rest_8c']:.0f} req/s (8 threads); 100k INT64 mean: V2 JSON "
        f"{row['json_100k_ms']:.1f} ms, V2 binary {row['binary_100k_ms']:.1f} ms, gRPC raw "
        f"{row['grpc_100k_ms']:.1f} ms; stop {row['stop_s']:.1f} s (exit {row['exit']}); "
        "echo checks passed",
        flush=True,
    )
    if row["exit"] != 0:
        print(f"  serve.py exited with {row['exit']}", flush=True)
        return True
    return False


def main() -> int:
    p = checks.arguments(__doc__ or "", "KServe's log", 2.0, 10)
    p.add_argument("--only", help="comma-separated --workers values (default: 1,2)")
    args = p.parse_args()
    configs = [int(w) for w in (args.only or "1,2").split(",")]
    if checks.venv_processes():
        print(f"a process of this virtualenv is already running: {checks.venv_processes()}")
        return 1
    return checks.each(
        {f"workers={w}": w for w in configs}, lambda w: run(w, args), report, "KServe"
    )


if __name__ == "__main__":
    raise SystemExit(main())
