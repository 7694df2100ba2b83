"""Triton's statistics and model configuration extensions, driven by tritonclient's own
HTTP and gRPC clients (as perf_analyzer and Triton users call them) and by plain httpx
for the JSON shape."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from conftest import Served
from tritonclient.utils import InferenceServerException

DURATIONS = [
    "success",
    "fail",
    "queue",
    "compute_input",
    "compute_infer",
    "compute_output",
    "cache_hit",
    "cache_miss",
]


@pytest.fixture(scope="module")
def plain(serve: Any) -> Served:
    return serve("triton_models:Described", "--model-name", "desc", "--model-version", "2")


@pytest.fixture(scope="module")
def batching(serve: Any) -> Served:
    return serve(
        "triton_models:Described",
        "--model-name",
        "desc",
        "--max-batch-size",
        "4",
        "--max-batch-delay",
        "0.002",
    )


def http_client(s: Served) -> httpclient.InferenceServerClient:
    return httpclient.InferenceServerClient(url=f"127.0.0.1:{s.http_port}")


def grpc_client(s: Served) -> grpcclient.InferenceServerClient:
    return grpcclient.InferenceServerClient(url=s.grpc_target)


def infer_http(s: Served, value: float) -> None:
    inp = httpclient.InferInput("x", [1, 4], "FP32")
    inp.set_data_from_numpy(np.full((1, 4), value, dtype=np.float32))
    http_client(s).infer("desc", [inp])


def infer_grpc(s: Served, value: float) -> None:
    inp = grpcclient.InferInput("x", [1, 4], "FP32")
    inp.set_data_from_numpy(np.full((1, 4), value, dtype=np.float32))
    grpc_client(s).infer("desc", [inp])


def stats_of(s: Served) -> dict[str, Any]:
    reply = http_client(s).get_inference_statistics("desc")
    assert len(reply["model_stats"]) == 1
    return reply["model_stats"][0]


def test_statistics_count_what_was_sent(plain: Served) -> None:
    before = stats_of(plain)
    t0 = time.time() * 1000
    for _ in range(3):
        infer_http(plain, 1.0)
    for _ in range(2):
        infer_grpc(plain, 1.0)
    with pytest.raises(InferenceServerException):
        infer_http(plain, -1.0)
    after = stats_of(plain)
    assert after["name"] == "desc" and after["version"] == "2"
    assert after["inference_count"] - before["inference_count"] == 5
    # Every model call, the failed one too.
    assert after["execution_count"] - before["execution_count"] == 6
    inf, was = after["inference_stats"], before["inference_stats"]
    assert inf["success"]["count"] - was["success"]["count"] == 5
    assert inf["fail"]["count"] - was["fail"]["count"] == 1
    assert inf["success"]["ns"] > was["success"]["ns"]
    assert inf["compute_infer"]["count"] - was["compute_infer"]["count"] == 5
    assert 0 < inf["compute_infer"]["ns"] <= inf["success"]["ns"]
    assert inf["queue"]["count"] == inf["success"]["count"]
    assert inf["cache_hit"] == {"count": 0, "ns": 0}
    assert after["last_inference"] >= int(t0) - 1000
    assert after["batch_stats"] == []

    # gRPC reports the same figures (nothing ran in between).
    g = grpc_client(plain).get_inference_statistics("desc", "2", as_json=True)
    (m,) = g["model_stats"]
    assert m["name"] == "desc" and m["version"] == "2"
    assert int(m["inference_count"]) == after["inference_count"]
    assert int(m["inference_stats"]["fail"]["count"]) == inf["fail"]["count"]
    assert int(m["last_inference"]) == after["last_inference"]


def test_statistics_json_shape_and_routes(plain: Served) -> None:
    every = httpx.get(f"{plain.url}/v2/models/stats")
    assert every.status_code == 200
    (m,) = every.json()["model_stats"]
    assert m["name"] == "desc"
    assert set(m) >= {
        "name",
        "version",
        "last_inference",
        "inference_count",
        "execution_count",
        "inference_stats",
        "batch_stats",
    }
    assert set(m["inference_stats"]) == set(DURATIONS)
    for d in DURATIONS:
        assert set(m["inference_stats"][d]) == {"count", "ns"}
    for path in ["/v2/models/desc/stats", "/v2/models/desc/versions/2/stats"]:
        r = httpx.get(plain.url + path)
        assert r.status_code == 200 and r.json()["model_stats"][0]["name"] == "desc"
    # The model-wide call over gRPC: every model.
    g = grpc_client(plain).get_inference_statistics(as_json=True)
    assert [x["name"] for x in g["model_stats"]] == ["desc"]


def test_unknown_models_are_not_found(plain: Served) -> None:
    for path in ["/v2/models/nope/stats", "/v2/models/nope/config"]:
        r = httpx.get(plain.url + path)
        assert r.status_code == 404 and '"nope"' in r.json()["error"], path
    r = httpx.get(f"{plain.url}/v2/models/desc/versions/9/stats")
    assert r.status_code == 404 and "no version" in r.json()["error"]
    with pytest.raises(InferenceServerException, match="nope"):
        http_client(plain).get_inference_statistics("nope")
    with pytest.raises(InferenceServerException, match="nope"):
        http_client(plain).get_model_config("nope")
    for call in (
        lambda c: c.get_inference_statistics("nope"),
        lambda c: c.get_model_config("nope"),
    ):
        with pytest.raises(InferenceServerException) as e:
            call(grpc_client(plain))
        assert e.value.status() == "StatusCode.NOT_FOUND" and "nope" in e.value.message()


def test_model_config_without_batching(plain: Served) -> None:
    c = http_client(plain).get_model_config("desc")
    assert c["name"] == "desc" and c["platform"] == "sklearn" and c["backend"] == "inferwire"
    assert c["max_batch_size"] == 0
    assert "dynamic_batching" not in c
    assert c["input"] == [{"name": "x", "data_type": "TYPE_FP32", "dims": [-1, 4]}]
    assert c["output"] == [{"name": "y", "data_type": "TYPE_FP32", "dims": [-1, 4]}]
    assert httpx.get(f"{plain.url}/v2/models/desc/versions/2/config").json() == c

    g = grpc_client(plain).get_model_config("desc", "2")
    cfg = g.config
    assert cfg.name == "desc" and cfg.max_batch_size == 0
    assert not cfg.HasField("dynamic_batching")
    assert [(i.name, i.data_type, list(i.dims)) for i in cfg.input] == [
        ("x", grpcclient.model_config_pb2.TYPE_FP32, [-1, 4])
    ]
    assert cfg.output[0].name == "y"


def test_model_config_with_batching(batching: Served) -> None:
    c = http_client(batching).get_model_config("desc")
    assert c["max_batch_size"] == 4
    assert c["dynamic_batching"] == {"max_queue_delay_microseconds": 2000}
    # Triton leaves the batch dimension out of dims when the model batches.
    assert c["input"][0]["dims"] == [4]
    cfg = grpc_client(batching).get_model_config("desc").config
    assert cfg.max_batch_size == 4
    assert cfg.dynamic_batching.max_queue_delay_microseconds == 2000
    assert list(cfg.output[0].dims) == [4]


def test_batched_requests_count_as_inferences(batching: Served) -> None:
    before = stats_of(batching)
    body = {"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1, 1, 1, 1]}]}

    def one(_: int) -> int:
        # httpx: tritonclient.http's gevent pool is not for threads.
        return httpx.post(f"{batching.url}/v2/models/desc/infer", json=body).status_code

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(one, range(16))) == {200}
    after = stats_of(batching)
    # Requests, not model calls: a batch's joined call is one execution.
    assert after["inference_count"] - before["inference_count"] == 16
    executions = after["execution_count"] - before["execution_count"]
    assert 4 <= executions <= 16
    inf = after["inference_stats"]
    assert inf["compute_infer"]["count"] == after["inference_count"]


def test_server_metadata_names_the_extensions(plain: Served) -> None:
    ext = http_client(plain).get_server_metadata()["extensions"]
    assert {"binary_tensor_data", "statistics", "model_configuration"} <= set(ext)
    g = grpc_client(plain).get_server_metadata()
    assert {"statistics", "model_configuration"} <= set(g.extensions)


def test_statistics_are_summed_over_workers(serve: Any) -> None:
    # Each call on a new connection: the kernel spreads them over both workers, and
    # whichever worker answers the statistics reports every worker's inferences.
    s = serve("triton_models:Described", "--model-name", "desc", "--workers", "2")
    for i in range(20):
        (infer_http if i % 2 else infer_grpc)(s, 1.0)
    for _ in range(6):
        got = stats_of(s)
        assert got["inference_count"] == 20
        assert got["inference_stats"]["success"]["count"] == 20
        assert got["execution_count"] == 20
