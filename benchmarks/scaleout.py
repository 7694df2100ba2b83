"""One inferwire instance against three behind nginx (docs/benchmarks.md, "Scaling out
behind nginx"), in one run on one machine, with ``inferwire bench`` (closed loop):

- "1 direct": one instance, no balancer (the reference);
- "1 behind nginx": the same instance through nginx (what the balancer costs);
- "3 behind nginx": three instances through nginx.

Workloads: a no-op model over REST and over gRPC (small requests: the machine's cores
are the limit), and a model that sleeps 5 ms with one model thread per instance (each
instance serves at most 200 requests/s, so instances add capacity even on 2 cores).
For that model, "1 direct, 3 model threads" is one instance allowed three calls at
once (``--model-threads 3``; a sleep releases the GIL): what the three instances buy
on one machine, without a balancer.
Each cell is the median of ``--repeats`` runs; CPU per request is the instances'
process trees and nginx's, from /proc.

    bash scripts/apt-install.sh nginx             # once
    .venv/bin/python benchmarks/scaleout.py       # about 4 minutes

Results: benchmarks/results/scaleout.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.proc_cpu import cpu_seconds  # noqa: E402
from lib.servers import free_port  # noqa: E402
from nginx.balancer import Nginx  # noqa: E402
from runtime import Proc, machine  # noqa: E402

SMALL = '{"data":{"ndarray":[[1]]}}'
# setup: (instances, behind nginx, serve's extra arguments)
SETUPS: dict[str, tuple[int, bool, list[str]]] = {
    "1 direct": (1, False, []),
    "1 behind nginx": (1, True, []),
    "3 behind nginx": (3, True, []),
    "1 direct, 3 model threads": (1, False, ["--model-threads", "3"]),
}
BALANCED = ["1 direct", "1 behind nginx", "3 behind nginx"]
WORKLOADS = [
    # (label, model, transport, clients, setups)
    ("no-op, REST", "benchmarks/models/noop.py:NoopPredict", "rest", 16, BALANCED),
    ("no-op, gRPC", "benchmarks/models/noop.py:NoopPredict", "grpc", 16, BALANCED),
    (
        "sleeps 5 ms, REST",
        "benchmarks/models/noop.py:Sleep5ms",
        "rest",
        16,
        [*BALANCED, "1 direct, 3 model threads"],
    ),
]


def start(model: str, extra: list[str]) -> tuple[Proc, int, int]:
    http, grpc = free_port(), free_port()
    argv = [sys.executable, "-m", "inferwire", "serve", model, "--host", "127.0.0.1"]
    argv += ["--http-port", str(http), "--grpc-port", str(grpc), *extra]
    return Proc(argv, f"http://127.0.0.1:{http}/health/ping"), http, grpc


def attack(url: str, transport: str, clients: int, seconds: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "inferwire", "bench", "attack", url, "-c", str(clients)]
    if transport == "grpc":
        cmd += ["--call", "seldon.protos.Seldon/Predict", "--seldon-json"]
        # gRPC over one HTTP/2 connection would reach one instance: nginx balances
        # per call, but give each client its own connection as a service would.
        cmd += ["--connections", str(clients)]
    cmd += ["-d", SMALL, "-z", f"{seconds}s", "--warmup", "1s", "--format", "json"]
    out = subprocess.run(
        [*cmd, "--no-progress"], capture_output=True, text=True, check=True, timeout=seconds + 120
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def cell(
    setup: str, model: str, transport: str, clients: int, seconds: float, repeats: int
) -> dict[str, Any]:
    n, balanced, extra = SETUPS[setup]
    servers = [start(model, extra) for _ in range(n)]
    lb = Nginx([(h, g) for _, h, g in servers]) if balanced else None
    try:
        if lb:
            url = lb.url if transport == "rest" else lb.grpc_target
        else:
            _, h, g = servers[0]
            url = f"http://127.0.0.1:{h}" if transport == "rest" else f"127.0.0.1:{g}"
        if transport == "rest":
            url += "/api/v1.0/predictions"
        runs = []
        for _ in range(repeats):
            before = sum(cpu_seconds(p.pid) for p, _, _ in servers)
            lb_before = cpu_seconds(lb.proc.pid) if lb else 0.0
            rep = attack(url, transport, clients, seconds)
            served = max(rep["requests"], 1)
            # The warm-up's requests are not in the report: CPU over the whole run is
            # divided by the measured requests plus the warm-up's share (its duration).
            share = seconds / (seconds + 1.0)
            server_cpu = (sum(cpu_seconds(p.pid) for p, _, _ in servers) - before) * share
            lb_cpu = ((cpu_seconds(lb.proc.pid) - lb_before) * share) if lb else 0.0
            runs.append(
                {
                    "rps": rep["throughput"],
                    "p50_ms": rep["latency"]["p50_ns"] / 1e6,
                    "p99_ms": rep["latency"]["p99_ns"] / 1e6,
                    "ok": rep["success"],
                    "server_cpu_us": server_cpu / served * 1e6,
                    "nginx_cpu_us": lb_cpu / served * 1e6,
                    "codes": rep["status_codes"],
                }
            )
    finally:
        if lb:
            lb.stop()
        for p, _, _ in servers:
            p.stop()
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k != "codes"}
    return {"median": med, "runs": runs}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=4.0, help="measured seconds per run")
    p.add_argument("--repeats", type=int, default=3, help="runs per cell (the median is shown)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"machine": machine(), "when": time.strftime("%Y-%m-%d %H:%M")}
    md = [
        f"# Scaling out behind nginx ({results['when']}, {results['machine']})",
        "",
        "| workload | setup | requests/s | × 1 direct | p50 | p99 | success "
        "| inferwire CPU/req | nginx CPU/req |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    results["cells"] = []
    for label, model, transport, clients, setups in WORKLOADS:
        base = None
        for setup in setups:
            c = cell(setup, model, transport, clients, args.seconds, args.repeats)
            m = c["median"]
            base = base or m["rps"]
            results["cells"].append({"workload": label, "setup": setup, **c})
            md.append(
                f"| {label} | {setup} | {m['rps']:,.0f} | {m['rps'] / base:.2f}× "
                f"| {m['p50_ms']:.2f} ms | {m['p99_ms']:.2f} ms | {m['ok'] * 100:.1f}% "
                f"| {m['server_cpu_us']:.0f} µs | "
                + (f"{m['nginx_cpu_us']:.0f} µs |" if SETUPS[setup][1] else "- |")
            )
    md += [
        "",
        f"{clients} clients, closed loop, {args.seconds:g} s per run after a 1 s warm-up, "
        f"median of {args.repeats} runs; gRPC with a connection per client. Each inferwire "
        "instance has its defaults (one process, 2 I/O threads, one model thread) unless "
        "the row says otherwise; nginx one worker process (benchmarks/nginx/balancer.conf).",
    ]
    (args.out / "scaleout.md").write_text("\n".join(md) + "\n")
    (args.out / "scaleout.json").write_text(json.dumps(results, indent=2))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
