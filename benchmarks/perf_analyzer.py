"""Triton's perf_analyzer and `inferwire bench` measuring the same server, side by side
(docs/benchmarks.md, "perf_analyzer and inferwire bench").

One inferwire server serves a model that sleeps 5 ms (tests/tritonmodels.py:
Sleep5ms, FP32 [1, 16] in and out). For HTTP (the binary tensor extension, as
perf_analyzer sends it) and gRPC (raw contents), at concurrency 1 and 2, perf_analyzer
with its default options (5 s windows, stable within 10 %) and `inferwire bench attack`
(closed loop, the same request) are run one after the other, in rounds that alternate
them; each figure is the median over rounds. The server's CPU time per request is its
process tree's CPU time over the requests its statistics counted in that run.

    bash scripts/install-perf-analyzer.sh        # once (cached)
    python benchmarks/perf_analyzer.py           # about 10 minutes with 3 rounds

Run it with a release build's interpreter (see docs/benchmarks.md). Results:
benchmarks/results/perf_analyzer.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.proc_cpu import cpu_seconds  # noqa: E402
from runtime import attack, inferwire, machine  # noqa: E402

MODEL = "sleep"
ELEMENTS = 16
CALL = "inference.GRPCInferenceService/ModelInfer"
# perf_analyzer's default; a busy machine may need a wider band (--stability).
STABILITY = 10


def served(url: str) -> int:
    """Successful requests the server's statistics count so far."""
    with urllib.request.urlopen(f"{url}/v2/models/{MODEL}/stats", timeout=10) as r:
        stats = json.load(r)["model_stats"][0]
    return int(stats["inference_stats"]["success"]["count"])


def perf_analyzer(
    pa: str, protocol: str, target: str, clients: int, url: str, pid: int
) -> dict[str, float]:
    before_n, before_cpu = served(url), cpu_seconds(pid)
    argv = [pa, "-m", MODEL, "-u", target, "-i", protocol, "--concurrency-range", str(clients)]
    argv += ["--stability-percentage", str(STABILITY)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{argv}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    n = served(url) - before_n
    found = re.search(
        r"Concurrency: \d+, throughput: ([\d.]+) infer/sec, latency (\d+) usec", out.stdout
    )
    if not found:
        raise RuntimeError(f"no summary line in perf_analyzer's report:\n{out.stdout}")
    p50 = re.search(r"p50 latency: (\d+) usec", out.stdout)
    return {
        "rps": float(found.group(1)),
        "mean_us": float(found.group(2)),
        "p50_us": float(p50.group(1)) if p50 else 0.0,
        "cpu_us": (cpu_seconds(pid) - before_cpu) * 1e6 / max(n, 1),
    }


def bench(
    protocol: str, target: str, clients: int, pid: int, seconds: float, work: Path
) -> dict[str, float]:
    values = [float(i) for i in range(ELEMENTS)]
    if protocol == "http":
        header = {
            "inputs": [
                {"name": "x", "datatype": "FP32", "shape": [1, ELEMENTS],
                 "parameters": {"binary_data_size": 4 * ELEMENTS}}
            ],
            "outputs": [{"name": "y", "parameters": {"binary_data": True}}],
        }  # fmt: skip
        head = json.dumps(header).encode()
        body = work / "http.bin"
        body.write_bytes(head + struct.pack(f"<{ELEMENTS}f", *values))
        extra = ["-D", str(body), "-H", f"Inference-Header-Content-Length: {len(head)}"]
        report = attack(f"{target}/v2/models/{MODEL}/infer", clients, seconds, pid, *extra)
    else:
        body = work / "grpc.json"
        body.write_text(
            json.dumps(
                {
                    "inputs": [
                        {"name": "x", "datatype": "FP32", "shape": [1, ELEMENTS], "data": values}
                    ]
                }
            )
        )
        extra = ["--call", CALL, "--v2", "raw", "--model", MODEL, "-D", str(body)]
        report = attack(target, clients, seconds, pid, *extra)
    if report["success"] < 1.0:
        raise RuntimeError(f"bench {protocol}: {report['status_codes']} {report['errors'][:3]}")
    return {
        "rps": report["throughput"],
        "mean_us": report["latency"]["mean_ns"] / 1e3,
        "p50_us": report["latency"]["p50_ns"] / 1e3,
        "cpu_us": (report.get("server_cpu_ns_per_request") or 0) / 1e3,
    }


def main() -> int:
    global STABILITY
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0, help="inferwire bench's run per cell")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    p.add_argument(
        "--stability",
        type=int,
        default=STABILITY,
        help="perf_analyzer's --stability-percentage (its default: 10)",
    )
    args = p.parse_args()
    STABILITY = args.stability
    pa = subprocess.run(
        ["bash", str(ROOT / "scripts/install-perf-analyzer.sh")],
        capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()[-1]  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="perf-analyzer-"))
    server, url = inferwire(
        "tests/tritonmodels.py:Sleep5ms", "--model-name", MODEL, "--model-version", "1"
    )
    grpc = "127.0.0.1:" + server.argv[server.argv.index("--grpc-port") + 1]
    http = url.removeprefix("http://")
    runs: dict[str, dict[str, list[dict[str, float]]]] = {}
    try:
        for r in range(args.rounds):
            for protocol in ("http", "grpc"):
                for clients in (1, 2):
                    key = f"{protocol}|{clients}"
                    tools = ["perf_analyzer", "inferwire bench"]
                    for tool in tools if r % 2 == 0 else tools[::-1]:
                        if tool == "perf_analyzer":
                            target = http if protocol == "http" else grpc
                            got = perf_analyzer(pa, protocol, target, clients, url, server.pid)
                        else:
                            target = url if protocol == "http" else grpc
                            got = bench(protocol, target, clients, server.pid, args.seconds, work)
                        runs.setdefault(key, {}).setdefault(tool, []).append(got)
                        print(f"round {r + 1} {key:<8} {tool:<16} {got['rps']:7.1f}/s "
                              f"mean {got['mean_us']:7.0f} us", file=sys.stderr)  # fmt: skip
    finally:
        server.stop()
    med: dict[str, dict[str, dict[str, float]]] = {
        key: {
            tool: {f: statistics.median(x[f] for x in xs) for f in xs[0]} for tool, xs in t.items()
        }
        for key, t in runs.items()
    }
    when = time.strftime("%Y-%m-%d %H:%M")
    md = [
        f"# perf_analyzer and inferwire bench ({when}, {machine()})",
        "",
        "| protocol | clients | perf_analyzer req/s | inferwire bench req/s | ratio | "
        "perf_analyzer mean | bench mean | ratio | server CPU/req (pa / bench) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, t in med.items():
        protocol, clients = key.split("|")
        a, b = t["perf_analyzer"], t["inferwire bench"]
        md.append(
            f"| {protocol} | {clients} | {a['rps']:.1f} | {b['rps']:.1f} | "
            f"{a['rps'] / b['rps']:.3f} | "
            f"{a['mean_us'] / 1e3:.2f} ms | {b['mean_us'] / 1e3:.2f} ms | "
            f"{a['mean_us'] / b['mean_us']:.3f} | {a['cpu_us']:.0f} / {b['cpu_us']:.0f} µs |"
        )
    md += [
        "",
        f"Medians of {args.rounds} rounds; perf_analyzer with its defaults (5 s windows until "
        f"3 agree within {args.stability} %), inferwire bench closed loop for "
        f"{args.seconds:g} s after a 1 s warm-up, the same request (FP32 [1, 16]; HTTP "
        "binary extension, gRPC raw contents).",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "perf_analyzer.md").write_text("\n".join(md) + "\n")
    (args.out / "perf_analyzer.json").write_text(
        json.dumps({"medians": med, "runs": runs}, indent=2)
    )
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
