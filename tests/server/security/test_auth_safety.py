"""Safe defaults around auth (issue 18): the repository API is refused on a server without
auth unless explicitly allowed; POST /login cannot be used to guess passwords quickly or to
stall other traffic; only the real readiness routes are open; signed tokens are checked
against the users file and the configured lifetime; the signing key can come from a file
or the environment instead of the command line. Every test uses a real server and client
and checks that the server keeps serving afterwards."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import pickle
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import tritonclient.grpc as triton
from conftest import TESTS
from test_auth import cli

PREDICT = "/api/v1.0/predictions"
BODY = {"data": {"ndarray": [[1.0, 2.0]]}}
PASSWORD = "correct horse battery staple"
OPT_IN = "--allow-unauthenticated-repository"
KEY = "0123456789abcdef-signing-key"


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("auth-safety")
    tokens, users = d / "tokens", d / "users"
    bot = cli("token", "bot", "--scopes", "predict", "--file", str(tokens))
    ops = cli("token", "ops", "--scopes", "predict,publish", "--file", str(tokens))
    for name in ("alice", "bob", "carol"):
        cli("user", name, "--password-stdin", "--file", str(users), stdin=PASSWORD)
    return {"dir": d, "tokens": tokens, "users": users, "bot": bot, "ops": ops}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def predicts(url: str, token: str | None = None) -> bool:
    r = httpx.post(url + PREDICT, json=BODY, headers=bearer(token) if token else {})
    return r.status_code == 200 and r.json()["data"]["ndarray"] == [[1.0, 2.0]]


def login(url: str, user: str, password: str) -> httpx.Response:
    return httpx.post(url + "/login", json={"username": user, "password": password}, timeout=30)


# 1. The repository API without auth.


class Evil:
    """What the review published: a pickle that runs a command when loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (os.system, (f"touch {self.marker}",))


def test_repository_writes_need_auth_or_the_opt_in(serve: Any, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    marker = tmp_path / "pwned"
    evil = pickle.dumps(Evil(marker))
    s = serve("models:Echo", "--model-repository", str(repo))
    assert "WARNING" not in s.log()
    r = httpx.post(s.url + "/api/v1.0/publish/evil/1?filename=m.joblib", content=evil)
    assert r.status_code == 403, r.text
    info = r.json()["status"]["info"]
    assert "runs without auth" in info and OPT_IN in info and "--auth-tokens" in info
    for method, path in [
        ("GET", "/api/v1.0/publish"),
        ("DELETE", "/api/v1.0/publish/evil/1"),
        ("POST", "/v2/repository/index"),
        ("POST", "/v2/repository/models/Echo/load"),
        ("POST", "/v2/repository/models/Echo/unload"),
    ]:
        r = httpx.request(method, s.url + path, json={})
        assert r.status_code == 403, (path, r.text)
        info = r.json()["status"]["info"] if path.startswith("/api") else r.json()["error"]
        assert OPT_IN in info, path
    client = triton.InferenceServerClient(s.grpc_target)
    for call in (
        client.get_model_repository_index,
        lambda: client.load_model("Echo"),
        lambda: client.unload_model("Echo"),
    ):
        with pytest.raises(triton.InferenceServerException) as e:
            call()
        assert e.value.status() == "StatusCode.PERMISSION_DENIED"
        assert OPT_IN in e.value.message()
    (tmp_path / "evil.joblib").write_bytes(evil)
    out = subprocess.run(
        [sys.executable, "-m", "inferwire", "publish", str(tmp_path / "evil.joblib"), "--name",
         "evil", "--version", "1", "--server", s.url],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 1 and OPT_IN in out.stderr, out.stderr
    assert not marker.exists() and list(repo.iterdir()) == []
    # Everything else is served as before.
    assert predicts(s.url)
    assert client.is_model_ready("Echo")
    assert httpx.get(s.url + "/v2/models/Echo/ready").status_code == 200


def test_the_opt_in_is_logged_and_auth_still_decides(
    serve: Any, tmp_path: Path, creds: dict[str, Any]
) -> None:
    s = serve("models:Echo", "--model-repository", str(tmp_path), OPT_IN)
    warning = [line for line in s.log().splitlines() if "WARNING" in line]
    assert len(warning) == 1, s.log()
    assert "allow_unauthenticated_repository" in warning[0]
    assert "publish and delete models" in warning[0] and "run code" in warning[0]
    r = httpx.post(s.url + "/v2/repository/index", json={})
    assert r.status_code == 200 and [m["name"] for m in r.json()] == ["Echo"]
    assert predicts(s.url)
    # With auth the token decides, and the opt-in changes nothing (and is not logged).
    a = serve("models:Echo", "--model-repository", str(tmp_path), OPT_IN,
              "--auth-tokens", str(creds["tokens"]))  # fmt: skip
    assert "WARNING" not in a.log()
    r = httpx.post(a.url + "/v2/repository/models/Echo/unload")
    assert r.status_code == 401 and "authentication required" in r.json()["error"]
    r = httpx.post(a.url + "/v2/repository/models/Echo/unload", headers=bearer(creds["bot"]))
    assert r.status_code == 403 and "publish scope" in r.json()["error"]
    r = httpx.post(a.url + "/v2/repository/index", json={}, headers=bearer(creds["ops"]))
    assert r.status_code == 200
    assert predicts(a.url, creds["bot"])


# 2. POST /login: failure limits, and no stall for everyone else.


def test_failed_logins_are_limited_per_user_and_client(serve: Any, creds: dict[str, Any]) -> None:
    # One signing key for both servers, so that a token from one works on the other.
    signed = ("--auth-users", str(creds["users"]), "--auth-secret", KEY)
    s = serve("models:Echo", *signed)
    for _ in range(5):
        r = login(s.url, "alice", "wrong")
        assert r.status_code == 401 and "wrong username or password" in r.json()["status"]["info"]
    # The 6th within the window: refused before any password check, even the right one.
    for password in ("wrong", PASSWORD):
        r = login(s.url, "alice", password)
        assert r.status_code == 429, r.text
        assert 1 <= int(r.headers["retry-after"]) <= 60
        assert "too many failed logins" in r.json()["status"]["info"]
    # Another user, from the same address, still logs in; a success resets the count.
    r = login(s.url, "bob", PASSWORD)
    assert r.status_code == 200
    assert predicts(s.url, r.json()["access_token"])
    for _ in range(4):
        assert login(s.url, "carol", "wrong").status_code == 401
    assert login(s.url, "carol", PASSWORD).status_code == 200
    for _ in range(5):
        assert login(s.url, "carol", "wrong").status_code == 401
    assert login(s.url, "carol", "wrong").status_code == 429

    # Per address: many usernames from one client hit its own limit.
    c = serve("models:Echo", *signed, "--login-client-failures", "4")
    for i in range(4):
        assert login(c.url, f"guess{i}", "wrong").status_code == 401
    r = login(c.url, "guess-new", "wrong")
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    assert "this address" in r.json()["status"]["info"]
    assert login(c.url, "bob", PASSWORD).status_code == 429  # the address is locked out
    token = login(s.url, "bob", PASSWORD).json()["access_token"]
    assert predicts(s.url, token) and predicts(c.url, token)


FLOOD = textwrap.dedent(
    """
    import json, os, sys, threading, httpx
    url, stop = sys.argv[1], sys.argv[2]
    counts, answered = {}, threading.Barrier(7)
    def loop(i):
        first, n = True, 0
        with httpx.Client(timeout=30) as c:
            while not os.path.exists(stop):
                n += 1
                user = f"u{i}-{n}"
                r = c.post(url + "/login", json={"username": user, "password": "wrong"})
                counts[r.status_code] = counts.get(r.status_code, 0) + 1
                if first:
                    first = False
                    answered.wait()
    threads = [threading.Thread(target=loop, args=(i,)) for i in range(6)]
    for t in threads: t.start()
    answered.wait()
    print("flooding", flush=True)
    for t in threads: t.join()
    print(json.dumps(counts))
    """
)


def p50(url: str, token: str, n: int = 1000) -> float:
    times = []
    with httpx.Client(headers=bearer(token)) as c:
        for _ in range(n):
            t = time.perf_counter()
            r = c.post(url + PREDICT, json=BODY)
            times.append(time.perf_counter() - t)
            assert r.status_code == 200
    return statistics.median(times)


@pytest.mark.parametrize("limits", ["default", "unlimited"])
def test_a_login_flood_does_not_stall_predictions(
    serve: Any, creds: dict[str, Any], tmp_path: Path, limits: str
) -> None:
    """Six threads (another process) send wrong-password logins as fast as they are
    answered. With the default limits they soon get 429 without hashing; with the limits
    raised out of reach every one is an argon2 check, which runs on a blocking thread, one
    at a time, never on the I/O threads. Either way authenticated predictions keep their
    median latency: at most 1.5x the median without the flood plus 2 ms of slack for this
    shared, noisy machine (before the fix it went from 1 ms to 90-570 ms)."""
    extra = [] if limits == "default" else ["--login-user-failures", "1000000",
                                            "--login-client-failures", "1000000"]  # fmt: skip
    s = serve("models:Echo", "--auth-tokens", str(creds["tokens"]),
              "--auth-users", str(creds["users"]), *extra)  # fmt: skip
    p50(s.url, creds["bot"], 30)  # warm up
    before = p50(s.url, creds["bot"])
    stop = tmp_path / "stop"
    flood = subprocess.Popen(
        [sys.executable, "-c", FLOOD, s.url, str(stop)], stdout=subprocess.PIPE, text=True
    )
    try:
        # Measure once every flood thread has had an answer.
        assert flood.stdout is not None and flood.stdout.readline() == "flooding\n"
        during = p50(s.url, creds["bot"])
    finally:
        stop.touch()
        out, _ = flood.communicate(timeout=60)
    counts = {int(k): v for k, v in json.loads(out).items()}
    print(f"p50 before {before * 1e3:.2f} ms, during {during * 1e3:.2f} ms; logins: {counts}")
    assert during <= 1.5 * before + 0.002, (before, during, counts)
    assert set(counts) == ({401, 429} if limits == "default" else {401}), counts
    # The server answered the flood and keeps serving; with the default limits this
    # address is locked out of logins for now, tokens it has still work.
    assert predicts(s.url, creds["bot"])
    assert login(s.url, "bob", PASSWORD).status_code == (429 if limits == "default" else 200)


# 3. Only the real readiness routes are open.


def test_crafted_ready_paths_need_a_token(serve: Any, creds: dict[str, Any]) -> None:
    s = serve("models:Echo", "--auth-tokens", str(creds["tokens"]))
    v2 = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]}
    for path in [
        "/v2/models/Echo/infer/ready",
        "/v2/models/ready",
        "/v2/models/Echo/versions/ready",
        "/v2/models/Echo/versions/ready/infer",
        "/v2/models//ready",
        "/v2/repository/models/Echo/ready",
        "/seldon/ns/dep/v2/models/Echo/infer/ready",
        "/api/Echo/ready",
    ]:
        for method in ("GET", "POST"):
            r = httpx.request(method, s.url + path, json=v2)
            assert r.status_code == 401, (method, path, r.text)
            assert "authentication required" in r.text, path
    for path in ["/v2/models/Echo/ready", "/v2/health/ready", "/ready", "/v2"]:
        assert httpx.get(s.url + path).status_code == 200, path
    r = httpx.post(s.url + "/v2/models/Echo/infer", json=v2, headers=bearer(creds["bot"]))
    assert r.status_code == 200
    assert predicts(s.url, creds["bot"])


# 4. Signed tokens: a current user, scopes within the user's, a lifetime within the TTL.


def forge(key: str, payload: dict[str, Any]) -> str:
    """A token signed as the server signs them (the key is known to the attacker)."""
    b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()  # noqa: E731
    body = b64(json.dumps(payload).encode())
    mac = hmac.new(key.encode(), body.encode(), hashlib.sha256).digest()
    return f"iw1.{body}.{b64(mac)}"


def test_forged_tokens_are_refused(serve: Any, creds: dict[str, Any]) -> None:
    s = serve("models:Echo", "--auth-users", str(creds["users"]), "--auth-secret", KEY,
              "--auth-token-ttl", "600")  # fmt: skip
    now = int(time.time())
    refused = {
        "its user is not in the users file": {"sub": "mallory", "scp": "predict,publish",
                                              "iat": now, "exp": now + 60},
        "lifetime is longer than auth_token_ttl": {"sub": "alice", "scp": "predict",
                                                   "iat": now, "exp": now + 10 * 365 * 86400},
        "no issue time (iat)": {"sub": "alice", "scp": "predict", "exp": now + 60},
        "wider than its user's": {"sub": "alice", "scp": "predict,publish",
                                  "iat": now, "exp": now + 60},
    }  # fmt: skip
    for message, payload in refused.items():
        r = httpx.post(s.url + PREDICT, json=BODY, headers=bearer(forge(KEY, payload)))
        assert r.status_code == 401, (message, r.text)
        assert message in r.json()["status"]["info"]
    # The same forgery within the rules is what a login hands out: accepted.
    fine = forge(KEY, {"sub": "alice", "scp": "predict", "iat": now, "exp": now + 600})
    assert predicts(s.url, fine)
    assert predicts(s.url, login(s.url, "alice", PASSWORD).json()["access_token"])


# 5. The signing key from a file or the environment, not the command line.


def test_signing_key_from_a_file_or_the_environment(
    serve: Any, creds: dict[str, Any], tmp_path: Path
) -> None:
    key_file = tmp_path / "signing-key"
    key_file.write_text(f"  {KEY}\n")
    a = serve("models:Echo", "--auth-users", str(creds["users"]),
              "--auth-secret-file", str(key_file))  # fmt: skip
    b = serve("models:Echo", "--auth-users", str(creds["users"]),
              env={"INFERWIRE_AUTH_SECRET": KEY})  # fmt: skip
    assert KEY not in " ".join(a.proc.args) + " ".join(b.proc.args)  # type: ignore[arg-type]
    # Both sign with the trimmed key: a token from one is accepted by the other.
    token = login(a.url, "alice", PASSWORD).json()["access_token"]
    assert predicts(b.url, token)
    token = login(b.url, "alice", PASSWORD).json()["access_token"]
    assert predicts(a.url, token)
    now = int(time.time())
    assert predicts(a.url, forge(KEY, {"sub": "alice", "scp": "predict", "iat": now,
                                       "exp": now + 60}))  # fmt: skip
    for content, message in [
        (None, "auth_secret_file: "),
        ("short\n", "holds 5 characters (after trimming); the key needs at least 16"),
    ]:
        bad = tmp_path / "bad-key"
        if content is not None:
            bad.write_text(content)
        r = subprocess.run(
            [sys.executable, "-m", "inferwire", "serve", "models:Echo", "--auth-users",
             str(creds["users"]), "--auth-secret-file", str(bad)],
            cwd=TESTS, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert r.returncode == 2 and message in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "inferwire", "serve", "models:Echo", "--auth-secret", KEY,
         "--auth-secret-file", str(key_file)],
        cwd=TESTS, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2 and "give one of them, not both" in r.stderr
    assert predicts(a.url, token) and predicts(b.url, token)
