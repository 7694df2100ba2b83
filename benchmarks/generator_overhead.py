"""``inferwire bench`` beside vegeta and ghz on the same targets, in one run.

For each workload, an inferwire server runs the model; the notebook's vegeta (REST) or ghz
(gRPC) command runs against it, then ``inferwire-bench attack`` with the same request,
one connection, one request in flight, for the same duration. For REST, a plain Python
socket loop sends the same bytes too: the least any client can spend (the floor).
Recorded for each tool: mean latency, throughput, the tool's own CPU time per request
(its rusage, as for the other tools) and the server's CPU time per request (its process
tree, from /proc).

The workloads: the notebook's smallest and largest requests over REST and gRPC, and a
model that sleeps 5 ms, slow enough that the tools' own overhead barely changes what they
measure: their mean latencies should agree there.

    bash scripts/install-load-tools.sh
    .venv/bin/python benchmarks/generator_overhead.py --duration 10s

The table goes to benchmarks/results/generator_overhead.md (--markdown), which
benchmarks/render.py puts into docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from lib import notebook_tools as tools
from lib import servers
from runtime import machine

ROOT = servers.ROOT

# (label, protocol, integers per request, encoding, model in benchmarks/models/noop.py)
WORKLOADS = [
    ("REST · 1 integer · ndarray", "rest", 1, "ndarray", "NoopPredict"),
    ("REST · 100,000 integers · ndarray", "rest", 100_000, "ndarray", "NoopPredict"),
    ("gRPC · 1 integer · tensor", "grpc", 1, "tensor", "NoopPredict"),
    ("gRPC · 100,000 integers · tftensor", "grpc", 100_000, "tftensor", "NoopPredict"),
    ("REST · model sleeps 5 ms", "rest", 1, "ndarray", "Sleep5ms"),
    ("gRPC · model sleeps 5 ms", "grpc", 1, "ndarray", "Sleep5ms"),
]


@dataclass
class Figures:
    tool: str
    requests: int
    ok: int
    mean_ms: float
    throughput: float
    tool_cpu_us: float
    server_cpu_us: float
    command: str


def bench_binary() -> Path:
    """Builds the standalone generator (release) and returns its path."""
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "-p", "inferwire-bench"], cwd=ROOT, check=True
    )
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(json.loads(meta.stdout)["target_directory"]) / "release" / "inferwire-bench"


def ours(
    binary: Path,
    work: Path,
    protocol: str,
    encoding: str,
    server: servers.ServerProcess,
    duration: str,
) -> Figures:
    data = str(work / f"data_{encoding}.json")
    if protocol == "rest":
        target = [server.predictions_url, "-D", data]
    else:
        target = [
            server.grpc_target, "--call", "seldon.protos.Seldon/Predict", "--seldon-json",
            "-D", data, "-H", "seldon: seldon-model", "-H", "namespace: seldon",
        ]  # fmt: skip
    cmd = [str(binary), "attack", *target, "-z", duration, "--format", "json", "--no-progress"]
    before = server.cpu_seconds()
    out, (cpu,) = tools.run_pipeline([cmd], work, timeout=600)
    after = server.cpu_seconds()
    r = json.loads(out)
    n = max(int(r["requests"]), 1)
    return Figures(
        "inferwire-bench", n, int(r["ok"]), r["latency"]["mean_ns"] / 1e6, r["throughput"],
        cpu / n * 1e6, (after - before) / n * 1e6, shlex.join(cmd),
    )  # fmt: skip


def theirs(
    work: Path, protocol: str, encoding: str, server: servers.ServerProcess, duration: str
) -> Figures:
    before = server.cpu_seconds()
    if protocol == "rest":
        run = tools.run_vegeta(work, encoding, duration, timeout=600)
    else:
        run = tools.run_ghz(work, encoding, duration, server.grpc_target, timeout=600)
    after = server.cpu_seconds()
    n = max(run.requests, 1)
    return Figures(
        "vegeta" if protocol == "rest" else "ghz",
        n, run.ok, run.mean_ms, run.throughput, run.tool_cpu_s / n * 1e6,
        (after - before) / n * 1e6, run.command,
    )  # fmt: skip


def socket_loop(
    work: Path, encoding: str, server: servers.ServerProcess, seconds: float
) -> Figures:
    """The least a client can spend on a REST request: one ``sendall`` of the request
    and ``recv`` until the response is complete, in a plain Python loop. Its CPU is this
    thread's; most of it, for a large body, is the kernel's loopback TCP path."""
    url = urllib.parse.urlsplit(server.predictions_url)
    body = (work / f"data_{encoding}.json").read_bytes()
    wire = (
        f"POST {url.path} HTTP/1.1\r\nhost: {url.netloc}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body
    n = ok = 0
    with socket.create_connection((url.hostname, url.port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        before, cpu0, t0 = server.cpu_seconds(), time.thread_time(), time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            s.sendall(wire)
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += s.recv(65536)
            head, _, rest = buf.partition(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            while len(rest) < length:
                rest += s.recv(65536)
            n += 1
            ok += head.startswith(b"HTTP/1.1 200")
        elapsed, cpu = time.perf_counter() - t0, time.thread_time() - cpu0
        after = server.cpu_seconds()
    return Figures(
        "socket loop (floor)", n, ok, elapsed / n * 1e3, n / elapsed, cpu / n * 1e6,
        (after - before) / n * 1e6, "benchmarks/generator_overhead.py (socket_loop)",
    )  # fmt: skip


def fmt_ms(ms: float) -> str:
    return f"{ms * 1000:.0f} µs" if ms < 1 else f"{ms:.2f} ms"


def fmt_us(us: float) -> str:
    return f"{us:.1f} µs" if us < 1000 else f"{us / 1000:.2f} ms"


def table(rows: list[tuple[str, Figures, Figures, Figures | None]]) -> str:
    lines = [
        "| workload | tool | mean latency | throughput | tool CPU / request "
        "| server CPU / request | answered OK |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for label, theirs_, ours_, floor in rows:
        for f in (theirs_, ours_, floor):
            if f is None:
                continue
            lines.append(
                f"| {label} | {f.tool} | {fmt_ms(f.mean_ms)} | {f.throughput:.0f}/s | "
                f"{fmt_us(f.tool_cpu_us)} | {fmt_us(f.server_cpu_us)} | {f.ok}/{f.requests} |"
            )
        diff = (ours_.mean_ms / theirs_.mean_ms - 1) * 100 if theirs_.mean_ms else 0
        more = (ours_.throughput / theirs_.throughput - 1) * 100 if theirs_.throughput else 0
        ratio = theirs_.tool_cpu_us / ours_.tool_cpu_us if ours_.tool_cpu_us else 0
        lines.append(
            f"| {label} | **{theirs_.tool} / inferwire-bench** | {diff:+.0f}% latency | "
            f"{more:+.0f}% | "
            f"**{ratio:.1f}× less CPU** | | |"
        )
    return "\n".join(lines)


def duration_seconds(text: str) -> float:
    """``10s``, ``500ms``, ``2m`` in seconds."""
    for unit, scale in (("ms", 1e-3), ("s", 1.0), ("m", 60.0)):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * scale
    raise ValueError(f"duration {text!r}: expected e.g. 10s, 500ms, 2m")


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--duration", default="10s", help="per workload and tool")
    p.add_argument("--only", help="comma-separated workload numbers (1-based)")
    p.add_argument(
        "--markdown",
        type=Path,
        default=ROOT / "benchmarks" / "results" / "generator_overhead.md",
        help="also write the table here (benchmarks/render.py reads it)",
    )
    args = p.parse_args()
    missing = tools.missing_tools()
    if missing:
        print(f"missing load tools {missing}: run scripts/install-load-tools.sh", file=sys.stderr)
        return 1
    binary = bench_binary()
    chosen = WORKLOADS
    if args.only:
        chosen = [WORKLOADS[int(i) - 1] for i in args.only.split(",")]
    rows = []
    spec = servers.inferwire_spec()
    for label, protocol, size, encoding, model in chosen:
        server = servers.ServerProcess(spec, model)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                tools.prepare(work, size, server.predictions_url)
                # A short warm-up, then each tool in turn.
                ours(binary, work, protocol, encoding, server, "1s")
                a = theirs(work, protocol, encoding, server, args.duration)
                b = ours(binary, work, protocol, encoding, server, args.duration)
                seconds = duration_seconds(args.duration)
                floor = socket_loop(work, encoding, server, seconds) if protocol == "rest" else None
        finally:
            server.stop()
        print(
            f"{label:<36} {a.tool:<7} {fmt_ms(a.mean_ms):>9} CPU {fmt_us(a.tool_cpu_us):>9}   "
            f"inferwire-bench {fmt_ms(b.mean_ms):>9} CPU {fmt_us(b.tool_cpu_us):>9}",
            file=sys.stderr,
        )
        rows.append((label, a, b, floor))
    text = table(rows)
    print(text)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    args.markdown.parent.mkdir(parents=True, exist_ok=True)
    args.markdown.write_text(
        f"# inferwire bench beside vegeta and ghz ({when}, {machine()})\n\n"
        f"{args.duration} per workload and tool.\n\n{text}\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
