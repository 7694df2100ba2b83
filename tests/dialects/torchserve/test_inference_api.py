"""`inferwire torchserve` serving archives `torch-model-archiver` made, over TorchServe's
inference API as its users call it: `/ping`, `/predictions/{model}[/{version}]`,
`/explanations`, the body and query parameters a handler gets, batches under the
archive's `batchSize`, and TorchServe's error bodies and codes."""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from torchserve_archives import (
    VENDOR,
    archive,
    archive_site,
    handler_file,
    needs_ts,
    streaming_handler_source,
)
from torchserve_server import TorchServe

# Answers each request with what it got and the size of the batch it came in.
BATCH_REPORTER = """
import json
import time


def handle(data, context):
    if data is None:
        return None
    time.sleep(0.05)  # long enough for concurrent requests to join the next batch
    out = []
    for i, row in enumerate(data):
        body = row.get("body", row.get("data"))
        if isinstance(body, (bytes, bytearray)):
            body = body.decode()
        out.append({
            "batch": len(data),
            "body": body,
            "explain": context.get_request_header(i, "explain"),
            "agent": context.get_request_header(i, "user-agent"),
            "keys": sorted(row),
        })
    return out
"""

# Sets its own status, content type and header; fails on request.
REPLIER = """
def handle(data, context):
    if data is None:
        return None
    out = []
    for i, row in enumerate(data):
        body = bytes(row["body"])
        if body == b"fail":
            raise ValueError("asked to fail")
        context.set_response_content_type(i, "text/plain")
        context.set_response_status(201, "Made", i)
        context.set_response_header(i, "x-handler", "replier")
        out.append(body.upper())
    return out
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TorchServe]:
    tmp = tmp_path_factory.mktemp("ts")
    store = tmp / "store"
    store.mkdir()
    archive(store, "echo", VENDOR / "echo" / "handler.py")
    config = tmp / "batch.yaml"
    config.write_text("batchSize: 4\nmaxBatchDelay: 200\n")
    archive(store, "batches", handler_file(tmp, "batches.py", BATCH_REPORTER), config=config)
    archive(store, "replier", handler_file(tmp, "replier.py", REPLIER), version="2.0")
    s = TorchServe(store, "echo.mar", "batches=batches.mar", "replier.mar")
    yield s
    s.stop()


def test_ping_is_torchserve_s(server: TorchServe) -> None:
    r = httpx.get(f"{server.url}/ping")
    assert r.status_code == 200 and r.json() == {"status": "Healthy"}


def test_torchserve_s_echo_handler_gets_the_data_parameter(server: TorchServe) -> None:
    r = httpx.post(f"{server.url}/predictions/echo", params={"data": "hello"})
    assert r.status_code == 200 and r.text == "hello"


def test_a_body_reaches_the_handler_as_torchserve_gives_it(server: TorchServe) -> None:
    r = httpx.post(f"{server.url}/predictions/batches", json={"x": [1, 2]})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["body"] == {"x": [1, 2]}  # JSON decoded for application/json
    assert got["keys"] == ["body"] and got["explain"] is None
    assert got["agent"].startswith("python-httpx")
    text = httpx.post(
        f"{server.url}/predictions/batches/1.0",
        content=b"plain words",
        headers={"content-type": "text/plain"},
    ).json()
    assert text["body"] == "plain words"
    explained = httpx.post(f"{server.url}/explanations/batches", content=b"x").json()
    assert explained["explain"] == "True"


def test_concurrent_requests_are_batched_up_to_batch_size(server: TorchServe) -> None:
    def one(i: int) -> dict[str, object]:
        r = httpx.post(
            f"{server.url}/predictions/batches",
            content=f"r{i}".encode(),
            headers={"content-type": "application/octet-stream"},
            timeout=20,
        )
        assert r.status_code == 200, r.text
        return dict(r.json())

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, range(8)))
    assert sorted(a["body"] for a in answers) == sorted(f"r{i}" for i in range(8))
    sizes = [int(str(a["batch"])) for a in answers]
    assert max(sizes) > 1 and max(sizes) <= 4, sizes


@needs_ts
def test_torchserve_s_streaming_handler_s_pieces_all_arrive(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    handler = handler_file(tmp_path / "src", "stream_handler.py", streaming_handler_source())
    archive(store, "tp_model", handler)
    s = TorchServe(store, "tp_model.mar")
    try:
        r = httpx.post(f"{s.url}/predictions/tp_model", content=b"x")
        assert r.status_code == 200, r.text
        assert r.content == b"hello" * 3 + b"hello world "
        # TorchServe's chunked reply: its head is the first piece's, stream marker and all.
        assert r.headers["transfer-encoding"] == "chunked"
        assert r.headers["ts_stream_next"] == "true"
    finally:
        s.stop()


def test_the_handler_s_status_type_and_headers_go_back(server: TorchServe) -> None:
    r = httpx.post(f"{server.url}/predictions/replier", content=b"abc")
    assert r.status_code == 201, r.text
    assert r.text == "ABC"
    assert r.headers["content-type"] == "text/plain"
    assert r.headers["x-handler"] == "replier"


def test_errors_are_torchserve_s(server: TorchServe) -> None:
    failed = httpx.post(f"{server.url}/predictions/replier", content=b"fail")
    assert failed.status_code == 503
    assert failed.json() == {
        "code": 503,
        "type": "InternalServerException",
        "message": "Prediction failed",
    }
    # The model goes on serving.
    assert httpx.post(f"{server.url}/predictions/replier", content=b"ok").text == "OK"
    unknown = httpx.post(f"{server.url}/predictions/nope", content=b"x")
    assert unknown.status_code == 404
    assert unknown.json() == {
        "code": 404,
        "type": "ModelNotFoundException",
        "message": "Model not found: nope",
    }
    version = httpx.post(f"{server.url}/predictions/replier/9.9", content=b"x")
    assert version.status_code == 404
    assert version.json()["message"] == "Model version: 9.9 does not exist for model: replier"
    method = httpx.get(f"{server.url}/predictions/replier")
    assert method.status_code == 405
    assert method.json()["type"] == "MethodNotAllowedException"
    nowhere = httpx.get(f"{server.url}/no/such/path")
    assert nowhere.status_code == 404
    assert nowhere.json() == {
        "code": 404,
        "type": "ResourceNotFoundException",
        "message": "Requested resource is not found, please refer to API document.",
    }
    big = httpx.post(f"{server.url}/predictions/echo", content=b"x" * 7_000_000)
    assert big.status_code == 413
    assert big.json()["type"] == "RequestTooLargeException"


def test_token_authorization_on_by_default_takes_the_inference_key_only(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    archive(store, "echo", VENDOR / "echo" / "handler.py")
    s = TorchServe(store, "echo.mar", tokens=True)
    try:
        key_file = tmp_path / "key_file.json"
        assert key_file.stat().st_mode & 0o777 == 0o600
        keys = json.loads(key_file.read_text())
        url = f"{s.url}/predictions/echo?data=hi"
        ok = httpx.post(url, headers=s.headers)
        assert ok.status_code == 200 and ok.text == "hi"
        refused = {
            "no key": {},
            "the management key": {"Authorization": f"Bearer {keys['management']['key']}"},
            "the API key": {"Authorization": f"Bearer {keys['API']['key']}"},
            "a wrong key": {"Authorization": "Bearer nope"},
        }
        for why, headers in refused.items():
            r = httpx.post(url, headers=headers)
            assert r.status_code == 400, why
            assert r.json() == {
                "code": 400,
                "type": "InvalidKeyException",
                "message": "Token Authorization failed. Token either incorrect, expired, or "
                "not provided correctly",
            }, why
        assert httpx.get(f"{s.url}/ping").status_code == 400
        # A key replaced in the file (TorchServe's token API does this) is the key at once.
        keys["inference"]["key"] = "replaced-key"
        key_file.write_text(json.dumps(keys))
        assert httpx.post(url, headers=s.headers).status_code == 400
        replaced = httpx.post(url, headers={"Authorization": "Bearer replaced-key"})
        assert replaced.status_code == 200
    finally:
        s.stop()
    assert not key_file.exists(), "the key file goes when the server stops"


def test_the_management_api_lists_describes_registers_and_unregisters(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    archive(store, "echo", VENDOR / "echo" / "handler.py")
    archive(store, "later", VENDOR / "echo" / "handler.py", version="3.0")
    s = TorchServe(store, "echo.mar", extra="enable_model_api=true\n", tokens=True)
    mgmt = f"http://127.0.0.1:{s.mgmt}"
    keys = json.loads((tmp_path / "key_file.json").read_text())
    auth = {"Authorization": f"Bearer {keys['management']['key']}"}
    try:
        # The management key, not the inference key.
        assert httpx.get(f"{mgmt}/models", headers=s.headers).status_code == 400
        listed = httpx.get(f"{mgmt}/models", headers=auth)
        assert listed.status_code == 200, listed.text
        assert listed.json() == {"models": [{"modelName": "echo", "modelUrl": "echo.mar"}]}
        described = httpx.get(f"{mgmt}/models/echo", headers=auth).json()
        assert described[0]["modelName"] == "echo"
        assert described[0]["modelVersion"] == "1.0"
        assert described[0]["modelUrl"] == "echo.mar"
        assert described[0]["batchSize"] == 1
        # Management routes are not on the inference port, nor inference on this one.
        assert httpx.get(f"{s.url}/models", headers=s.headers).status_code == 404
        assert httpx.post(f"{mgmt}/predictions/echo", headers=auth).status_code == 404
        registered = httpx.post(f"{mgmt}/models", params={"url": "later.mar"}, headers=auth)
        assert registered.status_code == 200, registered.text
        assert registered.json() == {
            "status": 'Model "later" Version: 3.0 registered with 1 initial workers'
        }
        r = httpx.post(f"{s.url}/predictions/later", params={"data": "x"}, headers=s.headers)
        assert r.status_code == 200 and r.text == "x"
        again = httpx.post(f"{mgmt}/models", params={"url": "later.mar"}, headers=auth)
        assert again.status_code == 409
        assert again.json()["type"] == "ConflictStatusException"
        for bad in ("../store/later.mar", "nothing.mar", "https://example.com/x.mar"):
            params = {"url": bad, "model_name": "bad"}
            refused = httpx.post(f"{mgmt}/models", params=params, headers=auth)
            assert refused.status_code in (400, 404), (bad, refused.text)
        scaled = httpx.put(f"{mgmt}/models/later", params={"min_worker": 3}, headers=auth)
        assert scaled.status_code == 200, scaled.text
        assert "min_worker=3 changes nothing" in scaled.json()["status"]
        bad_scale = httpx.put(f"{mgmt}/models/later", params={"min_worker": "x"}, headers=auth)
        assert bad_scale.status_code == 400
        default = httpx.put(f"{mgmt}/models/later/3.0/set-default", headers=auth)
        assert default.status_code == 200
        assert default.json() == {
            "status": 'Default version successfully updated for model "later" to "3.0"'
        }
        assert httpx.put(f"{mgmt}/models/later/9.0/set-default", headers=auth).status_code == 404
        gone = httpx.delete(f"{mgmt}/models/later", headers=auth)
        assert gone.status_code == 200 and gone.json() == {"status": 'Model "later" unregistered'}
        after = httpx.post(f"{s.url}/predictions/later", params={"data": "x"}, headers=s.headers)
        assert after.status_code == 404
    finally:
        s.stop()


def test_the_token_api_replaces_a_key_with_the_api_key(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    archive(store, "echo", VENDOR / "echo" / "handler.py")
    s = TorchServe(store, "echo.mar", extra="token_expiration_min=5\n", tokens=True)
    mgmt = f"http://127.0.0.1:{s.mgmt}"
    key_file = tmp_path / "key_file.json"
    keys = json.loads(key_file.read_text())
    api = {"Authorization": f"Bearer {keys['API']['key']}"}
    url = f"{s.url}/predictions/echo?data=z"
    try:
        for refused in (
            httpx.get(f"{mgmt}/token", params={"type": "inference"}, headers=s.headers),
            httpx.get(f"{mgmt}/token", params={"type": "API"}, headers=api),
            httpx.get(f"{mgmt}/token", headers=api),
        ):
            assert refused.status_code == 400
            assert refused.json()["type"] == "InvalidKeyException"
        renewed = httpx.get(f"{mgmt}/token", params={"type": "inference"}, headers=api)
        assert renewed.status_code == 200 and renewed.text == ""
        assert httpx.post(url, headers=s.headers).status_code == 400, "the old key is gone"
        new = json.loads(key_file.read_text())
        assert new["management"] == keys["management"] and new["API"] == keys["API"]
        fresh = {"Authorization": f"Bearer {new['inference']['key']}"}
        assert httpx.post(url, headers=fresh).text == "z"
        assert key_file.stat().st_mode & 0o777 == 0o600
    finally:
        s.stop()


def test_without_enable_model_api_nothing_registers(server: TorchServe) -> None:
    mgmt = f"http://127.0.0.1:{server.mgmt}"
    r = httpx.post(f"{mgmt}/models", params={"url": "echo.mar", "model_name": "again"})
    assert r.status_code == 405
    assert r.json()["type"] == "ModelAPIDisabledException"
    assert httpx.delete(f"{mgmt}/models/echo").status_code == 405
    assert httpx.post(f"{server.url}/predictions/echo", params={"data": "y"}).text == "y"


def test_register_from_a_url_only_where_allowed_urls_allows(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    with archive_site(tmp_path / "site") as base:
        s = TorchServe(store, extra=f"enable_model_api=true\nallowed_urls={base}/good/.*\n")
        mgmt = f"http://127.0.0.1:{s.mgmt}"
        try:
            ok = httpx.post(f"{mgmt}/models", params={"url": f"{base}/good/echo.mar"}, timeout=60)
            assert ok.status_code == 200, ok.text
            r = httpx.post(f"{s.url}/predictions/echo", params={"data": "fetched"})
            assert r.text == "fetched"
            for url in (f"{base}/bad/echo.mar", f"{base}/good/jump.mar"):
                params = {"url": url, "model_name": "other"}
                refused = httpx.post(f"{mgmt}/models", params=params, timeout=60)
                assert refused.status_code == 400, refused.text
                assert "does not match any allowed URL(s)" in refused.json()["message"]
            missing = httpx.post(
                f"{mgmt}/models", params={"url": f"{base}/good/none.mar", "model_name": "n"}
            )
            assert missing.status_code == 400
            assert "Failed to download archive from" in missing.json()["message"]
        finally:
            s.stop()


def test_model_snapshot_as_kserve_writes_it_loads_and_sets_the_batch(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    archive(store, "batches", handler_file(tmp_path / "src", "batches.py", BATCH_REPORTER))
    snapshot = {
        "name": "startup.cfg",
        "modelCount": 1,
        "models": {
            "reporter": {
                "1.0": {
                    "defaultVersion": True,
                    "marName": "batches.mar",
                    "minWorkers": 1,
                    "maxWorkers": 1,
                    "batchSize": 2,
                    "maxBatchDelay": 300,
                    "responseTimeout": 120,
                }
            }
        },
    }
    s = TorchServe(store, extra=f"model_snapshot={json.dumps(snapshot)}\n")

    def one(i: int) -> int:
        r = httpx.post(f"{s.url}/predictions/reporter", content=f"{i}".encode(), timeout=20)
        assert r.status_code == 200, r.text
        return int(r.json()["batch"])

    try:
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            sizes = list(pool.map(one, range(6)))
        assert max(sizes) == 2, sizes
    finally:
        s.stop()
