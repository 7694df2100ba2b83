"""A repository load's parameters, as Triton takes them (explicit model control): a
``config`` override read instead of config.pbtxt, and ``file:<version>/<path>`` contents
a model loads from instead of its folder, over REST (base64) and gRPC (bytes), reaching
every worker; bad parameters refused with Triton's status and the parameter named."""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from conftest import TESTS
from triton_server import Tritonserver
from tritonclient.utils import InferenceServerException

# A model the repository does not have, brought whole by a load: it answers which
# worker process ran it.
PID_MODEL = b"""
import os
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            pid = np.full(x.shape, os.getpid(), dtype=np.int64)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("PID", pid)]))
        return out
"""
PID_CONFIG = json.dumps(
    {
        "name": "pid",
        "backend": "python",
        "max_batch_size": 0,
        "input": [{"name": "X", "data_type": "TYPE_INT64", "dims": [1]}],
        "output": [{"name": "PID", "data_type": "TYPE_INT64", "dims": [1]}],
    }
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tritonserver]:
    root = tmp_path_factory.mktemp("load") / "models"
    root.mkdir()
    shutil.copytree(TESTS / "triton_repository" / "simple", root / "simple")
    s = Tritonserver(
        root,
        "--model-control-mode=explicit",
        "--load-model=simple",
        env={"INFERWIRE_WORKERS": "2"},
    )
    yield s
    s.stop()


def load(s: Tritonserver, name: str, parameters: dict[str, object] | None = None) -> httpx.Response:
    body = {"parameters": parameters} if parameters is not None else None
    return httpx.post(f"{s.url}/v2/repository/models/{name}/load", json=body, timeout=60)


def config(s: Tritonserver, name: str) -> dict[str, object]:
    r = httpx.get(f"{s.url}/v2/models/{name}/config", timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def pids(s: Tritonserver, n: int = 40) -> set[int]:
    """The worker processes that answered ``n`` requests, each on a new connection."""
    seen = set()
    for _ in range(n):
        body = {"inputs": [{"name": "X", "datatype": "INT64", "shape": [1], "data": [1]}]}
        r = httpx.post(f"{s.url}/v2/models/pid/infer", json=body, timeout=10)
        assert r.status_code == 200, r.text
        seen.add(r.json()["outputs"][0]["data"][0])
    return seen


def test_a_config_override_reaches_every_worker_and_a_plain_load_reads_the_file_again(
    server: Tritonserver,
) -> None:
    assert config(server, "simple")["max_batch_size"] == 8
    r = load(server, "simple", {"config": json.dumps({"max_batch_size": 4})})
    assert r.status_code == 200, r.text
    # Every worker serves the override: each connection may land on either.
    assert {config(server, "simple")["max_batch_size"] for _ in range(20)} == {4}
    assert load(server, "simple").status_code == 200
    assert {config(server, "simple")["max_batch_size"] for _ in range(20)} == {8}


def test_a_model_brought_by_its_files_over_rest_serves_in_every_worker(
    server: Tritonserver,
) -> None:
    files = {"file:1/model.py": base64.b64encode(PID_MODEL).decode()}
    r = load(server, "pid", {"config": PID_CONFIG, **files})
    assert r.status_code == 200, r.text
    assert len(pids(server)) == 2, "both workers serve the model the load brought"
    index = httpx.post(f"{server.url}/v2/repository/index", json={}, timeout=10).json()
    assert {"name": "pid", "version": "1", "state": "READY", "reason": ""} in index


def test_a_model_brought_by_its_files_over_grpc(server: Tritonserver) -> None:
    client = grpcclient.InferenceServerClient(server.grpc_target)
    client.load_model(
        "pid_grpc",
        config=PID_CONFIG.replace('"pid"', '"pid_grpc"'),
        files={"file:1/model.py": PID_MODEL},
    )
    x = grpcclient.InferInput("X", [1], "INT64")
    x.set_data_from_numpy(np.array([7], dtype=np.int64))
    got = client.infer("pid_grpc", [x]).as_numpy("PID")
    assert got.shape == (1,) and got[0] > 1
    # Loaded again without its files: the repository has no such model.
    with pytest.raises(InferenceServerException) as e:
        client.load_model("pid_grpc")
    assert e.value.status() == "StatusCode.INTERNAL"
    assert "failed to load 'pid_grpc'" in e.value.message()


@pytest.mark.parametrize(
    ("parameters", "named"),
    [
        ({"config": "{not json"}, "the load call's config: not JSON"),
        ({"config": json.dumps({"max_batch_size": "many"})}, "max_batch_size"),
        ({"config": json.dumps({"name": "other"})}, "'other'"),
        ({"colour": "blue"}, "load parameter 'colour'"),
        ({"file:1/model.py": "AAAA"}, "must bring its config too"),
        ({"config": "{}", "file:1/../../escape.py": "AAAA"}, "'file:1/../../escape.py'"),
        ({"config": "{}", "file:/etc/x": "AAAA"}, "'file:/etc/x'"),
        ({"config": "{}", "file:model.py": "AAAA"}, "in a version folder"),
        ({"config": "{}", "file:1/model.py": "not base64!"}, "in base64"),
        ({"config": 3}, "load parameter 'config': must be a string"),
    ],
)
def test_bad_parameters_are_refused_naming_them_and_the_model_keeps_serving(
    server: Tritonserver, parameters: dict[str, object], named: str
) -> None:
    r = load(server, "simple", parameters)
    assert r.status_code == 500, r.text  # Triton's INTERNAL: its own clients check it
    message = r.json()["error"]
    assert message.startswith("failed to load 'simple', failed to poll from model repository")
    assert named in message, message
    assert config(server, "simple")["name"] == "simple"
    assert not list(Path("/").glob("escape.py"))


def test_a_body_that_is_not_parameters_is_a_400(server: Tritonserver) -> None:
    url = f"{server.url}/v2/repository/models/simple/load"
    for body, named in [
        (b"{", "the load request's body"),
        (b'{"parameters": [1]}', "parameters"),
        (b'{"parameters": {"config": {"nested": 1}}}', "parameters.config"),
    ]:
        r = httpx.post(url, content=body, timeout=10)
        assert r.status_code == 400, r.text
        assert named in r.json()["error"]
    many = {f"k{i}": 1 for i in range(1025)}
    r = httpx.post(url, json={"parameters": many}, timeout=10)
    assert r.status_code == 400 and "more than 1024" in r.json()["error"]
