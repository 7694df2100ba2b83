"""Streamed replies (issue 21): inferwire, MLServer and PyTriton side by side, in one run
(docs/benchmarks.md, "Streaming").

Every server serves the same model, named ``tokens``: each request is answered with 256
pieces, each one BYTES output ``text`` of 16 bytes, 1 ms apart (a sleep in the model).

- inferwire: ``benchmarks/models/stream_tokens.py:Tokens`` (an async generator) and
  ``:TokensSync`` (a plain generator with ``time.sleep``), served by this interpreter's
  inferwire (``--python`` another, e.g. a release wheel's virtualenv);
- MLServer 1.7.1: ``benchmarks/peers/mlserver/tokens`` (``predict_stream``,
  ``parallel_workers: 0``, which MLServer needs to stream);
- PyTriton 0.7.0 (Triton 2.51.0): ``benchmarks/peers/pytriton/serve.py``
  (``ModelConfig(decoupled=True)``, an async-generator callable, one instance).

Each server is measured over each streaming protocol it has: REST server-sent events
(inferwire and MLServer ``POST /v2/models/tokens/infer_stream`` with a V2 request;
PyTriton ``POST /v2/models/tokens/generate_stream`` with Triton's flat body) and gRPC
``ModelStreamInfer`` (Triton's ``ModelStreamInferResponse`` replies from inferwire and
PyTriton, MLServer's bare ``ModelInferResponse``), at 1, 64 and 512 streams open at once
(closed loop: a stream that ends is followed by the next), with the same load generator,
``inferwire bench stream``, one server at a time. The server's CPU is its whole process
tree (``--server-pid``: for PyTriton, serve.py with tritonserver and the backend stub
below it).

    bash benchmarks/peers/mlserver/install.sh     # once
    bash benchmarks/peers/pytriton/install.sh     # once
    .venv/bin/python benchmarks/streaming.py [--rounds 3] [--seconds 5]

A peer that is not installed is skipped with a line saying so; so is a server or protocol
that does not stream (a probe before measuring). Results: benchmarks/results/
streaming.{md,json}, and every load run's whole report in streaming.raw.json.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.servers import free_port  # noqa: E402
from runtime import Proc, fmt_us, inferwire, machine  # noqa: E402

MODEL = "tokens"
CALL = "inference.GRPCInferenceService/ModelStreamInfer"
PIECES = 256
MLSERVER_PYTHON = ROOT / ".tools/peers/mlserver/bin/python"
MLSERVER_SERVE = ROOT / "benchmarks/peers/mlserver/serve.py"
MLSERVER_FOLDER = ROOT / "benchmarks/peers/mlserver/tokens"
PYTRITON_PYTHON = ROOT / ".tools/peers/pytriton/bin/python"
PYTRITON_SERVE = ROOT / "benchmarks/peers/pytriton/serve.py"
# A V2 request (inferwire, MLServer; gRPC: the load generator encodes it) and Triton's
# generate-extension body (PyTriton's REST). The model reads neither input.
V2_BODY = json.dumps(
    {"inputs": [{"name": "text_input", "shape": [1], "datatype": "BYTES", "data": ["hi"]}]}
)
FLAT_BODY = json.dumps({"text_input": "hi"})


@dataclass
class Protocol:
    label: str  # "REST SSE" or "gRPC"
    target: str  # URL or host:port
    args: list[str]  # the load generator's arguments after the target
    probe: tuple[str, str] | None = None  # REST: (URL, body) asked for 2 pieces first


@dataclass
class Server:
    name: str
    settings: str  # one line for the table's notes
    start: Any  # () -> (Proc, [Protocol])
    missing: str | None = None  # why it cannot run here


@dataclass
class Cell:
    """One server × protocol × concurrency; times in µs."""

    ttft_p50: float
    ttft_p99: float
    gap_p50: float
    gap_p99: float
    pieces_per_s: float
    cpu_per_piece: float | None
    streams: int
    failed: int
    pieces_per_stream: float
    errors: list[str] = field(default_factory=list)


def cell_of(report: dict[str, Any]) -> Cell:
    """The figures this script reads from ``inferwire bench stream --format json``: the
    one place that knows its keys (times in ns)."""
    ttft, gaps = report["time_to_first_piece"], report["time_between_pieces"]
    cpu = report.get("server_cpu_ns_per_piece")
    if not report["pieces"]:  # every stream failed: no time to report, CPU per nothing
        return failed_cell(
            (report.get("errors") or ["no piece"])[0], report["streams"], report["failed"]
        )
    return Cell(
        ttft_p50=ttft["p50_ns"] / 1e3,
        ttft_p99=ttft["p99_ns"] / 1e3,
        gap_p50=gaps["p50_ns"] / 1e3,
        gap_p99=gaps["p99_ns"] / 1e3,
        pieces_per_s=report["pieces_per_second"],
        cpu_per_piece=cpu / 1e3 if cpu is not None else None,
        streams=report["streams"],
        failed=report["failed"],
        pieces_per_stream=report["pieces_per_stream"]["mean"],
        errors=list(report.get("errors") or [])[:3],
    )


def failed_cell(why: str, streams: int = 0, failed: int = 0) -> Cell:
    nan = float("nan")
    return Cell(nan, nan, nan, nan, 0.0, None, streams, failed, 0.0, [why])


def median_cell(cells: list[Cell]) -> Cell:
    """Each figure's median over rounds; streams and failures summed."""

    def mid(xs: list[float]) -> float:
        return sorted(xs)[len(xs) // 2]

    cpu = [c.cpu_per_piece for c in cells if c.cpu_per_piece is not None]
    return Cell(
        mid([c.ttft_p50 for c in cells]),
        mid([c.ttft_p99 for c in cells]),
        mid([c.gap_p50 for c in cells]),
        mid([c.gap_p99 for c in cells]),
        mid([c.pieces_per_s for c in cells]),
        mid(cpu) if cpu else None,
        sum(c.streams for c in cells),
        sum(c.failed for c in cells),
        mid([c.pieces_per_stream for c in cells]),
        [e for c in cells for e in c.errors][:3],
    )


def bench_stream(
    bench: list[str],
    target: str,
    clients: int,
    args: argparse.Namespace,
    pid: int,
    extra: list[str],
    warm_up: bool,
) -> Cell:
    argv = [*bench, "stream", target, *extra, "-c", str(clients), "-z", f"{args.seconds}s"]
    if "--call" in extra:
        # At most 100 streams per HTTP/2 connection: servers cap the streams one connection
        # may open (inferwire's --max-streams is 200, grpc-core's and Triton's often 100), and
        # streams over the cap would wait in the client, not in the server.
        argv += ["--connections", str(-(-clients // 100))]
    argv += ["--timeout", f"{args.stream_timeout}s", "--server-pid", str(pid)]
    argv += ["--format", "json", "--no-progress"]
    if warm_up:
        argv += ["--warmup", "1s"]
    # Streams still open when the time is up are waited for (up to their timeout), after
    # the warm-up and after the measured run.
    limit = args.seconds + 2 * args.stream_timeout + 120
    out = subprocess.run(argv, capture_output=True, text=True, timeout=limit)
    if out.returncode != 0 and not out.stdout.strip():
        # Every stream failed (or the tool refused its arguments): say why, go on.
        return failed_cell(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "?")
    report = json.loads(out.stdout)
    args.raw.append({"argv": argv, "report": report})  # the whole report, for a closer look
    return cell_of(report)


def probe(url: str, body: str) -> str | None:
    """None when ``url`` answers the body with server-sent events, none an error; else
    why not (a server without the route, an older inferwire). It asks for 2 pieces, but
    a model that ignores the request's parameters passes too."""
    payload = json.loads(body)
    payload["parameters"] = {**payload.get("parameters", {}), "pieces": 2}
    request = urllib.request.Request(
        url, json.dumps(payload).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            ctype = reply.headers.get("content-type", "")
            text = reply.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return f"{e.code} {e.read()[:200].decode(errors='replace')}"
    except (urllib.error.URLError, OSError) as e:
        return str(e)
    events = [line for line in text.splitlines() if line.startswith("data:")]
    if not ctype.startswith("text/event-stream") or not events:
        return f"no server-sent events ({ctype}): {text[:200]!r}"
    errors = [e for e in events if '"error"' in e]
    return f"an error event: {errors[0][:200]}" if errors else None


def start_inferwire(python: str, cls: str) -> tuple[Proc, list[Protocol]]:
    proc, url = inferwire(
        f"benchmarks/models/stream_tokens.py:{cls}", "--model-name", MODEL, python=python
    )
    grpc = f"127.0.0.1:{proc.argv[proc.argv.index('--grpc-port') + 1]}"
    rest = f"{url}/v2/models/{MODEL}/infer_stream"
    return proc, [
        Protocol("REST SSE", rest, ["-d", V2_BODY], (rest, V2_BODY)),
        Protocol(
            "gRPC", grpc, ["--call", CALL, "--reply", "triton", "--model", MODEL, "-d", V2_BODY]
        ),
    ]


def start_mlserver() -> tuple[Proc, list[Protocol]]:
    http, grpc = free_port(), free_port()
    argv = [str(MLSERVER_PYTHON), str(MLSERVER_SERVE), "--folder", str(MLSERVER_FOLDER)]
    argv += ["--model", MODEL, "--http-port", str(http), "--grpc-port", str(grpc)]
    url = f"http://127.0.0.1:{http}"
    proc = Proc(argv, f"{url}/v2/models/{MODEL}/ready")
    rest = f"{url}/v2/models/{MODEL}/infer_stream"
    return proc, [
        Protocol("REST SSE", rest, ["-d", V2_BODY], (rest, V2_BODY)),
        Protocol(
            "gRPC",
            f"127.0.0.1:{grpc}",
            ["--call", CALL, "--reply", "mlserver", "--model", MODEL, "-d", V2_BODY],
        ),
    ]


def start_pytriton(instances: int) -> tuple[Proc, list[Protocol]]:
    http, grpc = free_port(), free_port()
    argv = [str(PYTRITON_PYTHON), str(PYTRITON_SERVE), "--instances", str(instances)]
    argv += ["--http-port", str(http), "--grpc-port", str(grpc)]
    url = f"http://127.0.0.1:{http}"
    proc = Proc(argv, f"{url}/v2/models/{MODEL}/ready")
    rest = f"{url}/v2/models/{MODEL}/generate_stream"
    return proc, [
        Protocol("REST SSE", rest, ["-d", FLAT_BODY], (rest, FLAT_BODY)),
        Protocol(
            "gRPC",
            f"127.0.0.1:{grpc}",
            ["--call", CALL, "--reply", "triton", "--model", MODEL, "-d", V2_BODY],
        ),
    ]


def servers(args: argparse.Namespace) -> list[Server]:
    out = [
        Server(
            "inferwire",
            "`stream_tokens.py:Tokens` (async generator), defaults",
            lambda: start_inferwire(args.python, "Tokens"),
        ),
        Server(
            "inferwire (sync)",
            "`stream_tokens.py:TokensSync` (plain generator, `time.sleep`), defaults",
            lambda: start_inferwire(args.python, "TokensSync"),
        ),
        Server(
            "MLServer",
            "1.7.1, `predict_stream`, `parallel_workers: 0`, gzip off, metrics off",
            start_mlserver,
            None if MLSERVER_PYTHON.exists() else "bash benchmarks/peers/mlserver/install.sh",
        ),
        Server(
            "PyTriton",
            f"0.7.0 (Triton 2.51.0), `decoupled=True`, async-generator callable, "
            f"{args.pytriton_instances} instance(s), metrics off",
            lambda: start_pytriton(args.pytriton_instances),
            None if PYTRITON_PYTHON.exists() else "bash benchmarks/peers/pytriton/install.sh",
        ),
    ]
    chosen = [s.strip() for s in args.servers.split(",")] if args.servers else None
    return [s for s in out if chosen is None or s.name in chosen]


def measure(
    server: Server, args: argparse.Namespace, bench: list[str], notes: list[str]
) -> dict[str, Cell]:
    """``"protocol|clients"`` → Cell for one round of one server."""
    proc, protocols = server.start()
    cells: dict[str, Cell] = {}
    try:
        for protocol in protocols:
            if protocol.probe is not None and (why := probe(*protocol.probe)):
                notes.append(f"{server.name} {protocol.label}: skipped, the probe got {why}")
                print(f"{server.name} {protocol.label}: skipped ({why})", file=sys.stderr)
                continue
            for clients in args.clients:
                # Only the first cell of a protocol warms up: the next ones find the
                # server warm, and a warm-up at 512 slow streams would take minutes.
                first = clients == args.clients[0]
                cell = bench_stream(
                    bench, protocol.target, clients, args, proc.pid, protocol.args, first
                )
                cells[f"{protocol.label}|{clients}"] = cell
                print(
                    f"{server.name:<17} {protocol.label:<8} c={clients:<4} "
                    f"{cell.pieces_per_s:>9.0f} pieces/s, TTFT p50 {fmt(cell.ttft_p50)}, "
                    f"{cell.failed}/{cell.streams} failed {cell.errors[:1]}",
                    file=sys.stderr,
                )
                if cell.pieces_per_s == 0 and cell.errors:
                    # Not served (an inferwire without gRPC streaming): once is enough.
                    notes.append(f"{server.name} {protocol.label}: no piece ({cell.errors[0]})")
                    break
    finally:
        proc.stop()
    return cells


def fmt(us: float) -> str:
    return "-" if us != us else fmt_us(us)  # NaN: no piece arrived


def table(results: dict[str, dict[str, Cell]], clients: list[int], seconds: float) -> list[str]:
    ours = results.get("inferwire", {})
    lines = [
        "| protocol | streams at once | server | TTFT p50 | TTFT p99 | gap p50 | gap p99 "
        "| pieces/s | server CPU/piece | CPU/piece ÷ inferwire | failed / streams |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for protocol in ("REST SSE", "gRPC"):
        for c in clients:
            key = f"{protocol}|{c}"
            for name, cells in results.items():
                cell = cells.get(key)
                if cell is None:
                    continue
                mine = ours.get(key)
                ratio = "-"
                if mine and mine.cpu_per_piece and cell.cpu_per_piece and name != "inferwire":
                    ratio = f"{cell.cpu_per_piece / mine.cpu_per_piece:.1f}×"
                failed = f"{cell.failed} / {cell.streams}"
                if cell.failed == cell.streams and cell.errors:
                    failed = (
                        f"all{f' {cell.streams:,}' if cell.streams else ''}: {cell.errors[0][:100]}"
                    )
                lines.append(
                    f"| {protocol} | {c} | {name} | {fmt(cell.ttft_p50)} | {fmt(cell.ttft_p99)} "
                    f"| {fmt(cell.gap_p50)} | {fmt(cell.gap_p99)} | {cell.pieces_per_s:,.0f} "
                    f"| {fmt_us(cell.cpu_per_piece)} | {ratio} | {failed} |"
                )
    lines += [
        "",
        f"Closed loop, {seconds:g} s per cell (the first of each protocol after a 1 s "
        f"warm-up; streams open at the end are waited for); {PIECES} pieces of 16 bytes "
        "per stream, 1 ms apart. TTFT: from sending the request to the first piece; gap: "
        "between two pieces of a stream (all streams pooled); server CPU/piece: the "
        "server's whole process tree over the run, divided by the pieces it sent.",
    ]
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds per cell")
    p.add_argument("--clients", default="1,64,512", help="streams open at once, comma-separated")
    p.add_argument("--rounds", type=int, default=1, help="measure every server this many times")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    p.add_argument(
        "--python", default=sys.executable, help="the interpreter whose inferwire serves"
    )
    p.add_argument(
        "--bench",
        default=None,
        help="the load generator's command (default: PYTHON -m inferwire bench, this "
        "interpreter's)",
    )
    p.add_argument(
        "--servers",
        help="comma-separated subset of: inferwire, inferwire (sync), MLServer, PyTriton",
    )
    p.add_argument("--pytriton-instances", type=int, default=1)
    p.add_argument(
        "--stream-timeout",
        type=float,
        default=300.0,
        help="seconds one stream may take before it counts as failed: a server that "
        "sends 1,000 pieces/s takes about 130 s for 512 streams of 256 pieces",
    )
    args = p.parse_args()
    args.clients = [int(c) for c in args.clients.split(",")]
    args.raw = []
    bench = shlex.split(args.bench) if args.bench else [sys.executable, "-m", "inferwire", "bench"]
    check = subprocess.run([*bench, "stream", "--help"], capture_output=True, text=True)
    if check.returncode != 0:
        print(
            f"{shlex.join(bench)} has no `stream` subcommand here (an inferwire without "
            f"streaming?): {(check.stderr or check.stdout).strip()[-300:]}",
            file=sys.stderr,
        )
        return 2
    notes: list[str] = []
    todo = []
    for server in servers(args):
        if server.missing:
            notes.append(f"{server.name}: not installed, skipped (`{server.missing}`)")
            print(notes[-1], file=sys.stderr)
        else:
            todo.append(server)
    # Rounds alternate the servers, so that a noisy minute does not land on one of them.
    rounds: dict[str, list[dict[str, Cell]]] = {}
    for _ in range(args.rounds):
        for server in todo:
            try:
                rounds.setdefault(server.name, []).append(measure(server, args, bench, notes))
            except RuntimeError as e:  # did not start: its log's tail is in the message
                last = str(e).strip().splitlines()[-1][:200]
                notes.append(f"{server.name}: did not start, skipped ({last})")
                print(f"{server.name}: {e}", file=sys.stderr)
    results = {
        name: {k: median_cell([m[k] for m in measured if k in m]) for k in measured[0]}
        for name, measured in rounds.items()
        if measured and measured[0]
    }
    args.out.mkdir(parents=True, exist_ok=True)
    when = time.strftime("%Y-%m-%d %H:%M")
    md = [
        f"# Streaming: inferwire, MLServer and PyTriton ({when}, {machine()})",
        "",
        *table(results, args.clients, args.seconds),
    ]
    if args.rounds > 1:
        md.append(f"Each figure is the median of {args.rounds} rounds (streams: summed).")
    md += ["", "Servers:", ""]
    md += [f"- {s.name}: {s.settings}" for s in servers(args)]
    if notes:
        md += ["", *[f"- {n}" for n in notes]]
    (args.out / "streaming.md").write_text("\n".join(md) + "\n")
    (args.out / "streaming.json").write_text(
        json.dumps({n: {k: c.__dict__ for k, c in r.items()} for n, r in results.items()}, indent=2)
    )
    (args.out / "streaming.raw.json").write_text(json.dumps(args.raw, indent=1))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
