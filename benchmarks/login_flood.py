"""Authenticated predictions while anonymous clients flood ``POST /login``.

One server (the no-op model, a token file and a user file; a fresh one for each phase,
so the login limits start empty), one client sending predictions with a bearer token
back to back; the latency of those predictions is measured three times: alone, while
FLOODERS threads (in another process) send wrong passwords for made-up users as fast as
they are answered, and while they send the right password of a real user (every login
then costs a password check). Printed: the predictions' p50 and p99
in each phase, their ratio to the quiet phase, and the logins answered by status.

    .venv/bin/python benchmarks/login_flood.py [--requests 2000] [--flooders 6]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

sys.path.append(str(Path(__file__).resolve().parent))
from lib import servers

ROOT = servers.ROOT
PASSWORD = "correct horse battery staple"


def make_files(where: Path) -> tuple[Path, Path, str]:
    from inferwire import _core

    token = "bench-" + os.urandom(16).hex()
    tokens, users = where / "tokens", where / "users"
    tokens.write_text(f"bench predict {_core.token_digest(token)}\n")
    users.write_text(f"alice predict {_core.hash_password(PASSWORD)}\n")
    return tokens, users, token


def start(tokens: Path, users: Path) -> tuple[subprocess.Popen[bytes], str]:
    port, grpc_port = servers.free_port(), servers.free_port()
    cmd = [sys.executable, "-m", "inferwire", "serve", "noop", "--host", "127.0.0.1",
           "--http-port", str(port), "--grpc-port", str(grpc_port),
           "--auth-tokens", str(tokens), "--auth-users", str(users)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health/ping", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("the server did not start")


def predictions(url: str, token: str, n: int) -> list[float]:
    body = {"data": {"ndarray": [[1, 2, 3, 4]]}}
    out = []
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}) as c:
        for _ in range(n):
            t = time.perf_counter()
            r = c.post(url + "/api/v1.0/predictions", json=body)
            out.append(time.perf_counter() - t)
            assert r.status_code == 200, r.text
    return out


# The flood runs in a process of its own (threads beside the measuring client would
# take its GIL and inflate the latencies it measures): FLOODERS threads, each a login
# loop, as anonymous clients would send them.
FLOOD = """
import json, sys, threading, httpx
url, right, n, password = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), sys.argv[4]
seen, lock = {}, threading.Lock()
def loop(i):
    with httpx.Client(timeout=10) as c:
        k = 0
        while True:
            k += 1
            creds = ({"username": "alice", "password": password} if right
                     else {"username": f"mallory{i}-{k}", "password": "guess"})
            try:
                code = c.post(url + "/login", json=creds).status_code
            except httpx.TransportError:
                code = 0
            with lock:
                seen[code] = seen.get(code, 0) + 1
                if sum(seen.values()) % 20 == 0:
                    print(json.dumps(seen), flush=True)
for i in range(n):
    threading.Thread(target=loop, args=(i,), daemon=True).start()
threading.Event().wait()
"""


def phase(tokens: Path, users: Path, n: int, flooders: int, right: bool | None) -> dict[str, Any]:
    """A fresh server (the login limits start empty), `flooders` processes sending
    logins, and `n` predictions measured meanwhile."""
    proc, url, token = *start(tokens, users), TOKEN[0]
    procs = []
    try:
        predictions(url, token, 200)  # warm-up
        if right is not None:
            args = [sys.executable, "-c", FLOOD, url, "1" if right else "0", str(flooders),
                    PASSWORD]  # fmt: skip
            procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, text=True))
        time.sleep(1.0 if procs else 0)
        lat = predictions(url, token, n)
    finally:
        seen: Counter[int] = Counter()
        for p in procs:
            p.terminate()
            out, _ = p.communicate(timeout=10)
            last = out.strip().splitlines()[-1:] if out else []
            for line in last:
                seen.update({int(k): v for k, v in json.loads(line).items()})
        proc.terminate()
        proc.wait(15)
    ms = sorted(x * 1000 for x in lat)
    return {"p50_ms": statistics.median(ms), "p99_ms": ms[int(len(ms) * 0.99) - 1],
            "logins": dict(sorted(seen.items()))}  # fmt: skip


TOKEN: list[str] = []


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--requests", type=int, default=2000, help="predictions per phase")
    p.add_argument("--flooders", type=int, default=6, help="threads sending logins")
    p.add_argument("--json", type=Path, help="write the figures as JSON")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tokens, users, token = make_files(Path(d))
        TOKEN.append(token)
        quiet = phase(tokens, users, args.requests, 0, None)
        wrong = phase(tokens, users, args.requests, args.flooders, False)
        right = phase(tokens, users, args.requests, args.flooders, True)
    rows = {"no logins": quiet, f"{args.flooders} threads, wrong passwords": wrong,
            f"{args.flooders} threads, the right password": right}  # fmt: skip
    print("| phase | predictions p50 | p99 | p50 vs quiet | logins answered |")
    print("|---|---|---|---|---|")
    for name, r in rows.items():
        logins = ", ".join(f"{k or 'error'}: {v}" for k, v in r["logins"].items()) or "none"
        print(f"| {name} | {r['p50_ms']:.2f} ms | {r['p99_ms']:.2f} ms | "
              f"{r['p50_ms'] / quiet['p50_ms']:.2f}x | {logins} |")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
