"""Starts LitServe serving the no-op model (noop_api.py) for the peer benchmarks.

Run it with the virtualenv from ``install.sh``:

    .tools/peers/litserve/bin/python benchmarks/peers/litserve/serve.py --port 8000 \\
        [--workers 2] [--max-batch-size 1] [--batch-timeout 0] [--no-fast-queue]

It runs noop_api.py (a ``LitServer`` on 127.0.0.1) in its own process group, waits until
``GET http://127.0.0.1:PORT/health`` answers 200 (LitServe answers so once every inference
worker has loaded), prints ``READY http://127.0.0.1:PORT`` and serves until SIGTERM or
SIGINT. Then it sends SIGINT to LitServe's main process, waits up to ``--stop-grace``
seconds and sends SIGKILL to whatever is left of the group (multiprocessing's resource
tracker included). SIGINT, not SIGTERM: LitServe 0.2.19 shuts down gracefully (API
servers, inference workers, its multiprocessing manager) only on KeyboardInterrupt; on
SIGTERM its main process dies at once and leaves all its children running. LitServe's log goes to
stderr; stdout carries only the READY line.

The defaults are the launch settings LitServe documents as its fastest on CPU (README.md):
one inference worker per core (``workers_per_device`` = ``os.cpu_count()``,
``accelerator="cpu"``), as many uvicorn API server processes (LitServe's default for
``num_api_servers``), ZeroMQ between them (``fast_queue=True``), batching off.
Other options are passed on to noop_api.py unchanged. The starting, waiting and stopping
are benchmarks/peers/launch.py's.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import launch  # noqa: E402


def litserve(port: int, rest: list[str]) -> launch.Server:
    url = f"http://127.0.0.1:{port}"
    # With LIT_SERVER_API_KEY set, LitServe asks for the key on /health too.
    key = os.environ.get("LIT_SERVER_API_KEY")
    return launch.Server(
        commands={
            "litserve": [sys.executable, str(HERE / "noop_api.py"), "--port", str(port), *rest]
        },
        probes={
            "/health": lambda: launch.rest_answers(
                f"{url}/health", headers={"X-API-Key": key} if key else None
            )
        },
        url=url,
        # Its graceful shutdown (see above); SIGTERM would leave its children running.
        stop_signal=signal.SIGINT,
    )


def main() -> int:
    p = launch.arguments(__doc__ or "")
    p.add_argument("--port", type=int, default=8000)
    args, rest = p.parse_known_args()
    return launch.serve(lambda: litserve(args.port, rest), args.ready_timeout, args.stop_grace)


if __name__ == "__main__":
    raise SystemExit(main())
