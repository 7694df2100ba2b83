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
holds the listening socket and passes it to the workers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


class Stop(Exception):
    """Raised in the main thread by the SIGTERM/SIGINT handler."""


def answers(url: str, body: bytes | None = None) -> bytes | None:
    """The body of a 200 answer to GET (or a JSON POST of ``body``), else None."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    headers = {"Content-Type": "application/json"} if body is not None else {}
    try:
        with opener.open(urllib.request.Request(url, body, headers), timeout=2) as reply:
            return bytes(reply.read()) if reply.status == 200 else None
    except (urllib.error.URLError, OSError):
        return None


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM to BentoML, up to ``grace_s`` for its group to empty, then SIGKILL."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    # BentoML leads its own group (start_new_session): its pid is the group's id.
    while group_alive(proc.pid) and time.monotonic() < deadline:
        proc.poll()  # reaps BentoML once it exits, so its group can empty
        time.sleep(0.05)
    if group_alive(proc.pid):
        print(f"BentoML still running after {grace_s:.0f} s: SIGKILL", file=sys.stderr)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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
    p.add_argument("--ready-timeout", type=float, default=120.0)
    p.add_argument("--stop-grace", type=float, default=15.0, help="seconds before SIGKILL")
    args = p.parse_args()
    if args.workers != "cpu_count" and not (args.workers.isdigit() and int(args.workers) > 0):
        p.error(f"--workers must be a positive integer or cpu_count, not {args.workers!r}")

    def on_signal(signum: int, _frame: Any) -> None:
        # Once: a second signal while BentoML stops must not interrupt the stopping.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Stop(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    home = Path(tempfile.mkdtemp(prefix="bentoml-peer-"))
    env = {**os.environ, "BENTOML_HOME": str(home), "BENTOML_DO_NOT_TRACK": "true"}
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
    proc: subprocess.Popen[bytes] | None = None
    url = f"http://127.0.0.1:{args.port}"
    probe = json.dumps({"data": [7]}).encode()
    started = time.monotonic()
    code = 0
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=HERE,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sys.stderr,  # stdout is for the READY line only
            start_new_session=True,  # its own process group, out of reach of a terminal's ^C
        )
        deadline = started + args.ready_timeout
        while not (answers(f"{url}/readyz") is not None and answers(f"{url}/echo", probe)):
            if proc.poll() is not None:
                print(f"bentoml exited with {proc.returncode} before ready", file=sys.stderr)
                return 1
            if time.monotonic() > deadline:
                print(f"not ready within {args.ready_timeout:.0f} s", file=sys.stderr)
                return 1
            time.sleep(0.1)
        print(f"started in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
        print(f"READY {url}", flush=True)
        code = proc.wait()  # until a signal raises Stop, or BentoML exits by itself
        print(f"bentoml exited with {code}", file=sys.stderr)
        code = code or 1
    except (Stop, KeyboardInterrupt) as why:
        print(f"stopping ({why or 'interrupt'})", file=sys.stderr, flush=True)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            if proc is not None:
                stop(proc, args.stop_grace)
        finally:
            shutil.rmtree(home, ignore_errors=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
