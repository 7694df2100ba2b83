"""A Seldon inference graph in one process against the same graph as separate servers
chained over HTTP, in one run (docs/benchmarks.md, "A Seldon graph in one process").

The graph (benchmarks/graphs/chain.yaml) is transformer -> model -> output transformer,
each node cheap (benchmarks/models/graph_nodes.py), so the figures are the cost of moving
the message through the graph:

- one process: ``inferwire serve benchmarks/graphs/chain.yaml``; arrays pass between the
  nodes as numpy arrays;
- chained: three inferwire servers, one per node, each running its step and sending the
  message on as JSON to the next (``graph_nodes.Hop``), the way Seldon's executor calls
  each node's container: every hop decodes and encodes the message again.

Both are driven by the same tool (``inferwire bench attack``, closed loop, one client)
with a SeldonMessage ndarray of 10 and of 100,000 numbers. Server CPU per request is the
CPU time of every server process over the run divided by the requests answered.

    .venv/bin/python benchmarks/graph.py            # about 2 minutes

Results: benchmarks/results/graph.{md,json}. ``--python`` picks the interpreter whose
inferwire serves (a release build: see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.proc_cpu import cpu_seconds  # noqa: E402
from runtime import Proc, attack, inferwire, machine  # noqa: E402

GRAPH = ROOT / "benchmarks/graphs/chain.yaml"
HOP = "benchmarks/models/graph_nodes.py:Hop"
SIZES = (10, 100_000)


def body(n: int) -> str:
    return json.dumps({"data": {"ndarray": [[float(i % 97) for i in range(n)]]}})


def one_process(python: str) -> tuple[list[Proc], str]:
    proc, url = inferwire(str(GRAPH), python=python)
    return [proc], url


def chained(python: str) -> tuple[list[Proc], str]:
    """clip <- offset <- scale: started last to first, so each knows the next's URL."""
    procs: list[Proc] = []
    nxt = ""
    for step in ("clip", "offset", "scale"):
        env = {"STEP": step, "NEXT_URL": f"{nxt}/api/v1.0/predictions" if nxt else ""}
        proc, url = inferwire(HOP, python=python, env=env)
        procs.append(proc)
        nxt = url
    return procs, nxt


def measure(procs: list[Proc], url: str, n: int, seconds: float) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(body(n))
    before = sum(cpu_seconds(p.pid) for p in procs)
    report = attack(
        f"{url}/api/v1.0/predictions",
        1,
        seconds,
        procs[0].pid,
        "--data-file",
        f.name,
        "-H",
        "Content-Type: application/json",
    )
    after = sum(cpu_seconds(p.pid) for p in procs)
    Path(f.name).unlink()
    answered = report["success"] * report["requests"]
    return {
        "p50_ms": report["latency"]["p50_ns"] / 1e6,
        "rps": report["throughput"],
        "ok": report["success"],
        "cpu_us": (after - before) * 1e6 / answered if answered else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=8.0, help="per cell and round")
    ap.add_argument("--rounds", type=int, default=3, help="medians of this many rounds")
    ap.add_argument("--python", default=sys.executable, help="interpreter whose inferwire serves")
    args = ap.parse_args()
    setups = {"one process": one_process, "chained over HTTP": chained}
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {k: {n: [] for n in SIZES} for k in setups}
    for _ in range(args.rounds):
        for name, start in setups.items():
            procs, url = start(args.python)
            try:
                for n in SIZES:
                    runs[name][n].append(measure(procs, url, n, args.seconds))
            finally:
                for p in procs:
                    p.stop()
    med = {
        k: {
            n: {f: statistics.median(r[f] for r in rs) for f in ("p50_ms", "rps", "cpu_us", "ok")}
            for n, rs in v.items()
        }
        for k, v in runs.items()
    }
    lines = [
        f"Machine: {machine()}. One client, closed loop, {args.seconds:g} s per cell, median "
        f"of {args.rounds} rounds (one process and chained alternate within each round).",
        "",
        "| numbers | setup | p50 latency | requests/s | server CPU / request | answered 200 "
        "| chained ÷ one process (latency, CPU) |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for n in SIZES:
        a, b = med["one process"][n], med["chained over HTTP"][n]
        for name, c in (("one process", a), ("chained over HTTP", b)):
            ratio = (
                f"{b['p50_ms'] / a['p50_ms']:.1f}× , {b['cpu_us'] / a['cpu_us']:.1f}×"
                if name != "one process"
                else ""
            )
            lines.append(
                f"| {n:,} | {name} | {c['p50_ms']:.2f} ms | {c['rps']:.0f} | "
                f"{c['cpu_us']:.0f} µs | {c['ok']:.0%} | {ratio} |"
            )
    out = ROOT / "benchmarks/results"
    out.mkdir(exist_ok=True)
    (out / "graph.md").write_text("\n".join(lines) + "\n")
    (out / "graph.json").write_text(json.dumps({"medians": med, "runs": runs}, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
