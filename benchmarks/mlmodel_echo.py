"""An MLServer ``MLModel`` echo of 100,000 FP32 over V2 REST (JSON) and gRPC (raw contents),
in one run (docs/benchmarks.md, "Dialects and runtimes restructure (issue 36)"):

- inferwire, ``inferwire start`` on the MLServer folder benchmarks/peers/mlserver/noop (its
  ``NoopRuntime(MLModel)`` hands the first input's data back), this checkout's build and,
  with ``--baseline CHECKOUT``, another checkout's build (say, the commit before a change);
- inferwire serving the same echo as a plain class, ``inferwire serve
  benchmarks/models/noop.py:Echo`` (``predict`` returns its input), this checkout's build;
- MLServer 1.7.1 (``mlserver start`` on the same folder, benchmarks/peers/mlserver/serve.py)
  with its default of one inference worker and with ``parallel_workers=0``.

An MLModel imports mlserver, so inferwire's servers run with an interpreter that has it
(``--python``; default the MLServer peer's virtualenv, .tools/peers/mlserver) and with the
checkout's ``python/`` folder, where ``maturin develop`` put its extension, first on
PYTHONPATH; the plain class runs the same way, so that only the model's class differs.
inferwire's copy of the folder leaves out settings.json's ``"metrics_endpoint": null``
(MLServer's "no metrics"), which builds before 2026-11-27 refuse ("None is not a valid
str"), so that every build reads the same settings.
Every server is started afresh in each round, the rounds alternate the servers, and each
figure is the median over rounds. Each cell is ``inferwire bench attack`` (this
interpreter's), one client, closed loop, a 1 s warm-up, then ``--seconds``; server CPU per
request is the server's whole process tree (/proc) over the requests it served. Before
measuring, each server's REST reply is checked: 100,000 FP32 equal to the request's.

    bash benchmarks/peers/mlserver/install.sh              # once
    .venv/bin/python benchmarks/mlmodel_echo.py --baseline /tmp/before --rounds 3

Results: benchmarks/results/mlmodel_echo.{md,json}. Bounded: at most rounds × servers × 2
cells of ``--seconds`` each (plus start-up), all on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.servers import free_port  # noqa: E402
from runtime import Cell, PeerProc, Proc, attack, fmt_us, machine  # noqa: E402
from v2_mlserver import CALL, median_cell  # noqa: E402

MLSERVER_PYTHON = ROOT / ".tools/peers/mlserver/bin/python"
MLSERVER_SERVE = ROOT / "benchmarks/peers/mlserver/serve.py"
FOLDER = ROOT / "benchmarks/peers/mlserver/noop"
N = 100_000
CELLS = (("REST JSON", "rest"), ("gRPC raw", "grpc"))


def body(n: int) -> str:
    # Eighths: exact in FP32 and short in JSON.
    data = [i / 8 for i in range(n)]
    return json.dumps({"inputs": [{"name": "x", "shape": [n], "datatype": "FP32", "data": data}]})


def check_reply(url: str, request: bytes) -> None:
    """The REST reply must hand the 100,000 FP32 back unchanged."""
    req = urllib.request.Request(
        f"{url}/v2/models/noop/infer", request, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        reply = json.loads(r.read())
    out = reply["outputs"][0]
    sent = json.loads(request)["inputs"][0]["data"]
    if out["datatype"] != "FP32" or out["shape"] != [N] or out["data"] != sent:
        raise RuntimeError(f"{url}: not an echo: {out['datatype']} {out['shape']}")


@dataclass
class Server:
    """One of the servers compared: its name, and how to start it (the process, with
    ``pid`` and ``stop()``; the REST URL; the gRPC target)."""

    name: str
    start: Callable[[], tuple[Proc | PeerProc, str, str]]


def inferwire_server(python: str, checkout: Path, *args: str) -> Server:
    def start() -> tuple[Proc, str, str]:
        http, grpc = free_port(), free_port()
        argv = [python, "-m", "inferwire", *args, "--host", "127.0.0.1"]
        argv += ["--http-port", str(http), "--grpc-port", str(grpc)]
        argv += ["--metrics-port", str(free_port()), "--log-level", "warning"]
        url = f"http://127.0.0.1:{http}"
        env = {"PYTHONPATH": str(checkout / "python")}
        proc = Proc(argv, f"{url}/v2/models/noop/ready", env=env)
        return proc, url, f"127.0.0.1:{grpc}"

    return Server("", start)


def mlserver_server(workers: str | None) -> Server:
    def start() -> tuple[PeerProc, str, str]:
        argv = [str(MLSERVER_PYTHON), str(MLSERVER_SERVE)]
        argv += ["--http-port", str(free_port()), "--grpc-port", str(free_port())]
        if workers is not None:
            argv += ["--parallel-workers", workers]
        proc = PeerProc(argv, "MLServer")
        return proc, proc.url, proc.grpc

    return Server("", start)


def servers(args: argparse.Namespace, folder: Path) -> list[Server]:
    checkout = args.checkout.resolve()
    out: list[tuple[str, Server]] = [
        ("inferwire MLModel", inferwire_server(args.python, checkout, "start", str(folder))),
    ]
    if args.baseline:
        base = inferwire_server(args.python, args.baseline.resolve(), "start", str(folder))
        out.append(("inferwire MLModel (baseline)", base))
    plain = ("serve", "benchmarks/models/noop.py:Echo", "--model-name", "noop")
    out.append(("inferwire plain class", inferwire_server(args.python, checkout, *plain)))
    if not args.no_mlserver:
        out.append(("MLServer 1.7.1", mlserver_server(None)))
        out.append(("MLServer 1.7.1 pw=0", mlserver_server("0")))
    for name, server in out:
        server.name = name
    return [server for _, server in out]


def measure(server: Server, seconds: float, work: Path) -> dict[str, Cell]:
    proc, url, grpc = server.start()
    try:
        check_reply(url, (work / "fp32.json").read_bytes())
        results = {}
        for label, transport in CELLS:
            extra = ["-D", str(work / "fp32.json")]
            if transport == "grpc":
                target = grpc
                extra += ["--call", CALL, "--v2", "raw", "--model", "noop"]
            else:
                target = f"{url}/v2/models/noop/infer"
            report = attack(target, 1, seconds, proc.pid, *extra)
            if report["success"] < 1.0:
                raise RuntimeError(
                    f"{server.name} {label}: {report['status_codes']} {report['errors'][:3]}"
                )
            results[label] = Cell.of(report)
            print(
                f"{server.name:<30} {label:<10} {report['throughput']:>7.1f}/s "
                f"CPU/req {fmt_us(results[label].server_cpu_us)}",
                file=sys.stderr,
            )
        return results
    finally:
        proc.stop()


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def tables(results: dict[str, dict[str, Cell]], args: argparse.Namespace) -> list[str]:
    names = list(results)
    lines = [
        "| server | "
        + " | ".join(f"{label} median latency | {label} CPU/req" for label, _ in CELLS)
        + " |",
        "|---|" + "---:|" * (2 * len(CELLS)),
    ]
    for name in names:
        row = f"| {name} |"
        for label, _ in CELLS:
            c = results[name][label]
            row += f" {fmt_us(c.p50_ms * 1000)} | {fmt_us(c.server_cpu_us)} |"
        lines.append(row)
    after, plain = "inferwire MLModel", "inferwire plain class"
    pairs = [(after, "inferwire MLModel (baseline)"), (after, plain)]
    pairs += [(m, after) for m in ("MLServer 1.7.1", "MLServer 1.7.1 pw=0")]
    lines += ["", "| ratio | " + " | ".join(f"{label} latency | CPU/req" for label, _ in CELLS)]
    lines[-1] += " |"
    lines.append("|---|" + "---:|" * (2 * len(CELLS)))
    for a, b in pairs:
        if a not in results or b not in results:
            continue
        row = f"| {a} ÷ {b} |"
        for label, _ in CELLS:
            x, y = results[a][label], results[b][label]
            row += f" {ratio(x.p50_ms, y.p50_ms)} | {ratio(x.server_cpu_us, y.server_cpu_us)} |"
        lines.append(row)
    lines += [
        "",
        f"{N:,} FP32 echoed, one client, closed loop, {args.seconds:g} s per cell after a 1 s "
        f"warm-up; medians of {args.rounds} alternating rounds (each server started afresh "
        "in each). CPU/req: the server's whole process tree (MLServer's inference worker "
        "included) over the requests it served.",
    ]
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=3.0, help="measured seconds per cell")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (medians)")
    p.add_argument(
        "--checkout",
        type=Path,
        default=ROOT,
        help="the checkout whose python/ (with its built extension) serves (default: this one)",
    )
    p.add_argument(
        "--baseline",
        type=Path,
        help="another checkout (its python/ with its built extension), measured too as "
        "'inferwire MLModel (baseline)'",
    )
    p.add_argument(
        "--python",
        default=str(MLSERVER_PYTHON),
        help="the interpreter inferwire's servers run with; it needs mlserver "
        "(default: the MLServer peer's, .tools/peers/mlserver)",
    )
    p.add_argument("--no-mlserver", action="store_true", help="leave MLServer itself out")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    args = p.parse_args()
    if not MLSERVER_PYTHON.exists() and (not args.no_mlserver or args.python == MLSERVER_PYTHON):
        print(
            "MLServer is not installed: bash benchmarks/peers/mlserver/install.sh", file=sys.stderr
        )
        return 2
    got = subprocess.run(
        [args.python, "-c", "import mlserver, inferwire._core"],
        env={"PYTHONPATH": str(args.checkout.resolve() / "python"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    if got.returncode:
        print(f"{args.python} cannot import mlserver and inferwire:\n{got.stderr}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mlmodel-echo-"))
    try:
        (work / "fp32.json").write_text(body(N))
        folder = work / "noop"
        shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__"))
        # Builds before 2026-11-27 refuse MLServer's `"metrics_endpoint": null` (metrics
        # off), which the folder's settings.json has: inferwire's copy leaves it out.
        settings = json.loads((folder / "settings.json").read_text())
        if settings.get("metrics_endpoint", "") is None:
            del settings["metrics_endpoint"]
        (folder / "settings.json").write_text(json.dumps(settings, indent=4) + "\n")
        rounds: dict[str, list[dict[str, Cell]]] = {}
        for _ in range(args.rounds):
            for server in servers(args, folder):
                rounds.setdefault(server.name, []).append(measure(server, args.seconds, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results: dict[str, dict[str, Cell]] = {}
    for name, measured in rounds.items():
        results[name] = {}
        for label, _ in CELLS:
            cell = median_cell([m[label] for m in measured])
            assert cell is not None
            results[name][label] = cell
    when = time.strftime("%Y-%m-%d %H:%M")
    md = [f"# MLModel echo of {N:,} FP32 ({when}, {machine()})", "", *tables(results, args)]
    (args.out / "mlmodel_echo.md").write_text("\n".join(md) + "\n")
    raw = {n: {k: [m[k].__dict__ for m in ms] for k, _ in CELLS} for n, ms in rounds.items()}
    medians = {n: {k: c.__dict__ for k, c in r.items()} for n, r in results.items()}
    (args.out / "mlmodel_echo.json").write_text(
        json.dumps({"medians": medians, "rounds": raw}, indent=2)
    )
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
