"""Overload, soak and faults under load (docs/reliability.md, "Overload", "Soak" and
"Faults under load"), with the server's memory sampled from /proc:

1. overload: a model that takes 5 ms (benchmarks/models/noop.py:Sleep5ms, one model
   thread: about 190 requests/s) is offered ten times what it can serve, open loop, for
   ``--seconds``; once with the default queue (``--max-queue 1024``) and once with a
   short one (``--max-queue 16``). Reported: what was accepted (200) and its latency,
   what was refused (503) and how fast, anything else (lost: goal 0), and RSS before,
   at its peak and after.
2. soak: an echo model at 80% of its measured capacity for ``--minutes``, REST and gRPC
   (V2) at once, each at 80% of what it served with the other running, RSS sampled
   every 2 s. Reported: requests and errors (goal
   0), RSS once warm, at the end and at its highest, and the trend (least squares, KiB
   per minute) after the first 30 s.
3. faults: 8 clients in a closed loop for 8 s against a model that sleeps 5 ms, and 2 s
   in, a fault: a worker killed (``--workers 2``), a call that hangs (``--workers 2
   --timeout 1 --stuck-after 2``), a model that raises on some requests. Reported: the
   requests answered, and those that were not, by what they got.

    .venv/bin/python benchmarks/reliability.py                  # about 8 minutes
    .venv/bin/python benchmarks/reliability.py --only overload  # about 1 minute

Results: benchmarks/results/reliability.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.proc_cpu import descendants  # noqa: E402
from runtime import attack, inferwire, machine, memory_kib  # noqa: E402

SMALL = '{"data":{"ndarray":[[1]]}}'
V2_BODY = json.dumps(
    {"inputs": [{"name": "x", "shape": [64], "datatype": "FP32", "data": [0.5] * 64}]}
)
CALL = "inference.GRPCInferenceService/ModelInfer"
WARM_S = 30.0


def rss_kib(root: int) -> int:
    """Resident memory of a process tree (the server and any workers), KiB."""
    total = 0
    for pid in descendants(root):
        try:
            total += memory_kib(pid)[0]
        except OSError:
            pass  # a worker that has just exited
    return total


class Sampler(threading.Thread):
    """Samples ``rss_kib(pid)`` every ``every`` seconds until stopped."""

    def __init__(self, pid: int, every: float) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.samples: list[tuple[float, int]] = []
        self.done = threading.Event()
        self.start_time = time.monotonic()

    def run(self) -> None:
        while not self.done.is_set():
            self.samples.append((time.monotonic() - self.start_time, rss_kib(self.pid)))
            self.done.wait(self.every)

    def stop(self) -> list[tuple[float, int]]:
        self.done.set()
        self.join()
        return self.samples


def bench(*argv: str, timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "inferwire", "bench", "attack", *argv]
    out = subprocess.run(
        [*cmd, "--format", "json", "--no-progress"],
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def ms(ns: float) -> str:
    return f"{ns / 1e6:,.1f} ms" if ns >= 1e6 else f"{ns / 1e3:,.0f} µs"


def mib(kib: float) -> str:
    return f"{kib / 1024:,.0f} MiB"


def overload(seconds: float, results: dict[str, Any]) -> list[str]:
    lines = [
        "| queue | capacity | offered | accepted (200) | accepted p50 / p99 | refused (503) "
        "| refused p50 / p99 | lost | RSS before / peak / after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    results["overload"] = []
    for label, args in (("1024 (default)", []), ("16", ["--max-queue", "16"])):
        server, url = inferwire("benchmarks/models/noop.py:Sleep5ms", *args)
        target = f"{url}/api/v1.0/predictions"
        try:
            capacity = attack(target, 4, 3, server.pid, "-d", SMALL)["throughput"]
            rate = 10 * capacity
            before = rss_kib(server.pid)
            sampler = Sampler(server.pid, 0.05)
            sampler.start()
            rep = bench(
                target, "-d", SMALL, "-r", f"{rate:.0f}", "-z", f"{seconds}s",
                "-c", "1500", "--timeout", "30s", "--server-pid", str(server.pid),
                # Opens the connections (a burst of 1,500 new ones takes a second or more
                # to settle) and fills the queue: what is measured is the steady state.
                "--warmup", "2s",
                timeout=seconds + 120,
            )  # fmt: skip
            samples = sampler.stop()
            time.sleep(1)
            after = rss_kib(server.pid)
        finally:
            server.stop()
        codes = rep["status_codes"]
        ok, refused = codes.get("200", 0), codes.get("503", 0)
        lost = rep["requests"] - ok - refused
        acc = rep["latency_by_code"].get("200", {})
        rej = rep["latency_by_code"].get("503", {})
        peak = max(k for _, k in samples)
        results["overload"].append(
            {"queue": label, "capacity": capacity, "rate": rate, "report": rep,
             "rss_kib": {"before": before, "peak": peak, "after": after}}
        )  # fmt: skip
        lines.append(
            f"| {label} | {capacity:,.0f}/s | {rate:,.0f}/s ({rep['requests']:,}) "
            f"| {ok:,} ({ok / (rep['duration_ns'] / 1e9):,.0f}/s) "
            f"| {ms(acc.get('p50_ns', 0))} / {ms(acc.get('p99_ns', 0))} "
            f"| {refused:,} | {ms(rej.get('p50_ns', 0))} / {ms(rej.get('p99_ns', 0))} "
            f"| {lost} | {mib(before)} / {mib(peak)} / {mib(after)} |"
        )
    lines += [
        "",
        f"Open loop at ten times the capacity measured just before (4 clients, closed "
        f"loop), {seconds:.0f} s after a 2 s warm-up at the same concurrency, up to 1,500 "
        "connections; p50 / p99 per status code from "
        "`inferwire bench`'s `latency_by_code`; RSS of the server process sampled every "
        "50 ms.",
    ]
    return lines


def slope_kib_per_min(samples: list[tuple[float, int]]) -> float:
    n = len(samples)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in samples) / n
    mk = sum(k for _, k in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    cov = sum((t - mt) * (k - mk) for t, k in samples)
    return cov / var * 60 if var else 0.0


def together(runs: list[list[str]], seconds: float) -> list[dict[str, Any]]:
    """``inferwire bench attack`` runs started at once, for ``seconds`` each."""
    procs = []
    for args in runs:
        cmd = [sys.executable, "-m", "inferwire", "bench", "attack", *args]
        cmd += ["-z", f"{seconds:.0f}s", "--format", "json", "--no-progress"]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))
    return [json.loads(p.communicate(timeout=seconds + 120)[0]) for p in procs]


def soak(minutes: float, results: dict[str, Any]) -> list[str]:
    server, url = inferwire("benchmarks/models/noop.py:Echo", "--model-name", "echo")
    grpc_target = server.argv[server.argv.index("--grpc-port") + 1]
    rest = (f"{url}/v2/models/echo/infer", "-d", V2_BODY)
    grpc = (f"127.0.0.1:{grpc_target}", "--call", CALL, "--v2", "raw", "--model", "echo",
            "-d", V2_BODY)  # fmt: skip
    try:
        # Capacity as the soak will load it: both protocols at once, each with its own
        # generator (on 2 cores the generators' CPU is part of what limits it).
        cap_rest, cap_grpc = (
            r["throughput"] for r in together([[*rest, "-c", "4"], [*grpc, "-c", "4"]], 5)
        )
        sampler = Sampler(server.pid, 2.0)
        sampler.start()
        reports = together(
            [
                [*rest, "-r", f"{0.8 * cap_rest:.0f}", "-c", "64"],
                [*grpc, "-r", f"{0.8 * cap_grpc:.0f}", "-c", "64"],
            ],
            minutes * 60,
        )
        samples = sampler.stop()
    finally:
        server.stop()
    warm = [(t, k) for t, k in samples if t >= WARM_S] or samples
    trend = slope_kib_per_min(warm)
    results["soak"] = {
        "minutes": minutes,
        "capacity": {"rest": cap_rest, "grpc": cap_grpc},
        "reports": reports,
        "rss_samples": samples,
        "trend_kib_per_min": trend,
    }
    lines = [
        "| protocol | rate | requests | errors | mean / p99 |",
        "|---|---|---|---|---|",
    ]
    for name, rep in zip(("REST V2 JSON", "gRPC V2 raw"), reports, strict=True):
        errors = rep["requests"] - rep["ok"]
        lat = rep["latency"]
        lines.append(
            f"| {name} | {rep['rate']:,.0f}/s "
            f"| {rep['requests']:,} | {errors} | {ms(lat['mean_ns'])} / {ms(lat['p99_ns'])} |"
        )
    lines += [
        "",
        "| RSS after 30 s | at the end | highest | trend after 30 s |",
        "|---|---|---|---|",
        f"| {mib(warm[0][1])} | {mib(samples[-1][1])} | {mib(max(k for _, k in samples))} "
        f"| {trend:+,.0f} KiB/min |",
        "",
        f"{minutes:g} minutes, open loop, at 80% of the capacity measured just before in "
        "the same shape (two closed-loop `inferwire bench` runs at once, 4 clients each, "
        "5 s), 64 FP32 elements per request; RSS of the server sampled every 2 s.",
    ]
    return lines


def _post(url: str, value: str) -> int:
    body = json.dumps({"strData": value}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except OSError:
        return 0


def _fault_run(
    args: list[str], inject: Any, seconds: float = 8.0, at: float = 2.0
) -> dict[str, Any]:
    """8 clients for ``seconds`` against SleepFor with ``args``; ``inject(server, url)``
    ``at`` seconds in."""
    server, url = inferwire("benchmarks/models/noop.py:SleepFor", *args)
    target = f"{url}/api/v1.0/predictions"
    try:
        cmd = [sys.executable, "-m", "inferwire", "bench", "attack", target, "-c", "8"]
        cmd += ["-d", '{"strData":"0.005"}', "-z", f"{seconds:.0f}s", "--timeout", "30s"]
        load = subprocess.Popen([*cmd, "--format", "json", "--no-progress"],
                                stdout=subprocess.PIPE, text=True)  # fmt: skip
        time.sleep(at)
        note = inject(server, url)
        rep = json.loads(load.communicate(timeout=seconds + 120)[0])
    finally:
        server.stop()
    return {"report": rep, "note": note}


def _kill_a_worker(server: Any, _url: str) -> str:
    workers = [p for p in descendants(server.pid) if p != server.pid]
    os.kill(min(workers), signal.SIGKILL)
    return "SIGKILL to one of 2 workers"


def _hang(_server: Any, url: str) -> str:
    threading.Thread(target=_post, args=(f"{url}/api/v1.0/predictions", "1000")).start()
    return "one call that sleeps 1,000 s"


def _raise(_server: Any, url: str) -> str:
    codes = [_post(f"{url}/api/v1.0/predictions", "not a number") for _ in range(20)]
    return f"20 requests the model raises on (answered {sorted(set(codes))})"


def faults(results: dict[str, Any]) -> list[str]:
    runs = [
        ("a worker is killed", ["--workers", "2"], _kill_a_worker),
        ("a model call hangs", [*"--workers 2 --timeout 1 --stuck-after 2".split()], _hang),
        ("the model raises", [], _raise),
    ]
    lines = [
        "| fault | server | injected | requests | answered 200 | not answered 200 |",
        "|---|---|---|---|---|---|",
    ]
    results["faults"] = []
    for name, args, inject in runs:
        out = _fault_run(args, inject)
        rep = out["report"]
        ok = rep["status_codes"].get("200", 0)
        others = ", ".join(f"{n} × {c}" for c, n in rep["status_codes"].items() if c != "200")
        results["faults"].append({"fault": name, "args": args, **out})
        lines.append(
            f"| {name} | `{' '.join(args) or '(defaults)'}` | {out['note']} "
            f"| {rep['requests']:,} | {ok:,} | {others or '0'} |"
        )
    lines += [
        "",
        "8 clients in a closed loop (`inferwire bench`, HTTP/1.1 keep-alive, reconnecting "
        "after an error) for 8 s against a model that sleeps 5 ms; the fault 2 s in. "
        '"error" is a connection closed with the request on it.',
    ]
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=15.0, help="overload: seconds per run")
    p.add_argument("--minutes", type=float, default=5.0, help="soak: minutes")
    p.add_argument("--only", default="overload,soak,faults", help="parts to run (comma-separated)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    parts = set(args.only.split(","))
    results: dict[str, Any] = {"machine": machine(), "when": time.strftime("%Y-%m-%d %H:%M")}
    sections = previous_sections(args.out / "reliability.md")
    measured = f"*Measured {results['when']} on {results['machine']}.*"
    if "overload" in parts:
        sections["Overload"] = [measured, "", *overload(args.seconds, results)]
    if "soak" in parts:
        sections["Soak"] = [measured, "", *soak(args.minutes, results)]
    if "faults" in parts:
        sections["Faults under load"] = [measured, "", *faults(results)]
    # No date in the title: each section carries its own, as one part may be rerun alone.
    md = ["# Overload, soak and faults", ""]
    for name in ("Overload", "Soak", "Faults under load"):
        if name in sections:
            md += [f"## {name}", "", *sections[name], ""]
    (args.out / "reliability.md").write_text("\n".join(md))
    json_path = args.out / "reliability.json"
    before = json.loads(json_path.read_text()) if json_path.exists() else {}
    json_path.write_text(json.dumps({**before, **results}, indent=2))
    print("\n".join(md))
    return 0


def previous_sections(path: Path) -> dict[str, list[str]]:
    """The ``## `` sections of an earlier results file, so that running one part keeps
    the other's figures (with their own date line)."""
    out: dict[str, list[str]] = {}
    if not path.exists():
        return out
    name = None
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            name = line[3:].strip()
            out[name] = []
        elif name is not None:
            out[name].append(line)
    return {k: "\n".join(v).strip().splitlines() for k, v in out.items()}


if __name__ == "__main__":
    sys.exit(main())
