"""A no-op Ray Serve application: the peer for the ray-micro benchmark, Ray Serve's own
microbenchmark (``python/ray/serve/benchmarks/microbenchmark.py``), which runs six
configurations of max batch size / max concurrent queries / replicas against a no-op
backend with a single client and with 8 clients.

Run it with the virtualenv from ``install.sh``:

    .tools/peers/ray/bin/python benchmarks/peers/ray/noop_app.py --port 8000 \\
        --num-replicas 1 --max-batch-size 1 --max-concurrent-queries 1

It starts a local Ray (``ray.init(num_cpus=2)``, no dashboard), deploys the model at
``http://127.0.0.1:PORT/noop``, prints ``READY http://127.0.0.1:PORT/noop`` once a request
is answered, and serves until SIGTERM or SIGINT, then shuts Serve and Ray down (Ray's
gcs_server, raylet and workers included).

The model accepts GET (Ray's microbenchmark sends GET with no body, its "small data") and
POST with a small JSON body, and answers ``{"result": "ok"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request
from typing import Any

# Set before ray is imported: Ray reads these at import and passes them to its processes.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report sent anywhere
# Ray's core installs absl's failure signal handler, which also takes SIGTERM (it prints a
# stack trace, "*** SIGTERM received ..."): off, so that SIGTERM reaches on_signal below.
os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")

import ray
from ray import serve
from starlette.requests import Request

ANSWER = {"result": "ok"}


class Stop(Exception):
    """Raised in the main thread by the SIGTERM/SIGINT handler."""


def build_app(args: argparse.Namespace) -> Any:
    batching = args.max_batch_size > 1

    # `max_ongoing_requests` is what Ray 2.x (2.10 on; this pin is 2.60.0) calls the
    # seed's `max_concurrent_queries` (renamed in Ray 2.10, the old name removed later):
    # the most requests a replica runs at once.
    # Replicas ask for `--replica-cpus` CPUs (default 0, as Ray's own microbenchmark
    # clients and the Serve controller/proxy do): with ray.init(num_cpus=2) and Serve's
    # default of 1 CPU per replica, only 2 of 8 replicas could be scheduled.
    @serve.deployment(
        num_replicas=args.num_replicas,
        max_ongoing_requests=args.max_concurrent_queries,
        ray_actor_options={"num_cpus": args.replica_cpus},
    )
    class Noop:
        @serve.batch(
            max_batch_size=max(args.max_batch_size, 1),
            batch_wait_timeout_s=args.batch_wait_timeout_s,
        )
        async def batched(self, bodies: list[Any]) -> list[dict[str, str]]:
            return [ANSWER] * len(bodies)

        async def __call__(self, request: Request) -> dict[str, str]:
            raw = await request.body()
            body = json.loads(raw) if raw else None
            if batching:
                return await self.batched(body)
            return ANSWER

    return Noop.bind()


def _answers(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=2) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--num-replicas", type=int, default=1)
    p.add_argument("--max-batch-size", type=int, default=1, help="> 1 turns on @serve.batch")
    p.add_argument(
        "--max-concurrent-queries",
        type=int,
        default=100,
        help="Serve's max_ongoing_requests per replica (the seed's max_concurrent_queries)",
    )
    p.add_argument("--batch-wait-timeout-s", type=float, default=0.001)
    p.add_argument("--replica-cpus", type=float, default=0.0, help="num_cpus per replica")
    p.add_argument("--num-cpus", type=int, default=2, help="CPUs Ray may schedule on")
    p.add_argument(
        "--worker-niceness",
        type=int,
        default=0,
        help="nice value of Ray's workers (the proxy and replicas); Ray's default is 15",
    )
    p.add_argument("--access-log", action="store_true", help="keep Serve's per-request log")
    p.add_argument("--ready-timeout", type=float, default=300.0)
    args = p.parse_args()
    # Ray starts its workers, Serve's HTTP proxy and replicas included, at nice 15: on a
    # shared machine they would lose the CPU to the benchmark client and anything else.
    os.environ["RAY_worker_niceness"] = str(args.worker_niceness)

    def on_signal(signum: int, _frame: Any) -> None:
        # Once: a second signal while Ray shuts down must not interrupt the shutdown.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Stop(signal.Signals(signum).name)

    def handle_signals() -> None:
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

    handle_signals()
    url = f"http://127.0.0.1:{args.port}/noop"
    started = time.monotonic()
    try:
        ray.init(
            num_cpus=args.num_cpus,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
        handle_signals()  # ray.init replaced the SIGTERM handler with sys.exit
        serve.start(
            http_options={"host": "127.0.0.1", "port": args.port},
            logging_config={"enable_access_log": args.access_log},
        )
        serve.run(build_app(args), name="noop", route_prefix="/noop", blocking=False)
        deadline = started + args.ready_timeout
        while not _answers(url):
            if time.monotonic() > deadline:
                print(f"not ready within {args.ready_timeout:.0f} s", file=sys.stderr)
                return 1
            time.sleep(0.2)
        print(f"started in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
        print(f"READY {url}", flush=True)
        while True:
            signal.pause()  # until a signal raises Stop
    except (Stop, KeyboardInterrupt, SystemExit) as why:
        print(f"stopping ({why or 'interrupt'})", file=sys.stderr, flush=True)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            if ray.is_initialized():
                serve.shutdown()
        finally:
            ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
