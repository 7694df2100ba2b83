"""Starts KServe's model server with the no-op model (noop_server.py) for the benchmarks.

Run it with the virtualenv from ``install.sh``:

    .tools/peers/kserve/bin/python benchmarks/peers/kserve/serve.py \\
        --http-port 8080 --grpc-port 8081 [--workers 1] [--max-threads 4] [--log-requests]

It runs noop_server.py in its own process group with KServe's options for a benchmark
(see README.md): ``--workers`` (uvicorn REST processes; KServe's default 1),
``--max_threads`` (the gRPC server's thread pool; KServe's default 4),
``--enable_latency_logging false`` and a ``--log_config_file`` that drops the lines KServe
and uvicorn log for every request (keeping uvicorn's start/stop messages and every
warning and error), unless ``--log-requests``. It waits until ``GET http://127.0.0.1:PORT/v2/models/noop/ready``
answers 200 and gRPC accepts a connection, prints
``READY http://127.0.0.1:PORT grpc 127.0.0.1:GPORT`` and serves until SIGTERM or SIGINT.
Then it sends SIGTERM to the server (KServe stops uvicorn and gRPC, its REST worker
processes with it), waits up to ``--stop-grace`` seconds, kills whatever is left of the
process group and removes its temporary directory. KServe's log goes to stderr; stdout
carries only the READY line.

This script does not import kserve; the starting, waiting and stopping are
benchmarks/peers/launch.py's.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = "noop"
sys.path.insert(0, str(HERE.parent))
import launch  # noqa: E402

# KServe's log setup minus the per-request lines, which are INFO lines of three loggers:
# uvicorn's access log, kserve.trace (the latency lines, also off by
# --enable_latency_logging false) and kserve itself (its gRPC interceptor logs
# "grpc method: ..." for every call), so those three log warnings and errors only.
LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(name)s %(levelname)s %(message)s"}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "stream": "ext://sys.stderr",
        }
    },
    "loggers": {
        "kserve": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        "kserve.trace": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        "uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "uvicorn.access": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
    },
}


def kserve(args: argparse.Namespace, tmp: Path) -> launch.Server:
    cmd = [
        sys.executable,
        str(HERE / "noop_server.py"),
        f"--http_port={args.http_port}",
        f"--grpc_port={args.grpc_port}",
        f"--workers={args.workers}",
        f"--max_threads={args.max_threads}",
    ]
    if not args.log_requests:
        (tmp / "log.json").write_text(json.dumps(LOG_CONFIG))
        cmd += ["--enable_latency_logging=false", f"--log_config_file={tmp / 'log.json'}"]
    url = f"http://127.0.0.1:{args.http_port}"
    grpc_target = f"127.0.0.1:{args.grpc_port}"
    return launch.Server(
        commands={"kserve": cmd},
        probes={
            "REST": lambda: launch.rest_answers(f"{url}/v2/models/{MODEL}/ready"),
            "gRPC": lambda: launch.grpc_answers(grpc_target),
        },
        url=url,
        grpc=grpc_target,
        cwd=tmp,
    )


def main() -> int:
    p = launch.arguments(__doc__ or "")
    p.add_argument("--http-port", type=int, default=8080)
    p.add_argument("--grpc-port", type=int, default=8081)
    p.add_argument("--workers", type=int, default=1, help="REST processes (KServe's --workers)")
    p.add_argument("--max-threads", type=int, default=4, help="gRPC threads (--max_threads)")
    p.add_argument(
        "--log-requests",
        action="store_true",
        help="keep KServe's defaults: access log and latency lines for every request",
    )
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kserve-peer-"))
    return launch.serve(lambda: kserve(args, tmp), args.ready_timeout, args.stop_grace, tmp)


if __name__ == "__main__":
    raise SystemExit(main())
