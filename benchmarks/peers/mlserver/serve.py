"""Starts MLServer serving the no-op model in ``noop/`` for the V2 benchmarks.

Run it with the virtualenv from ``install.sh``:

    .tools/peers/mlserver/bin/python benchmarks/peers/mlserver/serve.py \\
        --http-port 8080 --grpc-port 8081 [--parallel-workers 0]

It copies the model folder (``noop/`` unless ``--folder``) into a temporary directory,
writes that copy's ``settings.json`` with the given ports and worker count (and MLServer's
``.envs``/``.metrics`` folders inside the temporary directory, not the current one), runs
``mlserver start`` on it in its own process group, waits until
``GET http://127.0.0.1:PORT/v2/models/noop/ready`` answers 200, prints
``READY http://127.0.0.1:PORT grpc 127.0.0.1:GPORT`` and serves until SIGTERM or SIGINT.
Then it sends SIGTERM to MLServer, waits for it (MLServer gives its inference workers
``parallel_workers_timeout``, 5 s), kills whatever is left of the process group (workers,
multiprocessing's resource tracker) and removes the temporary directory.

``--parallel-workers`` left out keeps MLServer's default (1 in MLServer 1.7.1: one
inference worker process beside the server process); 0 runs the model in the server's
own process. MLServer's log goes to stderr; stdout carries only the READY line.

This script does not import mlserver; it only needs the virtualenv's ``mlserver`` command.
The starting, waiting and stopping are benchmarks/peers/launch.py's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = "noop"
sys.path.insert(0, str(HERE.parent))
import launch  # noqa: E402


def write_folder(args: argparse.Namespace, tmp: Path) -> Path:
    # The copy is named after the model, so MLServer does not warn that the model's name
    # differs from its folder's.
    folder: Path = tmp / args.model
    shutil.copytree(args.folder, folder, ignore=shutil.ignore_patterns("__pycache__"))
    settings = json.loads((folder / "settings.json").read_text())
    settings["host"] = "127.0.0.1"
    settings["http_port"] = args.http_port
    settings["grpc_port"] = args.grpc_port
    if args.parallel_workers is not None:
        settings["parallel_workers"] = args.parallel_workers
    settings["environments_dir"] = str(tmp / "envs")
    settings["metrics_dir"] = str(tmp / "metrics")
    (folder / "settings.json").write_text(json.dumps(settings, indent=4) + "\n")
    return folder


def mlserver(args: argparse.Namespace, tmp: Path) -> launch.Server:
    url = f"http://127.0.0.1:{args.http_port}"
    return launch.Server(
        commands={"mlserver": [args.mlserver, "start", str(write_folder(args, tmp))]},
        probes={"REST": lambda: launch.rest_answers(f"{url}/v2/models/{args.model}/ready")},
        url=url,
        grpc=f"127.0.0.1:{args.grpc_port}",
        cwd=tmp,
    )


def main() -> int:
    p = launch.arguments(__doc__ or "")
    p.add_argument("--http-port", type=int, default=8080)
    p.add_argument("--grpc-port", type=int, default=8081)
    p.add_argument(
        "--parallel-workers",
        type=int,
        default=None,
        help="inference worker processes; 0 = none; left out: MLServer's default (1)",
    )
    p.add_argument("--folder", type=Path, default=HERE / MODEL, help="the model folder")
    p.add_argument("--model", default=MODEL, help="the model name to wait for (its readiness)")
    p.add_argument(
        "--mlserver",
        default=str(Path(sys.executable).parent / "mlserver"),
        help="the mlserver command (default: the one beside this Python)",
    )
    args = p.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="mlserver-peer-"))
    return launch.serve(lambda: mlserver(args, tmp), args.ready_timeout, args.stop_grace, tmp)


if __name__ == "__main__":
    raise SystemExit(main())
