"""The source benchmarks run with ``inferwire bench`` against inferwire and the peer
servers, side by side in one run.

Each peer runs from its own virtualenv (see ``run.sh``) with the same no-op models. Today
one suite has a peer to run against:

- ``seldon-matrix`` against the Seldon Python wrapper (seldon-core 1.18.2, Python 3.10,
  one gunicorn worker and thread, as the notebook deploys it).

The other peers speak their own APIs and have their own scripts, which this one names at
the end: ``benchmarks/runtime.py`` (Ray Serve, ray-micro), ``benchmarks/v2_mlserver.py``
(MLServer, V2), ``benchmarks/images_numpy.py`` (FastAPI, aiohttp and grpcio: seeds 001
and 003), ``benchmarks/streaming.py`` (MLServer and PyTriton, streamed replies),
``benchmarks/peer_servers.py`` (Triton, TorchServe, KServe, BentoML, LitServe and
MLServer on the same workloads) and ``benchmarks/torchserve_densenet.py`` (seed 001's
TorchServe tables).

    bash benchmarks/peers/run.sh [--duration 10s]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib import servers

ROOT = servers.ROOT
RESULTS = ROOT / "benchmarks" / "results"
ELSEWHERE = {
    "Ray Serve": "benchmarks/runtime.py",
    "MLServer": "benchmarks/v2_mlserver.py",
    "FastAPI, aiohttp, grpcio (seeds 001, 003)": "benchmarks/images_numpy.py",
    "MLServer and PyTriton, streaming": "benchmarks/streaming.py",
    "Triton, TorchServe, KServe, BentoML, LitServe, MLServer": "benchmarks/peer_servers.py",
    "TorchServe, densenet161 (seed 001)": "benchmarks/torchserve_densenet.py",
}


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--duration", default="10s", help="per cell and server")
    p.add_argument("--seldon-venv", type=Path, default=ROOT / ".venv-seldon")
    p.add_argument("--sizes", default="100000,1")
    p.add_argument("--out", type=Path, default=RESULTS, help="folder for the .md and .html")
    args = p.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    ours = servers.inferwire_spec()
    peer = servers.seldon_spec(args.seldon_venv)
    started = []
    try:
        iw, iw_raw = (servers.ServerProcess(ours, m) for m in ("NoopPredict", "NoopPredictRaw"))
        started += [iw, iw_raw]
        sw, sw_raw = (servers.ServerProcess(peer, m) for m in ("NoopPredict", "NoopPredictRaw"))
        started += [sw, sw_raw]
        cmd = [
            sys.executable, "-m", "inferwire", "bench", "suite", "seldon-matrix",
            "--target", iw.url, "--grpc-target", iw.grpc_target,
            "--raw-target", iw_raw.url, "--raw-grpc-target", iw_raw.grpc_target,
            "--server-pid", str(iw.proc.pid), "--raw-pid", str(iw_raw.proc.pid),
            "--vs", sw.url, "--vs-grpc", sw.grpc_target,
            "--vs-raw", sw_raw.url, "--vs-raw-grpc", sw_raw.grpc_target,
            "--vs-pid", str(sw.proc.pid), "--vs-raw-pid", str(sw_raw.proc.pid),
            "--name-target", "inferwire", "--name-vs", "Seldon wrapper",
            "--sizes", args.sizes, "-z", args.duration, "--no-progress",
            "-o", str(out / "peers_seldon_matrix.md"),
            "--html", str(out / "peers_seldon_matrix.html"),
        ]  # fmt: skip
        rc = subprocess.run(cmd, cwd=ROOT).returncode
    finally:
        for s in started:
            s.stop()
    for name, script in ELSEWHERE.items():
        print(f"{name}: run .venv/bin/python {script}", file=sys.stderr)
    if rc == 0:
        print(f"wrote {out / 'peers_seldon_matrix.md'} and .html", file=sys.stderr)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
