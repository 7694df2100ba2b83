"""The serving runtime's benchmarks (docs/benchmarks.md, "Runtime"), in one run:

1. ray-micro: Ray Serve's microbenchmark table (../shared/seeds/004): six configurations
   of max batch size / max concurrent queries / replicas, one client and 8 clients,
   "small data" (a GET that reaches the model), for inferwire (replicas -> --workers,
   max concurrent queries -> --max-concurrency) and Ray Serve (benchmarks/peers/ray),
   measured with the same tool (inferwire bench) back to back.
2. wrk: the seed's command, ``wrk -c 100 -t 2 -d 10s --latency URL``, against both
   no-op targets (8 replicas / workers, 10000 concurrent queries).
3. batching: throughput of a model that costs real CPU (benchmarks/models/cpu.py:Scorer)
   against max batch size, with 1 and 2 workers, 32 clients; plotted as SVG.
4. memory: RSS and PSS of the supervisor and each worker for 1, 2 and 4 workers of a
   model holding 256 MiB (forked after loading: shared copy-on-write).

    bash benchmarks/peers/ray/install.sh     # once (Ray Serve, in .tools/peers/ray)
    bash scripts/install-wrk.sh              # once (Debian's wrk)
    .venv/bin/python benchmarks/runtime.py   # about 8 minutes

Results: benchmarks/results/runtime.{md,json,svg}. Parts whose tool is missing are
skipped with a line saying why.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.proc_cpu import descendants  # noqa: E402
from lib.servers import free_port  # noqa: E402

RAY_PYTHON = ROOT / ".tools/peers/ray/bin/python"
RAY_APP = ROOT / "benchmarks/peers/ray/noop_app.py"
# The seed's rows: (max_batch_size, max_concurrent_queries, num_replicas) and its figures
# (requests/s, single client and 8 clients).
RAY_ROWS = [
    ((1, 1, 1), (629.38, 888.99)),
    ((1, 10000, 1), (610.65, 1856.55)),
    ((10000, 10000, 1), (602.93, 1723.73)),
    ((1, 1, 8), (492.09, 1662.08)),
    ((1, 10000, 8), (459.71, 1860.39)),
    ((10000, 10000, 8), (487.65, 1917.84)),
]
SMALL = urllib.parse.quote('{"data":{"ndarray":[[1]]}}', safe="")
# Servers get one BLAS thread: the machine has 2 cores and the load generator needs one.
SERVER_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


class Proc:
    """A server in its own process group; ready when ``ready_url`` answers 200."""

    def __init__(
        self,
        argv: list[str],
        ready_url: str,
        timeout: float = 180.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.argv = argv
        self.log = Path(tempfile.mkstemp(prefix="runtime-", suffix=".log")[1])
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                argv,
                cwd=ROOT,
                env={**os.environ, **SERVER_ENV, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started = time.monotonic()
        deadline = self.started + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{argv} exited:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(ready_url, timeout=2) as r:
                    if r.status == 200:
                        self.start_seconds = time.monotonic() - self.started
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{argv} not ready in {timeout} s:\n{self.log.read_text()[-3000:]}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.unlink(missing_ok=True)


class PeerProc:
    """A peer's ``benchmarks/peers/NAME/serve.py`` in its own process group, ready once it
    prints ``READY http://127.0.0.1:PORT [grpc 127.0.0.1:GPORT]`` (after every model it
    serves answers); its log goes to a temporary file, shown when it fails to start."""

    def __init__(self, argv: list[str], name: str) -> None:
        self.log = Path(tempfile.mkstemp(prefix="peer-", suffix=".log")[1])
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                argv,
                cwd=ROOT,
                env={**os.environ, **SERVER_ENV},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                start_new_session=True,
            )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # serve.py exits when not ready in its own time
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(f"{name} did not start ({line!r}):\n{self.log.read_text()[-3000:]}")
        words = line.split()
        self.url = words[1]
        self.grpc = words[words.index("grpc") + 1] if "grpc" in words else ""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        """SIGTERM to serve.py (which stops its server), SIGKILL to the group after 60 s."""
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:
            pass
        self.log.unlink(missing_ok=True)


def inferwire(
    model: str, *args: str, python: str = sys.executable, env: dict[str, str] | None = None
) -> tuple[Proc, str]:
    """``python``: the interpreter whose inferwire serves (another build's venv to compare);
    ``env``: variables the server gets on top of this process's."""
    port = free_port()
    argv = [python, "-m", "inferwire", "serve", model, "--host", "127.0.0.1"]
    argv += ["--http-port", str(port), "--grpc-port", str(free_port()), *args]
    url = f"http://127.0.0.1:{port}"
    return Proc(argv, url + "/health/ping", env=env), url


def attack(url: str, clients: int, seconds: float, pid: int, *extra: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "inferwire", "bench", "attack", url, "-c", str(clients)]
    argv += ["-z", f"{seconds}s", "--warmup", "1s", "--server-pid", str(pid), "--format", "json"]
    argv += ["--no-progress", *extra]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=seconds + 120)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


@dataclass
class Cell:
    rps: float
    p50_ms: float
    server_cpu_us: float | None
    ok: float
    mean_us: float = 0.0

    @staticmethod
    def of(report: dict[str, Any]) -> Cell:
        cpu = report.get("server_cpu_ns_per_request")
        return Cell(
            report["throughput"],
            report["latency"]["p50_ns"] / 1e6,
            cpu / 1e3 if cpu else None,
            report["success"],
            report["latency"]["mean_ns"] / 1e3,
        )


def ray_micro(seconds: float, results: dict[str, Any]) -> list[str]:
    have_ray = RAY_PYTHON.exists()
    rows: list[dict[str, Any]] = []
    for (batch, concurrent, replicas), published in RAY_ROWS:
        row: dict[str, Any] = {"config": [batch, concurrent, replicas], "published": published}
        args = ["--workers", str(replicas), "--max-batch-size", str(batch)]
        args += ["--max-concurrency", str(concurrent), "--max-queue", "10000"]
        server, url = inferwire("benchmarks/models/cpu.py:NoopRows", *args)
        target = f"{url}/api/v1.0/predictions?json={SMALL}"
        try:
            row["inferwire"] = [Cell.of(attack(target, c, seconds, server.pid)) for c in (1, 8)]
        finally:
            server.stop()
        if have_ray:
            port = free_port()
            argv = [str(RAY_PYTHON), str(RAY_APP), "--port", str(port)]
            argv += ["--num-replicas", str(replicas), "--max-batch-size", str(batch)]
            argv += ["--max-concurrent-queries", str(concurrent)]
            ray = Proc(argv, f"http://127.0.0.1:{port}/noop")
            row["ray_start_s"] = ray.start_seconds
            try:
                noop = f"http://127.0.0.1:{port}/noop"
                row["ray"] = [Cell.of(attack(noop, c, seconds, ray.pid)) for c in (1, 8)]
            finally:
                ray.stop()
        rows.append(row)
        print(f"ray-micro {batch}/{concurrent}/{replicas} done", file=sys.stderr)
    results["ray_micro"] = [
        {k: ([c.__dict__ for c in v] if k in ("inferwire", "ray") else v) for k, v in r.items()}
        for r in rows
    ]
    lines = [
        "| max batch / max concurrent / replicas | clients | inferwire req/s | Ray Serve req/s "
        "| ratio | seed (Ray 1.x, other machine) | inferwire p50 | Ray p50 "
        "| server CPU/req inferwire | Ray |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cfg = "{} / {} / {}".format(*r["config"])
        for i, clients in enumerate((1, 8)):
            ours: Cell = r["inferwire"][i]
            theirs: Cell | None = r["ray"][i] if "ray" in r else None
            ratio = f"{ours.rps / theirs.rps:.0f}×" if theirs and theirs.rps else "-"
            lines.append(
                f"| {cfg} | {clients} | {ours.rps:,.0f} | "
                f"{f'{theirs.rps:,.0f}' if theirs else 'not installed'} | {ratio} | "
                f"{r['published'][i]:,.0f} | {ours.p50_ms:.3f} ms | "
                f"{f'{theirs.p50_ms:.1f} ms' if theirs else '-'} | {fmt_us(ours.server_cpu_us)} "
                f"| {fmt_us(theirs.server_cpu_us) if theirs else '-'} |"
            )
    if not have_ray:
        lines.append("\nRay Serve is not installed: `bash benchmarks/peers/ray/install.sh`.")
    return lines


def fmt_us(us: float | None) -> str:
    if us is None:
        return "-"
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} µs"


def wrk(results: dict[str, Any]) -> list[str]:
    if not shutil.which("wrk"):
        return ["wrk is not installed: `bash scripts/install-wrk.sh`."]
    out: list[str] = []
    targets: list[tuple[str, Proc, str]] = []
    args = ["--workers", "8", "--max-concurrency", "10000", "--max-queue", "10000"]
    server, url = inferwire("benchmarks/models/cpu.py:NoopRows", *args)
    targets.append(("inferwire (8 workers)", server, f"{url}/api/v1.0/predictions?json={SMALL}"))
    if RAY_PYTHON.exists():
        port = free_port()
        argv = [str(RAY_PYTHON), str(RAY_APP), "--port", str(port), "--num-replicas", "8"]
        argv += ["--max-concurrent-queries", "10000"]
        noop = f"http://127.0.0.1:{port}/noop"
        targets.append(("Ray Serve (8 replicas)", Proc(argv, noop), noop))
    results["wrk"] = {}
    try:
        for name, _proc, target in targets:
            cmd = ["wrk", "-c", "100", "-t", "2", "-d", "10s", "--latency", target]
            text = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
            rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
            results["wrk"][name] = float(rps.group(1)) if rps else None
            out += [f"{name}:", "", "```", f"$ {' '.join(cmd)}", text.rstrip(), "```", ""]
    finally:
        for _, proc, _ in targets:
            proc.stop()
    return out


def batching(seconds: float, results: dict[str, Any], out_dir: Path) -> list[str]:
    body = json.dumps({"data": {"tensor": {"shape": [1, 64], "values": [0.5] * 64}}})
    sizes = [1, 2, 4, 8, 16, 32]
    curves: dict[int, list[float]] = {}
    cpu: dict[int, list[float | None]] = {}
    for workers in (1, 2):
        curves[workers], cpu[workers] = [], []
        for b in sizes:
            args = ["--workers", str(workers), "--max-batch-size", str(b)]
            server, url = inferwire("benchmarks/models/cpu.py:Scorer", *args)
            try:
                r = attack(f"{url}/api/v1.0/predictions", 32, seconds, server.pid, "-d", body)
            finally:
                server.stop()
            assert r["success"] == 1.0, r["status_codes"]
            curves[workers].append(r["throughput"])
            c = r.get("server_cpu_ns_per_request")
            cpu[workers].append(c / 1e3 if c else None)
            print(f"batching workers={workers} batch={b}: {r['throughput']:.0f}/s", file=sys.stderr)
    results["batching"] = {"sizes": sizes, "rps": curves, "server_cpu_us": cpu}
    (out_dir / "runtime.svg").write_text(svg_lines(sizes, curves))
    lines = [
        "| max batch size | " + " | ".join(str(b) for b in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    for w in (1, 2):
        lines.append(
            f"| {w} worker{'s' if w > 1 else ''}, req/s | "
            + " | ".join(f"{x:,.0f}" for x in curves[w])
            + " |"
        )
        lines.append(
            f"| {w} worker{'s' if w > 1 else ''}, server CPU/req | "
            + " | ".join(fmt_us(x) for x in cpu[w])
            + " |"
        )
    return lines


def svg_lines(sizes: list[int], curves: dict[int, list[float]]) -> str:
    """Throughput against batch size (log2 axis), one line per worker count."""
    w, h, left, bottom, top, right = 640, 360, 70, 50, 30, 130
    top_y = max(max(v) for v in curves.values()) * 1.1
    xs = [left + i * (w - left - right) / (len(sizes) - 1) for i in range(len(sizes))]

    def y(v: float) -> float:
        return h - bottom - v / top_y * (h - bottom - top)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{w / 2}" y="18" text-anchor="middle" font-size="14">Scorer model, '
        "32 clients: requests/s against max batch size</text>",
    ]
    for i in range(6):
        v = top_y * i / 5
        parts.append(
            f'<line x1="{left}" x2="{w - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>'
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:,.0f}</text>'
        )
    for x, b in zip(xs, sizes, strict=True):
        parts.append(f'<text x="{x:.1f}" y="{h - bottom + 18}" text-anchor="middle">{b}</text>')
    parts.append(
        f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">'
        "max batch size</text>"
    )
    colors = {1: "#1f77b4", 2: "#d62728"}
    for k, (workers, values) in enumerate(sorted(curves.items())):
        points = " ".join(f"{x:.1f},{y(v):.1f}" for x, v in zip(xs, values, strict=True))
        c = colors.get(workers, "#555")
        parts.append(f'<polyline points="{points}" fill="none" stroke="{c}" stroke-width="2"/>')
        for x, v in zip(xs, values, strict=True):
            parts.append(f'<circle cx="{x:.1f}" cy="{y(v):.1f}" r="3" fill="{c}"/>')
        ly = top + 20 + 20 * k
        parts.append(
            f'<line x1="{w - right + 15}" x2="{w - right + 35}" y1="{ly}" y2="{ly}" '
            f'stroke="{c}" stroke-width="2"/><text x="{w - right + 40}" y="{ly + 4}">'
            f"{workers} worker{'s' if workers > 1 else ''}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process, in KiB."""
    rss = pss = 0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Rss:"):
            rss = int(line.split()[1])
        elif line.startswith("Pss:"):
            pss = int(line.split()[1])
    return rss, pss


def memory(results: dict[str, Any]) -> list[str]:
    lines = [
        "| workers | supervisor RSS | RSS per worker | sum of RSS | sum of PSS (real use) |",
        "|---|---|---|---|---|",
    ]
    results["memory"] = []
    for workers in (1, 2, 4):
        server, url = inferwire("benchmarks/models/cpu.py:Big", "--workers", str(workers))
        try:
            for _ in range(20):  # touch every worker's request path
                urllib.request.urlopen(
                    f"{url}/api/v1.0/predictions?json={SMALL}", timeout=10
                ).read()
            pids = [server.pid, *descendants(server.pid)]
            # Only python processes (the supervisor and the workers), not their threads.
            mem = {p: memory_kib(p) for p in pids}
        finally:
            server.stop()
        sup = mem[server.pid]
        kids = [m for p, m in mem.items() if p != server.pid]
        rss_sum = sum(m[0] for m in mem.values())
        pss_sum = sum(m[1] for m in mem.values())
        per = "/".join(f"{m[0] / 1024:.0f}" for m in kids) + " MiB" if kids else "(serves itself)"
        results["memory"].append({"workers": workers, "kib": {str(p): m for p, m in mem.items()}})
        lines.append(
            f"| {workers} | {sup[0] / 1024:.0f} MiB | {per} | {rss_sum / 1024:.0f} MiB | "
            f"{pss_sum / 1024:.0f} MiB |"
        )
    return lines


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "?",
    )
    return f"{os.cpu_count()} cores ({cpu}), Linux {os.uname().release}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds per cell")
    p.add_argument(
        "--only", default="ray,wrk,batching,memory", help="parts to run (comma-separated)"
    )
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    parts = set(args.only.split(","))
    results: dict[str, Any] = {"machine": machine(), "when": time.strftime("%Y-%m-%d %H:%M")}
    md = [f"# Runtime benchmarks ({results['when']}, {results['machine']})", ""]
    if "ray" in parts:
        md += ["## ray-micro", "", *ray_micro(args.seconds, results), ""]
    if "wrk" in parts:
        md += ["## wrk", "", *wrk(results), ""]
    if "batching" in parts:
        md += ["## Batching", "", *batching(args.seconds, results, args.out), ""]
    if "memory" in parts:
        md += ["## Memory", "", *memory(results), ""]
    (args.out / "runtime.md").write_text("\n".join(md))
    (args.out / "runtime.json").write_text(json.dumps(results, indent=2))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
