"""Runs the tritonserver binary bundled in PyTriton's wheel, directly (not through
PyTriton's API), on a Triton model repository of Python-backend models, CPU only.

Run it with PyTriton's virtualenv after ``install.sh`` (which puts the backend's stub where
the backend looks for it):

    .tools/peers/pytriton/bin/python benchmarks/peers/tritonserver/serve.py \\
        [--model-repository DIR] [--http-port 8000] [--grpc-port 8001] [--metrics-port 8002] \\
        [--load MODEL,...]

The repository defaults to ``repository/`` beside this file (``blank``, ``add_sub``,
``bls_pipeline``); a port left out (or 0) is a free one. The command line is Triton's own:
``--model-repository``, ``--backend-directory`` (the wheel's ``tritonserver/backends``),
``--http-port``/``--grpc-port``/``--metrics-port`` and their addresses (127.0.0.1),
``--model-control-mode none`` (every model of the repository is loaded at start, and one
that fails stops the server), ``--allow-gpu-metrics false``, and a Python-backend shared
memory prefix of this process's own, so that two servers on one machine never share a
region. ``--load a,b`` loads only those models instead (``--model-control-mode explicit``),
for a repository holding models this machine cannot load (the vendored one's ``pytorch``).

The environment tritonserver gets (what PyTriton gives it too):

- ``PATH`` starts with this virtualenv's ``bin``: the stub embeds Debian's libpython3.11,
  which takes ``sys.prefix`` from the ``python3`` it finds on ``PATH``; without it the
  stub runs the system's Python and a model's ``import numpy`` fails (Triton's
  ``triton_python_backend_utils`` imports numpy itself);
- ``CUDA_VISIBLE_DEVICES`` empty: CPU only, on a machine with a GPU too;
- no ``LD_LIBRARY_PATH``: tritonserver, ``libtriton_python.so`` and the stub find the
  wheel's libraries (``nvidia_pytriton.libs``) through their RPATH, and the stub finds
  ``libpython3.11.so.1.0`` in the system's library path.

It waits until ``GET /v2/health/ready`` and each model's ``/v2/models/NAME/ready`` answer
200 and gRPC accepts a channel, prints ``READY http://127.0.0.1:PORT grpc 127.0.0.1:GPORT``
(the only line on stdout; the metrics port goes to stderr) and serves until SIGTERM or
SIGINT, then sends tritonserver SIGTERM (it stops its stubs) and waits up to
``--stop-grace`` seconds before SIGKILL. tritonserver's log goes to stderr. If
tritonserver exits by itself, so does this script, with status 1. The starting, waiting
and stopping are benchmarks/peers/launch.py's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import launch  # noqa: E402

STUB = "triton_python_backend_stub"


def triton_home() -> Path:
    """The wheel's ``tritonserver`` folder (bin/, backends/, python_backend_stubs/)."""
    import pytriton  # PyTriton's virtualenv: its wheel holds the server

    return Path(pytriton.__file__).resolve().parent / "tritonserver"


def check_stub(backends: Path) -> None:
    """The stub must be in the backend's folder and link this interpreter's libpython."""
    stub = backends / "python" / STUB
    if not stub.is_file():
        raise SystemExit(f"{stub} is missing: run bash benchmarks/peers/tritonserver/install.sh")
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    libs = subprocess.run(["ldd", str(stub)], capture_output=True, text=True).stdout
    if f"libpython{version}.so" not in libs or "not found" in libs:
        raise SystemExit(
            f"{stub} is not a stub for this Python ({version}) or misses a library:\n{libs}"
            "run install.sh with this virtualenv's Python"
        )
    if not (Path(sys.prefix) / "bin/python3").exists():
        raise SystemExit(f"{sys.prefix}/bin/python3 is missing: the stub would not find numpy")


def repository_models(repository: Path) -> list[str]:
    """The models of a Triton repository: its folders holding a config.pbtxt."""
    return sorted(d.name for d in repository.iterdir() if (d / "config.pbtxt").is_file())


def main() -> int:
    p = launch.arguments(__doc__ or "", ready_timeout=120.0, stop_grace=40.0)
    p.add_argument("--model-repository", type=Path, default=HERE / "repository")
    p.add_argument("--http-port", type=int, default=0, help="0: a free port")
    p.add_argument("--grpc-port", type=int, default=0, help="0: a free port")
    p.add_argument("--metrics-port", type=int, default=0, help="0: a free port")
    p.add_argument("--load", help="comma-separated models to load (explicit mode)")
    p.add_argument("--log-verbose", type=int, default=0, help="Triton's --log-verbose")
    args = p.parse_args()
    home = triton_home()
    backends = home / "backends"
    check_stub(backends)
    repository = args.model_repository.resolve()
    models = args.load.split(",") if args.load else repository_models(repository)
    http = args.http_port or launch.free_port()
    grpc = args.grpc_port or launch.free_port()
    metrics = args.metrics_port or launch.free_port()
    argv = [str(home / "bin/tritonserver"), "--model-repository", str(repository)]
    argv += ["--backend-directory", str(backends)]
    for kind, port in (("http", http), ("grpc", grpc), ("metrics", metrics)):
        argv += [f"--{kind}-address", "127.0.0.1", f"--{kind}-port", str(port)]
    if args.load:
        argv += ["--model-control-mode", "explicit"]
        argv += [arg for m in models for arg in ("--load-model", m)]
    else:
        argv += ["--model-control-mode", "none"]
    argv += ["--allow-gpu-metrics", "false", "--log-verbose", str(args.log_verbose)]
    argv += ["--backend-config", f"python,shm-region-prefix-name=tritonserver_peer_{os.getpid()}_"]
    env = {
        **os.environ,
        "PATH": f"{Path(sys.prefix) / 'bin'}:{os.environ.get('PATH', '')}",
        "CUDA_VISIBLE_DEVICES": "",
    }
    url = f"http://127.0.0.1:{http}"
    target = f"127.0.0.1:{grpc}"
    probes = {"ready": lambda: launch.rest_answers(f"{url}/v2/health/ready")}
    for model in models:
        probes[model] = lambda m=model: launch.rest_answers(f"{url}/v2/models/{m}/ready")
    probes["gRPC"] = lambda: launch.grpc_answers(target)
    print(f"tritonserver: {' '.join(argv)}", file=sys.stderr)
    print(f"metrics http://127.0.0.1:{metrics}/metrics", file=sys.stderr, flush=True)
    server = launch.Server(
        commands={"tritonserver": argv}, probes=probes, url=url, grpc=target, env=env
    )
    return launch.serve(lambda: server, args.ready_timeout, args.stop_grace)


if __name__ == "__main__":
    sys.exit(main())
