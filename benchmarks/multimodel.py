"""Many models, one memory budget: 500 scikit-learn forests in an MLServer-shaped
repository (mlserver_sklearn.SKLearnModel settings), a Zipf-distributed request mix sent by
vegeta, and inferwire started on it three ways, one after another in one run:

- `budget`: ``inferwire start REPO --model-memory-budget B``, B set to hold 50 of the 500
  models (as their loads measure them): models load on first request, the least recently
  used are unloaded;
- `all loaded`: ``inferwire start REPO``, every model loaded at start;
- `MLServer`: ``mlserver start REPO`` (the peer in .tools/peers/mlserver), every model
  loaded at start, when installed.

For each: requests/s, p50 and p99 latency (vegeta's), errors, model loads per second and
the hit rate (inferwire's metrics), the server's resident memory at the end and at its
peak against the budget, and its CPU per request (/proc).

    .venv/bin/python benchmarks/multimodel.py --out benchmarks/results
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.proc_cpu import cpu_seconds, descendants  # noqa: E402
from lib.servers import free_port, tcp_open  # noqa: E402

VEGETA = ROOT / ".tools/bin/vegeta"
MLSERVER = ROOT / ".tools/peers/mlserver/bin/mlserver"
FEATURES = 20
ROW = np.linspace(-1.0, 1.0, FEATURES).round(3).tolist()


def build_repository(root: Path, models: int, trees: int, seed: int) -> None:
    """``models`` random forests, each in its folder with MLServer's settings file."""
    import joblib
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier

    X, y = make_classification(
        n_samples=600, n_features=FEATURES, n_informative=8, random_state=seed
    )
    for i in range(models):
        folder = root / f"model-{i:03d}"
        folder.mkdir(parents=True)
        forest = RandomForestClassifier(n_estimators=trees, max_depth=8, random_state=seed + i)
        joblib.dump(forest.fit(X, y), folder / "model.joblib")
        settings = {"name": f"model-{i:03d}", "implementation": "mlserver_sklearn.SKLearnModel"}
        (folder / "model-settings.json").write_text(json.dumps(settings))


def model_bytes(root: Path) -> int:
    """What one model measures when inferwire loads it (the native runtime's arrays)."""
    import joblib
    from inferwire import _core
    from inferwire.trees import convert

    forest = joblib.load(root / "model-000" / "model.joblib")
    return int(_core.TreeEnsemble(json.dumps(convert(forest))).memory_bytes)


def zipf_targets(path: Path, url: str, models: int, count: int, s: float, seed: int) -> list[int]:
    """A vegeta targets file of ``count`` requests whose models follow Zipf's law (rank r
    asked for in proportion to 1 / r^s), in random order; returns the ranks."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, models + 1) ** s
    picks = rng.choice(models, size=count, p=weights / weights.sum())
    body = path.parent / "body.json"
    body.write_text(
        json.dumps(
            {"inputs": [{"name": "x", "datatype": "FP64", "shape": [1, FEATURES], "data": ROW}]}
        )
    )
    with path.open("w") as f:
        for i in picks:
            f.write(
                f"POST {url}/v2/models/model-{i:03d}/infer\n"
                f"Content-Type: application/json\n@{body}\n\n"
            )
    return [int(i) for i in picks]


def status_kib(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass  # gone meanwhile
    return 0


def tree_kib(pid: int, key: str) -> int:
    """``key`` summed over the process and those below it (workers are processes)."""
    return sum(status_kib(p, key) for p in descendants(pid))


def metrics(url: str) -> dict[str, float]:
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out = {}
    for name in (
        'inferwire_model_loads_total{result="ok"}',
        'inferwire_model_cache_requests_total{result="hit"}',
        'inferwire_model_cache_requests_total{result="miss"}',
        "inferwire_model_evictions_total",
        "inferwire_models_loaded",
        "inferwire_model_memory_bytes",
    ):
        m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
        if m:
            out[name] = float(m.group(1))
    return out


class Server:
    def __init__(self, argv: list[str], http: int, cwd: Path, timeout: float) -> None:
        self.url = f"http://127.0.0.1:{http}"
        self.log = Path(tempfile.mkstemp(prefix="multimodel-", suffix=".log")[1])
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.started = time.monotonic()
        deadline = self.started + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{argv[0]} exited: {self.log.read_text()[-3000:]}")
            if tcp_open(http) and self._ready():
                self.start_seconds = time.monotonic() - self.started
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{argv} not ready in {timeout} s: {self.log.read_text()[-3000:]}")

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/v2/health/ready", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def attack(targets: Path, seconds: float, workers: int) -> dict[str, Any]:
    """vegeta at its own pace (``-rate 0``) with ``workers`` connections for ``seconds``."""
    run = subprocess.run(
        [str(VEGETA), "attack", "-targets", str(targets), "-rate", "0", "-max-workers",
         str(workers), "-workers", str(workers), "-duration", f"{seconds}s", "-timeout", "30s"],
        capture_output=True, check=True, timeout=seconds + 120,
    )  # fmt: skip
    report = subprocess.run(
        [str(VEGETA), "report", "-type", "json"], input=run.stdout, capture_output=True, check=True
    )
    out: dict[str, Any] = json.loads(report.stdout)
    return out


def measure(
    name: str, argv: list[str], http: int, repo: Path, targets: Path, seconds: float, workers: int
) -> dict[str, Any]:
    server = Server(argv, http, repo, timeout=900)
    try:
        before_m, before_cpu = metrics(server.url), cpu_seconds(server.proc.pid)
        rss_start = tree_kib(server.proc.pid, "VmRSS")
        report = attack(targets, seconds, workers)
        after_m, cpu = metrics(server.url), cpu_seconds(server.proc.pid) - before_cpu
        rss_end = tree_kib(server.proc.pid, "VmRSS")
        peak = tree_kib(server.proc.pid, "VmHWM")
    finally:
        server.stop()
    requests = int(report["requests"])
    took = report["duration"] / 1e9

    def delta(key: str) -> float:
        return after_m.get(key, 0.0) - before_m.get(key, 0.0)

    hits = delta('inferwire_model_cache_requests_total{result="hit"}')
    misses = delta('inferwire_model_cache_requests_total{result="miss"}')
    return {
        "server": name,
        "requests": requests,
        "rps": report["throughput"],
        "p50_ms": report["latencies"]["50th"] / 1e6,
        "p99_ms": report["latencies"]["99th"] / 1e6,
        "success": report["success"],
        "errors": report.get("errors") or [],
        "loads_per_s": delta('inferwire_model_loads_total{result="ok"}') / took
        if after_m
        else None,
        "hit_rate": hits / (hits + misses) if hits + misses else None,
        "evictions": delta("inferwire_model_evictions_total") if after_m else None,
        "models_loaded": after_m.get("inferwire_models_loaded"),
        "model_bytes": after_m.get("inferwire_model_memory_bytes"),
        "rss_start_mib": rss_start / 1024,
        "rss_end_mib": rss_end / 1024,
        "rss_peak_mib": peak / 1024,
        "cpu_us_per_request": cpu / requests * 1e6 if requests else None,
        "start_seconds": server.start_seconds,
    }


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    def f(v: Any, fmt: str) -> str:
        return "–" if v is None else format(v, fmt)

    lines = [
        f"{meta['models']} scikit-learn random forests ({meta['trees']} trees each, "
        f"{meta['model_kib']:.0f} KiB measured per model) behind MLServer's "
        "`mlserver_sklearn.SKLearnModel` settings; a Zipf mix (s = "
        f"{meta['zipf_s']}) of {meta['distinct']} distinct models among "
        f"{meta['targets']} requests, sent by vegeta with {meta['workers']} connections "
        f"for {meta['seconds']:g} s per server; budget {meta['budget_mib']} MiB (room for "
        f"{meta['fits']} models). Medians of {meta['rounds']} rounds.",
        "",
        "| server | requests/s | p50 ms | p99 ms | success | model loads/s | hit rate | "
        "evictions | RSS at start MiB | RSS at end MiB | peak RSS MiB | CPU µs/request | "
        "start s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['server']} | {f(r['rps'], '.0f')} | {f(r['p50_ms'], '.2f')} | "
            f"{f(r['p99_ms'], '.2f')} | {f(r['success'], '.3f')} | {f(r['loads_per_s'], '.1f')} | "
            f"{f(r['hit_rate'], '.3f')} | {f(r['evictions'], '.0f')} | "
            f"{f(r['rss_start_mib'], '.0f')} | {f(r['rss_end_mib'], '.0f')} | "
            f"{f(r['rss_peak_mib'], '.0f')} | {f(r['cpu_us_per_request'], '.0f')} | "
            f"{f(r['start_seconds'], '.1f')} |"
        )
    lines += ["", f"Command: `{meta['command']}`", ""]
    return "\n".join(lines)


def median_row(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    out = dict(rounds[0])
    for key, value in rounds[0].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values = [r[key] for r in rounds if r[key] is not None]
            out[key] = statistics.median(values) if values else None
    return out


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--models", type=int, default=500)
    p.add_argument("--fit", type=int, default=50, help="models the budget holds")
    p.add_argument("--trees", type=int, default=100)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workers", type=int, default=8, help="vegeta's connections")
    p.add_argument("--zipf-s", type=float, default=1.1)
    p.add_argument("--requests", type=int, default=20000, help="targets in the file vegeta cycles")
    p.add_argument("--no-mlserver", action="store_true")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    p.add_argument("--repo", type=Path, help="a repository built before (default: a new one)")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="multimodel-"))
    try:
        repo = args.repo or work / "models"
        if args.repo is None:
            print(f"training {args.models} forests into {repo}", file=sys.stderr)
            build_repository(repo, args.models, args.trees, seed=7)
        one = model_bytes(repo)
        budget_mib = max(1, -(-args.fit * one // (1024 * 1024)))
        fits = budget_mib * 1024 * 1024 // one
        http = free_port()
        targets = work / "targets.txt"
        picks = zipf_targets(
            targets, f"http://127.0.0.1:{http}", args.models, args.requests, args.zipf_s, seed=11
        )
        exe = [sys.executable, "-m", "inferwire", "start", str(repo), "--host", "127.0.0.1"]
        ports = [
            "--http-port",
            str(http),
            "--grpc-port",
            str(free_port()),
            "--metrics-port",
            str(free_port()),
        ]
        runs: list[tuple[str, list[str]]] = [
            (
                f"inferwire, budget {budget_mib} MiB",
                [*exe, *ports, "--model-memory-budget", str(budget_mib)],
            ),
            ("inferwire, all loaded", [*exe, *ports]),
        ]
        if not args.no_mlserver and MLSERVER.exists():
            runs.append(("MLServer 1.7.1, all loaded", [str(MLSERVER), "start", str(repo)]))
        rows = []
        for name, argv in runs:
            print(f"{name}: {' '.join(argv)}", file=sys.stderr)
            if argv[0] == str(MLSERVER):
                # MLServer's ports come from the folder's settings.json.
                (repo / "settings.json").write_text(
                    json.dumps({"http_port": http, "grpc_port": free_port(),
                                "metrics_port": free_port(), "debug": False})
                )  # fmt: skip
            try:
                rounds = [
                    measure(name, argv, http, repo, targets, args.seconds, args.workers)
                    for _ in range(args.rounds)
                ]
            finally:
                (repo / "settings.json").unlink(missing_ok=True)
            rows.append(median_row(rounds))
            print(json.dumps(rows[-1]), file=sys.stderr)
        meta = {
            "models": args.models,
            "trees": args.trees,
            "model_kib": one / 1024,
            "zipf_s": args.zipf_s,
            "distinct": len(set(picks)),
            "targets": args.requests,
            "workers": args.workers,
            "seconds": args.seconds,
            "budget_mib": budget_mib,
            "fits": fits,
            "rounds": args.rounds,
            "command": ".venv/bin/python benchmarks/multimodel.py --out benchmarks/results",
        }
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "multimodel.json").write_text(
            json.dumps({"meta": meta, "rows": rows}, indent=1)
        )
        (args.out / "multimodel.md").write_text(markdown(rows, meta))
        print(markdown(rows, meta))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
