"""Seed 002, ML Server's "realtime" web service, re-run here: a decision tree on a
Kyphosis-like data set (Age, Number, Start; absent / present), scored on data frames of
1,000 rows per request with many clients at once (docs/benchmarks.md, "Realtime tree
scoring").

One run, the same load generator (``inferwire bench``), one server after another:

inferwire's cells carry a bearer token, as the seed's did (``--auth-tokens``); MLServer has
no token auth of its own.

- inferwire, native tree runtime (``inferwire serve tree.joblib``): the data frame as
  column-oriented JSON (``inferwire bench suite realtime-rows``), and the same columns as a
  V2 request (one input per column);
- inferwire, Python runtime (``--runtime python``: scikit-learn's ``predict_proba``), the
  same data frame;
- MLServer 1.7.1 with its scikit-learn runtime (``mlserver-sklearn``), the V2 request with
  the ``pd`` content type, with ``parallel_workers=0`` and with its default.

    bash benchmarks/peers/mlserver/install.sh     # once (MLServer and mlserver-sklearn)
    .venv/bin/python benchmarks/realtime_rows.py  # about 2 minutes

Results: benchmarks/results/realtime_rows.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import joblib
from sklearn.tree import DecisionTreeClassifier

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.kyphosis import kyphosis  # noqa: E402
from lib.servers import free_port  # noqa: E402
from runtime import Proc, attack, fmt_us, inferwire, machine  # noqa: E402

MLSERVER_PYTHON = ROOT / ".tools/peers/mlserver/bin/python"
MLSERVER_SERVE = ROOT / "benchmarks/peers/mlserver/serve.py"
COLUMNS = ["Age", "Number", "Start"]
SEED_REQUESTS = 1505.0


def train(work: Path) -> Path:
    """The seed's rpart settings, as far as scikit-learn has them (depth 10, min split 5,
    min bucket 2, gini)."""
    X, y = kyphosis(2000, seed=0)
    model = DecisionTreeClassifier(
        max_depth=10, min_samples_split=5, min_samples_leaf=2, random_state=0
    ).fit(X, y)
    path = work / "tree.joblib"
    joblib.dump(model, path)
    return path


def v2_body(rows: int) -> dict[str, Any]:
    X, _ = kyphosis(rows, seed=1)
    return {
        "parameters": {"content_type": "pd"},
        "inputs": [
            {"name": c, "shape": [rows], "datatype": "FP64", "data": X[c].tolist()} for c in COLUMNS
        ],
    }


def suite(
    url: str, pid: int, clients: int, seconds: float, rows: int, token: str
) -> dict[str, Any]:
    argv = [sys.executable, "-m", "inferwire", "bench", "suite", "realtime-rows"]
    argv += ["--target", url, "--server-pid", str(pid), "--clients", str(clients)]
    argv += ["--token", token]
    argv += ["--rows", str(rows), "--columns", ",".join(COLUMNS), "--path", "/predict"]
    argv += ["-z", f"{seconds}s", "--warmup", "1s", "--format", "json", "--no-progress"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=seconds + 120)
    (cell,) = json.loads(out.stdout)
    report: dict[str, Any] = cell["reports"][0]
    return report


def mlserver(folder: Path, workers: str | None) -> tuple[Proc, str]:
    http, grpc = free_port(), free_port()
    argv = [str(MLSERVER_PYTHON), str(MLSERVER_SERVE), "--folder", str(folder)]
    argv += ["--model", "tree", "--http-port", str(http), "--grpc-port", str(grpc)]
    if workers is not None:
        argv += ["--parallel-workers", workers]
    url = f"http://127.0.0.1:{http}"
    return Proc(argv, f"{url}/v2/models/tree/ready"), url


def mlserver_folder(work: Path, model: Path) -> Path:
    folder = work / "tree"
    folder.mkdir()
    shutil.copy(model, folder / "tree.joblib")
    shutil.copy(ROOT / "benchmarks/peers/mlserver/noop/settings.json", folder / "settings.json")
    settings = {
        "name": "tree",
        "implementation": "mlserver_sklearn.SKLearnModel",
        "parameters": {"uri": "./tree.joblib", "extra": {"method": "predict_proba"}},
    }
    (folder / "model-settings.json").write_text(json.dumps(settings, indent=2))
    return folder


def row(name: str, request: str, r: dict[str, Any], rows: int) -> dict[str, Any]:
    cpu = r.get("server_cpu_ns_per_request")
    return {
        "server": name,
        "request": request,
        "requests_per_s": r["throughput"],
        "predictions_per_s": r["throughput"] * rows,
        "p50_us": r["latency"]["p50_ns"] / 1e3,
        "p99_us": r["latency"]["p99_ns"] / 1e3,
        "server_cpu_us": cpu / 1e3 if cpu else None,
        "client_cpu_us": r["client_cpu_ns_per_request"] / 1e3,
        "ok": r["success"],
    }


def check(rows: list[dict[str, Any]]) -> None:
    bad = [r for r in rows if r["ok"] < 1.0]
    if bad:
        raise RuntimeError(f"requests failed: {bad}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    p.add_argument("--no-mlserver", action="store_true")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="realtime-rows-"))
    model = train(work)
    v2 = work / "v2.json"
    v2.write_text(json.dumps(v2_body(args.rows)))
    results: list[dict[str, Any]] = []
    # inferwire runs as the seed's service did: every request carries a bearer token.
    tokens = work / "tokens"
    token = subprocess.run(
        [sys.executable, "-m", "inferwire", "auth", "token", "bench", "--file", str(tokens)],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    auth = ["--auth-tokens", str(tokens)]
    header = ["-H", f"Authorization: Bearer {token}"]

    server, url = inferwire(str(model), "--model-name", "tree", *auth)
    try:
        results.append(row("inferwire native", "data frame JSON", suite(
            url, server.pid, args.clients, args.seconds, args.rows, token), args.rows))  # fmt: skip
        r = attack(f"{url}/v2/models/tree/infer", args.clients, args.seconds, server.pid,
                   "-D", str(v2), *header)  # fmt: skip
        results.append(row("inferwire native", "V2 columns", r, args.rows))
    finally:
        server.stop()
    print(results[-1], file=sys.stderr)
    server, url = inferwire(str(model), "--model-name", "tree", "--runtime", "python", *auth)
    try:
        results.append(row("inferwire Python runtime", "data frame JSON", suite(
            url, server.pid, args.clients, args.seconds, args.rows, token), args.rows))  # fmt: skip
    finally:
        server.stop()
    if not args.no_mlserver:
        if not MLSERVER_PYTHON.exists():
            print("MLServer: bash benchmarks/peers/mlserver/install.sh", file=sys.stderr)
            return 2
        folder = mlserver_folder(work, model)
        for label, workers in (("MLServer sklearn pw=0", "0"), ("MLServer sklearn default", None)):
            proc, url = mlserver(folder, workers)
            try:
                r = attack(f"{url}/v2/models/tree/infer", args.clients, args.seconds, proc.pid,
                           "-D", str(v2))  # fmt: skip
                results.append(row(label, "V2 columns (pd)", r, args.rows))
            finally:
                proc.stop()
    check(results)
    when = time.strftime("%Y-%m-%d %H:%M")
    native = results[0]["predictions_per_s"]
    md = [
        f"# Realtime tree scoring ({when}, {machine()})",
        "",
        f"{args.rows:,} rows per request, {args.clients} clients, closed loop, "
        f"{args.seconds:g} s per cell after a 1 s warm-up; inferwire with a bearer token",
        "",
        "| server | request | requests/s | predictions/s | p50 | p99 | server CPU/request | "
        "× vs this |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        md.append(
            f"| {r['server']} | {r['request']} | {r['requests_per_s']:,.0f} | "
            f"{r['predictions_per_s']:,.0f} | {fmt_us(r['p50_us'])} | {fmt_us(r['p99_us'])} | "
            f"{fmt_us(r['server_cpu_us'])} | {native / r['predictions_per_s']:.1f}× |"
        )
    md.append(
        f"| seed: ML Server realtime, 32 cores | data frame JSON | {SEED_REQUESTS:,.0f} | "
        f"{SEED_REQUESTS * 1000:,.0f} | - | - | - | {native / (SEED_REQUESTS * 1000):.1f}× |"
    )
    (args.out / "realtime_rows.md").write_text("\n".join(md) + "\n")
    (args.out / "realtime_rows.json").write_text(json.dumps(results, indent=2))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
