"""Authenticated predictions while anonymous clients flood ``POST /login``.

One server (the no-op model, a token file and a user file), one client sending
predictions with a bearer token back to back; the latency of those predictions is
measured three times: alone, while FLOODERS threads send wrong passwords for made-up
users as fast as they are answered, and while they send the right password of a real
user (every login then costs a password check). Printed: the predictions' p50 and p99
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
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

sys.path.append(str(Path(__file__).resolve().parent))
import servers

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


def flood(url: str, stop: threading.Event, right: bool, seen: Counter[int], i: int) -> None:
    with httpx.Client(timeout=10) as c:
        k = 0
        while not stop.is_set():
            k += 1
            creds = {"username": "alice", "password": PASSWORD} if right else {
                "username": f"mallory{i}-{k}", "password": "guess"}  # fmt: skip
            try:
                seen[c.post(url + "/login", json=creds).status_code] += 1
            except httpx.TransportError:
                seen[0] += 1


def phase(url: str, token: str, n: int, flooders: int, right: bool | None) -> dict[str, Any]:
    stop = threading.Event()
    seen: Counter[int] = Counter()
    threads = [threading.Thread(target=flood, args=(url, stop, right, seen, i), daemon=True)
               for i in range(flooders if right is not None else 0)]  # fmt: skip
    for t in threads:
        t.start()
    time.sleep(0.5 if threads else 0)
    lat = predictions(url, token, n)
    stop.set()
    for t in threads:
        t.join()
    ms = sorted(x * 1000 for x in lat)
    return {"p50_ms": statistics.median(ms), "p99_ms": ms[int(len(ms) * 0.99) - 1],
            "logins": dict(sorted(seen.items()))}  # fmt: skip


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
        proc, url = start(tokens, users)
        try:
            predictions(url, token, 200)  # warm-up
            quiet = phase(url, token, args.requests, 0, None)
            wrong = phase(url, token, args.requests, args.flooders, False)
            right = phase(url, token, args.requests, args.flooders, True)
        finally:
            proc.terminate()
            proc.wait(15)
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
