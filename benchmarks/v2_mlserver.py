"""The Open Inference Protocol (V2): inferwire against MLServer, in one run (docs/benchmarks.md,
"V2: inferwire and MLServer").

Both serve an echo model (inferwire: benchmarks/models/noop.py:Echo; MLServer 1.7.1: the
custom runtime in benchmarks/peers/mlserver/noop) named ``noop``. MLServer runs twice:
with ``parallel_workers=0`` (the model in the server process) and with its default (one
inference worker process). Every cell is measured with the same tool (inferwire bench,
closed loop), one server after another:

- REST JSON and gRPC (typed contents, raw contents) with 1 and 100,000 INT64 elements,
  one client;
- the binary tensor extension over REST with 100,000 elements (inferwire only: MLServer
  does not implement it);
- small REST JSON requests with 8 and 64 clients.

    bash benchmarks/peers/mlserver/install.sh    # once
    .venv/bin/python benchmarks/v2_mlserver.py   # about 5 minutes

Results: benchmarks/results/v2_mlserver.{md,json}.

To compare two inferwire builds side by side instead (say, before and after a change):
``--baseline OTHER_VENV/bin/python --no-mlserver`` serves the same cells with that
interpreter's inferwire as "inferwire (baseline)", in the same run; the results then go to
v2_builds.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.servers import free_port  # noqa: E402
from runtime import Cell, Proc, attack, fmt_us, inferwire, machine  # noqa: E402

MLSERVER_PYTHON = ROOT / ".tools/peers/mlserver/bin/python"
MLSERVER_SERVE = ROOT / "benchmarks/peers/mlserver/serve.py"
CALL = "inference.GRPCInferenceService/ModelInfer"


def json_body(n: int) -> str:
    data = list(range(n))
    return json.dumps({"inputs": [{"name": "x", "shape": [n], "datatype": "INT64", "data": data}]})


def binary_body(n: int) -> tuple[bytes, int]:
    """The binary extension: JSON header, then the raw INT64s; the reply binary too."""
    header = {
        "inputs": [
            {
                "name": "x",
                "shape": [n],
                "datatype": "INT64",
                "parameters": {"binary_data_size": 8 * n},
            }
        ],
        "parameters": {"binary_data_output": True},
    }
    head = json.dumps(header).encode()
    return head + struct.pack(f"<{n}q", *range(n)), len(head)


def cells(work: Path) -> list[tuple[str, str, int, int, list[str]]]:
    """(label, transport, size, clients, attack args after the URL/target)."""
    out = []
    for n in (1, 100_000):
        body = work / f"json-{n}.json"
        body.write_text(json_body(n))
        out.append(("REST JSON", "rest", n, 1, ["-D", str(body)]))
        for contents in ("typed", "raw"):
            extra = ["--call", CALL, "--v2", contents, "--model", "noop", "-D", str(body)]
            out.append((f"gRPC {contents}", "grpc", n, 1, extra))
    blob, head = binary_body(100_000)
    (work / "binary-100000.bin").write_bytes(blob)
    out.append((
        "REST binary", "rest-binary", 100_000, 1,
        ["-D", str(work / "binary-100000.bin"), "-H", f"Inference-Header-Content-Length: {head}"],
    ))  # fmt: skip
    for clients in (8, 64):
        out.append(("REST JSON", "rest", 1, clients, ["-D", str(work / "json-1.json")]))
    return out


def measure(
    name: str, url: str, grpc: str, pid: int, seconds: float, work: Path
) -> dict[str, Cell | None]:
    results: dict[str, Cell | None] = {}
    for label, transport, size, clients, extra in cells(work):
        key = f"{label}|{size}|{clients}"
        if transport == "rest-binary" and name.startswith("MLServer"):
            results[key] = None  # MLServer has no binary tensor extension
            continue
        target = grpc if transport == "grpc" else f"{url}/v2/models/noop/infer"
        report = attack(target, clients, seconds, pid, *extra)
        if report["success"] < 1.0:
            raise RuntimeError(f"{name} {key}: {report['status_codes']} {report['errors'][:3]}")
        results[key] = Cell.of(report)
        print(f"{name:<22} {key:<26} {report['throughput']:>9.0f}/s", file=sys.stderr)
    return results


def median_cell(cells: list[Cell | None]) -> Cell | None:
    """The median of each figure over rounds (a cell some round did not serve: None)."""
    if any(c is None for c in cells):
        return None
    got = [c for c in cells if c is not None]

    def mid(xs: list[float]) -> float:
        return sorted(xs)[len(xs) // 2]

    cpu = [c.server_cpu_us for c in got if c.server_cpu_us is not None]
    return Cell(
        mid([c.rps for c in got]),
        mid([c.p50_ms for c in got]),
        mid(cpu) if cpu else None,
        min(c.ok for c in got),
        mid([c.mean_us for c in got]),
    )


def mlserver(workers: str | None) -> tuple[Proc, str, str]:
    http, grpc = free_port(), free_port()
    argv = [str(MLSERVER_PYTHON), str(MLSERVER_SERVE), "--http-port", str(http)]
    argv += ["--grpc-port", str(grpc)]
    if workers is not None:
        argv += ["--parallel-workers", workers]
    url = f"http://127.0.0.1:{http}"
    return Proc(argv, f"{url}/v2/models/noop/ready"), url, f"127.0.0.1:{grpc}"


def ratio(a: float, b: float) -> str:
    """Whole times for a peer (5×), two decimals between builds (1.02×)."""
    r = a / b
    return f"{r:.0f}×" if r >= 3 else f"{r:.2f}×"


def table(all_results: dict[str, dict[str, Cell | None]], seconds: float) -> list[str]:
    names = list(all_results)
    ours = names[0]
    lines = [
        "| cell | elements | clients | "
        + " | ".join(f"{n} req/s | mean | CPU/req" for n in names)
        + f" | req/s × vs {' / '.join(names[1:])} | mean latency ÷ |",
        "|---|---|---|" + "---|" * (3 * len(names) + 2),
    ]
    for key in all_results[ours]:
        label, size, clients = key.split("|")
        row = f"| {label} | {int(size):,} | {clients} |"
        for n in names:
            c = all_results[n].get(key)
            row += (
                f" {c.rps:,.0f} | {fmt_us(c.mean_us)} | {fmt_us(c.server_cpu_us)} |"
                if c
                else " not supported | - | - |"
            )
        mine = all_results[ours][key]
        theirs = [all_results[n].get(key) for n in names[1:]]
        rps = " / ".join(ratio(mine.rps, t.rps) if mine and t else "-" for t in theirs)
        lat = " / ".join(ratio(t.mean_us, mine.mean_us) if mine and t else "-" for t in theirs)
        lines.append(row + f" {rps} | {lat} |")
    lines.append("")
    lines.append(f"Closed loop, {seconds:g} s per cell after a 1 s warm-up; CPU/req is the")
    lines.append("server's whole process tree divided by the requests it served.")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    p.add_argument(
        "--baseline",
        help="another venv's python: its inferwire build is measured too, as "
        "'inferwire (baseline)'",
    )
    p.add_argument("--no-mlserver", action="store_true", help="leave MLServer out")
    p.add_argument("--rounds", type=int, default=1, help="measure every server this many times")
    args = p.parse_args()
    if not args.no_mlserver and not MLSERVER_PYTHON.exists():
        print(
            "MLServer is not installed: bash benchmarks/peers/mlserver/install.sh", file=sys.stderr
        )
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="v2-bench-"))
    results: dict[str, dict[str, Cell | None]] = {}
    builds = [("inferwire", sys.executable)]
    if args.baseline:
        builds.append(("inferwire (baseline)", args.baseline))
    # Rounds alternate the servers, so that a noisy minute does not land on one of them.
    rounds: dict[str, list[dict[str, Cell | None]]] = {}
    for _ in range(args.rounds):
        for name, python in builds:
            server, url = inferwire(
                "benchmarks/models/noop.py:Echo", "--model-name", "noop", python=python
            )
            grpc = server.argv[server.argv.index("--grpc-port") + 1]
            try:
                rounds.setdefault(name, []).append(
                    measure(name, url, f"127.0.0.1:{grpc}", server.pid, args.seconds, work)
                )
            finally:
                server.stop()
    for name, measured in rounds.items():
        results[name] = {k: median_cell([m[k] for m in measured]) for k in measured[0]}
    for label, workers in (("MLServer pw=0", "0"), ("MLServer default", None)):
        if args.no_mlserver:
            break
        proc, url, grpc_target = mlserver(workers)
        try:
            results[label] = measure(label, url, grpc_target, proc.pid, args.seconds, work)
        finally:
            proc.stop()
    when = time.strftime("%Y-%m-%d %H:%M")
    title = "inferwire builds" if args.no_mlserver else "inferwire and MLServer"
    stem = "v2_builds" if args.no_mlserver else "v2_mlserver"
    md = [f"# V2: {title} ({when}, {machine()})", "", *table(results, args.seconds)]
    if args.rounds > 1:
        md.append(f"Each inferwire figure is the median of {args.rounds} rounds.")
    (args.out / f"{stem}.md").write_text("\n".join(md) + "\n")
    (args.out / f"{stem}.json").write_text(
        json.dumps(
            {n: {k: (c.__dict__ if c else None) for k, c in r.items()} for n, r in results.items()},
            indent=2,
        )
    )
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
