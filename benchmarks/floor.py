"""The floor under a small request at every pace, beside inferwire, in one run.

The floor servers are the repository's do-nothing examples: ``http_floor`` (one thread per
connection, a blocking ``read`` and ``write`` per request, a fixed reply) and
``grpc_floor`` (the same over HTTP/2 framing, no HPACK or protobuf decoding, every call a
read completes answered in one ``write``). inferwire serves the notebook's no-op model
(``benchmarks/models/noop.py:NoopPredict``). Each row gives both the same 1-integer
Seldon request, paced the same way, one after the other; each server's CPU time per
request is its process tree's CPU time over the run (``/proc``) divided by the requests.

Rows: the notebook's tools (vegeta for REST, ghz for gRPC, one request in flight),
inferwire-bench back to back (one request in flight), inferwire-bench open loop at 200,
2,000 and 20,000 requests/s (up to 32 requests in flight: one connection each over
HTTP/1.1, streams on one connection over gRPC), a model that sleeps 5 ms at 200
requests/s (the floor sleeps 5 ms before each reply; inferwire runs ``Sleep5ms`` with
``--model-threads 4``), a scikit-learn tree scored natively (no Python on the path) back
to back and at 200 requests/s, and gRPC with 1, 8, 64 and 512 streams in flight on one
connection. Every row runs ``--rounds`` times; the table gives medians. With
``--baseline PATH``, another build's ``inferwire`` serves the same models beside this one,
in every row, for a before-and-after in one run.

Last, the same few microseconds of Python and numpy work timed warm and after a pause:
on a VM like these the caches do not survive a few milliseconds, which is most of what a
spaced-out request costs (docs/benchmarks.md, "The floor at every pace").

    bash benchmarks/floor.sh [--duration 5s] [--rounds 3] [--out benchmarks/results]

The table is printed, and with ``--out`` written to ``floor.md`` there for
``benchmarks/render.py``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from lib import notebook_tools, proc_cpu
from lib.servers import ServerProcess, free_port, inferwire_spec, tcp_open
from runtime import machine

ROOT = Path(__file__).resolve().parent.parent
BODY = '{"data": {"ndarray": [[0]]}}'
PREDICT = "seldon.protos.Seldon/Predict"
OPEN_LOOP_WORKERS = 32
SERVED_ON = "--http-port {http_port} --grpc-port {grpc_port} --host 127.0.0.1"


class FloorProcess:
    """A floor server (`http_floor` or `grpc_floor`, `extra`: its arguments after the
    address), once it listens; the same attributes as `servers.ServerProcess`."""

    def __init__(self, examples: Path, kind: str, *extra: str, timeout: float = 30) -> None:
        port = free_port()
        self.http_port = None if kind == "grpc_floor" else port
        self.grpc_port = port if kind == "grpc_floor" else None
        argv = [str(examples / kind), f"127.0.0.1:{port}", *extra]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not tcp_open(port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{shlex.join(argv)} did not start listening")
            time.sleep(0.05)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


Server = FloorProcess | ServerProcess


@dataclass
class Row:
    """One line of the table: both servers paced the same way."""

    proto: str
    pace: str
    floor: FloorProcess
    # Which of inferwire's servers: "noop", "slow" or "tree".
    ours: str
    grpc: bool
    extra: list[str] = field(default_factory=list)
    # The notebook's tool (vegeta, ghz) instead of inferwire-bench.
    tool: bool = False


@dataclass
class Measured:
    requests: int
    ok: int
    p50_us: float
    cpu_us: float


def bench(
    bench_cmd: list[str], server: Server, grpc: bool, duration: str, extra: list[str]
) -> Measured:
    if grpc:
        target = [f"127.0.0.1:{server.grpc_port}", "--call", PREDICT, "--seldon-json"]
    else:
        target = [f"http://127.0.0.1:{server.http_port}/api/v1.0/predictions"]
    pace = [] if "-n" in extra else ["-z", duration]
    argv = [*bench_cmd, "attack", *target, "-d", BODY, *pace, "--no-progress"]
    before = proc_cpu.cpu_seconds(server.proc.pid)
    out = subprocess.run(
        [*argv, *extra, "--format", "json"], capture_output=True, check=True, timeout=600
    ).stdout
    cpu = proc_cpu.cpu_seconds(server.proc.pid) - before
    r = json.loads(out)
    n = max(r["requests"], 1)
    return Measured(r["requests"], r["ok"], r["latency"]["p50_ns"] / 1e3, cpu / n * 1e6)


def notebook_tool(server: Server, grpc: bool, duration: str, work: Path) -> Measured:
    """The notebook's vegeta or ghz command, run in `work` (which holds its request files
    naming this server's URL)."""
    before = proc_cpu.cpu_seconds(server.proc.pid)
    if grpc:
        target = f"127.0.0.1:{server.grpc_port}"
        run = notebook_tools.run_ghz(work, "ndarray", duration, target, 600)
    else:
        run = notebook_tools.run_vegeta(work, "ndarray", duration, 600)
    cpu = proc_cpu.cpu_seconds(server.proc.pid) - before
    n = max(run.requests, 1)
    ok = run.ok
    if grpc and not notebook_tools.unexpected_ghz_failures(run):
        # ghz cancels the call in flight when its time is up: not the server's failure.
        ok = run.requests
    return Measured(run.requests, ok, run.p50_ms * 1e3, cpu / n * 1e6)


def ratio(a: float, b: float, digits: int) -> str:
    """`a / b`, or a dash when `b` is 0: a run too short for /proc's 10 ms ticks."""
    return f"{a / b:.{digits}f}" if b else "–"


def small_tree(path: Path) -> None:
    """A depth-3 scikit-learn tree on one feature: `inferwire serve` scores it in Rust."""
    import joblib
    import numpy as np
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(0)
    x = rng.random((200, 1))
    joblib.dump(DecisionTreeClassifier(max_depth=3).fit(x, x[:, 0] > 0.5), path)


def cold_probe() -> list[str]:
    """The same small Python and numpy work, timed on this thread's CPU clock, back to back
    and after pauses (sleeping, then spinning)."""
    import numpy as np

    def work() -> str:
        a = np.array([[0]])
        json.loads(BODY)
        return json.dumps({"data": {"names": [], "ndarray": a.tolist()}, "meta": {}})

    lines = []
    for gap, spin in ((0.0, False), (0.0005, False), (0.005, False), (0.05, False), (0.005, True)):
        took = []
        for _ in range(200):
            if spin:
                until = time.perf_counter() + gap
                while time.perf_counter() < until:
                    pass
            elif gap:
                time.sleep(gap)
            t = time.thread_time_ns()
            work()
            took.append(time.thread_time_ns() - t)
        how = "spinning" if spin else "sleeping"
        label = "back to back" if not gap else f"after {gap * 1e3:g} ms {how}"
        lines.append(f"| {label} | {statistics.median(took) / 1e3:.1f} µs |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="5s", help="each run (default 5s)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per row (default 3)")
    parser.add_argument(
        "--bench",
        help="the inferwire-bench binary (default: `inferwire bench` of this Python)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="every row once, briefly (a check, not figures)"
    )
    parser.add_argument("--examples", type=Path, required=True, help="folder of the floor servers")
    parser.add_argument("--inferwire", default=str(Path(sys.executable).parent / "inferwire"))
    parser.add_argument("--out", type=Path, help="also write floor.md into this folder")
    parser.add_argument(
        "--baseline",
        help="another build's `inferwire` executable, run beside this one in every row",
    )
    args = parser.parse_args()
    bench_cmd = [args.bench] if args.bench else [sys.executable, "-m", "inferwire", "bench"]
    if args.quick:
        args.duration, args.rounds = "1s", 1
    missing = notebook_tools.missing_tools()
    if missing:
        raise SystemExit(f"missing {missing}: run scripts/install-load-tools.sh")

    def inferwire(binary: str, model: str, *extra: str) -> ServerProcess:
        template = f"{{inferwire}} serve {{model}} {shlex.join(extra)} " + SERVED_ON
        return ServerProcess(inferwire_spec([binary], template), model)

    work = Path(tempfile.mkdtemp(prefix="inferwire-floor-"))
    tree = work / "tree.joblib"
    small_tree(tree)
    models = {
        "noop": ("benchmarks/models/noop.py:NoopPredict",),
        "slow": ("benchmarks/models/noop.py:Sleep5ms", "--model-threads", "4"),
        "tree": (str(tree),),
    }
    servers: list[Server] = []
    try:
        floor_rest = FloorProcess(args.examples, "http_floor")
        floor_grpc = FloorProcess(args.examples, "grpc_floor")
        floor_slow = FloorProcess(args.examples, "http_floor", "5")
        servers += [floor_rest, floor_grpc, floor_slow]
        ours = {k: inferwire(args.inferwire, *v) for k, v in models.items()}
        servers += ours.values()
        # The same servers from another build, when asked: each row runs it too.
        twin = {k: inferwire(args.baseline, *v) for k, v in models.items()} if args.baseline else {}
        servers += twin.values()
        noop = ours["noop"]
        # vegeta's targets name the server's URL: a folder for each.
        dirs = {}
        for s in servers:
            if s.http_port is not None:
                dirs[s.http_port] = work / str(s.http_port)
                dirs[s.http_port].mkdir()
                url = f"http://127.0.0.1:{s.http_port}/api/v1.0/predictions"
                notebook_tools.prepare(dirs[s.http_port], 1, url)
        # Warm every server's code paths (not reported).
        for s in servers:
            for grpc in ([False] if s.http_port else []) + ([True] if s.grpc_port else []):
                bench(bench_cmd, s, grpc, "1s", [])

        open_loop = ["-c", str(OPEN_LOOP_WORKERS)]
        one_conn = ["--connections", "1"]
        # Enough requests at 200/s that the 10 ms ticks of /proc's CPU times do not show.
        spaced = [] if args.quick else ["-n", "2000"]
        rows: list[Row] = []
        for proto, grpc, floor in (("REST", False, floor_rest), ("gRPC", True, floor_grpc)):
            tool = "ghz" if grpc else "vegeta"
            rows.append(Row(proto, f"{tool}, 1 in flight", floor, "noop", grpc, tool=True))
            rows.append(Row(proto, "inferwire-bench back to back", floor, "noop", grpc))
            for rate in (200, 2000, 20000):
                extra = ["-r", str(rate), *open_loop, *(one_conn if grpc else [])]
                extra += spaced if rate == 200 else []
                rows.append(Row(proto, f"open loop {rate:,}/s", floor, "noop", grpc, extra))
        five_ms = ["-r", "200", "-c", "8", *spaced]
        rows.append(Row("REST", "model sleeps 5 ms, 200/s", floor_slow, "slow", False, five_ms))
        # No Python on the path: a scikit-learn tree scored in Rust.
        rows.append(Row("REST", "native tree, back to back", floor_rest, "tree", False))
        tree_200 = ["-r", "200", *open_loop, *spaced]
        rows.append(
            Row("REST", "native tree, open loop 200/s", floor_rest, "tree", False, tree_200)
        )
        for n in (1, 8, 64, 512):
            pace = f"{n} stream{'s' if n > 1 else ''}, 1 connection"
            rows.append(Row("gRPC", pace, floor_grpc, "noop", True, ["-c", str(n), *one_conn]))

        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        out = [f"# The floor at every pace ({when}, {machine()})", "", "## Side by side", ""]

        def say(line: str) -> None:
            out.append(line)
            print(line, flush=True)

        before = " baseline µs/request | inferwire/baseline |" if twin else ""
        say(
            "| protocol | pace | floor µs/request | inferwire µs/request | ratio "
            f"| floor p50 | inferwire p50 | requests (floor, inferwire) |{before}"
        )
        say("|---|---|---:|---:|---:|---:|---:|---|" + ("---:|---:|" if twin else ""))
        one_connection_floor = None
        for row in rows:
            results: dict[str, list[Measured]] = {"floor": [], "inferwire": [], "baseline": []}
            both: list[tuple[str, Server]] = [("floor", row.floor), ("inferwire", ours[row.ours])]
            both += [("baseline", twin[row.ours])] if twin else []
            for _ in range(args.rounds):
                for role, s in both:
                    if row.tool:
                        # ghz's files name no URL; vegeta's targets name the server's.
                        port = noop.http_port if row.grpc else s.http_port
                        assert port is not None
                        where = dirs[port]
                        m = notebook_tool(s, row.grpc, args.duration, where)
                    else:
                        m = bench(bench_cmd, s, row.grpc, args.duration, row.extra)
                    if m.ok != m.requests or m.requests == 0:
                        raise SystemExit(f"{row.pace}: {role} answered {m.ok}/{m.requests}")
                    results[role].append(m)
            f_cpu = statistics.median(m.cpu_us for m in results["floor"])
            i_cpu = statistics.median(m.cpu_us for m in results["inferwire"])
            f_p50 = statistics.median(m.p50_us for m in results["floor"])
            i_p50 = statistics.median(m.p50_us for m in results["inferwire"])
            counts = (
                f"{sum(m.requests for m in results['floor']):,}, "
                f"{sum(m.requests for m in results['inferwire']):,}"
            )
            if row.proto == "gRPC" and row.pace.startswith("1 stream,"):
                one_connection_floor = f_cpu
            line = (
                f"| {row.proto} | {row.pace} | {f_cpu:.1f} | {i_cpu:.1f} "
                f"| {ratio(i_cpu, f_cpu, 1)}× | {f_p50:.0f} µs | {i_p50:.0f} µs | {counts} |"
            )
            if twin:
                b_cpu = statistics.median(m.cpu_us for m in results["baseline"])
                line += f" {b_cpu:.1f} | {ratio(i_cpu, b_cpu, 2)} |"
            say(line)
        if one_connection_floor is not None:
            say("")
            say(
                f"The one-connection gRPC floor (1 stream): {one_connection_floor:.1f} µs "
                "of server CPU per request."
            )
        for line in (
            "",
            "## Cold caches",
            "",
            "| the same Python and numpy work | its CPU time (median of 200) |",
            "|---|---:|",
            *cold_probe(),
        ):
            say(line)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "floor.md").write_text("\n".join(out) + "\n")
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    main()
