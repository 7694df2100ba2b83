"""MLServer's own endpoint tests (its tests/rest/test_endpoints.py and
tests/grpc/test_servicers.py), rewritten here against ``inferwire start``: the folder
their fixtures serve (mlserver_folders.build_endpoint_models: a sum, a text echo, a word
stream, a failing model), the calls they make and what they assert. The server runs in
the virtualenv of scripts/mlserver-client-env.sh (its MLModel classes import mlserver);
REST is called from here, gRPC with MLServer's own stubs (mlserver_endpoint_calls.py)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from client_venv import client_venv, run_client
from conftest import free_port

HERE = Path(__file__).parent

INFER = {"inputs": [{"name": "input-0", "shape": [1, 3], "datatype": "INT32", "data": [1, 2, 3]}]}
# How the sum model's settings describe its input (its content type: what decode uses).
INPUT = {"name": "input-0", "datatype": "INT32", "parameters": {"content_type": "np"}}
PROMPT = {
    "inputs": [
        {
            "name": "prompt",
            "shape": [1],
            "datatype": "BYTES",
            "data": ["What is the capital of France?"],
            "parameters": {"content_type": "str"},
        }
    ],
    "outputs": [{"name": "output"}],
}
WORDS = ["What", " is", " the", " capital", " of", " France?"]
# pydantic's words for a datatype outside MLServer's enum, as its tests expect them.
DATATYPES = (
    "Input should be 'BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', "
    "'INT32', 'INT64', 'FP16', 'FP32', 'FP64' or 'BYTES'"
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from mlserver_folders import build_endpoint_models

    root = tmp_path_factory.mktemp("mlserver-endpoints")
    build_endpoint_models(root)
    return root


def start(serve: Any, folder: Path) -> Any:
    """``inferwire start FOLDER`` in the client virtualenv, with inferwire from here."""
    return serve(
        str(folder),
        "--metrics-port",
        str(free_port()),
        # MLServer's repository API is open; inferwire's needs auth or this logged opt-in.
        "--allow-unauthenticated-repository",
        command="start",
        python=client_venv("mlserver-client-env.sh"),
        env={"PYTHONPATH": str(HERE.parents[2] / "python")},
    )


@pytest.fixture(scope="module")
def server(serve: Any, root: Path) -> Any:
    return start(serve, root)


def test_health_and_server_metadata(server: Any) -> None:
    assert httpx.get(f"{server.url}/v2/health/live").status_code == 200
    assert httpx.get(f"{server.url}/v2/health/ready").status_code == 200
    assert httpx.get(f"{server.url}/v2/models/sum-model/versions/v1.2.3/ready").status_code == 200
    # As MLServer answers, with the version inferwire start follows (or the installed one).
    meta = httpx.get(f"{server.url}/v2").json()
    assert (meta["name"], meta["extensions"]) == ("mlserver", [])
    assert meta["version"] == "1.7.1"


@pytest.mark.parametrize("version", ["v1.2.3", None])
def test_docs_per_model_and_version(server: Any, version: str | None) -> None:
    base = f"{server.url}/v2/models/sum-model" + (f"/versions/{version}" if version else "")
    page = httpx.get(f"{base}/docs")
    assert page.status_code == 200 and "html" in page.headers["content-type"]
    assert "openapi" in httpx.get(f"{base}/docs/dataplane.json").json()


def test_model_metadata_from_its_settings(server: Any) -> None:
    # As MLServer answers: the versions as the settings write them, and each tensor as
    # written, its parameters (the content type) included.
    meta = httpx.get(f"{server.url}/v2/models/sum-model").json()
    assert meta["platform"] == "mlserver" and meta["versions"] == ["sum-model/v1.2.3"]
    assert meta["inputs"] == [
        {
            "name": "input-0",
            "datatype": "FP32",
            "shape": [128],
            "parameters": {"content_type": "np"},
        }
    ]
    assert meta["outputs"] == [{"name": "output-0", "datatype": "FP32", "shape": [1]}]
    # MLServer's Parameters(content_type=None) for settings with parameters: none set.
    assert meta["parameters"] == {}


def test_model_metadata_as_mlservers_tests_assert_it(server: Any, root: Path) -> None:
    """MLServer's own test_model_metadata (REST and gRPC): its response types validated
    and compared with ModelSettings read from the folder, in MLServer's virtualenv."""
    python = client_venv("mlserver-client-env.sh")
    port = server.grpc_target.rsplit(":", 1)[1]
    out = run_client(
        python, HERE / "mlserver_endpoint_calls.py", port, str(server.http_port), str(root)
    )
    assert out["metadata_checks"] == {
        "rest_name": True,
        "rest_platform": True,
        "rest_versions": True,
        "rest_inputs": True,
        "grpc_name": True,
        "grpc_platform": True,
        "grpc_versions": True,
    }


@pytest.mark.parametrize("endpoint", ["infer", "versions/v1.2.3/infer"])
def test_infer(server: Any, endpoint: str) -> None:
    r = httpx.post(f"{server.url}/v2/models/sum-model/{endpoint}", json=INFER)
    assert r.status_code == 200, r.text
    reply = r.json()
    assert [o["data"] for o in reply["outputs"]] == [[6]]
    # A request without an id gets one, as MLServer gives it (a uuid).
    assert len(reply["id"]) == 36 and reply["id"].count("-") == 4


def test_an_id_given_is_kept(server: Any) -> None:
    r = httpx.post(f"{server.url}/v2/models/sum-model/infer", json={**INFER, "id": "mine"})
    assert r.json()["id"] == "mine" and r.headers["ce-id"] == "mine"


def test_cloudevents_and_the_models_headers(server: Any) -> None:
    """The model sees the request's headers in parameters.headers and echoes the x- ones
    in its response's parameters.headers: they are the reply's headers, as in MLServer,
    beside the CloudEvents ones."""
    r = httpx.post(f"{server.url}/v2/models/sum-model/infer", json=INFER, headers={"x-foo": "b"})
    assert r.status_code == 200
    h = r.headers
    assert h["x-foo"] == "b" and "parameters" not in r.json()
    assert h["ce-specversion"] == "0.3"
    assert h["ce-source"] == "io.seldon.serving.deployment.mlserver"
    assert h["ce-type"] == "io.seldon.serving.inference.response"
    assert h["ce-modelid"] == h["ce-endpoint"] == "sum-model"
    assert h["ce-inferenceservicename"] == "mlserver"
    assert h["ce-id"] == h["ce-requestid"] == r.json()["id"]


@pytest.mark.parametrize("endpoint", ["generate", "versions/v1.2.3/generate", "infer"])
def test_generate(server: Any, endpoint: str) -> None:
    r = httpx.post(f"{server.url}/v2/models/text-model/{endpoint}", json=PROMPT)
    assert r.status_code == 200, r.text
    assert [o["data"] for o in r.json()["outputs"]] == [["What is the capital of France?"]]


@pytest.mark.parametrize("endpoint", ["generate_stream", "infer_stream"])
def test_mlmodel_predict_stream_as_server_sent_events(server: Any, endpoint: str) -> None:
    """MLModel.predict_stream: each InferenceResponse it yields is one event."""
    url = f"{server.url}/v2/models/text-stream-model/{endpoint}"
    with httpx.stream("POST", url, json=PROMPT, timeout=30) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = [
            json.loads(line[len("data: ") :])
            for line in r.iter_lines()
            if line.startswith("data: ")
        ]
    assert [e["outputs"][0]["data"] for e in events] == [[w] for w in WORDS]


def test_a_model_without_predict_stream_streams_its_predict(server: Any) -> None:
    """MLModel's own predict_stream yields its predict once."""
    with httpx.stream("POST", f"{server.url}/v2/models/text-model/infer_stream", json=PROMPT) as r:
        events = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert len(events) == 1 and "What is the capital of France?" in events[0]


@pytest.mark.parametrize("endpoint", ["infer", "generate"])
def test_unknown_model_is_mlservers_404(server: Any, endpoint: str) -> None:
    r = httpx.post(f"{server.url}/v2/models/my-model/versions/v0/{endpoint}", json=INFER)
    assert r.status_code == 404
    assert r.json()["error"] == "Model my-model with version v0 not found"
    r = httpx.post(f"{server.url}/v2/models/my-model/{endpoint}", json=INFER)
    assert r.json()["error"] == "Model my-model not found"


def test_invalid_datatype_is_fastapis_422(server: Any) -> None:
    bad = {"inputs": [{**INFER["inputs"][0], "datatype": "INT322"}]}
    r = httpx.post(f"{server.url}/v2/models/sum-model/infer", json=bad)
    assert r.status_code == 422
    detail = r.json()["detail"][0]
    assert detail["msg"] == DATATYPES
    assert detail["loc"] == ["body", "inputs", 0, "datatype"] and detail["input"] == "INT322"


def test_a_failing_model_is_its_mlserver_error(server: Any) -> None:
    r = httpx.post(f"{server.url}/v2/models/error-model/infer", json=INFER)
    assert r.status_code == 400 and r.json()["error"] == "something really bad happened"
    # and the server keeps serving
    assert httpx.post(f"{server.url}/v2/models/sum-model/infer", json=INFER).status_code == 200


def test_custom_metrics_on_the_metrics_page(server: Any) -> None:
    """mlserver.register and mlserver.log in the model: MLServer's histogram, labelled
    with the model, on the scrape after inferwire's own metrics."""
    for _ in range(3):
        httpx.post(f"{server.url}/v2/models/sum-model/infer", json=INFER)
    text = httpx.get(f"{server.url}/metrics").text
    assert "inferwire_requests_total" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("rows_summed_count{"))
    assert 'model_name="sum-model"' in line and 'model_version="v1.2.3"' in line
    assert float(line.rsplit(" ", 1)[1]) >= 3


def test_repository_index_load_and_unload(server: Any, root: Path) -> None:
    index = httpx.post(f"{server.url}/v2/repository/index", json={})
    assert index.status_code == 200 and len(index.json()) == 4
    r = httpx.post(f"{server.url}/v2/repository/models/my-model/load")
    assert r.status_code == 404 and r.json()["error"] == "Model my-model not found"
    for _ in range(2):  # unloading the model; then again, after loading it back
        assert httpx.post(f"{server.url}/v2/repository/models/sum-model/unload").status_code == 200
        assert httpx.get(f"{server.url}/v2/models/sum-model").status_code == 404
        assert httpx.post(f"{server.url}/v2/repository/models/sum-model/load").status_code == 200
        assert httpx.get(f"{server.url}/v2/models/sum-model").status_code == 200
    # Each unloaded model's unload() ran (it writes how many calls it had), and its loop
    # ended with it: once the server let go of it, when a later call takes the GIL.
    marker = root / "sum-model" / "unloaded"
    for _ in range(50):
        httpx.post(f"{server.url}/v2/models/sum-model/infer", json=INFER)
        if marker.exists() and len(marker.read_text().split()) == 2:
            break
        time.sleep(0.1)
    assert len(marker.read_text().split()) == 2, marker.read_text() if marker.exists() else None


def test_grpc_as_mlservers_tests_call_it(server: Any) -> None:
    python = client_venv("mlserver-client-env.sh")
    port = server.grpc_target.rsplit(":", 1)[1]
    out = run_client(python, HERE / "mlserver_endpoint_calls.py", port)
    assert out["server"] == ["mlserver", "1.7.1", []]
    assert out["live"] and out["model_ready"]
    assert out["model"] == ["sum-model", "mlserver", ["sum-model/v1.2.3"]]
    for version in ("v1.2.3", ""):
        infer = out[f"infer/{version}"]
        assert infer["contents"] == [6] and len(infer["id"]) == 36
        # The model's headers (the x-foo it echoes) and CloudEvents as trailing metadata,
        # as MLServer sends them.
        assert infer["trailing"]["x-foo"] == "bar"
        assert infer["trailing"]["ce-specversion"] == "0.3"
        assert infer["trailing"]["ce-id"] == infer["id"]
        assert out[f"stream/{version}"] == WORDS
    assert out["raw"] == [6]
    assert out["missing"] == {
        "code": "NOT_FOUND",
        "details": "Model my-model with version v1.2.3 not found",
    }
    assert out["stream/missing"] == out["missing"]
    bad = out["bad_datatype"]
    assert bad["details"].startswith("1 validation error for RequestInput\ndatatype\n  ")
    assert DATATYPES in bad["details"] and "input_value='INT322'" in bad["details"]
    assert out["index"] == 4
    assert out["after_unload"]["code"] == "NOT_FOUND" and out["after_load"] == "text-model"
    assert out["load_missing"] == {"code": "NOT_FOUND", "details": "Model my-model not found"}
    # The same through MLServer's deprecated inference.model_repository service.
    assert out["old/index"] == 4
    assert out["old/after_unload"]["code"] == "NOT_FOUND" and out["old/after_load"] == "text-model"
    assert out["old/load_missing"] == out["load_missing"]


def test_unloading_the_last_model(serve: Any, root: Path, tmp_path: Path) -> None:
    """MLServer's tests serve one model and unload it: the server is then left with none
    (inferwire's default model, the Seldon routes', goes too in MLServer's dialect),
    and loading it again serves it again."""
    import shutil

    shutil.copytree(root / "sum-model", tmp_path / "sum-model")
    for name in ("models.py", "settings.json"):
        shutil.copy(root / name, tmp_path / name)
    one = start(serve, tmp_path)
    assert len(httpx.post(f"{one.url}/v2/repository/index", json={}).json()) == 1
    r = httpx.post(f"{one.url}/v2/repository/models/sum-model/unload")
    assert r.status_code == 200, r.text
    assert httpx.get(f"{one.url}/v2/models/sum-model").status_code == 404
    seldon = httpx.post(f"{one.url}/api/v1.0/predictions", json={"data": {"ndarray": [[1]]}})
    assert seldon.status_code == 404 and "not loaded" in seldon.text
    assert httpx.get(f"{one.url}/v2/health/live").status_code == 200
    assert httpx.post(f"{one.url}/v2/repository/models/sum-model/load").status_code == 200
    reply = httpx.post(f"{one.url}/v2/models/sum-model/infer", json=INFER).json()
    assert reply["outputs"][0]["data"] == [6]


def test_custom_handlers(server: Any) -> None:
    """An MLModel's @custom_handler methods on their own paths, their Body parameters
    bound as FastAPI binds them (one: the whole body; several: its keys), gzip bodies
    taken; a bad body is a 422 naming the parameter, the model's error its status."""
    import gzip

    r = httpx.post(f"{server.url}/my-custom-endpoint", json=[1, 2, 3, 4])
    assert r.status_code == 200 and r.json() == 10
    r = httpx.post(
        f"{server.url}/my-custom-endpoint",
        content=gzip.compress(json.dumps([1, 2, 3, 4]).encode()),
        headers={"content-encoding": "gzip", "content-type": "application/json"},
    )
    assert r.status_code == 200 and r.json() == 10
    r = httpx.post(f"{server.url}/custom-endpoint-with-long-response", json=1000)
    assert r.status_code == 200 and r.json() == {"foo": "x" * 1000}
    r = httpx.post(f"{server.url}/custom-scaled", json={"values": [1, 2]})
    assert r.json() == {"scaled": [2.0, 4.0]}
    r = httpx.post(f"{server.url}/custom-scaled", json={"values": [1], "factor": 3})
    assert r.json() == {"scaled": [3.0]}
    r = httpx.post(f"{server.url}/custom-endpoint-with-long-response", json="many")
    assert r.status_code == 422 and "length" in r.json()["error"], r.text
    r = httpx.post(f"{server.url}/custom-scaled", json={"factor": 3})
    assert r.status_code == 422 and r.json()["error"] == "body.values: missing"
    r = httpx.post(f"{server.url}/custom-scaled", json={"values": [1], "factor": 0})
    assert r.status_code == 400 and r.json()["error"] == "factor: must not be 0"
    # Only the method it was declared with, and no other path.
    assert httpx.get(f"{server.url}/my-custom-endpoint").status_code == 404
    assert httpx.post(f"{server.url}/my-custom-endpoint-2", json=[]).status_code == 404


def test_versions_side_by_side(serve: Any, root: Path, tmp_path: Path) -> None:
    """Two folders of one model, each with its own parameters.version: both served, a
    request without a version gets the newest (by number, as MLServer orders them), the
    index lists both, and an unload unloads every version; two folders of one version
    are refused at start."""
    import shutil

    shutil.copy(root / "models.py", tmp_path / "models.py")
    for version in ("2", "10"):
        folder = tmp_path / f"adder-v{version}"
        folder.mkdir()
        (folder / "model-settings.json").write_text(
            json.dumps(
                {
                    "name": "adder",
                    "implementation": "models.SumModel",
                    "parameters": {"version": version},
                    "inputs": [{**INPUT, "shape": [-1, 3]}],
                }
            )
        )
    s = start(serve, tmp_path)
    for path, version in (("", "10"), ("/versions/2", "2"), ("/versions/10", "10")):
        r = httpx.post(f"{s.url}/v2/models/adder{path}/infer", json=INFER)
        assert r.status_code == 200, r.text
        assert r.json()["model_version"] == version
        # The settings' versions, as MLServer answers them: none written here.
        assert httpx.get(f"{s.url}/v2/models/adder{path}").json()["versions"] == []
    r = httpx.post(f"{s.url}/v2/models/adder/versions/3/infer", json=INFER)
    assert r.status_code == 404 and r.json()["error"] == "Model adder with version 3 not found"
    index = httpx.post(f"{s.url}/v2/repository/index", json={}).json()
    assert sorted((m["name"], m["version"], m["state"]) for m in index) == [
        ("adder", "10", "READY"),
        ("adder", "2", "READY"),
    ]
    assert httpx.post(f"{s.url}/v2/repository/models/adder/unload").status_code == 200
    assert httpx.get(f"{s.url}/v2/models/adder/versions/2").status_code == 404
    assert httpx.post(f"{s.url}/v2/repository/models/adder/load").status_code == 200
    assert httpx.get(f"{s.url}/v2/models/adder/versions/2/ready").status_code == 200

    # One version in two folders: which would serve is not for inferwire to guess.
    shutil.copytree(tmp_path / "adder-v2", tmp_path / "adder-again")
    r = subprocess.run(
        [client_venv("mlserver-client-env.sh"), "-m", "inferwire", "start", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(HERE.parents[2] / "python")},
    )
    assert r.returncode != 0 and "both name a model 'adder' at version '2'" in r.stderr


def test_two_workers(serve: Any, root: Path, tmp_path: Path) -> None:
    """parallel_workers: 2 forks two workers after the models load: each runs its
    MLModels on a loop of its own (one made before the fork would share its wake-ups
    with the other), streams too, and the scrape adds up both workers' custom metrics."""
    import shutil

    shutil.copytree(root, tmp_path / "models")
    settings = tmp_path / "models" / "settings.json"
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "parallel_workers": 2}))
    s = start(serve, tmp_path / "models")
    with httpx.Client(timeout=30) as client:  # a connection each: both workers answer
        codes = [
            httpx.post(f"{s.url}/v2/models/sum-model/infer", json=INFER, timeout=30).status_code
            for _ in range(20)
        ]
        assert codes == [200] * 20
        with client.stream(
            "POST", f"{s.url}/v2/models/text-stream-model/infer_stream", json=PROMPT
        ) as r:
            assert sum(line.startswith("data: ") for line in r.iter_lines()) == len(WORDS)
        text = client.get(f"{s.url}/metrics").text
    line = next(ln for ln in text.splitlines() if ln.startswith("rows_summed_count{"))
    assert float(line.rsplit(" ", 1)[1]) == 20
