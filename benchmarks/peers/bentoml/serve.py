"""Starts BentoML serving service.py's ``Echo`` (the no-op / echo model and seed 001's
image requests) for the benchmarks.

Run it with the virtualenv from ``install.sh``:

    .tools/peers/bentoml/bin/python benchmarks/peers/bentoml/serve.py --port 3000 \\
        [--workers cpu_count] [--max-batch-size 100] [--max-latency-ms 60000]

It runs ``bentoml serve service:Echo --host 127.0.0.1 --port PORT`` in this folder, in its
own process group, with the settings as template arguments (``--arg workers=...``),
``BENTOML_HOME`` in a temporary directory (BentoML's stores and its Prometheus files there,
not in ``~/bentoml``) and usage tracking off (``BENTOML_DO_NOT_TRACK``). It waits until
``GET /readyz`` answers 200 and a small ``POST /echo`` is echoed, prints
``READY http://127.0.0.1:PORT`` and serves until SIGTERM or SIGINT. Then it sends SIGTERM
to BentoML (its supervisor stops the workers), waits up to ``--stop-grace`` seconds,
sends SIGKILL to whatever is left of the group and removes the temporary directory.

BentoML's log goes to stderr; stdout carries only the READY line. This script does not
import bentoml; it only needs the virtualenv's ``bentoml`` command. For the server's CPU
time measure this process's whole tree (``--server-pid`` of serve.py): the supervisor
holds the listening socket and passes it to the workers. The starting, waiting and
stopping are benchmarks/peers/launch.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import launch  # noqa: E402


def bentoml(args: argparse.Namespace, home: Path) -> launch.Server:
    settings = {
        "workers": args.workers,
        "max_batch_size": args.max_batch_size,
        "max_latency_ms": args.max_latency_ms,
        "timeout": args.timeout,
    }
    cmd = [args.bentoml, "serve", "service:Echo", "--host", "127.0.0.1"]
    cmd += ["--port", str(args.port), "--working-dir", str(HERE)]
    for name, value in settings.items():
        cmd += ["--arg", f"{name}={value}"]
    url = f"http://127.0.0.1:{args.port}"
    probe = json.dumps({"data": [7]}).encode()
    return launch.Server(
        commands={"bentoml": cmd},
        probes={
            "/readyz": lambda: launch.rest_answers(f"{url}/readyz"),
            "/echo": lambda: bool(launch.rest_reply(f"{url}/echo", probe)),
        },
        url=url,
        cwd=HERE,
        env={**os.environ, "BENTOML_HOME": str(home), "BENTOML_DO_NOT_TRACK": "true"},
    )


def main() -> int:
    p = launch.arguments(__doc__ or "")
    p.add_argument("--port", "--http-port", dest="port", type=int, default=3000)
    p.add_argument(
        "--workers",
        default="cpu_count",
        help="worker processes, or cpu_count (one per core: BentoML's advice for CPU work)",
    )
    p.add_argument("--max-batch-size", type=int, default=100, help="/echo_batched's batches")
    p.add_argument(
        "--max-latency-ms", type=int, default=60_000, help="/echo_batched's longest wait"
    )
    p.add_argument("--timeout", type=float, default=60.0, help="per-request limit, seconds")
    p.add_argument(
        "--bentoml",
        default=str(Path(sys.executable).parent / "bentoml"),
        help="the bentoml command (default: the one beside this Python)",
    )
    args = p.parse_args()
    if args.workers != "cpu_count" and not (args.workers.isdigit() and int(args.workers) > 0):
        p.error(f"--workers must be a positive integer or cpu_count, not {args.workers!r}")

    home = Path(tempfile.mkdtemp(prefix="bentoml-peer-"))
    return launch.serve(lambda: bentoml(args, home), args.ready_timeout, args.stop_grace, home)


if __name__ == "__main__":
    raise SystemExit(main())
