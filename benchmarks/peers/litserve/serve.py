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
Other options are passed on to noop_api.py unchanged.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


class Stop(Exception):
    """Raised in the main thread by the SIGTERM/SIGINT handler."""


def healthy(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    # With LIT_SERVER_API_KEY set, LitServe asks for the key on /health too.
    key = os.environ.get("LIT_SERVER_API_KEY")
    request = urllib.request.Request(url, headers={"X-API-Key": key} if key else {})
    try:
        with opener.open(request, timeout=2) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGINT to LitServe's main process (its graceful shutdown), up to ``grace_s`` for its
    group to empty, then SIGKILL to what is left of it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + grace_s
    # LitServe leads its own group (start_new_session): its pid is the group's id.
    while group_alive(proc.pid) and time.monotonic() < deadline:
        proc.poll()  # reaps it once it exits, so the group can empty
        time.sleep(0.05)
    if group_alive(proc.pid):
        print(f"pid {proc.pid} still running after {grace_s:.0f} s: SIGKILL", file=sys.stderr)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--ready-timeout", type=float, default=120.0)
    p.add_argument("--stop-grace", type=float, default=15.0, help="seconds before SIGKILL")
    args, rest = p.parse_known_args()

    def on_signal(signum: int, _frame: Any) -> None:
        # Once: a second signal while LitServe stops must not interrupt the stopping.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    proc: subprocess.Popen[bytes] | None = None
    url = f"http://127.0.0.1:{args.port}"
    started = time.monotonic()
    code = 0
    try:
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "noop_api.py"), "--port", str(args.port), *rest],
            stdin=subprocess.DEVNULL,
            stdout=sys.stderr,  # stdout is for the READY line only
            start_new_session=True,  # its own process group, out of reach of a terminal's ^C
        )
        deadline = started + args.ready_timeout
        while not healthy(f"{url}/health"):
            if proc.poll() is not None:
                print(f"litserve exited with {proc.returncode} before ready", file=sys.stderr)
                return 1
            if time.monotonic() > deadline:
                print(f"not ready within {args.ready_timeout:.0f} s", file=sys.stderr)
                return 1
            time.sleep(0.1)
        print(f"started in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
        print(f"READY {url}", flush=True)
        code = proc.wait()  # until a signal raises Stop, or LitServe exits by itself
        print(f"litserve exited with {code}", file=sys.stderr)
        code = code or 1
    except (Stop, KeyboardInterrupt) as why:
        print(f"stopping ({why or 'interrupt'})", file=sys.stderr, flush=True)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if proc is not None:
            stop(proc, args.stop_grace)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
