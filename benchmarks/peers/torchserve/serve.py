"""Starts TorchServe with this folder's handlers (handlers/) for the benchmarks.

Run it with the virtualenv from ``install.sh``:

    .tools/peers/torchserve/bin/python benchmarks/peers/torchserve/serve.py \\
        --http-port 8080 --grpc-port 7070 [--models noop,images,densenet161] \\
        [--workers 2] [--batch-size 8] [--max-batch-delay 10] [--torch-threads 1]

In a temporary folder it archives each model named in ``--models`` with
torch-model-archiver (``noop``, ``images``, ``densenet161``: handlers/NAME.py), writes a
config.properties that puts every TorchServe listener on 127.0.0.1 (REST inference
``--http-port``, management ``--management-port``, metrics ``--metrics-port``, gRPC
inference ``--grpc-port``, gRPC management ``--grpc-management-port``; 0: a free port)
and registers every model at start with ``--workers`` backend workers, TorchServe's
batching (``--batch-size`` requests at most, ``--max-batch-delay`` ms), then runs
``torchserve --foreground`` in its own process group (logs and TorchServe's pid file in
the temporary folder). It waits until ``GET /ping`` says Healthy, every model's workers
are READY (management API) and gRPC accepts a channel, prints
``READY http://127.0.0.1:PORT grpc 127.0.0.1:GPORT`` on stdout (everything else goes to
stderr) and serves until SIGTERM or SIGINT. Then it sends SIGTERM to the group
(TorchServe's frontend stops its workers), waits up to ``--stop-grace`` seconds, sends
SIGKILL to whatever is left and removes the temporary folder (the starting, waiting and
stopping are benchmarks/peers/launch.py's).

Token authorization is off (``disable_token_authorization=true``, TorchServe 0.12's
``--disable-token-auth``; ``--token-auth`` keeps it on, to check what a request without
a key gets); model control through the management API stays off (TorchServe's default).

This script does not import torchserve.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
MODELS = ("noop", "images", "densenet161")
sys.path.insert(0, str(HERE.parent))
import launch  # noqa: E402


def get_json(url: str, headers: dict[str, str] | None = None) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=2) as r:
            return json.loads(r.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def archive(name: str, store: Path, env: dict[str, str]) -> None:
    cmd = [str(BIN / "torch-model-archiver"), "--model-name", name, "--version", "1.0"]
    cmd += ["--handler", str(HERE / "handlers" / f"{name}.py"), "--export-path", str(store)]
    subprocess.run(cmd, check=True, env=env, stdout=sys.stderr)


def config(args: argparse.Namespace, tmp: Path, models: list[str]) -> str:
    registered = {
        name: {
            "1.0": {
                "defaultVersion": True,
                "marName": f"{name}.mar",
                "minWorkers": args.workers,
                "maxWorkers": args.workers,
                "batchSize": args.batch_size,
                "maxBatchDelay": args.max_batch_delay,
                "responseTimeout": args.response_timeout,
            }
        }
        for name in models
    }
    lines = {
        "inference_address": f"http://127.0.0.1:{args.http_port}",
        "management_address": f"http://127.0.0.1:{args.management_port}",
        "metrics_address": f"http://127.0.0.1:{args.metrics_port}",
        "grpc_inference_address": "127.0.0.1",
        "grpc_inference_port": str(args.grpc_port),
        "grpc_management_address": "127.0.0.1",
        "grpc_management_port": str(args.grpc_management_port),
        "model_store": str(tmp / "store"),
        "load_models": ",".join(f"{m}.mar" for m in models),
        "models": json.dumps(registered),
        "default_workers_per_model": str(args.workers),
        "job_queue_size": str(args.job_queue_size),
        "disable_token_authorization": "false" if args.token_auth else "true",
        "enable_model_api": "false",
        "install_py_dep_per_model": "false",
        # The frontend talks to its workers over Unix sockets in java.io.tmpdir
        # (/tmp/.ts.sock.9000...): this run's folder, so that two servers never share one.
        "vmargs": f"-Djava.io.tmpdir={tmp}",
        "metrics_mode": "prometheus",
        # 16 MiB each way: seed 001's largest base64 image is 3.1 MB, the 100,000 INT64 echo
        # about 2 MB as JSON (TorchServe's default 6,553,500 bytes would do for both).
        "max_request_size": str(16 << 20),
        "max_response_size": str(16 << 20),
    }
    if args.netty_threads:
        lines["number_of_netty_threads"] = str(args.netty_threads)
        lines["netty_client_threads"] = str(args.netty_threads)
    path = tmp / "config.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return str(path)


def ready(args: argparse.Namespace, models: list[str], keys: dict[str, str]) -> bool:
    """``keys``: with token authorization on, the inference and management keys."""

    def auth(api: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {keys[api]}"} if api in keys else {}

    ping = get_json(f"http://127.0.0.1:{args.http_port}/ping", auth("inference"))
    if not ping or ping.get("status") != "Healthy":
        return False
    for name in models:
        desc = get_json(
            f"http://127.0.0.1:{args.management_port}/models/{name}", auth("management")
        )
        workers = desc[0].get("workers", []) if desc else []
        if len([w for w in workers if w.get("status") == "READY"]) < args.workers:
            return False
    return launch.grpc_answers(f"127.0.0.1:{args.grpc_port}")


def token_keys(tmp: Path) -> dict[str, str]:
    """With token authorization on, TorchServe writes its keys to key_file.json in its
    working directory; every API, /ping included, wants one (else 400 InvalidKeyException)."""
    try:
        keys = json.loads((tmp / "key_file.json").read_text())
        return {api: keys[api]["key"] for api in ("inference", "management")}
    except (OSError, ValueError, KeyError):
        return {}


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--http-port", type=int, default=0, help="REST inference (0: a free port)")
    p.add_argument("--grpc-port", type=int, default=0, help="gRPC inference (0: a free port)")
    p.add_argument("--management-port", type=int, default=0)
    p.add_argument("--metrics-port", type=int, default=0)
    p.add_argument("--grpc-management-port", type=int, default=0)
    p.add_argument("--models", default="noop,images", help=f"comma-separated, of {MODELS}")
    p.add_argument("--workers", type=int, default=2, help="backend workers per model")
    p.add_argument("--torch-threads", type=int, default=1, help="torch threads per worker")
    p.add_argument("--batch-size", type=int, default=8, help="TorchServe's batchSize")
    p.add_argument("--max-batch-delay", type=int, default=10, help="maxBatchDelay, ms")
    p.add_argument("--netty-threads", type=int, default=0, help="0: TorchServe's default")
    p.add_argument("--job-queue-size", type=int, default=100, help="TorchServe's default 100")
    p.add_argument("--response-timeout", type=int, default=120, help="seconds")
    p.add_argument("--token-auth", action="store_true", help="keep token authorization on")
    p.add_argument(
        "--log-requests",
        action="store_true",
        help="TorchServe's own logging (log files, a line per request); else log4j2-quiet.xml",
    )
    p.add_argument("--ready-timeout", type=float, default=300.0)
    p.add_argument("--stop-grace", type=float, default=20.0, help="seconds before SIGKILL")
    args = p.parse_args()
    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - set(MODELS))
    if unknown or not models:
        p.error(f"--models: unknown {unknown}; choose from {MODELS}")
    for name in ("http_port", "grpc_port", "management_port", "metrics_port"):
        if not getattr(args, name):
            setattr(args, name, launch.free_port())
    if not args.grpc_management_port:
        args.grpc_management_port = launch.free_port()

    tmp = Path(tempfile.mkdtemp(prefix="torchserve-peer-"))
    return launch.serve(
        lambda: torchserve(args, models, tmp), args.ready_timeout, args.stop_grace, tmp
    )


def torchserve(args: argparse.Namespace, models: list[str], tmp: Path) -> launch.Server:
    # TorchServe keeps its pid file in the temporary directory (TMPDIR) and its logs in
    # LOG_LOCATION/METRICS_LOCATION: all in this run's folder, so runs never collide.
    env = {
        **os.environ,
        "TMPDIR": str(tmp),
        "LOG_LOCATION": str(tmp / "logs"),
        "METRICS_LOCATION": str(tmp / "logs"),
        "DENSENET_THREADS": str(args.torch_threads),
        "OMP_NUM_THREADS": str(args.torch_threads),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    (tmp / "store").mkdir()
    for name in models:
        archive(name, tmp / "store", env)
    cmd = [str(BIN / "torchserve"), "--start", "--foreground", "--ncs"]
    cmd += ["--ts-config", config(args, tmp, models)]
    if not args.log_requests:
        cmd += ["--log-config", str(HERE / "log4j2-quiet.xml")]
    print(
        f"management http://127.0.0.1:{args.management_port} "
        f"metrics http://127.0.0.1:{args.metrics_port} "
        f"grpc-management 127.0.0.1:{args.grpc_management_port} folder {tmp}",
        file=sys.stderr,
        flush=True,
    )
    return launch.Server(
        commands={"torchserve": cmd},
        probes={"models": lambda: ready(args, models, token_keys(tmp) if args.token_auth else {})},
        url=f"http://127.0.0.1:{args.http_port}",
        grpc=f"127.0.0.1:{args.grpc_port}",
        cwd=tmp,
        env=env,
        signal_group=True,
    )


if __name__ == "__main__":
    raise SystemExit(main())
