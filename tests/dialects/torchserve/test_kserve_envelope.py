"""`inferwire torchserve` as KServe's `kserve-torchserve` runtime runs it: the service
envelope KServe sets (`TS_SERVICE_ENVELOPE`, read under `enable_envvars_config=true`, or
config.properties' `service_envelope`) around a handler written for TorchServe (the
vendored echo handler, no torch), KServe's v1 and V2 requests on the KServe wrapper's
port and on the inference port, as TorchServe's KServe image answers them."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import free_port
from torchserve_archives import VENDOR, archive, handler_file
from torchserve_server import TorchServe


def _serve(tmp: Path, monkeypatch: pytest.MonkeyPatch, envelope: str, by_env: bool) -> TorchServe:
    store = tmp / "model-store"
    store.mkdir()
    archive(store, "echo", VENDOR / "echo" / "handler.py")
    kserve_port = free_port()
    monkeypatch.setenv("INFERWIRE_KSERVE_PORT", str(kserve_port))
    # kservev2's gRPC port (8081 by default) on a free one too (test_kserve_grpc.py).
    monkeypatch.setenv("INFERWIRE_KSERVE_GRPC_PORT", str(free_port()))
    if by_env:
        monkeypatch.setenv("TS_SERVICE_ENVELOPE", envelope)
        extra = "enable_envvars_config=true\n"
    else:
        extra = f"service_envelope={envelope}\n"
    server = TorchServe(store, "echo.mar", extra=extra)
    server.kserve = f"http://127.0.0.1:{kserve_port}"  # type: ignore[attr-defined]
    return server


@pytest.fixture(scope="module")
def v1(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TorchServe]:
    with pytest.MonkeyPatch.context() as mp:
        s = _serve(tmp_path_factory.mktemp("kserve"), mp, "kserve", by_env=True)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def v2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TorchServe]:
    with pytest.MonkeyPatch.context() as mp:
        s = _serve(tmp_path_factory.mktemp("kservev2"), mp, "kservev2", by_env=False)
    yield s
    s.stop()


def test_v1_instances_go_to_the_handler_and_come_back_as_predictions(v1: TorchServe) -> None:
    body = {"instances": [{"data": "a"}, {"data": [1, 2]}]}
    for url in (v1.kserve, v1.url):  # type: ignore[attr-defined]
        r = httpx.post(f"{url}/v1/models/echo:predict", json=body)
        assert r.status_code == 200, r.text
        # The echo handler returns each row's "data": the rows are the instances.
        assert r.json() == {"predictions": ["a", [1, 2]]}
    r = httpx.post(f"{v1.kserve}/v1/models/echo:explain", json=body)  # type: ignore[attr-defined]
    assert r.json() == {"explanations": ["a", [1, 2]]}
    # The envelope wraps the model, so TorchServe's own route answers KServe's shape too.
    r = httpx.post(f"{v1.url}/predictions/echo", json=body)
    assert r.json() == {"predictions": ["a", [1, 2]]}


def test_v1_model_readiness_and_list_as_kserve_s_model_server(v1: TorchServe) -> None:
    k = v1.kserve  # type: ignore[attr-defined]
    assert httpx.get(f"{k}/v1/models/echo").json() == {"name": "echo", "ready": True}
    assert httpx.get(f"{k}/v1/models").json() == {"models": ["echo"]}
    assert httpx.get(f"{k}/v2/health/ready").status_code == 200
    assert httpx.get(f"{k}/v2/models/echo/ready").status_code == 200
    missing = httpx.get(f"{k}/v1/models/nope")
    assert missing.status_code == 404 and "nope" in missing.json()["error"]
    # TorchServe's own API is not on the wrapper's port.
    assert httpx.post(f"{k}/predictions/echo", json={}).status_code == 404


def test_v1_bad_requests_are_refused_naming_what_is_wrong(v1: TorchServe) -> None:
    k = v1.kserve  # type: ignore[attr-defined]
    r = httpx.post(f"{k}/v1/models/echo:predict", json={"instances": 3})
    # The envelope's words, as KServe's {"error": ...}.
    assert r.status_code == 400 and r.json()["error"].startswith('"instances"'), r.text
    r = httpx.post(
        f"{k}/v1/models/echo:predict",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400, r.text
    assert httpx.post(f"{k}/v1/models/nope:predict", json={"instances": []}).status_code == 404
    assert httpx.post(f"{k}/v1/models/echo:frobnicate", json={}).status_code == 404


def test_v2_inputs_reshaped_for_the_handler_and_its_output_named_after_them(
    v2: TorchServe,
) -> None:
    body = {
        "id": "req-1",
        "inputs": [
            {"name": "x", "shape": [2, 2], "datatype": "INT64", "data": [1, 2, 3, 4]},
            {"name": "t", "shape": [1], "datatype": "BYTES", "data": ["hello"]},
        ],
    }
    for url in (v2.kserve, v2.url):  # type: ignore[attr-defined]
        r = httpx.post(f"{url}/v2/models/echo/infer", json=body)
        assert r.status_code == 200, r.text
        assert r.json() == {
            "id": "req-1",
            "model_name": "echo",
            "model_version": "1.0",
            "outputs": [
                # The handler got [[1, 2], [3, 4]] and "hello"; each goes back flattened.
                {"name": "x", "datatype": "INT64", "data": [1, 2, 3, 4], "shape": [4]},
                {"name": "t", "datatype": "BYTES", "data": ["hello"], "shape": [1]},
            ],
        }
    no_id = httpx.post(
        f"{v2.kserve}/v2/models/echo/infer",  # type: ignore[attr-defined]
        json={"inputs": [{"name": "f", "shape": [2], "datatype": "FP32", "data": [0.5, 1.5]}]},
    ).json()
    assert no_id["id"] and no_id["outputs"] == [
        {"name": "f", "datatype": "FP64", "data": [0.5, 1.5], "shape": [2]}
    ]


def test_v2_bad_inputs_are_refused_naming_the_input(v2: TorchServe) -> None:
    k = v2.kserve  # type: ignore[attr-defined]
    bad = {"inputs": [{"name": "x", "shape": [3], "datatype": "INT64", "data": [1, 2]}]}
    r = httpx.post(f"{k}/v2/models/echo/infer", json=bad)
    assert r.status_code == 400 and r.json()["error"].startswith("inputs[0] ('x')"), r.text
    r = httpx.post(f"{k}/v2/models/echo/infer", json={"inputs": "x"})
    assert r.status_code == 400 and r.json()["error"].startswith('"inputs"'), r.text


# Each instance back with the number of instances its handler call got.
COUNTER = """
def handle(data, context):
    if data is None:
        return None
    return [{"instance": row, "call": len(data)} for row in data]
"""


def test_a_batch_s_instances_go_to_the_handler_together_and_back_to_their_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TorchServe's kserve envelope reads only a batch's first request; here each request
    of a batch (batchSize 4) gets the predictions of its own instances."""
    store = tmp_path / "model-store"
    store.mkdir()
    archive(store, "counter", handler_file(tmp_path / "src", "counter.py", COUNTER))
    port = free_port()
    monkeypatch.setenv("INFERWIRE_KSERVE_PORT", str(port))
    extra = (
        "service_envelope=kserve\n"
        'models={"counter": {"1.0": {"batchSize": 4, "maxBatchDelay": 500}}}\n'
    )
    server = TorchServe(store, "counter.mar", extra=extra)
    try:
        url = f"http://127.0.0.1:{port}/v1/models/counter:predict"

        def ask(i: int) -> tuple[int, httpx.Response]:
            instances = [f"r{i}-{j}" for j in range(i + 1)]
            return i, httpx.post(url, json={"instances": instances}, timeout=30)

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(ask, range(4)))
        seen = []  # (the request's instances, the instances of its handler call)
        for i, r in answers:
            assert r.status_code == 200, r.text
            predictions = r.json()["predictions"]
            assert [p["instance"] for p in predictions] == [f"r{i}-{j}" for j in range(i + 1)]
            seen.append((i + 1, predictions[0]["call"]))
        # Some handler call held other requests' instances too: they were batched.
        assert any(call > own for own, call in seen), seen
    finally:
        server.stop()
