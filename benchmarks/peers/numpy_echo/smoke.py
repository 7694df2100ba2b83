"""Smoke test of serve.py (seed 003's aiohttp and grpcio numpy echo servers), on 127.0.0.1.

Starts serve.py on free ports and times the start, checks that both servers listen on
loopback only, then, for the seed's sizes (1, 256 and 8192 float64 points) and for the
seed's own 2x2 ``<i8`` example, sends the array in each encoding and checks that it comes
back exactly (values bit for bit, dtype, shape):

- aiohttp ``/json`` (nested list), ``/json_binary`` (base64 buffer), ``/msgpack``
  (msgpack_numpy), over one keep-alive ``http.client`` connection;
- gRPC ``NumpyEcho/Echo`` (buffer, dtype, shape), with the generated stub.

The float64 values are random with exponents from 1e-300 to 1e300, so the JSON list
round trip is a real test of float printing and parsing. It also checks that a malformed
array is refused (400; ``INVALID_ARGUMENT``). Then, unless ``--calls 0``, the mean
latency of ``--calls`` sequential calls per encoding and size (one client; rough figures,
the client shares the machine). Last it sends SIGTERM to serve.py, times the stop and
checks that neither server nor serve.py is left.

    .tools/peers/numpy-echo/bin/python benchmarks/peers/numpy_echo/smoke.py \\
        [--calls 20] [--server-log FILE]

Run it with the virtualenv's Python: it needs grpcio, msgpack_numpy, numpy and the
generated modules.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import sys
from collections.abc import Callable
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import msgpack
import msgpack_numpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pair import channel, load_generated
from smoke_checks import add_server_log, mean_ms, smoke_pair

HERE = Path(__file__).resolve().parent
SIZES = (1, 256, 8192)
JSON = {"Content-Type": "application/json"}
MSGPACK = {"Content-Type": "application/msgpack"}


def points(n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    exponents = rng.integers(-300, 300, n).astype(np.float64)
    return rng.standard_normal(n) * 10.0**exponents


def post(
    conn: http.client.HTTPConnection, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, bytes]:
    conn.request("POST", path, body=body, headers=headers)
    reply = conn.getresponse()
    return reply.status, reply.read()


class Echoes:
    """One function per encoding: sends an array, answers the array that came back."""

    def __init__(self, conn: http.client.HTTPConnection, pb2: Any, stub: Any) -> None:
        self.conn, self.pb2, self.stub = conn, pb2, stub

    def _rest(self, path: str, body: bytes, headers: dict[str, str]) -> bytes:
        status, data = post(self.conn, path, body, headers)
        if status != 200:
            raise RuntimeError(f"POST {path}: {status} {data[:300]!r}")
        return data

    def json(self, arr: np.ndarray) -> np.ndarray:
        body = json.dumps({"data": arr.tolist(), "dtype": arr.dtype.str}).encode()
        answer = json.loads(self._rest("/json", body, JSON))
        return np.array(answer["data"], dtype=answer["dtype"])

    def json_binary(self, arr: np.ndarray) -> np.ndarray:
        body = json.dumps(
            {
                "buffer": base64.b64encode(arr.tobytes()).decode("ascii"),
                "dtype": arr.dtype.str,
                "shape": list(arr.shape),
            }
        ).encode()
        answer = json.loads(self._rest("/json_binary", body, JSON))
        buffer = base64.b64decode(answer["buffer"], validate=True)
        shape: list[int] = answer["shape"]
        return np.frombuffer(buffer, dtype=answer["dtype"]).reshape(shape)

    def msgpack(self, arr: np.ndarray) -> np.ndarray:
        body = msgpack.packb(arr, default=msgpack_numpy.encode)
        answer: object = msgpack.unpackb(
            self._rest("/msgpack", body, MSGPACK), object_hook=msgpack_numpy.decode
        )
        if not isinstance(answer, np.ndarray):
            raise AssertionError(f"/msgpack answered a {type(answer).__name__}")
        return answer

    def grpc(self, arr: np.ndarray) -> np.ndarray:
        request = self.pb2.Array(buffer=arr.tobytes(), dtype=arr.dtype.str, shape=arr.shape)
        answer = self.stub.Echo(request, timeout=10)
        return np.frombuffer(answer.buffer, dtype=answer.dtype).reshape(tuple(answer.shape))

    def all(self) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
        return {
            "json": self.json,
            "json_binary": self.json_binary,
            "msgpack": self.msgpack,
            "grpc": self.grpc,
        }


def check_echoes(echoes: Echoes) -> list[str]:
    passed = []
    arrays = [points(n) for n in SIZES] + [np.array([[1, 2], [3, 4]], dtype="<i8")]
    for name, echo in echoes.all().items():
        for arr in arrays:
            back = echo(arr)
            got = (back.dtype, back.shape)
            assert got == (arr.dtype, arr.shape), (name, got)
            assert back.tobytes() == arr.tobytes(), f"{name}: {arr.shape} {arr.dtype} differs"
        passed.append(name)

    status, _ = post(echoes.conn, "/json", b'{"data": [1], "dtype": "no such dtype"}', JSON)
    assert status == 400, f"/json, bad dtype: {status}"
    bad = {"buffer": "AAAA", "dtype": "<f8", "shape": [1]}  # 3 bytes for one float64
    status, _ = post(echoes.conn, "/json_binary", json.dumps(bad).encode(), JSON)
    assert status == 400, f"/json_binary, short buffer: {status}"
    status, _ = post(echoes.conn, "/msgpack", msgpack.packb({"not": "an array"}), MSGPACK)
    assert status == 400, f"/msgpack, not an array: {status}"
    try:
        echoes.stub.Echo(echoes.pb2.Array(buffer=b"abc", dtype="<f8", shape=[1]), timeout=10)
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e
    else:
        raise AssertionError("gRPC Echo accepted a 3-byte float64 buffer")
    passed.append("malformed arrays refused")
    return passed


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--calls", type=int, default=20, help="timed calls per cell; 0: none")
    add_server_log(p, "the servers' output")
    args = p.parse_args()
    pb2, pb2_grpc = load_generated("echo")

    def check(url: str, target: str) -> None:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with (
            closing(http.client.HTTPConnection(host, int(port), timeout=30)) as conn,
            channel(target) as grpc_channel,
        ):
            echoes = Echoes(conn, pb2, pb2_grpc.NumpyEchoStub(grpc_channel))
            sizes = ", ".join(str(n) for n in SIZES)
            print(
                f"exact round trips of {sizes} float64 points and 2x2 <i8: "
                f"{', '.join(check_echoes(echoes))}",
                flush=True,
            )
            for n in SIZES if args.calls else ():
                times = ", ".join(
                    f"{name} {mean_ms(partial(echo, points(n)), args.calls):.2f} ms"
                    for name, echo in echoes.all().items()
                )
                print(f"{n} points, mean of {args.calls} calls: {times}", flush=True)

    return smoke_pair(HERE / "serve.py", args.server_log, check)


if __name__ == "__main__":
    raise SystemExit(main())
