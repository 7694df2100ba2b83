"""Seed 001's TorchServe tables (4-6) re-run: torchvision's densenet161 (random weights, on
the CPU) served by TorchServe 0.12 (benchmarks/peers/torchserve) and by inferwire
(benchmarks/models/densenet.py), the same network, seed and preprocessing, one server after
the other (docs/benchmarks.md, "TorchServe: seed 001's densenet161 table").

For each image size (360×640, 720×1280, 1080×1920: the JPEGs benchmarks/images_numpy.py
makes), 20 requests in flight for ``--rounds`` rounds (``inferwire bench attack -c 20 -n
20×rounds``, after a short warm-up), over:

- TorchServe: REST base64 (``{"image": "<base64>"}``, JSON), REST binary (the JPEG as the
  body), gRPC binary (``InferenceAPIsService/Predictions``, the JPEG as input "data"); no
  gRPC base64, as in the seed (its input map holds bytes).
- inferwire: the same four kinds as V2 requests, so that dynamic batching joins them (it
  batches tensors, not Seldon bytes or JSON data): one BYTES input; base64 as V2 JSON with
  ``"content_type": "base64"`` (REST) and the same through ``--v2 raw`` (gRPC); binary as the
  V2 binary extension (REST) and ``raw_input_contents`` (gRPC ``ModelInfer``).

Both: 2 workers (one per core) of 1 torch thread each, batches of up to 8 requests waiting
at most 10 ms (``--workers``, ``--batch-size``, ``--max-batch-delay-ms``). Reported per
cell: seconds per round of 20 (elapsed ÷ rounds), median latency, the server's CPU time per
request (its whole process tree), beside the seed's figures.

    bash benchmarks/peers/torchserve/install.sh                     # once
    .venv/bin/python -m pip install -r benchmarks/requirements-densenet.txt   # once
    .venv/bin/python benchmarks/torchserve_densenet.py [--rounds 10]   # about 25 minutes

Results: benchmarks/results/torchserve_densenet.{md,json}.
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from images_numpy import SEED_001_MB, SIZES, field, jpeg  # noqa: E402
from lib.v2_bodies import binary_extension, bytes_element, infer_request_pb  # noqa: E402
from runtime import Cell, PeerProc, fmt_us, inferwire, machine  # noqa: E402

TS_PYTHON = ROOT / ".tools/peers/torchserve/bin/python"
TS_SERVE = ROOT / "benchmarks/peers/torchserve/serve.py"
MODEL = "densenet161"
# Seed 001's tables 4-6: seconds per round of 20 concurrent requests, TorchServe serving
# densenet161 (the seed's machine; GPU or CPU not stated). None: the seed's X.
SEED = {
    (360, 640): {"REST": (0.884, 0.628), "gRPC": (None, 0.645)},
    (720, 1280): {"REST": (1.262, 0.946), "gRPC": (None, 0.927)},
    (1080, 1920): {"REST": (2.188, 1.384), "gRPC": (None, 1.422)},
}
KINDS = [("REST", "base64"), ("REST", "binary"), ("gRPC", "base64"), ("gRPC", "binary")]
V2_CALL = "inference.GRPCInferenceService/ModelInfer"
TS_CALL = "org.pytorch.serve.grpc.inference.InferenceAPIsService/Predictions"


def attack(python: str, target: str, clients: int, rounds: int, pid: int, *extra: str) -> Cell:
    """``clients`` in flight, ``clients × rounds`` requests after a 3 s warm-up."""
    argv = [python, "-m", "inferwire", "bench", "attack", target, "-c", str(clients)]
    argv += ["-n", str(clients * rounds), "--warmup", "3s", "--timeout", "120s"]
    argv += ["--server-pid", str(pid), "--format", "json", "--no-progress", *extra]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0 and not out.stdout:
        raise RuntimeError(f"{target} {extra}: {out.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(out.stdout)
    if report["success"] < 1.0:
        raise RuntimeError(f"{target} {extra}: {report['status_codes']} {report['errors'][:3]}")
    cell = Cell.of(report)
    cell.mean_us = report["duration_ns"] / 1e3 / rounds  # here: µs per round
    return cell


class Bodies:
    """The request files of every cell, written once into ``work``."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.images = {s: jpeg(s) for s in SIZES}

    def write(self, name: str, data: bytes) -> str:
        path = self.work / name
        path.write_bytes(data)
        return str(path)

    def torchserve(
        self, size: tuple[int, int], url: str, grpc: str
    ) -> dict[str, tuple[str, list[str]]]:
        img, h = self.images[size], size[0]
        b64 = json.dumps({"image": base64.b64encode(img).decode()}).encode()
        # PredictionsRequest: model_name = 1, input = 3 (map<string, bytes>: key 1, value 2).
        message = field(1, MODEL.encode()) + field(3, field(1, b"data") + field(2, img))
        rest = f"{url}/predictions/{MODEL}"
        return {
            "REST|base64": (rest, ["-D", self.write(f"ts-b64-{h}.json", b64),
                                   "-H", "Content-Type: application/json"]),
            "REST|binary": (rest, ["-D", self.write(f"img-{h}.jpg", img),
                                   "-H", "Content-Type: image/jpeg"]),
            "gRPC|binary": (grpc, ["--call", TS_CALL, "-D", self.write(f"ts-{h}.pb", message)]),
        }  # fmt: skip

    def inferwire(
        self, size: tuple[int, int], url: str, grpc: str
    ) -> dict[str, tuple[str, list[str]]]:
        img, h = self.images[size], size[0]
        b64 = {
            "inputs": [
                {
                    "name": "image",
                    "shape": [1],
                    "datatype": "BYTES",
                    "parameters": {"content_type": "base64"},
                    "data": [base64.b64encode(img).decode()],
                }
            ]
        }
        b64_file = self.write(f"iw-b64-{h}.json", json.dumps(b64).encode())
        image = {"name": "image", "shape": [1], "datatype": "BYTES"}
        element = bytes_element(img)
        body, head = binary_extension([(image, element)])
        message = infer_request_pb(MODEL, "image", [1], element)
        rest = f"{url}/v2/models/{MODEL}/infer"
        return {
            "REST|base64": (rest, ["-D", b64_file, "-H", "Content-Type: application/json"]),
            "REST|binary": (rest, ["-D", self.write(f"iw-{h}.bin", body),
                                   "-H", "Content-Type: application/octet-stream",
                                   "-H", f"Inference-Header-Content-Length: {head}"]),
            "gRPC|base64": (grpc, ["--call", V2_CALL, "--v2", "raw", "--model", MODEL,
                                   "-D", b64_file]),
            "gRPC|binary": (grpc, ["--call", V2_CALL, "-D", self.write(f"iw-{h}.pb", message)]),
        }  # fmt: skip


def start_torchserve(args: argparse.Namespace) -> PeerProc:
    argv = [str(TS_PYTHON), str(TS_SERVE), "--models", MODEL, "--workers", str(args.workers)]
    argv += ["--torch-threads", str(args.threads), "--batch-size", str(args.batch_size)]
    argv += ["--max-batch-delay", str(args.max_batch_delay_ms)]
    return PeerProc(argv, "TorchServe")


def run_torchserve(args: argparse.Namespace, bodies: Bodies) -> dict[str, Cell]:
    peer = start_torchserve(args)
    cells: dict[str, Cell] = {}
    try:
        for size in args.sizes:
            for kind, (target, extra) in bodies.torchserve(size, peer.url, peer.grpc).items():
                cells[f"{size[0]}x{size[1]}|{kind}"] = attack(
                    args.python, target, args.clients, args.rounds, peer.pid, *extra
                )
                print(f"TorchServe {size[0]}x{size[1]} {kind} done", file=sys.stderr)
    finally:
        peer.stop()
    return cells


def run_inferwire(args: argparse.Namespace, bodies: Bodies) -> dict[str, Cell]:
    server, url = inferwire(
        "benchmarks/models/densenet.py:Densenet161",
        "--model-name", MODEL,
        "--workers", str(args.workers),
        "--model-threads", str(args.model_threads),
        "--max-batch-size", str(args.batch_size),
        "--max-batch-delay", str(args.max_batch_delay_ms / 1000),
        python=args.python,
        env={"DENSENET_THREADS": str(args.threads), "OMP_NUM_THREADS": str(args.threads)},
    )  # fmt: skip
    grpc = "127.0.0.1:" + server.argv[server.argv.index("--grpc-port") + 1]
    cells: dict[str, Cell] = {}
    try:
        for size in args.sizes:
            for kind, (target, extra) in bodies.inferwire(size, url, grpc).items():
                cells[f"{size[0]}x{size[1]}|{kind}"] = attack(
                    args.python, target, args.clients, args.rounds, server.pid, *extra
                )
                print(f"inferwire {size[0]}x{size[1]} {kind} done", file=sys.stderr)
        cells["batches"] = batch_sizes(url)
    finally:
        server.stop()
    return cells


def batch_sizes(url: str) -> Any:
    """inferwire's mean batch size over the run, from its /metrics (a Cell-like record)."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
        text = r.read().decode()
    total = count = 0.0
    for line in text.splitlines():
        if line.startswith("inferwire_batch_size_sum"):
            total += float(line.split()[-1])
        elif line.startswith("inferwire_batch_size_count"):
            count += float(line.split()[-1])
    return Cell(0.0, 0.0, None, 1.0, total / count if count else 0.0)


def table(
    results: dict[str, dict[str, Cell]], bodies: Bodies, sizes: list[tuple[int, int]]
) -> list[str]:
    lines: list[str] = []
    for size in sizes:
        h, w = size
        img = bodies.images[size]
        lines += [
            f"**{h}×{w}** (JPEG {len(img) / 1e6:.3f} MB, "
            f"base64 {len(base64.b64encode(img)) / 1e6:.3f} MB; "
            f"the seed's JPEG: {SEED_001_MB[size]:.3f} MB): seconds per round of 20 concurrent "
            "requests (elapsed ÷ rounds); median latency; server CPU per request",
            "",
            "| | B64: TorchServe | inferwire | seed (TorchServe) "
            "| Binary: TorchServe | inferwire | seed (TorchServe) |",
            "|---|---|---|---|---|---|---|",
        ]  # fmt: skip
        for transport in ("REST", "gRPC"):
            row = f"| {transport} |"
            for k, kind in enumerate(("base64", "binary")):
                key = f"{h}x{w}|{transport}|{kind}"
                for server in ("TorchServe", "inferwire"):
                    c = results[server].get(key)
                    row += (
                        f" {c.mean_us / 1e6:.3f} s ({c.p50_ms / 1000:.2f} s, "
                        f"{fmt_us(c.server_cpu_us)}) |"
                        if c
                        else " X |"
                    )
                seed = SEED[size][transport][k]
                row += f" {seed:.3f} |" if seed is not None else " X |"
            lines.append(row)
        lines.append("")
    return lines


def have_torchvision(python: str) -> bool:
    probe = [python, "-c", "import torch, torchvision, PIL"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--python", default=str(ROOT / ".venv/bin/python"), help="inferwire's interpreter"
    )
    p.add_argument("--rounds", type=int, default=10, help="rounds of --clients requests per cell")
    p.add_argument("--clients", type=int, default=20, help="requests in flight (the seed's 20)")
    p.add_argument("--workers", type=int, default=2, help="worker processes, both servers")
    p.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    p.add_argument(
        "--model-threads",
        type=int,
        default=2,
        help="inferwire's model threads per worker (default 2: torch releases the GIL while "
        "it runs, so a worker whose connections carry every request, as one gRPC channel "
        "does, still uses both cores)",
    )
    p.add_argument("--batch-size", type=int, default=8, help="largest batch, both servers")
    p.add_argument("--max-batch-delay-ms", type=int, default=10, help="both servers")
    p.add_argument("--sizes", default="360,720,1080", help="heights, of 360,720,1080")
    p.add_argument("--only", choices=["torchserve", "inferwire"], help="one server alone")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    args = p.parse_args()
    args.sizes = [s for s in SIZES if str(s[0]) in args.sizes.split(",")]
    if args.only != "torchserve" and not have_torchvision(args.python):
        raise SystemExit(
            f"{args.python} lacks torch/torchvision: "
            f"{args.python} -m pip install -r {ROOT}/requirements-torch.txt "
            f"-r {ROOT}/benchmarks/requirements-densenet.txt"
        )
    if args.only != "inferwire" and not TS_PYTHON.exists():
        raise SystemExit("TorchServe is not installed: bash benchmarks/peers/torchserve/install.sh")
    bodies = Bodies(Path(tempfile.mkdtemp(prefix="torchserve-densenet-")))
    results: dict[str, dict[str, Cell]] = {"TorchServe": {}, "inferwire": {}}
    started = time.monotonic()
    if args.only != "inferwire":
        results["TorchServe"] = run_torchserve(args, bodies)
    if args.only != "torchserve":
        results["inferwire"] = run_inferwire(args, bodies)
    batches = results["inferwire"].pop("batches", None)
    build = subprocess.run(
        [args.python, "-c", "import inferwire._core as c; print(c.__file__)"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    when = time.strftime("%Y-%m-%d %H:%M")
    md = [
        f"# TorchServe and inferwire serving densenet161 ({when}, {machine()})",
        "",
        f"{args.clients} requests in flight, {args.rounds} rounds per cell; both servers: "
        f"{args.workers} workers × {args.threads} torch thread, batches of up to "
        f"{args.batch_size} waiting at most {args.max_batch_delay_ms} ms; inferwire also "
        f"`--model-threads {args.model_threads}`. TorchServe 0.12.0 "
        "(REST `/predictions/densenet161`, gRPC `Predictions`); inferwire "
        "(the build in `--python`'s virtualenv, named in the .json): V2 BYTES requests "
        "(REST JSON base64 / binary extension, gRPC "
        "`ModelInfer`). Cells: seconds per round (median latency, server CPU per request). "
        f"Run time {(time.monotonic() - started) / 60:.1f} min.",
        "",
        *table(results, bodies, args.sizes),
    ]
    if batches is not None:
        md.append(f"inferwire's mean batch size over its run: {batches.mean_us:.1f} requests.")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "torchserve_densenet.md").write_text("\n".join(md) + "\n")
    (args.out / "torchserve_densenet.json").write_text(
        json.dumps(
            {
                "settings": {k: v for k, v in vars(args).items() if k not in ("out",)},
                "inferwire_build": build,
                "inferwire_mean_batch": batches.mean_us if batches else None,
                "seed": {f"{h}x{w}": v for (h, w), v in SEED.items()},
                "results": {s: {k: c.__dict__ for k, c in r.items()} for s, r in results.items()},
                "note": "mean_us holds microseconds per round of --clients requests",
            },
            indent=2,
            default=str,
        )
    )
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
