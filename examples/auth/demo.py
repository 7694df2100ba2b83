"""Bearer tokens: a token file made with ``inferwire auth token``, a login with a
password, and what a call without a token gets.

    python examples/auth/demo.py
"""

import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import inferwire
import numpy as np

folder = Path(tempfile.mkdtemp())
tokens, users = folder / "tokens.txt", folder / "users.txt"


def auth(*args: str, stdin: str = "") -> str:
    cmd = [sys.executable, "-m", "inferwire", "auth", *args]
    return subprocess.run(
        cmd, input=stdin, capture_output=True, text=True, check=True
    ).stdout.strip()


token = auth("token", "ci-bot", "--scopes", "predict", "--file", str(tokens))
auth("user", "alice", "--password-stdin", "--file", str(users), stdin="s3cret-pw\n")

with inferwire.local("echo", "--auth-tokens", tokens, "--auth-users", users) as server:
    with inferwire.Client(server.url) as anonymous:
        try:
            anonymous.predict(np.ones(2))
        except inferwire.AuthError as e:
            print("without a token:", e.status, e.message.split(":")[0])
    with inferwire.Client(server.url, token=token) as c:
        print("with the bot's token:", c.predict(np.ones(2)).tolist())
    login = httpx.post(server.url + "/login", json={"username": "alice", "password": "s3cret-pw"})
    with inferwire.Client(server.url, token=login.json()["access_token"]) as c:
        print("with alice's login token:", c.predict(np.array([1.0, 2.0])).tolist())
