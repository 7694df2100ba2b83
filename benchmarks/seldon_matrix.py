"""The Seldon "Python Wrapper Benchmarking" notebook's matrix, against inferwire and the
Seldon Python wrapper side by side, in one run, on this machine.

For predict and predict_raw (the notebook's no-op models), REST with vegeta and gRPC with
ghz (the notebook's flags: one connection, no rate limit), ndarray / tensor / tftensor, at
100,000 and 1 integers, it records each server's mean latency and throughput, the server
process tree's CPU time per request (from /proc) and the load tool's CPU per request.

    bash benchmarks/seldon_wrapper/setup.sh          # once: the Seldon wrapper in .venv-seldon
    .venv/bin/python benchmarks/seldon_matrix.py --duration 10 --markdown results.md
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import notebook_payloads
from proc_cpu import cpu_seconds

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / ".tools/bin"
MODELS = {"predict": "NoopPredict", "predict_raw": "NoopPredictRaw"}
# Mean latency (ms) printed in the notebook (Seldon 1.10, Kubernetes + Istio).
NOTEBOOK: dict[tuple[str, str, int, str], float] = {}
for (method, proto, size), row in {
    ("predict", "rest", 100_000): (19.8, 19.7, 16.2),
    ("predict", "grpc", 100_000): (253.0, 8.4, 5.5),
    ("predict_raw", "rest", 100_000): (13.3, 13.3, 11.1),
    ("predict_raw", "grpc", 100_000): (46.0, 7.9, 5.0),
    ("predict", "rest", 1): (1.8, 1.8, 2.1),
    ("predict", "grpc", 1): (1.46, 1.49, 1.57),
}.items():
    for enc, ms in zip(notebook_payloads.ENCODINGS, row, strict=True):
        NOTEBOOK[(method, proto, size, enc)] = ms


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A server under test, started as a subprocess on 127.0.0.1."""

    def __init__(self, kind: str, model: str) -> None:
        self.kind = kind
        self.http_port, self.grpc_port = free_port(), free_port()
        env = dict(os.environ)
        if kind == "inferwire":
            cmd = [
                str(ROOT / ".venv/bin/inferwire"),
                "serve",
                f"noop.py:{model}",
                "--host",
                "127.0.0.1",
                "--http-port",
                str(self.http_port),
                "--grpc-port",
                str(self.grpc_port),
                "--model-name",
                "classifier",
                "--log-level",
                "warning",
            ]
        else:
            # The notebook's deployment: one gunicorn worker, one thread.
            env.update(GUNICORN_WORKERS="1", GUNICORN_THREADS="1")
            cmd = [
                str(ROOT / ".venv-seldon/bin/seldon-core-microservice"),
                f"noop.{model}",
                "--service-type",
                "MODEL",
                "--http-port",
                str(self.http_port),
                "--grpc-port",
                str(self.grpc_port),
                "--metrics-port",
                str(free_port()),
                "--log-level",
                "WARNING",
            ]
        self.log = tempfile.NamedTemporaryFile("w+", suffix=f"-{kind}.log", delete=False)
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT / "benchmarks/models",
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited:\n{Path(self.log.name).read_text()}")
            try:
                if (
                    httpx.get(
                        f"http://127.0.0.1:{self.http_port}/health/ping", timeout=1
                    ).status_code
                    == 200
                ):
                    with socket.create_connection(("127.0.0.1", self.grpc_port), timeout=1):
                        return
            except (httpx.TransportError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.kind} did not start:\n{Path(self.log.name).read_text()}")

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)


@dataclass
class Cell:
    server: str
    method: str
    protocol: str
    size: int
    encoding: str
    requests: int
    mean_ms: float
    p50_ms: float
    p99_ms: float
    throughput: float
    success: float
    server_cpu_us: float
    tool_cpu_us: float


def _run_measured(cmd: list[str], cwd: Path, server: Server) -> tuple[str, float, float]:
    """Runs a load tool; returns its stdout, the server's CPU seconds and the tool's."""
    before_server = cpu_seconds(server.proc.pid)
    before_tool = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    after_tool = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_cpu = cpu_seconds(server.proc.pid) - before_server
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed: {out.stderr}")
    tool_cpu = (after_tool.ru_utime + after_tool.ru_stime) - (
        before_tool.ru_utime + before_tool.ru_stime
    )
    return out.stdout, server_cpu, tool_cpu


def run_vegeta(server: Server, work: Path, encoding: str, duration: int) -> dict[str, Any]:
    results = work / f"results_{encoding}.bin"
    attack = [
        str(TOOLS / "vegeta"),
        "attack",
        "-format=json",
        f"-duration={duration}s",
        "-rate=0",
        "-max-workers=1",
        f"-targets=vegeta_{encoding}.json",
        f"-output={results}",
    ]
    _, server_cpu, tool_cpu = _run_measured(attack, work, server)
    report = json.loads(
        subprocess.run(
            [str(TOOLS / "vegeta"), "report", "-type=json", str(results)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    lat = report["latencies"]
    return {
        "requests": report["requests"],
        "mean_ms": lat["mean"] / 1e6,
        "p50_ms": lat["50th"] / 1e6,
        "p99_ms": lat["99th"] / 1e6,
        "throughput": report["throughput"],
        "success": report["success"],
        "server_cpu": server_cpu,
        "tool_cpu": tool_cpu,
    }


def run_ghz(server: Server, work: Path, encoding: str, duration: int) -> dict[str, Any]:
    cmd = [
        str(TOOLS / "ghz"),
        "--insecure",
        "--proto",
        "proto/prediction.proto",
        "--call",
        "seldon.protos.Seldon/Predict",
        f"--data-file=./data_{encoding}.json",
        "--qps=0",
        "--cpus=1",
        "--concurrency=1",
        f"--duration={duration}s",
        "--format",
        "json",
        '--metadata={"seldon": "seldon-model", "namespace": "seldon"}',
        f"127.0.0.1:{server.grpc_port}",
    ]
    stdout, server_cpu, tool_cpu = _run_measured(cmd, work, server)
    r = json.loads(stdout)
    dist = {d["percentage"]: d["latency"] for d in r.get("latencyDistribution") or []}
    ok = r["statusCodeDistribution"].get("OK", 0)
    return {
        "requests": r["count"],
        "mean_ms": r["average"] / 1e6,
        "p50_ms": dist.get(50, 0) / 1e6,
        "p99_ms": dist.get(99, 0) / 1e6,
        "throughput": r["rps"],
        "success": ok / max(r["count"], 1),
        "server_cpu": server_cpu,
        "tool_cpu": tool_cpu,
    }


def measure(servers: list[str], methods: list[str], sizes: list[int], duration: int) -> list[Cell]:
    cells: list[Cell] = []
    for method in methods:
        running = {kind: Server(kind, MODELS[method]) for kind in servers}
        try:
            for size in sizes:
                for protocol in ("rest", "grpc"):
                    for encoding in notebook_payloads.ENCODINGS:
                        # Each cell runs every server back to back: side by side.
                        for kind, server in running.items():
                            with tempfile.TemporaryDirectory() as tmp:
                                work = Path(tmp)
                                url = (
                                    f"http://127.0.0.1:{server.http_port}"
                                    "/seldon/seldon/seldon-model/api/v1.0/predictions"
                                )
                                notebook_payloads.write(work, size, url)
                                shutil.copytree(ROOT / "proto", work / "proto")
                                run = run_vegeta if protocol == "rest" else run_ghz
                                r = run(server, work, encoding, duration)
                            n = max(r["requests"], 1)
                            cell = Cell(
                                kind,
                                method,
                                protocol,
                                size,
                                encoding,
                                r["requests"],
                                r["mean_ms"],
                                r["p50_ms"],
                                r["p99_ms"],
                                r["throughput"],
                                r["success"],
                                r["server_cpu"] / n * 1e6,
                                r["tool_cpu"] / n * 1e6,
                            )
                            cells.append(cell)
                            print(
                                f"{kind:9} {method:11} {protocol:4} {size:>6} {encoding:8} "
                                f"mean {cell.mean_ms:8.3f} ms  {cell.throughput:8.1f}/s  "
                                f"server CPU {cell.server_cpu_us:9.1f} us/req  "
                                f"success {cell.success:.2%}",
                                flush=True,
                            )
        finally:
            for server in running.values():
                server.stop()
    return cells


def markdown(cells: list[Cell], duration: int) -> str:
    by = {(c.server, c.method, c.protocol, c.size, c.encoding): c for c in cells}
    keys = sorted(
        {(c.method, c.protocol, c.size, c.encoding) for c in cells},
        key=lambda k: (-k[2], k[0], k[1], notebook_payloads.ENCODINGS.index(k[3])),
    )
    lines = [
        f"Mean latency over {duration} s per cell, one connection, no rate limit; CPU is the "
        "server process tree's user+system time per request.",
        "",
        "| method | protocol | ints | encoding | notebook | Seldon wrapper | inferwire | faster | "
        "Seldon CPU/req | inferwire CPU/req | CPU ratio | success (S / i) |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    ratios, cpu_ratios = [], []
    for method, protocol, size, enc in keys:
        s = by.get(("seldon", method, protocol, size, enc))
        i = by.get(("inferwire", method, protocol, size, enc))
        nb = NOTEBOOK.get((method, protocol, size, enc))

        def ms(c: Cell | None) -> str:
            return f"{c.mean_ms:.3f} ms" if c else "–"

        def us(c: Cell | None) -> str:
            return f"{c.server_cpu_us:,.0f} µs" if c else "–"

        faster = cpu = "–"
        if s and i and i.mean_ms > 0 and i.server_cpu_us > 0:
            ratios.append(s.mean_ms / i.mean_ms)
            cpu_ratios.append(s.server_cpu_us / i.server_cpu_us)
            faster, cpu = f"{ratios[-1]:.1f}×", f"{cpu_ratios[-1]:.0f}×"
        succ = (
            f"{s.success:.0%} / {i.success:.0%}"
            if s and i
            else (f"– / {i.success:.0%}" if i else "–")
        )
        lines.append(
            f"| {method} | {'REST' if protocol == 'rest' else 'gRPC'} | {size:,} | {enc} | "
            f"{f'{nb} ms' if nb else '–'} | {ms(s)} | {ms(i)} | {faster} | "
            f"{us(s)} | {us(i)} | {cpu} | {succ} |"
        )
    if ratios:
        lines += [
            "",
            f"Median latency ratio {statistics.median(ratios):.1f}×, "
            f"median server-CPU ratio {statistics.median(cpu_ratios):.0f}× "
            f"(minimum {min(cpu_ratios):.0f}×) over {len(ratios)} cells.",
        ]
    tool = [c.tool_cpu_us for c in cells if c.server == "inferwire"]
    if tool:
        lines.append(
            f"Load tools' own CPU per request against inferwire: median "
            f"{statistics.median(tool):,.0f} µs (vegeta / ghz)."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--duration", type=int, default=10, help="seconds per cell (notebook: 10)")
    p.add_argument("--servers", default="seldon,inferwire")
    p.add_argument("--methods", default="predict,predict_raw")
    p.add_argument("--sizes", default="100000,1")
    p.add_argument("--out", type=Path, help="write every cell as JSON")
    p.add_argument("--markdown", type=Path, help="write the side-by-side table")
    args = p.parse_args()
    for tool in ("vegeta", "ghz"):
        if not (TOOLS / tool).exists():
            sys.exit(f"{tool} missing: run scripts/install-load-tools.sh")
    servers = args.servers.split(",")
    if "seldon" in servers and not (ROOT / ".venv-seldon/bin/seldon-core-microservice").exists():
        sys.exit("the Seldon wrapper is missing: run benchmarks/seldon_wrapper/setup.sh")
    cells = measure(
        servers, args.methods.split(","), [int(s) for s in args.sizes.split(",")], args.duration
    )
    table = markdown(cells, args.duration)
    print(table)
    if args.out:
        args.out.write_text(json.dumps([asdict(c) for c in cells], indent=1))
    if args.markdown:
        args.markdown.write_text(table)


if __name__ == "__main__":
    main()
