"""Triton's system shared memory against the binary tensor extension, side by side.

One inferwire server (`--system-shared-memory`, the Echo model of
benchmarks/models/noop.py) answers FP32 tensors of 100,000 and 10,000,000 elements over
HTTP and gRPC, sent by tritonclient either with the binary tensor extension (HTTP
`binary_data=True`, gRPC `raw_input_contents`) or by reference to shared-memory regions
made with `tritonclient.utils.shared_memory`. The two modes alternate request by
request, so that both see the same machine; each timed request includes the client's
work on the data (serialising it, or writing it into the input region and copying the
output out of its region). Reported: median and p90 latency per request, the ratio of
medians, and the server's CPU time per request: the change, over each request, of its
processes' threads' run time in /proc/PID/task/TID/schedstat (nanoseconds; the clock
ticks of /proc/PID/stat, benchmarks/lib/proc_cpu.py, are 10 ms, coarser than one request).

    .venv/bin/python benchmarks/shared_memory.py [--inferwire PATH] [--rounds 200,20]

`--inferwire` is the server executable (a release build; default `.venv/bin/inferwire`);
this interpreter needs tritonclient and numpy (requirements-test.txt).
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lib.proc_cpu import descendants
from lib.servers import ROOT, ServerProcess, inferwire_spec

TEMPLATE = (
    "{inferwire} serve benchmarks/models/noop.py:{model} --model-name echo "
    "--http-port {http_port} --grpc-port {grpc_port} --host 127.0.0.1 "
    "--system-shared-memory --max-body-bytes 134217728 --max-body-bytes-in-flight 268435456"
)
MODEL = "echo"


def cpu_ns(root: int) -> int:
    """Nanoseconds on a CPU of every thread of ``root`` and its descendants."""
    total = 0
    for pid in descendants(root):
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass  # a thread that ended meanwhile
    return total


def lib(proto: str) -> Any:
    return httpclient if proto == "http" else grpcclient


def client(server: ServerProcess, proto: str) -> Any:
    if proto == "http":
        return httpclient.InferenceServerClient(
            url=f"127.0.0.1:{server.http_port}", connection_timeout=120, network_timeout=120
        )
    return grpcclient.InferenceServerClient(url=server.grpc_target)


def binary_call(c: Any, proto: str, x: np.ndarray) -> Callable[[], np.ndarray]:
    m = lib(proto)

    def call() -> np.ndarray:
        inp = m.InferInput("x", list(x.shape), "FP32")
        out = m.InferRequestedOutput("y")
        if proto == "http":
            inp.set_data_from_numpy(x, binary_data=True)
            out = m.InferRequestedOutput("y", binary_data=True)
        else:
            inp.set_data_from_numpy(x)
        y = c.infer(MODEL, [inp], outputs=[out]).as_numpy("y")
        assert y is not None
        return y

    return call


def shm_call(c: Any, proto: str, x: np.ndarray, tag: str) -> tuple[Callable[[], np.ndarray], Any]:
    m = lib(proto)
    size = x.nbytes
    h_in = shm.create_shared_memory_region("in", f"/iw-bench-in-{tag}", size)
    h_out = shm.create_shared_memory_region("out", f"/iw-bench-out-{tag}", size)
    c.unregister_system_shared_memory()
    c.register_system_shared_memory("in", f"/iw-bench-in-{tag}", size)
    c.register_system_shared_memory("out", f"/iw-bench-out-{tag}", size)

    def call() -> np.ndarray:
        shm.set_shared_memory_region(h_in, [x])
        inp = m.InferInput("x", list(x.shape), "FP32")
        inp.set_shared_memory("in", size)
        out = m.InferRequestedOutput("y")
        out.set_shared_memory("out", size)
        c.infer(MODEL, [inp], outputs=[out])
        # A copy, as the binary mode's as_numpy hands the client its own array.
        return np.array(shm.get_contents_as_numpy(h_out, np.float32, list(x.shape)))

    def close() -> None:
        c.unregister_system_shared_memory()
        shm.destroy_shared_memory_region(h_in)
        shm.destroy_shared_memory_region(h_out)

    return call, close


def measure(server: ServerProcess, proto: str, n: int, rounds: int) -> dict[str, dict[str, float]]:
    x = np.random.default_rng(0).random((1, n), dtype=np.float32)
    c = client(server, proto)
    tag = f"{os.getpid()}-{secrets.token_hex(3)}"
    calls: dict[str, Callable[[], np.ndarray]] = {"binary": binary_call(c, proto, x)}
    calls["shm"], close = shm_call(c, proto, x, tag)
    try:
        for name, call in calls.items():
            for _ in range(3):  # warm up; the answer must be the input
                assert np.array_equal(call(), x), name
        times: dict[str, list[float]] = {k: [] for k in calls}
        cpu: dict[str, int] = {k: 0 for k in calls}
        pid = server.proc.pid
        for _ in range(rounds):
            for name, call in calls.items():
                c0, t0 = cpu_ns(pid), time.perf_counter()
                call()
                times[name].append(time.perf_counter() - t0)
                cpu[name] += cpu_ns(pid) - c0
    finally:
        close()
        c.close()
    return {
        k: {
            "median_ms": statistics.median(v) * 1e3,
            "p90_ms": sorted(v)[int(len(v) * 0.9) - 1] * 1e3,
            "cpu_ms": cpu[k] / rounds / 1e6,
        }
        for k, v in times.items()
    }


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--inferwire",
        default=os.environ.get("INFERWIRE_BIN", str(ROOT / ".venv/bin/inferwire")),
        help="the server executable (a release build)",
    )
    p.add_argument(
        "--rounds", default="500,20", help="requests per mode for 100,000 and 10 M elements"
    )
    args = p.parse_args()
    small, large = (int(r) for r in args.rounds.split(","))
    server = ServerProcess(inferwire_spec([args.inferwire], TEMPLATE), "Echo")
    rows = []
    try:
        for n, rounds in ((100_000, small), (10_000_000, large)):
            for proto in ("http", "grpc"):
                r = measure(server, proto, n, rounds)
                b, s = r["binary"], r["shm"]
                rows.append(
                    f"| {n:,} | {proto} | {rounds} | {b['median_ms']:.2f} ({b['p90_ms']:.2f}) "
                    f"| {s['median_ms']:.2f} ({s['p90_ms']:.2f}) "
                    f"| {b['median_ms'] / s['median_ms']:.1f}x "
                    f"| {b['cpu_ms']:.2f} | {s['cpu_ms']:.2f} "
                    f"| {b['cpu_ms'] / s['cpu_ms']:.1f}x |"
                )
                print(rows[-1], flush=True)
    finally:
        server.stop()
    print()
    print(
        "| FP32 elements | protocol | requests per mode | binary: median (p90) ms "
        "| shared memory: median (p90) ms | binary / shm | server CPU ms per request, "
        "binary | server CPU ms per request, shm | CPU binary / shm |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
