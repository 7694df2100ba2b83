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
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import notebook_tools
import proc_cpu
from runtime import machine

ROOT = Path(__file__).resolve().parent.parent
BODY = '{"data": {"ndarray": [[0]]}}'
PREDICT = "seldon.protos.Seldon/Predict"
OPEN_LOOP_WORKERS = 32


@dataclass
class Server:
    name: str
    argv: list[str]
    rest: int | None
    grpc: int | None
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT
        )

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid


@dataclass
class Row:
    """One line of the table: both servers paced the same way."""

    proto: str
    pace: str
    floor: Server
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


def wait_ready(port: int, path: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(
                urllib.request.Request(
                    f"http://127.0.0.1:{port}{path}", data=BODY.encode(), method="POST"
                ),
                timeout=2,
            ).read()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"no server answered on port {port}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"nothing listens on port {port}")


def bench(
    bench_cmd: list[str], server: Server, grpc: bool, duration: str, extra: list[str]
) -> Measured:
    if grpc:
        target = [f"127.0.0.1:{server.grpc}", "--call", PREDICT, "--seldon-json"]
    else:
        target = [f"http://127.0.0.1:{server.rest}/api/v1.0/predictions"]
    pace = [] if "-n" in extra else ["-z", duration]
    argv = [*bench_cmd, "attack", *target, "-d", BODY, *pace, "--no-progress"]
    before = proc_cpu.cpu_seconds(server.pid)
    out = subprocess.run(
        [*argv, *extra, "--format", "json"], capture_output=True, check=True, timeout=600
    ).stdout
    cpu = proc_cpu.cpu_seconds(server.pid) - before
    r = json.loads(out)
    n = max(r["requests"], 1)
    return Measured(r["requests"], r["ok"], r["latency"]["p50_ns"] / 1e3, cpu / n * 1e6)


def notebook_tool(server: Server, grpc: bool, duration: str, work: Path) -> Measured:
    """The notebook's vegeta or ghz command, run in `work` (which holds its request files
    naming this server's URL)."""
    before = proc_cpu.cpu_seconds(server.pid)
    if grpc:
        run = notebook_tools.run_ghz(work, "ndarray", duration, f"127.0.0.1:{server.grpc}", 600)
    else:
        run = notebook_tools.run_vegeta(work, "ndarray", duration, 600)
    cpu = proc_cpu.cpu_seconds(server.pid) - before
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

    def floor_server(kind: str, *extra: str) -> Server:
        port = free_port()
        argv = [str(args.examples / kind), f"127.0.0.1:{port}", *extra]
        return Server(
            "floor",
            argv,
            None if kind == "grpc_floor" else port,
            port if kind == "grpc_floor" else None,
        )

    def inferwire(spec: str, *extra: str, binary: str = args.inferwire) -> Server:
        rest, grpc = free_port(), free_port()
        argv = [binary, "serve", spec, "--http-port", str(rest), "--grpc-port", str(grpc),
                "--host", "127.0.0.1", *extra]  # fmt: skip
        return Server("baseline" if binary == args.baseline else "inferwire", argv, rest, grpc)

    work = Path(tempfile.mkdtemp(prefix="inferwire-floor-"))
    tree = work / "tree.joblib"
    small_tree(tree)
    floor_rest, floor_grpc = floor_server("http_floor"), floor_server("grpc_floor")
    floor_slow = floor_server("http_floor", "5")
    specs = {
        "noop": ("benchmarks/models/noop.py:NoopPredict",),
        "slow": ("benchmarks/models/noop.py:Sleep5ms", "--model-threads", "4"),
        "tree": (str(tree),),
    }
    ours = {k: inferwire(*v) for k, v in specs.items()}
    # The same servers from another build, when asked: each row runs it too.
    twin = (
        {k: inferwire(*v, binary=args.baseline) for k, v in specs.items()} if args.baseline else {}
    )
    servers = [floor_rest, floor_grpc, floor_slow, *ours.values(), *twin.values()]
    noop = ours["noop"]
    for s in servers:
        s.start()
    try:
        for s in servers:
            if s.rest is not None:
                wait_ready(s.rest, "/api/v1.0/predictions")
        wait_listening(floor_grpc.grpc)  # type: ignore[arg-type]
        # vegeta's targets name the server's URL: a folder for each.
        dirs = {}
        for s in servers:
            if s.rest is not None:
                dirs[s.rest] = work / str(s.rest)
                dirs[s.rest].mkdir()
                url = f"http://127.0.0.1:{s.rest}/api/v1.0/predictions"
                notebook_tools.prepare(dirs[s.rest], 1, url)
        # Warm every server's code paths (not reported).
        for s in servers:
            bench(bench_cmd, s, s.grpc is not None and s.rest is None, "1s", [])
            if s.grpc is not None and s.rest is not None:
                bench(bench_cmd, s, True, "1s", [])

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
            both = [row.floor, ours[row.ours], *([twin[row.ours]] if twin else [])]
            for _ in range(args.rounds):
                for s in both:
                    if row.tool:
                        # ghz's files name no URL; vegeta's targets name the server's.
                        port = noop.rest if row.grpc else s.rest
                        assert port is not None
                        where = dirs[port]
                        m = notebook_tool(s, row.grpc, args.duration, where)
                    else:
                        m = bench(bench_cmd, s, row.grpc, args.duration, row.extra)
                    if m.ok != m.requests or m.requests == 0:
                        raise SystemExit(f"{row.pace}: {s.name} answered {m.ok}/{m.requests}")
                    results[s.name].append(m)
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
