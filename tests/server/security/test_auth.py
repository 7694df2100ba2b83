"""Bearer-token auth over REST and gRPC: tokens from a file of hashes, logins that
exchange a password for a short-lived signed token, scopes, open health routes, every
refusal path with its status and message, and no secret in the logs."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import json_format

PREDICT = "/api/v1.0/predictions"
BODY = {"data": {"ndarray": [[1.0, 2.0]]}}
PASSWORD = "correct horse battery staple"


def cli(*args: str, stdin: str = "") -> str:
    r = subprocess.run(
        [sys.executable, "-m", "inferwire", "auth", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture(scope="module")
def secrets_dir(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("auth")
    tokens, users = d / "tokens", d / "users"
    bot = cli("token", "bot", "--scopes", "predict", "--file", str(tokens))
    ops = cli("token", "ops", "--scopes", "predict,publish", "--file", str(tokens))
    cli("user", "alice", "--password-stdin", "--file", str(users), stdin=PASSWORD + "\n")
    return {"tokens": tokens, "users": users, "bot": bot, "ops": ops}


@pytest.fixture(scope="module")
def server(serve: Any, secrets_dir: dict[str, Any]) -> Any:
    return serve(
        "models:Echo",
        "--auth-tokens", str(secrets_dir["tokens"]),
        "--auth-users", str(secrets_dir["users"]),
        "--access-log", "text",
    )  # fmt: skip


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_files_hold_hashes_only(secrets_dir: dict[str, Any]) -> None:
    text = secrets_dir["tokens"].read_text() + secrets_dir["users"].read_text()
    assert secrets_dir["bot"] not in text and PASSWORD not in text
    assert "$argon2id$" in secrets_dir["users"].read_text()
    assert oct(secrets_dir["tokens"].stat().st_mode & 0o777) == "0o600"


def test_rest_refusals_and_open_routes(server: Any, secrets_dir: dict[str, Any]) -> None:
    url = server.url
    r = httpx.post(url + PREDICT, json=BODY)
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == 'Bearer realm="inferwire"'
    assert "authentication required" in r.json()["status"]["info"]
    assert "POST /login" in r.json()["status"]["info"]  # this server has a user file
    r = httpx.post(url + PREDICT, json=BODY, headers=bearer("nope"))
    assert r.status_code == 401 and "unknown token" in r.json()["status"]["info"]
    r = httpx.post(url + PREDICT, json=BODY, headers={"Authorization": "Basic YTpi"})
    assert r.status_code == 401 and "Bearer <token>" in r.json()["status"]["info"]
    r = httpx.post(url + PREDICT, json=BODY, headers=bearer(secrets_dir["bot"]))
    assert r.status_code == 200 and r.json()["data"]["ndarray"] == [[1.0, 2.0]]
    v2 = {"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]}
    r = httpx.post(url + "/v2/models/Echo/infer", json=v2)
    assert r.status_code == 401 and "authentication required" in r.json()["error"]
    r = httpx.post(url + "/v2/models/Echo/infer", json=v2, headers=bearer(secrets_dir["bot"]))
    assert r.status_code == 200
    # The repository API needs the publish scope.
    r = httpx.post(url + "/v2/repository/models/x/load", headers=bearer(secrets_dir["bot"]))
    assert r.status_code == 403
    assert "bot's token does not have the publish scope" in r.json()["error"]
    r = httpx.post(url + "/v2/repository/models/x/load", headers=bearer(secrets_dir["ops"]))
    assert r.status_code not in (401, 403)
    for path in ("/health/ping", "/live", "/ready", "/v2/health/ready", "/v2/health/live",
                 "/metrics", "/v2/models/Echo/ready"):  # fmt: skip
        assert httpx.get(url + path).status_code == 200, path


def test_login_exchanges_a_password_for_a_token(server: Any) -> None:
    url = server.url
    r = httpx.post(url + "/login", json={"username": "alice", "password": PASSWORD})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600
    assert body["expires_on"] > time.time() + 3500
    r = httpx.post(url + PREDICT, json=BODY, headers=bearer(body["access_token"]))
    assert r.status_code == 200
    r = httpx.post(url + "/v2/repository/models/x/load", headers=bearer(body["access_token"]))
    assert r.status_code == 403 and "alice's token" in r.json()["error"]
    tampered = body["access_token"][:-2] + ("AA" if body["access_token"][-2:] != "AA" else "BB")
    r = httpx.post(url + PREDICT, json=BODY, headers=bearer(tampered))
    assert r.status_code == 401 and "bad signature" in r.json()["status"]["info"]
    wrong = httpx.post(url + "/login", json={"username": "alice", "password": "nope"})
    unknown = httpx.post(url + "/login", json={"username": "mallory", "password": "x"})
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json()["status"]["info"] == unknown.json()["status"]["info"]
    assert "wrong username or password" in wrong.json()["status"]["info"]
    assert httpx.get(url + "/login").status_code == 405
    r = httpx.post(url + "/login", content=b"user=alice")
    assert r.status_code == 400 and "username" in r.json()["status"]["info"]
    r = httpx.post(url + "/login", content=b"x" * 70_000)  # past the 64 KiB a login may be
    assert r.status_code == 413


def test_grpc_refusals_and_scopes(server: Any, secrets_dir: dict[str, Any], pb: Any) -> None:
    import tritonclient.grpc as triton

    msg = json_format.ParseDict(BODY, pb.msgs.SeldonMessage())
    with server.channel() as ch:
        stub = pb.grpc.SeldonStub(ch)
        with pytest.raises(grpc.RpcError) as e:
            stub.Predict(msg, timeout=10)
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "authentication required" in (e.value.details() or "")
        with pytest.raises(grpc.RpcError) as e:
            stub.Predict(msg, timeout=10, metadata=[("authorization", "Bearer nope")])
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
        reply = stub.Predict(
            msg, timeout=10, metadata=[("authorization", f"Bearer {secrets_dir['bot']}")]
        )
        assert json_format.MessageToDict(reply)["data"]["ndarray"] == [[1.0, 2.0]]
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        health = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
    client = triton.InferenceServerClient(server.grpc_target)
    assert client.is_server_live()  # open
    i = triton.InferInput("x", [1], "FP32")
    import numpy as np

    i.set_data_from_numpy(np.ones(1, dtype=np.float32))
    with pytest.raises(Exception, match="authentication required"):
        client.infer("Echo", [i])
    res = client.infer("Echo", [i], headers={"authorization": f"Bearer {secrets_dir['bot']}"})
    assert res.as_numpy("output-0").tolist() == [1.0]
    with pytest.raises(Exception, match="publish scope"):
        client.load_model("Echo", headers={"authorization": f"Bearer {secrets_dir['bot']}"})


def test_no_secret_reaches_the_logs(server: Any, secrets_dir: dict[str, Any]) -> None:
    httpx.post(server.url + "/login", json={"username": "alice", "password": PASSWORD})
    httpx.post(server.url + PREDICT, json=BODY, headers=bearer(secrets_dir["bot"]))
    log = server.log()
    assert "access " in log  # the access log is on, and says nothing secret
    for secret in (secrets_dir["bot"], secrets_dir["ops"], PASSWORD):
        assert secret not in log


def test_tokens_work_across_workers_and_expire(serve: Any, secrets_dir: dict[str, Any]) -> None:
    s = serve(
        "models:Echo", "--workers", "2", "--auth-users", str(secrets_dir["users"]),
        "--auth-token-ttl", "4",
    )  # fmt: skip
    login = httpx.post(s.url + "/login", json={"username": "alice", "password": PASSWORD}).json()
    token, expires_on = login["access_token"], login["expires_on"]
    # Fresh connections land on either worker: all accept the token while it is valid.
    # Expiry is in whole seconds, so only requests sent a second before it must pass (a
    # loaded machine may take that long for the 20).
    accepted = 0
    for _ in range(20):
        if time.time() >= expires_on - 1:
            break
        r = httpx.post(s.url + PREDICT, json=BODY, headers=bearer(token))
        assert r.status_code == 200, r.text
        accepted += 1
    assert accepted >= 2
    time.sleep(max(0.0, expires_on + 1.1 - time.time()))
    r = httpx.post(s.url + PREDICT, json=BODY, headers=bearer(token))
    assert r.status_code == 401 and "expired" in r.json()["status"]["info"]


def test_auth_off_and_bad_files(serve: Any, tmp_path: Path) -> None:
    s = serve("models:Echo")
    assert httpx.post(s.url + PREDICT, json=BODY).status_code == 200
    r = httpx.post(s.url + "/login", json={"username": "a", "password": "b"})
    assert r.status_code == 404 and "without auth" in r.json()["status"]["info"]
    # Tokens only: the refusal does not send the client to a /login that would answer 404.
    tokens = tmp_path / "good-tokens"
    cli("token", "bot", "--scopes", "predict", "--file", str(tokens))
    s = serve("models:Echo", "--auth-tokens", str(tokens))
    info = httpx.post(s.url + PREDICT, json=BODY).json()["status"]["info"]
    assert "authentication required" in info and "token file" in info
    assert "/login" not in info
    bad = tmp_path / "tokens"
    bad.write_text("bot predict\n")
    with pytest.raises(RuntimeError, match="line 1: expected NAME SCOPES HASH"):
        serve("models:Echo", "--auth-tokens", str(bad))
    with pytest.raises(RuntimeError, match="is not a file"):
        serve("models:Echo", "--auth-tokens", str(tmp_path / "missing"))
