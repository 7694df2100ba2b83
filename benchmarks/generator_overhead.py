"""``inferwire bench`` beside vegeta and ghz on the same targets, in one run.

For each workload, an inferwire server runs the model; the notebook's vegeta (REST) or ghz
(gRPC) command runs against it, then ``inferwire-bench attack`` with the same request,
one connection, one request in flight, for the same duration. Recorded for each tool:
mean latency, throughput, the tool's own CPU time per request (its rusage, as for the
other tools) and the server's CPU time per request (its process tree, from /proc).

The workloads: the notebook's smallest and largest requests over REST and gRPC, and a
model that sleeps 5 ms, slow enough that the tools' own overhead barely changes what they
measure: their mean latencies should agree there.

    bash scripts/install-load-tools.sh
    .venv/bin/python benchmarks/generator_overhead.py --duration 10s --markdown out.md
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import notebook_tools as tools
import servers

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


def fmt_ms(ms: float) -> str:
    return f"{ms * 1000:.0f} µs" if ms < 1 else f"{ms:.2f} ms"


def fmt_us(us: float) -> str:
    return f"{us:.1f} µs" if us < 1000 else f"{us / 1000:.2f} ms"


def table(rows: list[tuple[str, Figures, Figures]]) -> str:
    lines = [
        "| workload | tool | mean latency | throughput | tool CPU / request "
        "| server CPU / request | answered OK |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for label, theirs_, ours_ in rows:
        for f in (theirs_, ours_):
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


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--duration", default="10s", help="per workload and tool")
    p.add_argument("--only", help="comma-separated workload numbers (1-based)")
    p.add_argument("--markdown", type=Path, help="also write the table here")
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
        finally:
            server.stop()
        print(
            f"{label:<36} {a.tool:<7} {fmt_ms(a.mean_ms):>9} CPU {fmt_us(a.tool_cpu_us):>9}   "
            f"inferwire-bench {fmt_ms(b.mean_ms):>9} CPU {fmt_us(b.tool_cpu_us):>9}",
            file=sys.stderr,
        )
        rows.append((label, a, b))
    text = table(rows)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
