"""Multi-model serving from a model repository: every model on its own V2 routes (REST and
gRPC), the default one on the Seldon routes, and the repository API loading, reloading
and unloading models while the others keep serving."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from conftest import TESTS, Served

# These tests are about the repository API, not auth: without auth it must be allowed
# explicitly (tests/server/security/test_auth_safety.py shows the refusal).
OPEN_REPOSITORY = "--allow-unauthenticated-repository"

MODEL = """
import numpy as np

class Model:
    def __init__(self, offset=0):
        self.offset = offset

    def predict(self, X, features_names=None):
        return np.asarray(X) + self.offset + {bump}
"""


def write_model(root: Path, folder: str, settings: dict[str, Any], bump: int = 0) -> Path:
    d = root / folder
    d.mkdir(parents=True, exist_ok=True)
    (d / "model.py").write_text(MODEL.format(bump=bump))
    (d / "model-settings.json").write_text(json.dumps(settings))
    return d


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "models"
    write_model(root, "adder", {"name": "adder", "implementation": "model.py:Model",
                                "version": "2", "parameters": {"offset": 100}})  # fmt: skip
    write_model(root, "plain", {"name": "plain", "implementation": "model.py:Model"})
    (root / "notes").mkdir()  # a folder without settings is not a model
    return root


def infer(url: str, model: str, values: list[int]) -> httpx.Response:
    body = {"inputs": [{"name": "x", "shape": [len(values)], "datatype": "INT64", "data": values}]}
    return httpx.post(f"{url}/v2/models/{model}/infer", json=body, timeout=30)


def repository(url: str, action: str, model: str = "") -> httpx.Response:
    path = (
        "/v2/repository/index" if action == "index" else f"/v2/repository/models/{model}/{action}"
    )
    return httpx.post(url + path, json={}, timeout=60)


def state(url: str) -> dict[str, str]:
    return {m["name"]: m["state"] for m in repository(url, "index").json()}


def test_every_model_on_its_own_routes(repo: Path) -> None:
    s = Served("", "--model-repository", str(repo), OPEN_REPOSITORY)
    try:
        assert infer(s.url, "adder", [1, 2]).json()["outputs"][0]["data"] == [101, 102]
        assert infer(s.url, "plain", [1, 2]).json()["outputs"][0]["data"] == [1, 2]
        r = infer(s.url, "nope", [1])
        assert r.status_code == 404 and "serving: adder, plain" in r.json()["error"]
        assert httpx.get(f"{s.url}/v2/models/adder/versions/2").json()["versions"] == ["2"]
        assert httpx.get(f"{s.url}/v2/models/adder/versions/1").status_code == 404
        # gRPC too, with tritonclient.
        client = grpcclient.InferenceServerClient(url=s.grpc_target)
        inp = grpcclient.InferInput("x", [1], "INT64")
        inp.set_data_from_numpy(np.array([5], dtype=np.int64))
        assert client.infer("adder", [inp], model_version="2").as_numpy("output-0").tolist() == [
            105
        ]
        assert client.is_model_ready("plain")
        # The Seldon routes call the default model: the first by name.
        r = httpx.post(f"{s.url}/api/v1.0/predictions", json={"data": {"ndarray": [1]}})
        assert r.json()["data"]["ndarray"] == [101]
        assert state(s.url) == {"adder": "READY", "plain": "READY"}
    finally:
        assert s.stop() == 0


def test_load_unload_and_reload_under_traffic(repo: Path) -> None:
    s = Served("", "--model-repository", str(repo), OPEN_REPOSITORY, "--default-model", "plain")
    stop = threading.Event()
    codes: list[int] = []

    def traffic() -> None:
        with httpx.Client(timeout=30) as c:
            body = {"inputs": [{"name": "x", "shape": [1], "datatype": "INT64", "data": [1]}]}
            while not stop.is_set():
                codes.append(c.post(f"{s.url}/v2/models/plain/infer", json=body).status_code)

    threads = [threading.Thread(target=traffic) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for _ in range(3):
            assert repository(s.url, "unload", "adder").status_code == 200
            assert infer(s.url, "adder", [1]).status_code == 404
            assert state(s.url)["adder"] == "UNAVAILABLE"
            assert repository(s.url, "load", "adder").status_code == 200
            assert infer(s.url, "adder", [1]).json()["outputs"][0]["data"] == [101]
        # A reload picks up the model's new code and settings.
        write_model(repo, "adder", {"name": "adder", "implementation": "model.py:Model",
                                    "version": "3", "parameters": {"offset": 100}}, bump=1)  # fmt: skip
        assert repository(s.url, "load", "adder").status_code == 200
        r = infer(s.url, "adder", [1])
        assert r.json()["outputs"][0]["data"] == [102] and r.json()["model_version"] == "3"
        # A broken model fails to load; the version serving keeps serving.
        (repo / "adder" / "model-settings.json").write_text(
            '{"name": "adder", "implementation": "model.py:Missing"}'
        )
        r = repository(s.url, "load", "adder")
        assert r.status_code == 400 and "Missing" in r.json()["error"], r.text
        assert infer(s.url, "adder", [1]).json()["outputs"][0]["data"] == [102]
        index = {m["name"]: m for m in repository(s.url, "index").json()}
        assert index["adder"]["state"] == "READY"  # still the good one
        assert repository(s.url, "unload", "adder").status_code == 200
        index = {m["name"]: m for m in repository(s.url, "index").json()}
        assert index["adder"]["state"] == "UNAVAILABLE" and "Missing" in index["adder"]["reason"]
        # A model added to the folder later can be loaded.
        write_model(repo, "late", {"name": "late", "implementation": "model.py:Model"}, bump=7)
        assert state(s.url)["late"] == "UNAVAILABLE"
        assert repository(s.url, "load", "late").status_code == 200
        assert infer(s.url, "late", [1]).json()["outputs"][0]["data"] == [8]
        # The default model cannot be unloaded; unknown ones are 404.
        r = repository(s.url, "unload", "plain")
        assert r.status_code == 400 and "default model" in r.json()["error"]
        assert repository(s.url, "unload", "ghost").status_code == 404
        assert repository(s.url, "load", "ghost").status_code == 400
    finally:
        stop.set()
        for t in threads:
            t.join(30)
        assert s.stop() == 0
    # The other model kept answering through every load and unload.
    assert len(codes) > 20 and set(codes) == {200}, sorted(set(codes))


def test_repository_api_reaches_every_worker(repo: Path) -> None:
    """With two workers, a load or unload through one of them is answered once both have
    made it: every new connection (spread over the workers by the kernel) sees it. A
    worker killed and restarted catches up before it serves."""
    s = Served("", "--model-repository", str(repo), OPEN_REPOSITORY, "--workers", "2")

    def answers(model: str = "adder", n: int = 40) -> set[Any]:
        seen: set[Any] = set()
        for _ in range(n):  # a new connection each time
            r = infer(s.url, model, [1])
            seen.add(r.json()["outputs"][0]["data"][0] if r.status_code == 200 else r.status_code)
        return seen

    try:
        assert answers() == {101}
        write_model(repo, "adder", {"name": "adder", "implementation": "model.py:Model",
                                    "version": "2", "parameters": {"offset": 100}}, bump=1)  # fmt: skip
        assert repository(s.url, "load", "adder").status_code == 200
        assert answers() == {102}
        assert repository(s.url, "unload", "plain").status_code == 200
        assert answers("plain") == {404}
        assert repository(s.url, "load", "plain").status_code == 200
        assert answers("plain") == {1}
        assert repository(s.url, "unload", "plain").status_code == 200
        # The supervisor restarts a killed worker from its pre-fork state (adder at 101).
        children = subprocess.run(
            ["pgrep", "-P", str(s.proc.pid)], capture_output=True, text=True
        ).stdout.split()
        assert len(children) == 2, children
        os.kill(int(children[0]), signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            now = subprocess.run(["pgrep", "-P", str(s.proc.pid)], capture_output=True, text=True)
            if len(now.stdout.split()) == 2 and children[0] not in now.stdout.split():
                break
            time.sleep(0.1)
        time.sleep(1.0)  # the new worker binds once it has caught up
        assert answers() == {102} and answers("plain") == {404}
        index = {m["name"]: (m["state"], m["reason"]) for m in repository(s.url, "index").json()}
        assert index == {"adder": ("READY", ""), "plain": ("UNAVAILABLE", "unloaded")}
    finally:
        assert s.stop() == 0


def test_a_server_without_a_repository_says_so(serve: Any) -> None:
    s = serve("models:Echo", OPEN_REPOSITORY)
    r = repository(s.url, "index")
    assert r.status_code == 404 and "--model-repository" in r.json()["error"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"name": "x", "implementation": "model.py:Model", "batch": 4}, "unknown setting 'batch'"),
        ({"name": "x"}, "implementation is required"),
        (
            {"name": "x", "implementation": "model.py:Model", "max_batch_size": "4"},
            "is not an integer",
        ),
        (
            {"name": "x", "implementation": "model.py:Model", "max_batch_delay": 0.1},
            "max_batch_delay is set",
        ),
    ],
)
def test_bad_model_settings_stop_the_server_at_start(
    tmp_path: Path, settings: dict[str, Any], message: str
) -> None:
    write_model(tmp_path / "models", "x", settings)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "inferwire",
            "serve",
            "--model-repository",
            str(tmp_path / "models"),
        ],
        cwd=TESTS,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode != 0 and message in p.stderr, p.stderr
    assert "model-settings.json" in p.stderr and "Traceback" not in p.stderr


def test_repository_api_over_grpc_and_ready_filter(repo: Path) -> None:
    s = Served("", "--model-repository", str(repo), OPEN_REPOSITORY, "--default-model", "plain")
    try:
        client = grpcclient.InferenceServerClient(url=s.grpc_target)
        index = {m.name: m.state for m in client.get_model_repository_index().models}
        assert index == {"adder": "READY", "plain": "READY"}
        client.unload_model("adder")
        assert not client.is_model_ready("adder")
        ready = httpx.post(f"{s.url}/v2/repository/index", json={"ready": True}).json()
        assert [m["name"] for m in ready] == ["plain"]
        client.load_model("adder")
        inp = grpcclient.InferInput("x", [1], "INT64")
        inp.set_data_from_numpy(np.array([1], dtype=np.int64))
        assert client.infer("adder", [inp]).as_numpy("output-0").tolist() == [101]
        with pytest.raises(grpcclient.InferenceServerException) as e:
            client.load_model("ghost")
        assert "ghost" in str(e.value)
        r = httpx.post(f"{s.url}/v2/repository/index", json={"ready": "yes"})
        assert r.status_code == 400 and "ready" in r.json()["error"]
    finally:
        assert s.stop() == 0


def test_metrics_are_labelled_by_model(repo: Path) -> None:
    s = Served("", "--model-repository", str(repo))
    try:
        for _ in range(3):
            assert infer(s.url, "adder", [1]).status_code == 200
        assert infer(s.url, "plain", [1]).status_code == 200
        assert infer(s.url, "ghost", [1]).status_code == 404
        text = httpx.get(f"{s.url}/metrics").text
        assert (
            'inferwire_requests_total{model="adder",protocol="rest",route="infer",encoding="json",code="200"} 3'
            in text
        )
        assert (
            'inferwire_requests_total{model="plain",protocol="rest",route="infer",encoding="json",code="200"} 1'
            in text
        )
        assert (
            'inferwire_requests_total{model="",protocol="rest",route="infer",encoding="none",code="404"} 1'
            in text
        )
        assert 'inferwire_model_duration_seconds_count{model="adder"} 3' in text
        assert 'inferwire_batch_size_count{model="plain"} 1' in text
    finally:
        assert s.stop() == 0
