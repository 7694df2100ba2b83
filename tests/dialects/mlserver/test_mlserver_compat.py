"""MLServer users' folders and clients against inferwire: ``inferwire start FOLDER`` (as
``mlserver start FOLDER``) serves MLServer-shaped model folders (mlserver_folders.py: each
built-in runtime, custom classes, settings.json) and MLServer's own client side
(mlserver.types, mlserver.codecs, its gRPC stubs and converters, ``mlserver infer``), in
the virtualenv scripts/mlserver-client-env.sh makes, calls it over REST and gRPC
(mlserver_client_calls.py). The answers are checked against the trained models
themselves, as MLServer's runtimes compute them: the same output names, values, datatypes
and ``[rows, 1]`` shapes. tritonclient, KServe's deployment of MLServer (its
``MLSERVER_MODEL_*`` variables) and ``load_models_at_startup`` are checked here too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from client_venv import client_venv, run_client
from conftest import free_port
from mlserver_folders import COLUMNS, build, rows

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("mlserver-models")
    return root, build(root)


@pytest.fixture(scope="module")
def server(serve: Any, folder: tuple[Path, dict[str, Any]]) -> Any:
    # MLServer's repository API is open; inferwire's needs auth or this logged opt-in.
    return serve(
        str(folder[0]),
        "--metrics-port",
        str(free_port()),
        "--allow-unauthenticated-repository",
        command="start",
    )


@pytest.fixture(scope="module")
def calls(server: Any) -> dict[str, Any]:
    python = client_venv("mlserver-client-env.sh")
    port = server.grpc_target.rsplit(":", 1)[1]
    return run_client(python, HERE / "mlserver_client_calls.py", str(server.http_port), port)


def output(call: dict[str, Any], name: str) -> dict[str, Any]:
    assert call["status"] == 200, call
    found = [o for o in call["outputs"] if o["name"] == name]
    assert len(found) == 1, call
    return found[0]


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_sklearn_runtime_answers_predict_by_default(
    calls: dict[str, Any], folder: Any, transport: str
) -> None:
    model = folder[1]["iris"]
    import pandas as pd

    want = model.predict(pd.DataFrame(rows(), columns=COLUMNS))
    call = calls[f"{transport}/iris"]
    assert [o["name"] for o in call["outputs"]] == ["predict"]
    out = output(call, "predict")
    assert (out["datatype"], out["shape"], out["content_type"]) == ("INT64", [3, 1], "np")
    assert out["values"] == want.tolist()
    assert call["version"] == "v0.1.0"  # parameters.version


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_requested_outputs_in_order(calls: dict[str, Any], folder: Any, transport: str) -> None:
    import pandas as pd

    frame = pd.DataFrame(rows(), columns=COLUMNS)
    for name in ("iris", "xgb", "iris-lr"):
        model = folder[1][name]
        call = calls[f"{transport}-both/{name}"]
        assert [o["name"] for o in call["outputs"]] == ["predict_proba", "predict"]
        X = frame if name == "iris" else rows()
        proba = output(call, "predict_proba")
        assert proba["shape"] == [3, 3]
        np.testing.assert_allclose(proba["values"], model.predict_proba(X).ravel(), rtol=1e-6)
        assert output(call, "predict")["values"] == model.predict(X).tolist()
    # XGBoost's estimators answer float32, as mlserver_xgboost's do.
    assert output(calls[f"{transport}-both/xgb"], "predict_proba")["datatype"] == "FP32"


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_predict_fn_in_extra_is_the_default(
    calls: dict[str, Any], folder: Any, transport: str
) -> None:
    call = calls[f"{transport}/iris-lr"]  # a linear model: the library, in Python
    out = output(call, "predict_proba")
    assert out["content_type"] == "np"  # as MLServer's numpy codec marks it
    np.testing.assert_allclose(out["values"], folder[1]["iris-lr"].predict_proba(rows()).ravel())


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_lightgbm_runtime_answers_booster_predict(
    calls: dict[str, Any], folder: Any, transport: str
) -> None:
    booster = folder[1]["lgbm"].booster_
    out = output(calls[f"{transport}/lgbm"], "predict")
    assert (out["datatype"], out["shape"]) == ("FP64", [3, 1])
    np.testing.assert_allclose(out["values"], booster.predict(rows()), rtol=1e-9)
    assert calls[f"{transport}/lgbm"]["version"] == "3"


def test_pandas_requests(calls: dict[str, Any], folder: Any) -> None:
    """PandasCodec's requests: one input per column, content_type pd."""
    import pandas as pd

    want = folder[1]["iris"].predict(pd.DataFrame(rows(), columns=COLUMNS)).tolist()
    assert output(calls["rest-pd/iris"], "predict")["values"] == want
    assert output(calls["grpc-pd/iris"], "predict")["values"] == want
    got = output(calls["rest-pd/iris-lr"], "predict_proba")["values"]
    np.testing.assert_allclose(got, folder[1]["iris-lr"].predict_proba(rows()).ravel())


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_custom_classes_from_their_folders(calls: dict[str, Any], transport: str) -> None:
    """Two folders with a models.py each (one deeper in the tree); extra is the
    constructor's arguments."""
    scaled = output(calls[f"{transport}/scaler"], "output-0")
    np.testing.assert_allclose(scaled["values"], (rows() * 3).ravel())
    negated = output(calls[f"{transport}/negate"], "output-0")
    np.testing.assert_allclose(negated["values"], (-rows()).ravel())


def test_input_content_type_from_settings(calls: dict[str, Any]) -> None:
    """The settings' inputs give "text" content type str: plain BYTES arrive as str."""
    assert output(calls["rest/upper"], "output-0")["values"] == ["AB", "CD"]
    assert output(calls["rest-typed/upper"], "output-0")["values"] == ["EF", "GH"]
    assert output(calls["grpc/upper"], "output-0")["values"] == ["EF", "GH"]


def test_metadata_from_settings(calls: dict[str, Any]) -> None:
    iris = calls["metadata/iris"]
    assert iris["name"] == "iris"
    assert iris["inputs"] == [{"name": "input-0", "datatype": "FP64", "shape": [-1, 4]}]
    assert iris["outputs"] == [{"name": "predict", "datatype": "INT64", "shape": [-1, 1]}]
    scaler = calls["metadata/scaler"]
    assert (scaler["platform"], scaler["versions"]) == ("custom", ["scaler/1.0"])


def test_mlserver_infer_command(calls: dict[str, Any], folder: Any) -> None:
    import pandas as pd

    want = folder[1]["iris"].predict(pd.DataFrame(rows(), columns=COLUMNS)).tolist()
    assert output(calls["cli/iris"], "predict")["values"] == want


def test_errors(calls: dict[str, Any]) -> None:
    assert calls["rest/unknown"]["status"] == 404
    assert "no-such-model" in calls["rest/unknown"]["body"]["error"]
    assert calls["grpc/unknown"]["status"] == "NOT_FOUND"
    bad = calls["rest-bad-output/iris"]
    assert bad["status"] == 400 and "transform" in bad["body"]["error"]


def test_repository_index(calls: dict[str, Any]) -> None:
    index = calls["index"]
    assert index["status"] == 200
    got = {m["name"]: (m["version"], m["state"]) for m in index["models"]}
    assert got["iris"] == ("v0.1.0", "READY") and got["lgbm"] == ("3", "READY")
    assert set(got) == {"iris", "iris-lr", "xgb", "lgbm", "scaler", "negate", "upper"}


def test_settings_json_and_warnings(server: Any) -> None:
    """settings.json's keys with no meaning here are warned about, once each; MLServer's
    metrics path is served on the metrics port; server_name is /v2's name; cors_settings
    (any origin, MLServer's default methods: GET) are the CORS answers."""
    log = server.log()
    assert "server_name has no effect" not in log and "cors_settings" not in log
    assert httpx.get(f"{server.url}/v2").json()["name"] == "my-server"
    page = {"origin": "https://app.example"}
    r = httpx.get(f"{server.url}/v2/models/iris", headers=page)
    assert r.headers["access-control-allow-origin"] == "*"
    preflight = {**page, "access-control-request-method": "GET"}
    r = httpx.options(f"{server.url}/v2/models/iris", headers=preflight)
    assert r.status_code == 200 and r.headers["access-control-allow-methods"] == "GET"
    preflight["access-control-request-method"] = "POST"
    r = httpx.options(f"{server.url}/v2/models/iris/infer", headers=preflight)
    assert r.status_code == 400 and "method" in r.text
    assert "debug has no effect" not in log  # MLServer's default is true: not worth a word
    assert "metrics http://127.0.0.1:" in log and "/metrics" in log


def test_tritonclient(server: Any, folder: Any) -> None:
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    want = folder[1]["xgb"].predict(rows()).reshape(-1, 1)
    for module, url in (
        (httpclient, f"127.0.0.1:{server.http_port}"),
        (grpcclient, server.grpc_target),
    ):
        client = module.InferenceServerClient(url)
        inp = module.InferInput("input-0", [3, 4], "FP64")
        inp.set_data_from_numpy(rows())
        result = client.infer("xgb", [inp])
        np.testing.assert_array_equal(result.as_numpy("predict"), want)
        asked = client.infer("xgb", [inp], outputs=[module.InferRequestedOutput("predict_proba")])
        got = asked.as_numpy("predict_proba")
        assert got.dtype == np.float32 and got.shape == (3, 3)


def _start_env(
    folder: Path, env: dict[str, str], *args: str
) -> tuple[subprocess.Popen[bytes], int, Path]:
    port = int(env["MLSERVER_HTTP_PORT"])
    log = folder.parent / f"start-{port}.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "inferwire", "start", str(folder), "--host", "127.0.0.1", *args],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, **env},
        cwd=folder.parent,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v2/health/live", timeout=1).status_code == 200:
                return proc, port, log
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(log.read_text())


def test_kserve_runtime_environment(tmp_path: Path, folder: Any) -> None:
    """KServe's kserve-mlserver runtime: no settings files, the model from MLSERVER_MODEL_*
    (implementation, name, uri: the folder KServe's storage initializer fills), the ports
    from MLSERVER_HTTP_PORT and MLSERVER_GRPC_PORT."""
    import joblib

    models = tmp_path / "mnt-models"
    models.mkdir()
    joblib.dump(folder[1]["iris-lr"], models / "model.joblib")
    http, grpc_port = free_port(), free_port()
    env = {
        "MLSERVER_MODEL_IMPLEMENTATION": "mlserver_sklearn.SKLearnModel",
        "MLSERVER_MODEL_NAME": "sklearn-iris",
        "MLSERVER_MODEL_URI": str(models),
        "MLSERVER_HTTP_PORT": str(http),
        "MLSERVER_GRPC_PORT": str(grpc_port),
        "MLSERVER_METRICS_PORT": str(free_port()),
        "MLSERVER_MODEL_EXTRA": json.dumps({"predict_fn": "predict_proba"}),
    }
    proc, port, _ = _start_env(models, env)
    try:
        body = {
            "inputs": [
                {"name": "x", "datatype": "FP64", "shape": [3, 4], "data": rows().ravel().tolist()}
            ]
        }
        r = httpx.post(f"http://127.0.0.1:{port}/v2/models/sklearn-iris/infer", json=body)
        assert r.status_code == 200, r.text
        (out,) = r.json()["outputs"]
        assert out["name"] == "predict_proba" and out["shape"] == [3, 3]
        np.testing.assert_allclose(out["data"], folder[1]["iris-lr"].predict_proba(rows()).ravel())
        import tritonclient.grpc as grpcclient

        client = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
        assert client.is_model_ready("sklearn-iris")
    finally:
        proc.terminate()
        proc.wait(15)


def test_load_models_at_startup_off(tmp_path: Path, folder: Any) -> None:
    """MLSERVER_LOAD_MODELS_AT_STARTUP=false: nothing loaded until the repository API
    loads it (which needs auth, or the logged opt-in used here)."""
    root = folder[0]
    env = {
        "MLSERVER_HTTP_PORT": str(free_port()),
        "MLSERVER_GRPC_PORT": str(free_port()),
        "MLSERVER_METRICS_PORT": str(free_port()),
        "MLSERVER_LOAD_MODELS_AT_STARTUP": "false",
    }
    # settings.json (which MLServer reads over the variables) says true: a copy without it.
    copy = tmp_path / "repo"
    import shutil

    shutil.copytree(root, copy)
    (copy / "settings.json").unlink()
    proc, port, _ = _start_env(copy, env, "--allow-unauthenticated-repository")
    url = f"http://127.0.0.1:{port}"
    try:
        index = {
            m["name"]: (m["state"], m["reason"])
            for m in httpx.post(f"{url}/v2/repository/index", json={}).json()
        }
        assert index["iris"] == ("UNAVAILABLE", "unloaded"), index
        assert httpx.get(f"{url}/v2/models/iris/ready").status_code != 200
        r = httpx.post(f"{url}/v2/repository/models/iris/load", json={})
        assert r.status_code == 200, r.text
        assert httpx.get(f"{url}/v2/models/iris/ready").status_code == 200
        body = {
            "inputs": [
                {"name": "x", "datatype": "FP64", "shape": [3, 4], "data": rows().ravel().tolist()}
            ]
        }
        r = httpx.post(f"{url}/v2/models/iris/infer", json=body)
        assert r.status_code == 200 and r.json()["outputs"][0]["name"] == "predict", r.text
        r = httpx.post(f"{url}/v2/repository/models/iris/unload", json={})
        assert r.status_code == 200, r.text
        assert httpx.get(f"{url}/v2/models/iris/ready").status_code != 200
    finally:
        proc.terminate()
        proc.wait(15)


def start_and_call(serve: Any, python: str, root: Path, script: str) -> dict[str, Any]:
    """``inferwire start ROOT`` run by the client virtualenv's ``python`` (its models need
    its packages), with inferwire from this checkout; then ``script``'s calls."""
    server = serve(
        str(root),
        "--metrics-port",
        str(free_port()),
        command="start",
        python=python,
        env={"PYTHONPATH": str(HERE.parents[2] / "python")},
    )
    port = server.grpc_target.rsplit(":", 1)[1]
    return run_client(python, HERE / script, str(server.http_port), port)


@pytest.fixture(scope="module")
def mlmodel_calls(serve: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """MLModel subclasses need mlserver in the server's Python: the server runs in the
    client's virtualenv, with inferwire from this checkout."""
    from mlserver_folders import build_mlmodels

    python = client_venv("mlserver-client-env.sh")
    root = tmp_path_factory.mktemp("mlmodels")
    build_mlmodels(root)
    return start_and_call(serve, python, root, "mlserver_mlmodel_calls.py")


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_mlmodel_subclasses(mlmodel_calls: dict[str, Any], transport: str) -> None:
    """async load and predict, settings.parameters.extra, decode_request with a default
    codec, decode_args by type hints, encode_response of a DataFrame."""
    total = output(mlmodel_calls[f"{transport}/sum"], "total")
    assert (total["shape"], total["values"]) == ([2, 1], [16.0, 25.0])
    assert total["content_type"] == "np"  # the parameters NumpyCodec gave the output
    assert mlmodel_calls[f"{transport}/sum"]["version"] == "2"
    assert output(mlmodel_calls[f"{transport}/text"], "output-0")["values"] == [1, 3]
    if transport == "rest":  # plain BYTES, no content type: decode_args reads the hint
        assert output(mlmodel_calls["plain-bytes/text"], "output-0")["values"] == [5]
    frame = mlmodel_calls[f"{transport}/frame"]
    assert output(frame, "doubled")["values"] == [2, 4]
    assert output(frame, "label")["values"] == ["X", "Y"]


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_mlmodel_errors(mlmodel_calls: dict[str, Any], transport: str) -> None:
    """MLServer's InferenceError is a 400 with its message; any other exception a 500,
    and the server keeps serving."""
    bad, boom = mlmodel_calls[f"{transport}/bad"], mlmodel_calls[f"{transport}/boom"]
    assert bad["status"] in (400, "INVALID_ARGUMENT"), bad
    assert "the input named bad is refused" in json.dumps(bad["body"])
    assert boom["status"] in (500, "INTERNAL"), boom
    assert "the model broke" in json.dumps(boom["body"])


def test_mlmodel_metadata(mlmodel_calls: dict[str, Any]) -> None:
    meta = mlmodel_calls["metadata/sum"]
    assert meta["name"] == "sum"
    assert meta["inputs"] == [{"name": "x", "datatype": "FP64", "shape": [-1, 3]}]


def test_v2_docs(server: Any) -> None:
    """/v2/docs (a page) and /v2/docs/dataplane.json (its OpenAPI document), as MLServer
    serves them; every route the document lists answers on this server."""
    page = httpx.get(f"{server.url}/v2/docs")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "docs/dataplane.json" in page.text
    doc = httpx.get(f"{server.url}/v2/docs/dataplane.json").json()
    assert doc["openapi"].startswith("3.") and doc["components"]["schemas"]["InferenceRequest"]
    assert httpx.get(f"{server.url}/v2/models/iris/docs/dataplane.json").json() == doc
    body = {"inputs": [{"name": "x", "datatype": "FP64", "shape": [1, 4], "data": [1, 2, 3, 4]}]}
    assert "/v2/repository/models/{model_name}/unload" in doc["paths"]
    for path, ops in doc["paths"].items():
        if path.startswith("/v2/repository/models/"):
            continue  # load and unload: tested above, and would unload iris here
        url = server.url + path.replace("{model_name}", "iris").replace("{model_version}", "v0.1.0")
        for method in ops:
            r = httpx.request(method, url, json=body if path.endswith("/infer") else {})
            assert r.status_code == 200, (method, path, r.status_code, r.text)
    # The schemas are ones a validator accepts: the reply of an inference is one.
    import jsonschema

    schemas = doc["components"]["schemas"]
    reply = httpx.post(f"{server.url}/v2/models/iris/infer", json=body).json()
    jsonschema.validate(reply, {**schemas["InferenceResponse"], "components": {"schemas": schemas}})


def test_invalid_requests_are_422_as_in_mlserver(server: Any) -> None:
    """MLServer answers a request that does not validate with 422; inferwire start does
    too (v2_invalid_status), with a message naming the field."""
    url = f"{server.url}/v2/models/iris/infer"
    bad = {"inputs": [{"name": "x", "datatype": "FP65", "shape": [1, 4], "data": [1, 2, 3, 4]}]}
    r = httpx.post(url, json=bad)
    assert r.status_code == 422 and "datatype" in r.json()["error"], r.text
    r = httpx.post(url, content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    # A model that is not there is still 404, and gRPC keeps INVALID_ARGUMENT.
    assert httpx.post(f"{server.url}/v2/models/nope/infer", json=bad).status_code == 404


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"http_port": "eighty"}, "http_port"),
        ({"parallel_workers": "many"}, "parallel_workers"),
        ({"grpc_max_message_length": "big"}, "grpc_max_message_length"),
    ],
)
def test_bad_settings_json_is_a_clear_error(
    tmp_path: Path, settings: dict[str, Any], message: str
) -> None:
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    r = subprocess.run(
        [sys.executable, "-m", "inferwire", "start", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_grpc_max_message_length_raises_the_body_limit(tmp_path: Path, folder: Any) -> None:
    """MLServer's gRPC message limit, above inferwire's body limit, raises it (and -1,
    MLServer's "none", keeps inferwire's bound)."""
    from inferwire.mlserver.settings import server_settings

    (tmp_path / "settings.json").write_text(json.dumps({"grpc_max_message_length": 300 << 20}))
    assert server_settings(tmp_path)["max_body_bytes"] == 300 << 20
    (tmp_path / "settings.json").write_text(json.dumps({"grpc_max_message_length": -1}))
    assert "max_body_bytes" not in server_settings(tmp_path)


def test_a_null_metrics_endpoint_turns_the_metrics_port_off(tmp_path: Path) -> None:
    """MLServer's ``"metrics_endpoint": null`` starts no metrics server: no metrics-only
    port, where a string names its path."""
    from inferwire.mlserver.settings import server_settings

    (tmp_path / "settings.json").write_text(json.dumps({"metrics_endpoint": None}))
    got = server_settings(tmp_path)
    assert got["metrics_port"] == 0
    assert got["metrics_endpoint"] == "/metrics"
    (tmp_path / "settings.json").write_text(json.dumps({"metrics_endpoint": "/prom"}))
    got = server_settings(tmp_path)
    assert (got["metrics_port"], got["metrics_endpoint"]) == (8082, "/prom")


def test_a_key_with_no_effect_is_warned_about_once(server: Any) -> None:
    """A model-settings file is read at every load and index: its ignored keys are still
    one warning each (the folder's settings.json ones: test_settings_json_and_warnings)."""
    for _ in range(3):
        httpx.post(f"{server.url}/v2/repository/index", json={})
    log = server.log()
    # The iris folder's file has one such key (warm_workers); settings.json none.
    assert log.count("warm_workers has no effect") == 1, log
    assert log.count("has no effect in inferwire") == 1, log


@pytest.fixture(scope="module")
def mlflow_calls(serve: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """MLflow models (saved with mlflow in the client's virtualenv, which the server runs
    in too: mlflow is the model's library)."""
    python = client_venv("mlserver-client-env.sh")
    root = tmp_path_factory.mktemp("mlflow-models")
    made = subprocess.run(
        [python, str(HERE / "mlflow_models.py"), str(root)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr[-3000:]
    calls = start_and_call(serve, python, root, "mlserver_mlflow_calls.py")
    calls["expected"] = json.loads(made.stdout)
    return calls


@pytest.mark.parametrize("transport", ["rest", "grpc"])
def test_mlflow_runtime(mlflow_calls: dict[str, Any], transport: str) -> None:
    """mlserver_mlflow.MLflowRuntime: the MLflow model loaded with mlflow.pyfunc, a
    column-based signature's requests decoded as a DataFrame and a tensor-based one's as
    an array, the prediction answered as MLServer's codecs answer it (output-1, a column)."""
    for name in ("mlflow-columns", "mlflow-tensor"):
        out = output(mlflow_calls[f"{transport}/{name}"], "output-1")
        assert out["shape"] == [3, 1] and out["content_type"] == "np", out
        assert out["values"] == mlflow_calls["expected"][name]


def test_mlflow_signature_is_the_metadata(mlflow_calls: dict[str, Any]) -> None:
    columns = mlflow_calls["metadata/mlflow-columns"]
    assert [i["name"] for i in columns["inputs"]] == [
        "sepal_length",
        "sepal_width",
        "petal_length",
        "petal_width",
    ]
    assert {i["datatype"] for i in columns["inputs"]} == {"FP64"}
    assert columns["outputs"][0]["datatype"] == "INT64"
    tensor = mlflow_calls["metadata/mlflow-tensor"]
    assert tensor["inputs"][0]["shape"] == [-1, 4]
