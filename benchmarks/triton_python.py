"""Triton's Python backend against ``inferwire tritonserver``: the same Triton model
repository, the same requests, one server after the other on this machine.

Triton runs its Python models out of process: tritonserver starts a stub process per
model instance and copies every request's tensors into shared memory and back; a BLS call
(``pb_utils.InferenceRequest(...).exec()``) goes from the calling model's stub back
through tritonserver to the called model's stub. ``inferwire tritonserver`` runs the same
``model.py`` files in its own process. This measures what that costs per request.

The repository is ``benchmarks/peers/tritonserver/repository`` (``--repository``):

- ``blank``: the minimum TritonPythonModel, its INT64 input back (one INT64 is sent);
- ``add_sub``: python_backend's own example, unchanged (tests/vendor/triton_python_backend;
  two FP32 [4] in, their sum and difference out);
- ``bls_pipeline``: a two-step pipeline whose execute calls ``blank`` through BLS and
  answers with its result (one INT64).

Cells: ``blank`` and ``add_sub`` at 1 and 8 clients, and ``bls_pipeline`` at 1 and 8
clients, each over HTTP (V2 JSON) and gRPC (``ModelInfer``, raw contents): 12 per server.
Each cell is ``inferwire bench attack`` (closed loop) for ``--warmup`` seconds, not
counted, then ``--seconds`` measured, on 127.0.0.1; its requests/s and p50/p99 latency,
and the server's CPU time per request: ``utime + stime`` (and the reaped children's) from
``/proc/PID/stat`` of the server's process and all its descendants (Triton's stubs are
tritonserver's children), read before and after the measured run, divided by the
requests answered. Then the BLS step: per server, protocol and clients, the pipeline's
time per request (mean and p50 latency) and CPU per request minus blank's.

The servers (``--servers``, default ``inferwire,triton,floor``, in that order; never at
once):

- ``triton``: tritonserver 2.51.0 from PyTriton's wheel, run directly by
  ``benchmarks/peers/tritonserver/serve.py`` (its README: the stub, its environment) with
  ``--model-control-mode none``, CPU only; CPU measured over serve.py's tree
  (serve.py, tritonserver, one stub per model);
- ``inferwire``: ``inferwire tritonserver --model-repository REPO --http-port P
  --grpc-port G --metrics-port M`` (addresses 127.0.0.1), the executable ``--inferwire``
  (default: this interpreter's ``-m inferwire``);
- ``floor``: the repository's do-nothing servers, ``http_floor`` and ``grpc_floor`` from
  ``--examples`` (default ``target/release/examples``; ``cargo build --release -p
  inferwire-server --example http_floor --example grpc_floor``), under one ``bash`` so
  that one process tree holds both: they parse nothing (the end of a request is all they
  look for) and answer every request with the same small reply, ``200 [1]`` over HTTP and
  an empty message with ``grpc-status: 0`` over gRPC. The same for every model; its CPU
  per request is what the kernel's sockets alone cost in that cell, the least any server
  can spend there. The tables put Triton's CPU per request divided by 20 beside it.

    bash benchmarks/peers/tritonserver/install.sh           # once
    .venv/bin/python benchmarks/triton_python.py [--servers triton] [--seconds 5] [--rounds 2]

About 90 s per server and round at the defaults (12 cells of 1 + 5 s, start, stop). Prints a
markdown table and writes benchmarks/results/triton_python.{md,json}. A server that does
not start is reported (its log's tail) and the run goes on with the others; the exit
status is then 1.
"""

from __future__ import annotations

import argparse
import json
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.proc_cpu import cpu_seconds  # noqa: E402
from lib.servers import FLOOR_EXAMPLES, floor_command, free_port  # noqa: E402
from runtime import PeerProc, Proc, machine  # noqa: E402

REPOSITORY = ROOT / "benchmarks/peers/tritonserver/repository"
TRITON_PYTHON = ROOT / ".tools/peers/pytriton/bin/python"
TRITON_SERVE = ROOT / "benchmarks/peers/tritonserver/serve.py"
V2_CALL = "inference.GRPCInferenceService/ModelInfer"
SERVERS = ("inferwire", "triton", "floor")
PROTOCOLS = ("http", "grpc")
CLIENTS = (1, 8)


def int64(name: str, values: list[int]) -> dict[str, Any]:
    return {"name": name, "shape": [len(values)], "datatype": "INT64", "data": values}


def fp32(name: str, values: list[float]) -> dict[str, Any]:
    return {"name": name, "shape": [len(values)], "datatype": "FP32", "data": values}


# model -> its V2 JSON request (gRPC: the same request with raw contents).
BODIES: dict[str, dict[str, Any]] = {
    "blank": {"inputs": [int64("INPUT0", [7])]},
    "add_sub": {
        "inputs": [fp32("INPUT0", [0.5, 1.5, 2.5, 3.5]), fp32("INPUT1", [0.25, 1.0, -1.0, 8.0])]
    },
    "bls_pipeline": {"inputs": [int64("INPUT0", [7])]},
}


@dataclass(frozen=True)
class Form:
    model: str
    protocol: str
    clients: int

    @property
    def key(self) -> str:
        return f"{self.model}|{self.protocol}|{self.clients}"


FORMS = [Form(m, p, c) for m in BODIES for p in PROTOCOLS for c in CLIENTS]


@dataclass
class Cell:
    requests: int
    rps: float
    p50_us: float
    p99_us: float
    mean_us: float
    server_cpu_us: float  # /proc, before and after, over the server's tree
    bench_server_cpu_us: float | None  # the load generator's own --server-pid figure
    client_cpu_us: float


@dataclass
class Running:
    """A started server: the PID whose tree is measured, its URL and gRPC target."""

    pid: int
    url: str
    grpc: str
    start_s: float
    stop: Callable[[], None]


# ---------------------------------------------------------------- servers


def wait_models(url: str, models: list[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    for model in models:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/v2/models/{model}/ready", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url}: model {model} not ready in {timeout:.0f} s")
            time.sleep(0.2)


def wait_port(address: str, timeout: float = 30.0) -> None:
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{address}: not listening in {timeout:.0f} s") from None
            time.sleep(0.1)


def start_triton(args: argparse.Namespace) -> Running:
    if not TRITON_PYTHON.exists():
        raise RuntimeError("not installed: bash benchmarks/peers/tritonserver/install.sh")
    http, grpc, metrics = free_port(), free_port(), free_port()
    argv = [str(TRITON_PYTHON), str(TRITON_SERVE), "--model-repository", str(args.repository)]
    argv += ["--http-port", str(http), "--grpc-port", str(grpc), "--metrics-port", str(metrics)]
    started = time.monotonic()
    peer = PeerProc(argv, "tritonserver")  # READY once every model of the repository is
    return Running(peer.pid, peer.url, peer.grpc, time.monotonic() - started, peer.stop)


def start_inferwire(args: argparse.Namespace) -> Running:
    http, grpc, metrics = free_port(), free_port(), free_port()
    argv = [*args.inferwire, "tritonserver", "--model-repository", str(args.repository)]
    argv += ["--http-port", str(http), "--grpc-port", str(grpc), "--metrics-port", str(metrics)]
    for kind in ("http", "grpc", "metrics"):
        argv += [f"--{kind}-address", "127.0.0.1"]
    url = f"http://127.0.0.1:{http}"
    proc = Proc(argv, f"{url}/v2/health/ready", timeout=120.0)
    running = Running(proc.pid, url, f"127.0.0.1:{grpc}", proc.start_seconds, proc.stop)
    try:
        wait_models(url, list(BODIES))
    except RuntimeError:
        proc.stop()
        raise
    return running


def start_floor(args: argparse.Namespace) -> Running:
    """``http_floor`` and ``grpc_floor`` (``lib.servers.floor_command``): the PID measured
    is their shell's; stopping kills the process group."""
    argv, http, grpc = floor_command(args.examples)
    url = f"http://{http}"
    proc = Proc(argv, f"{url}/v2/health/ready", timeout=30.0)
    try:
        wait_port(grpc)
    except RuntimeError:
        proc.stop()
        raise
    return Running(proc.pid, url, grpc, proc.start_seconds, proc.stop)


STARTERS: dict[str, Callable[[argparse.Namespace], Running]] = {
    "inferwire": start_inferwire,
    "triton": start_triton,
    "floor": start_floor,
}


# ---------------------------------------------------------------- measuring


def attack_argv(bench: list[str], r: Running, form: Form, body: Path) -> list[str]:
    if form.protocol == "http":
        target = f"{r.url}/v2/models/{form.model}/infer"
        extra = ["-H", "Content-Type: application/json"]
    else:
        target = r.grpc
        extra = ["--call", V2_CALL, "--v2", "raw", "--model", form.model]
    argv = [*bench, "attack", target, "-c", str(form.clients), "-D", str(body), *extra]
    return [*argv, "--timeout", "10s", "--no-progress"]


def run_bench(argv: list[str], seconds: float) -> dict[str, Any]:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    if out.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)}: exit {out.returncode}\n{out.stderr[-2000:]}")
    return json.loads(out.stdout) if out.stdout.strip() else {}


def measure_cell(
    bench: list[str], r: Running, form: Form, body: Path, seconds: float, warmup: float
) -> Cell:
    argv = attack_argv(bench, r, form, body)
    if warmup > 0:
        run_bench([*argv, "-z", f"{warmup}s", "--format", "json"], warmup)
    before = cpu_seconds(r.pid)
    report = run_bench(
        [*argv, "-z", f"{seconds}s", "--server-pid", str(r.pid), "--format", "json"], seconds
    )
    after = cpu_seconds(r.pid)
    if report["success"] < 1.0:
        raise RuntimeError(
            f"{form.key}: {report['status_codes']} {report['errors'][:3]} ({report['requests']})"
        )
    n = report["requests"]
    lat = report["latency"]
    bench_cpu = report.get("server_cpu_ns_per_request")
    return Cell(
        requests=n,
        rps=report["throughput"],
        p50_us=lat["p50_ns"] / 1e3,
        p99_us=lat["p99_ns"] / 1e3,
        mean_us=lat["mean_ns"] / 1e3,
        server_cpu_us=(after - before) / n * 1e6,
        bench_server_cpu_us=bench_cpu / 1e3 if bench_cpu else None,
        client_cpu_us=report["client_cpu_ns_per_request"] / 1e3,
    )


def measure_server(
    name: str, args: argparse.Namespace, bodies: dict[str, Path]
) -> tuple[dict[str, Cell], dict[str, Any]]:
    started = time.monotonic()
    running = STARTERS[name](args)
    facts: dict[str, Any] = {"start_s": round(running.start_s, 2)}
    cells: dict[str, Cell] = {}
    try:
        for form in FORMS:
            cell = measure_cell(args.bench, running, form, bodies[form.model], args.seconds,
                                args.warmup)  # fmt: skip
            cells[form.key] = cell
            print(
                f"{name:<9} {form.model:<12} {form.protocol:<4} c={form.clients} "
                f"{cell.rps:>8.0f}/s p50 {fmt(cell.p50_us)} p99 {fmt(cell.p99_us)} "
                f"CPU/req {fmt(cell.server_cpu_us)}",
                file=sys.stderr,
                flush=True,
            )
    finally:
        stopping = time.monotonic()
        running.stop()
        facts["stop_s"] = round(time.monotonic() - stopping, 2)
        facts["total_s"] = round(time.monotonic() - started, 1)
    return cells, facts


# ---------------------------------------------------------------- tables


def fmt(us: float | None) -> str:
    if us is None:
        return "-"
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us:.0f} µs"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}×" if b else "-"


def cells_table(results: dict[str, dict[str, Cell]]) -> list[str]:
    names = list(results)
    head = "| model | protocol | clients |"
    rule = "|---|---|---:|"
    for n in names:
        head += f" {n} req/s | {n} p50 / p99 | {n} CPU/req |"
        rule += "---:|---:|---:|"
    both = "inferwire" in results and "triton" in results
    if both:
        head += " req/s inferwire ÷ triton | CPU/req triton ÷ inferwire |"
        rule += "---:|---:|"
    # 20× less CPU per request than Triton (issue 37), beside the floor's CPU/req.
    if "triton" in results:
        head += " triton CPU/req ÷ 20 |"
        rule += "---:|"
    lines = [head, rule]
    for form in FORMS:
        row = f"| {form.model} | {'HTTP' if form.protocol == 'http' else 'gRPC'} | {form.clients} |"
        for n in names:
            c = results[n].get(form.key)
            row += (
                f" {c.rps:,.0f} | {fmt(c.p50_us)} / {fmt(c.p99_us)} | {fmt(c.server_cpu_us)} |"
                if c
                else " - | - | - |"
            )
        if both:
            ours, theirs = results["inferwire"].get(form.key), results["triton"].get(form.key)
            row += (
                f" {ratio(ours.rps, theirs.rps)} | "
                f"{ratio(theirs.server_cpu_us, ours.server_cpu_us)} |"
                if ours and theirs
                else " - | - |"
            )
        if "triton" in results:
            theirs = results["triton"].get(form.key)
            row += f" {fmt(theirs.server_cpu_us / 20)} |" if theirs else " - |"
        lines.append(row)
    return lines


def bls_step(results: dict[str, dict[str, Cell]]) -> tuple[list[str], list[dict[str, Any]]]:
    """The pipeline's time and CPU per request minus blank's, per server and cell (not
    the floor's: it runs no model, so its pipeline is no different from its blank)."""
    lines = [
        "| server | protocol | clients | blank mean / p50 | bls_pipeline mean / p50 "
        "| BLS step: mean / p50 | blank CPU/req | bls_pipeline CPU/req | BLS step CPU |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = []
    for name, cells in results.items():
        if name == "floor":
            continue
        for protocol in PROTOCOLS:
            for clients in CLIENTS:
                blank = cells.get(Form("blank", protocol, clients).key)
                bls = cells.get(Form("bls_pipeline", protocol, clients).key)
                if not (blank and bls):
                    continue
                step = {
                    "server": name,
                    "protocol": protocol,
                    "clients": clients,
                    "mean_us": bls.mean_us - blank.mean_us,
                    "p50_us": bls.p50_us - blank.p50_us,
                    "cpu_us": bls.server_cpu_us - blank.server_cpu_us,
                }
                rows.append(step)
                lines.append(
                    f"| {name} | {'HTTP' if protocol == 'http' else 'gRPC'} | {clients} "
                    f"| {fmt(blank.mean_us)} / {fmt(blank.p50_us)} "
                    f"| {fmt(bls.mean_us)} / {fmt(bls.p50_us)} "
                    f"| {fmt(step['mean_us'])} / {fmt(step['p50_us'])} "
                    f"| {fmt(blank.server_cpu_us)} | {fmt(bls.server_cpu_us)} "
                    f"| {fmt(step['cpu_us'])} |"
                )
    return lines, rows


def median_cells(rounds: list[dict[str, Cell]]) -> dict[str, Cell]:
    """Each cell's figures, field by field, the median over the rounds."""
    out = {}
    for key in rounds[0]:
        runs = [asdict(r[key]) for r in rounds if key in r]
        merged = {}
        for f in runs[0]:
            values = [run[f] for run in runs if run[f] is not None]
            merged[f] = statistics.median(values) if values else None
        merged["requests"] = sum(run["requests"] for run in runs)
        out[key] = Cell(**merged)
    return out


def span(facts: list[dict[str, Any]], key: str) -> str:
    lo, hi = min(f[key] for f in facts), max(f[key] for f in facts)
    return f"{lo:.1f}" if lo == hi else f"{lo:.1f}-{hi:.1f}"


def last_line(text: str) -> str:
    """A failure's last line (an exception's message), for the table's notes."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "?"


# ---------------------------------------------------------------- main


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--servers", default=",".join(SERVERS), help="comma-separated, run in order")
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds per cell")
    p.add_argument("--warmup", type=float, default=1.0, help="seconds before each cell")
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="runs of every server, first one alternating; each figure is the median over them",
    )
    p.add_argument("--repository", type=Path, default=REPOSITORY)
    p.add_argument(
        "--examples",
        type=Path,
        default=FLOOR_EXAMPLES,
        help="folder of the release http_floor and grpc_floor (the floor server)",
    )
    p.add_argument(
        "--inferwire",
        type=shlex.split,
        default=[sys.executable, "-m", "inferwire"],
        help="the inferwire executable (shell words; default: this Python's -m inferwire)",
    )
    p.add_argument(
        "--bench",
        type=shlex.split,
        default=[sys.executable, "-m", "inferwire", "bench"],
        help="the load generator (shell words; e.g. target/release/inferwire-bench)",
    )
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    args = p.parse_args()
    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    unknown = [s for s in servers if s not in SERVERS]
    if unknown or not servers:
        p.error(f"--servers: {unknown or 'none'}; choose from {', '.join(SERVERS)}")
    args.repository = args.repository.resolve()
    args.examples = args.examples.resolve()
    work = Path(tempfile.mkdtemp(prefix="triton-python-"))
    bodies = {}
    for model, body in BODIES.items():
        bodies[model] = work / f"{model}.json"
        bodies[model].write_text(json.dumps(body))

    began = time.monotonic()
    rounds: dict[str, list[dict[str, Cell]]] = {name: [] for name in servers}
    facts: dict[str, list[dict[str, Any]]] = {name: [] for name in servers}
    failed: dict[str, str] = {}
    for i in range(args.rounds):
        # Alternate which server goes first, so that a drift of the machine's load does
        # not always fall on the same one.
        for name in servers if i % 2 == 0 else servers[::-1]:
            if name in failed:
                continue
            try:
                cells, fact = measure_server(name, args, bodies)
                rounds[name].append(cells)
                facts[name].append(fact)
            except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
                failed[name] = str(e)
                print(f"{name} failed: {str(e)[-3000:]}", file=sys.stderr, flush=True)
    results = {name: median_cells(r) for name, r in rounds.items() if r}
    when = time.strftime("%Y-%m-%d %H:%M")
    repo = args.repository
    shown = repo.relative_to(ROOT) if repo.is_relative_to(ROOT) else repo
    step_lines, step_rows = bls_step(results)
    md = [
        f"# Triton's Python backend and inferwire tritonserver ({when}, {machine()})",
        "",
        f"Repository `{shown}`; "
        f"closed loop, {args.warmup:g} s of warm-up then {args.seconds:g} s per cell"
        + (f", median of {args.rounds} rounds (servers alternating)" if args.rounds > 1 else "")
        + "; "
        "CPU/req: the server's process tree (/proc utime + stime) over the cell, divided "
        "by the requests answered."
        + (
            " floor: `http_floor` and `grpc_floor`, which parse nothing and answer every "
            "request with the same fixed reply, the least any server spends per request here."
            if "floor" in results
            else ""
        )
        + (
            " triton CPU/req ÷ 20: what 20× less than Triton's Python backend would be."
            if "triton" in results
            else ""
        ),
        "",
        "## Cells",
        "",
        *(cells_table(results) if results else ["(no server ran)"]),
        "",
        "## The BLS step (bls_pipeline minus blank)",
        "",
        *(step_lines if step_rows else ["(not measured)"]),
        "",
        "## Servers",
        "",
        *[
            f"- **{n}**: started in {span(f, 'start_s')} s, stopped in {span(f, 'stop_s')} s, "
            f"{sum(x['total_s'] for x in f):.0f} s in all"
            for n, f in facts.items()
            if f
        ],
        *[f"- **{n}**: did not run: {last_line(why)}" for n, why in failed.items()],
        "",
        f"Run took {time.monotonic() - began:.0f} s.",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "triton_python.md").write_text("\n".join(md) + "\n")
    (args.out / "triton_python.json").write_text(
        json.dumps(
            {
                "when": when,
                "machine": machine(),
                "seconds": args.seconds,
                "warmup": args.warmup,
                "repository": str(args.repository),
                "servers": facts,
                "failed": failed,
                "rounds": args.rounds,
                "cells": {n: {k: asdict(c) for k, c in r.items()} for n, r in results.items()},
                "cells_by_round": {
                    n: [{k: asdict(c) for k, c in cells.items()} for cells in r]
                    for n, r in rounds.items()
                },
                "bls_step": step_rows,
            },
            indent=2,
        )
    )
    print("\n".join(md))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
