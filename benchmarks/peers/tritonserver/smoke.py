"""Checks that the real tritonserver (serve.py) answers the benchmark's models through
tritonclient, and, with ``--vendored``, that Triton's own example clients pass against
the vendored python_backend examples (tests/vendor/triton_python_backend).

    .tools/peers/pytriton/bin/python benchmarks/peers/tritonserver/smoke.py [--vendored]

1. serve.py on ``repository/`` (free ports): ``blank`` and ``bls_pipeline`` echo INT64
   (one value, and INT64's least and greatest with 1,000 values between), ``add_sub``
   answers the sum and the difference of two FP32 [4], each over HTTP (tritonclient.http:
   JSON, then the binary tensor extension) and gRPC (tritonclient.grpc, raw contents).
2. ``--vendored``: serve.py on the vendored repository on Triton's default ports
   8000/8001/8002 (the example clients call ``localhost:8000``/``:8001`` and cannot be
   told otherwise), loading the models that need no torch (``add_sub``, ``repeat_int32``,
   ``square_int32``, ``bls_decoupled_sync``, ``bls_decoupled_async``), then runs their
   clients unchanged; each must exit 0. Skipped with a line when a port is taken.

After each, serve.py gets SIGTERM and none of its processes (tritonserver, the stubs) may
be left. Prints one line per check; exits 1 on the first failure. About 10 s (20 s with
``--vendored``).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.proc_cpu import descendants  # noqa: E402  (standard library only)

VENDORED = ROOT / "tests/vendor/triton_python_backend"
# The vendored examples whose models need no torch, and their clients.
VENDORED_MODELS = ["add_sub", "repeat_int32", "square_int32", "bls_decoupled_sync",
                   "bls_decoupled_async"]  # fmt: skip
VENDORED_CLIENTS = [
    "examples/add_sub/client.py",
    "examples/decoupled/repeat_client.py",
    "examples/decoupled/square_client.py",
    "examples/bls_decoupled/sync_client.py",
    "examples/bls_decoupled/async_client.py",
]
I64 = np.iinfo(np.int64)


class Serve:
    """serve.py in its own session, ready once it prints READY."""

    def __init__(self, *args: str) -> None:
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "serve.py"), *args],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("READY "):
            self.stop()
            raise SystemExit(f"serve.py did not start: {line!r}")
        words = line.split()
        self.http = words[1].removeprefix("http://")
        self.grpc = words[3]
        print(f"ok   serve.py ready in {time.monotonic() - started:.1f} s: {line.strip()}")

    def stop(self) -> None:
        """SIGTERM to serve.py; then none of its tree (tritonserver, the stubs) may be left."""
        tree = descendants(self.proc.pid)
        started = time.monotonic()
        self.proc.terminate()
        self.proc.wait(60)
        stopped = time.monotonic() - started
        time.sleep(0.5)
        left = [pid for pid in tree if Path(f"/proc/{pid}").exists()]
        if left:
            raise SystemExit(f"FAIL processes left after SIGTERM: {left}")
        print(f"ok   serve.py stopped in {stopped:.1f} s, none of its {len(tree)} processes left")


def echo(client: object, protocol: str, model: str, values: np.ndarray, binary: bool) -> None:
    mod = httpclient if protocol == "http" else grpcclient
    inp = mod.InferInput("INPUT0", list(values.shape), "INT64")
    if protocol == "http":
        inp.set_data_from_numpy(values, binary_data=binary)
        out = [mod.InferRequestedOutput("OUTPUT0", binary_data=binary)]
    else:
        inp.set_data_from_numpy(values)
        out = [mod.InferRequestedOutput("OUTPUT0")]
    got = client.infer(model, [inp], outputs=out).as_numpy("OUTPUT0")  # type: ignore[attr-defined]
    if got is None or got.dtype != np.int64 or not np.array_equal(got, values):
        raise SystemExit(f"FAIL {model} {protocol}: sent {values[:4]}..., got {got!r:.200}")


def add_sub(client: object, protocol: str, binary: bool) -> None:
    mod = httpclient if protocol == "http" else grpcclient
    a, b = np.array([1.5, 2, 3, 4], np.float32), np.array([0.25, 1, -1, 8], np.float32)
    inputs = [mod.InferInput("INPUT0", [4], "FP32"), mod.InferInput("INPUT1", [4], "FP32")]
    for inp, x in zip(inputs, (a, b), strict=True):
        if protocol == "http":
            inp.set_data_from_numpy(x, binary_data=binary)
        else:
            inp.set_data_from_numpy(x)
    r = client.infer("add_sub", inputs)  # type: ignore[attr-defined]
    total, diff = r.as_numpy("OUTPUT0"), r.as_numpy("OUTPUT1")
    if not (np.array_equal(total, a + b) and np.array_equal(diff, a - b)):
        raise SystemExit(f"FAIL add_sub {protocol}: {total} {diff}")


def benchmark_models() -> None:
    server = Serve()
    try:
        small = np.array([7], np.int64)
        wide = np.concatenate([[I64.min], np.arange(-500, 500, dtype=np.int64), [I64.max]])
        with httpclient.InferenceServerClient(server.http) as h:
            clients = [("http", h, False), ("http", h, True)]
            with grpcclient.InferenceServerClient(server.grpc) as g:
                clients.append(("grpc", g, True))
                for protocol, client, binary in clients:
                    how = protocol + (" binary" if binary and protocol == "http" else "")
                    for model in ("blank", "bls_pipeline"):
                        echo(client, protocol, model, small, binary)
                        echo(client, protocol, model, wide, binary)
                        print(f"ok   {model:<12} {how}: INT64 [1] and [1002] back")
                    add_sub(client, protocol, binary)
                    print(f"ok   add_sub      {how}: sum and difference")
    finally:
        server.stop()


def port_taken(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def vendored_clients() -> None:
    taken = [p for p in (8000, 8001, 8002) if port_taken(p)]
    if taken:
        print(f"skip the vendored clients: port {taken} taken (they call localhost:8000/8001)")
        return
    ports = ["--http-port", "8000", "--grpc-port", "8001", "--metrics-port", "8002"]
    load = ["--load", ",".join(VENDORED_MODELS)]
    server = Serve("--model-repository", str(VENDORED / "repository"), *ports, *load)
    try:
        for script in VENDORED_CLIENTS:
            run = subprocess.run([sys.executable, str(VENDORED / script)], capture_output=True,
                                 text=True, timeout=60)  # fmt: skip
            if run.returncode != 0:
                raise SystemExit(f"FAIL {script}: exit {run.returncode}\n{run.stdout[-2000:]}"
                                 f"{run.stderr[-2000:]}")  # fmt: skip
            print(f"ok   {script} (unchanged) exit 0")
    finally:
        server.stop()


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--vendored", action="store_true", help="also Triton's example clients")
    args = p.parse_args()
    benchmark_models()
    if args.vendored:
        vendored_clients()
    return 0


if __name__ == "__main__":
    sys.exit(main())
