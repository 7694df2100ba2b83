"""Seldon's "Python Wrapper Benchmarking" notebook, run against inferwire and the Seldon
Python wrapper side by side on this machine.

For each cell of the notebook's matrix (predict and predict_raw no-op models, REST with
vegeta and gRPC with ghz using the notebook's own command lines, ndarray / tensor /
tftensor payloads of 100,000 and 1 integers; predict_raw only at 100,000 as in the
notebook unless --all), every server runs the same load back to back. Recorded per cell:
mean and median latency, throughput, success ratio, the server process tree's CPU time
per request (from /proc) and the load tool's own CPU time per request (its rusage).

    bash scripts/install-load-tools.sh && bash benchmarks/seldon_wrapper/setup.sh
    .venv/bin/python benchmarks/seldon_matrix.py --out results.json --markdown results.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent))
from lib import notebook_tools as tools
from lib import servers
from notebook_payloads import ENCODINGS

ROOT = servers.ROOT
MODELS = {"predict": "NoopPredict", "predict_raw": "NoopPredictRaw"}
PROTOCOLS = ("rest", "grpc")
TOOL_OF = {"rest": "vegeta", "grpc": "ghz"}
LABELS = {"seldon": "Seldon wrapper", "inferwire": "inferwire", "baseline": "inferwire (baseline)"}
# The notebook's "Example results" tables: mean latency in ms for ndarray, tensor,
# tftensor (Seldon 1.10 on Kubernetes behind Istio, one CPU for the model).
NOTEBOOK_MS: dict[tuple[str, str, int], tuple[float, float, float]] = {
    ("predict", "rest", 100_000): (19.8, 19.7, 16.2),
    ("predict", "grpc", 100_000): (253.0, 8.4, 5.5),
    ("predict_raw", "rest", 100_000): (13.3, 13.3, 11.1),
    ("predict_raw", "grpc", 100_000): (46.0, 7.9, 5.0),
    ("predict", "rest", 1): (1.8, 1.8, 2.1),
    ("predict", "grpc", 1): (1.46, 1.49, 1.57),
}


@dataclass
class Result:
    """One server's figures for one cell."""

    server: str
    method: str
    protocol: str
    size: int
    encoding: str
    requests: int = 0
    ok: int = 0
    success: float = 0.0
    mean_ms: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    throughput: float = 0.0
    server_cpu_us: float = 0.0
    tool_cpu_us: float = 0.0
    status_codes: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    failure: str | None = None  # the load run itself failed

    @property
    def cell(self) -> tuple[str, str, int, str]:
        return (self.method, self.protocol, self.size, self.encoding)


# ---------------------------------------------------------------- running the matrix


def blocks(methods: list[str], sizes: list[int], everything: bool) -> list[tuple[str, int]]:
    """(method, size) in the notebook's order; predict_raw at 1 integer only with --all."""
    out = []
    for size in sorted(sizes, reverse=True):
        for method in methods:
            if everything or (method, size) != ("predict_raw", 1):
                out.append((method, size))
    return out


@contextmanager
def running(specs: list[servers.ServerSpec], model: str) -> Iterator[list[servers.ServerProcess]]:
    with ExitStack() as stack:
        started = []
        for spec in specs:
            print(f"starting {spec.name} with {model}", flush=True)
            proc = servers.ServerProcess(spec, model)
            stack.callback(proc.stop)
            started.append(proc)
        yield started


def warm_up(server: servers.ServerProcess, work: Path, protocol: str, encoding: str) -> None:
    """One request outside the measurement, so first-call costs are not counted."""
    if protocol == "rest":
        body = (work / f"data_{encoding}.json").read_bytes()
        request = urllib.request.Request(
            server.predictions_url, body, {"Content-Type": "application/json"}
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=60) as reply:
            reply.read()
    else:
        tools.run_ghz(work, encoding, "0.3s", server.grpc_target, timeout=60)


def measure(
    server: servers.ServerProcess, work: Path, result: Result, duration: str, seconds: float
) -> None:
    """Runs the cell's load against ``server``, filling ``result``."""
    timeout = seconds + 120
    try:
        warm_up(server, work, result.protocol, result.encoding)
        before = server.cpu_seconds()
        if result.protocol == "rest":
            run = tools.run_vegeta(work, result.encoding, duration, timeout)
        else:
            run = tools.run_ghz(work, result.encoding, duration, server.grpc_target, timeout)
        server_cpu = server.cpu_seconds() - before
    except Exception as e:  # recorded; the other cells still run
        result.failure = str(e)[-2000:]
        return
    n = max(run.requests, 1)
    result.requests, result.ok, result.success = run.requests, run.ok, run.success
    result.mean_ms, result.p50_ms, result.p99_ms = run.mean_ms, run.p50_ms, run.p99_ms
    result.throughput = run.throughput
    result.server_cpu_us = server_cpu / n * 1e6
    result.tool_cpu_us = run.tool_cpu_s / n * 1e6
    result.status_codes, result.errors = run.status_codes, run.errors


def run_matrix(args: argparse.Namespace, specs: list[servers.ServerSpec]) -> list[Result]:
    results: list[Result] = []
    seconds = parse_seconds(args.duration)
    for method, size in blocks(args.methods, args.sizes, args.all):
        with running(specs, MODELS[method]) as procs, tempfile.TemporaryDirectory() as tmp:
            works = {}
            for proc in procs:
                works[proc.spec.name] = Path(tmp) / proc.spec.name
                tools.prepare(works[proc.spec.name], size, proc.predictions_url)
            for protocol in args.protocols:
                for encoding in args.encodings:
                    for proc in procs:
                        result = Result(proc.spec.name, method, protocol, size, encoding)
                        measure(proc, works[proc.spec.name], result, args.duration, seconds)
                        print(line(result), flush=True)
                        results.append(result)
    return results


def parse_seconds(duration: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)?", duration)
    if not match:
        raise SystemExit(f"--duration: {duration!r} is not like 10s, 2.5s, 500ms")
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0}[match.group(2) or "s"]
    return float(match.group(1)) * scale


# ---------------------------------------------------------------- reporting


def fmt_time(ms: float) -> str:
    # 0.9996 ms rounds to 1.00 ms, not to "1e+03 µs".
    if ms >= 99.95:
        return f"{ms:.0f} ms"
    if ms >= 0.9995:
        return f"{ms:.3g} ms"
    return f"{ms * 1000:.3g} µs"


def line(r: Result) -> str:
    head = f"{r.server:9} {r.method:11} {r.protocol:4} {r.size:>6} {r.encoding:8}"
    if r.failure:
        return f"{head} FAILED: {r.failure}"
    codes = " ".join(f"{k}:{v}" for k, v in sorted(r.status_codes.items()))
    return (
        f"{head} n={r.requests:<6} mean {fmt_time(r.mean_ms):>9}  p50 {fmt_time(r.p50_ms):>9}  "
        f"{r.throughput:8.1f}/s  server CPU {fmt_time(r.server_cpu_us / 1000):>9}/req  "
        f"{TOOL_OF[r.protocol]} CPU {fmt_time(r.tool_cpu_us / 1000):>9}/req  [{codes}]"
    )


def ratio(a: float, b: float) -> str:
    return f"{a / b:,.0f}×" if a / b >= 10 else f"{a / b:.1f}×"


Cells = dict[tuple[str, tuple[str, str, int, str]], Result]


def table(method: str, protocol: str, size: int, by: Cells) -> list[str]:
    """The notebook's table for one (method, protocol, size), every server beside it."""
    names = sorted({server for server, _ in by}, key=lambda s: (s != "seldon", s))

    def get(server: str, encoding: str) -> Result | None:
        return by.get((server, (method, protocol, size, encoding)))

    def label(server: str) -> str:
        return LABELS.get(server, server)

    tool = TOOL_OF[protocol]
    rows: list[tuple[str, list[str]]] = []
    published = NOTEBOOK_MS.get((method, protocol, size))
    if published:
        rows.append(("notebook (Seldon 1.10, Kubernetes)", [fmt_time(ms) for ms in published]))
    rows += [(f"{label(s)}, here", [cell_time(get(s, e)) for e in ENCODINGS]) for s in names]
    both = {"seldon", "inferwire"} <= set(names)
    if both:
        rows.append(("Seldon wrapper / inferwire, latency", speedups(get, "mean_ms")))
    rows += [(f"{label(s)} CPU / request", [cell_cpu(get(s, e)) for e in ENCODINGS]) for s in names]
    if both:
        rows.append(("Seldon wrapper / inferwire, CPU", speedups(get, "server_cpu_us")))
    rows += [
        (f"{tool} CPU / request vs {label(s)}", [cell_tool(get(s, e)) for e in ENCODINGS])
        for s in names
    ]
    rows.append(
        (
            "answered OK: " + " · ".join(label(s) for s in names),
            [" · ".join(answered(get(s, e)) for s in names) for e in ENCODINGS],
        )
    )
    noun = "integer" if size == 1 else "integers"
    title = f"{method} · {'REST' if protocol == 'rest' else 'gRPC'} · {size:,} {noun} ({tool})"
    return [
        f"### {title}",
        "",
        "| | " + " | ".join(ENCODINGS) + " |",
        "|---|" + "---:|" * len(ENCODINGS),
        *(f"| {name} | " + " | ".join(values) + " |" for name, values in rows),
        "",
    ]


def usable(r: Result | None) -> bool:
    return r is not None and r.failure is None and r.requests > 0


def speedups(get: Callable[[str, str], Result | None], key: str) -> list[str]:
    """Seldon wrapper / inferwire for ``key`` in each encoding."""
    out = []
    for encoding in ENCODINGS:
        seldon, ours = get("seldon", encoding), get("inferwire", encoding)
        if seldon and ours and usable(seldon) and usable(ours) and getattr(ours, key) > 0:
            out.append(ratio(getattr(seldon, key), getattr(ours, key)))
        else:
            out.append("–")
    return out


def cell_time(r: Result | None) -> str:
    if r is None:
        return "–"
    return "failed" if r.failure else fmt_time(r.mean_ms)


def cell_cpu(r: Result | None) -> str:
    return fmt_time(r.server_cpu_us / 1000) if r and not r.failure else "–"


def cell_tool(r: Result | None) -> str:
    return fmt_time(r.tool_cpu_us / 1000) if r and not r.failure else "–"


def answered(r: Result | None) -> str:
    return f"{r.ok}/{r.requests}" if r and not r.failure else "–"


def markdown(results: list[Result], settings: dict[str, object]) -> str:
    by: Cells = {(r.server, r.cell): r for r in results}
    lines = [
        "## The Seldon notebook's matrix, side by side",
        "",
        f"{settings['date']}, {settings['machine']}; {settings['duration']} per cell, one "
        "connection, no rate limit (the notebook's commands). Latency is the mean; CPU is "
        'the server process tree\'s user+system time per request; "answered OK" counts the '
        "requests answered OK (ghz cancels the call in flight when time is up).",
        "",
    ]
    groups = dict.fromkeys((r.method, r.protocol, r.size) for r in results)
    for method, protocol, size in groups:
        lines += table(method, protocol, size, by)
    lines += summary(results)
    return "\n".join(lines) + "\n"


def summary(results: list[Result]) -> list[str]:
    by = {(r.server, r.cell): r for r in results if not r.failure and r.requests}
    pairs = [
        (by[("seldon", cell)], by[("inferwire", cell)])
        for (server, cell) in by
        if server == "seldon" and ("inferwire", cell) in by
    ]
    pairs = [(s, i) for s, i in pairs if i.mean_ms > 0 and i.server_cpu_us > 0]
    if not pairs:
        return []
    lat = [s.mean_ms / i.mean_ms for s, i in pairs]
    cpu = [s.server_cpu_us / i.server_cpu_us for s, i in pairs]
    return [
        f"Over {len(pairs)} cells, Seldon wrapper / inferwire: latency median "
        f"{statistics.median(lat):.1f}× (lowest {min(lat):.1f}×), server CPU per request "
        f"median {statistics.median(cpu):,.0f}× (lowest {min(cpu):,.0f}×).",
        "",
    ]


def machine() -> str:
    model = ""
    try:
        for text in Path("/proc/cpuinfo").read_text().splitlines():
            if text.startswith("model name"):
                model = text.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs {model} ({platform.system()} {platform.release()})".strip()


def tool_version(name: str) -> str:
    out = subprocess.run(
        [str(tools.TOOLS / name), "--version"], capture_output=True, text=True, check=False
    )
    return (out.stdout + out.stderr).strip().splitlines()[0]


# ---------------------------------------------------------------- command line


def server_specs(args: argparse.Namespace) -> list[servers.ServerSpec]:
    specs = []
    for name in args.servers:
        if name == "inferwire":
            exe = [args.inferwire] if args.inferwire else None
            specs.append(servers.inferwire_spec(exe, args.inferwire_cmd))
        elif name == "seldon":
            specs.append(servers.seldon_spec(args.seldon_venv, args.seldon_cmd))
        else:
            raise SystemExit(f"--servers: unknown server {name!r} (inferwire, seldon)")
    if args.baseline:
        # Another inferwire build (an earlier commit's) in the same run, to compare builds.
        spec = servers.inferwire_spec([str(args.baseline)], args.inferwire_cmd)
        specs.append(servers.ServerSpec("baseline", spec.template, spec.env))
    return specs


def check_prerequisites(args: argparse.Namespace) -> None:
    missing = tools.missing_tools()
    if missing:
        raise SystemExit(f"missing {', '.join(missing)}: run scripts/install-load-tools.sh")
    venv = args.seldon_venv or ROOT / ".venv-seldon"
    if "seldon" in args.servers and not args.seldon_cmd:
        if not (venv / "bin/seldon-core-microservice").exists():
            raise SystemExit("no Seldon wrapper: run benchmarks/seldon_wrapper/setup.sh")
    if "inferwire" in args.servers and not args.inferwire_cmd:
        if not Path(args.inferwire).exists():
            raise SystemExit(f"no {args.inferwire}: build inferwire (or pass --inferwire)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    def csv(kind: Callable[[str], Any] = str) -> Callable[[str], list[Any]]:
        return lambda text: [kind(x) for x in text.split(",") if x]

    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--duration", default="10s", help="per cell and server (notebook: 10s)")
    p.add_argument("--servers", type=csv(), default=["inferwire", "seldon"])
    p.add_argument("--methods", type=csv(), default=list(MODELS))
    p.add_argument("--sizes", type=csv(int), default=[100_000, 1])
    p.add_argument("--protocols", type=csv(), default=list(PROTOCOLS))
    p.add_argument("--encodings", type=csv(), default=list(ENCODINGS))
    p.add_argument("--all", action="store_true", help="also predict_raw at 1 integer")
    p.add_argument("--out", type=Path, help="write every result as JSON")
    p.add_argument("--markdown", type=Path, help="write the tables (they are printed anyway)")
    p.add_argument(
        "--inferwire",
        default=os.environ.get("INFERWIRE_BIN", str(ROOT / ".venv/bin/inferwire")),
        help="inferwire executable (env INFERWIRE_BIN; default .venv/bin/inferwire)",
    )
    p.add_argument(
        "--baseline",
        type=Path,
        help="another inferwire executable (say, an earlier commit's release build) run as a "
        "third server, 'inferwire (baseline)', to compare two builds in one run",
    )
    p.add_argument("--seldon-venv", type=Path, help="the wrapper's virtualenv (.venv-seldon)")
    p.add_argument(
        "--inferwire-cmd", help=f"command template, default {servers.INFERWIRE_TEMPLATE!r}"
    )
    p.add_argument("--seldon-cmd", help=f"command template, default {servers.SELDON_TEMPLATE!r}")
    args = p.parse_args(argv)
    if args.duration.isdigit():
        args.duration += "s"
    for name, allowed in (
        ("methods", MODELS),
        ("protocols", PROTOCOLS),
        ("encodings", ENCODINGS),
    ):
        unknown = set(getattr(args, name)) - set(allowed)
        if unknown:
            p.error(f"--{name}: unknown {', '.join(sorted(unknown))}")
    return args


def main(argv: list[str] | None = None) -> int:
    # SIGTERM (e.g. from `timeout`) unwinds like Ctrl-C, so the servers are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args = parse_args(argv)
    check_prerequisites(args)
    specs = server_specs(args)
    settings: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "duration": args.duration,
        "tools": {name: tool_version(name) for name in ("vegeta", "ghz")},
        "servers": {spec.name: {"command": spec.template, "env": spec.env} for spec in specs},
    }
    results = run_matrix(args, specs)
    report = markdown(results, settings)
    print("\n" + report)
    if args.out:
        payload = {"settings": settings, "results": [asdict(r) for r in results]}
        args.out.write_text(json.dumps(payload, indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text(report)
    failed = [r for r in results if r.failure]
    for r in failed:
        print(f"FAILED {r.server} {r.cell}: {r.failure}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
