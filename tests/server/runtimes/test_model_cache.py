"""Many models under one memory budget (--model-memory-budget): repository models load
when a request first asks for one, once however many requests wait, and the least
recently used are unloaded when the loaded ones' measured memory passes the budget;
loads, evictions and hits are in the metrics."""

from __future__ import annotations

import concurrent.futures
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

# A model that holds `size` bytes (its pickled size, which the budget counts) and answers
# its input plus `add`; `slow` seconds of load; `broken` fails to load.
MODEL = """
import time

import numpy as np


class Held:
    def __init__(self, add=0, size=200_000, slow=0.0, broken=False):
        if broken:
            raise RuntimeError("this model cannot load")
        time.sleep(slow)
        self.add = add
        self.weights = np.zeros(size, dtype=np.uint8)

    def predict(self, X, features_names=None):
        return np.asarray(X) + self.add
"""


def _repo(root: Path, n: int, **extra: Any) -> Path:
    import json

    for i in range(n):
        d = root / f"m{i:02d}"
        d.mkdir(parents=True)
        (d / "model.py").write_text(MODEL)
        params = {"add": i, **extra.get(f"m{i:02d}", {})}
        (d / "model-settings.json").write_text(
            json.dumps(
                {"name": f"m{i:02d}", "implementation": "model.py:Held", "parameters": params}
            )
        )
    return root


def infer(url: str, name: str, x: float = 1.0) -> httpx.Response:
    body = {"inputs": [{"name": "x", "datatype": "FP64", "shape": [1], "data": [x]}]}
    return httpx.post(f"{url}/v2/models/{name}/infer", json=body, timeout=60)


def metric(url: str, name: str) -> float:
    text = httpx.get(f"{url}/metrics").text
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert m, f"{name} not in the metrics"
    return float(m.group(1))


def loaded(url: str) -> set[str]:
    index = httpx.post(f"{url}/v2/repository/index", json={}).json()
    return {m["name"] for m in index if m["state"] == "READY"}


@pytest.fixture
def cached(serve: Any, tmp_path: Path) -> Any:
    # 200,000 bytes a model: a budget of 1 MiB holds five of them.
    repo = _repo(tmp_path / "models", 12)
    return serve(
        "",
        "--model-repository",
        str(repo),
        "--model-memory-budget",
        "1",
        "--allow-unauthenticated-repository",
    )


def test_models_load_on_request_and_the_least_recently_used_go(cached: Any) -> None:
    url = cached.url
    assert loaded(url) == set()  # with a budget, nothing loads at start
    for i in range(5):
        r = infer(url, f"m{i:02d}", 1.0)
        assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [1.0 + i], r.text
    assert loaded(url) == {f"m{i:02d}" for i in range(5)}
    assert metric(url, "inferwire_model_evictions_total") == 0
    infer(url, "m00")  # m00 is now the most recently used; m01 the least
    assert infer(url, "m05").status_code == 200
    assert loaded(url) == {"m00", "m02", "m03", "m04", "m05"}
    assert metric(url, "inferwire_model_evictions_total") == 1
    # An unloaded model loads again when asked for, and answers the same.
    assert infer(url, "m01", 2.0).json()["outputs"][0]["data"] == [3.0]
    assert metric(url, 'inferwire_model_loads_total{result="ok"}') == 7
    assert metric(url, 'inferwire_model_cache_requests_total{result="miss"}') == 7
    assert metric(url, 'inferwire_model_cache_requests_total{result="hit"}') == 1
    assert metric(url, "inferwire_models_loaded") == 5
    held = metric(url, "inferwire_model_memory_bytes")
    assert 5 * 200_000 <= held <= metric(url, "inferwire_model_memory_budget_bytes")
    assert metric(url, "inferwire_model_load_seconds_count") == 7
    # Ready means "answers requests": a repository model is, loaded or not.
    assert httpx.get(f"{url}/v2/models/m11/ready").status_code == 200
    assert httpx.get(f"{url}/v2/models/nope/ready").status_code == 404
    assert infer(url, "nope").status_code == 404


def test_one_load_however_many_requests_wait(serve: Any, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "models", 2, m00={"slow": 1.0})
    s = serve(
        "",
        "--model-repository",
        str(repo),
        "--load-models-at-startup",
        "false",
        "--load-models-on-request",
        "--model-threads",
        "4",
    )
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        codes = list(pool.map(lambda _: infer(s.url, "m00").status_code, range(16)))
    assert codes == [200] * 16
    assert metric(s.url, 'inferwire_model_loads_total{result="ok"}') == 1
    assert metric(s.url, 'inferwire_model_cache_requests_total{result="miss"}') == 16
    # No budget: nothing is unloaded.
    assert infer(s.url, "m01").status_code == 200
    assert metric(s.url, "inferwire_model_evictions_total") == 0
    assert metric(s.url, "inferwire_model_memory_budget_bytes") == 0


def test_a_model_that_fails_to_load_is_a_500_and_the_rest_serve(serve: Any, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "models", 2, m01={"broken": True})
    s = serve("", "--model-repository", str(repo), "--model-memory-budget", "64")
    r = infer(s.url, "m01")
    assert r.status_code == 500 and "this model cannot load" in r.text, r.text
    assert infer(s.url, "m00").status_code == 200
    assert infer(s.url, "m01").status_code == 500  # tried again, not cached as loaded
    assert metric(s.url, 'inferwire_model_loads_total{result="failed"}') == 2
    assert "Traceback" not in r.text


def test_a_grpc_stream_loads_its_model_on_request(cached: Any) -> None:
    """ModelStreamInfer asks for a model that is not loaded: it loads, as for a unary
    call, and the stream answers; an unknown one is the request's error."""
    import grpc
    from tritonclient.grpc import service_pb2

    def stream(model: str) -> list[Any]:
        req = service_pb2.ModelInferRequest(model_name=model, id="s1")
        req.inputs.add(name="x", datatype="FP64", shape=[1])
        req.inputs[0].contents.fp64_contents.append(1.0)
        with grpc.insecure_channel(cached.grpc_target) as ch:
            call = ch.stream_stream(
                "/inference.GRPCInferenceService/ModelStreamInfer",
                request_serializer=service_pb2.ModelInferRequest.SerializeToString,
                response_deserializer=service_pb2.ModelStreamInferResponse.FromString,
            )
            return list(call(iter([req]), timeout=60))

    assert "m07" not in loaded(cached.url)
    [reply] = stream("m07")
    assert not reply.error_message, reply.error_message
    assert list(reply.infer_response.outputs[0].contents.fp64_contents) == [8.0]
    assert reply.infer_response.id == "s1" and reply.infer_response.model_name == "m07"
    assert "m07" in loaded(cached.url)
    [missing] = stream("nope")
    assert 'no model named "nope"' in missing.error_message
