"""Trained model files served by ``inferwire serve FILE``: tree models by the native runtime
(no Python on the request path), others by the Python runtime, chosen with a log line;
rows as arrays and as data-frame columns, over REST, gRPC and V2, equal to the library's
own ``predict_proba``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import httpx
import joblib
import numpy as np
import pandas as pd
import pytest
from google.protobuf import json_format
from lib.kyphosis import kyphosis
from sklearn.ensemble import AdaBoostClassifier, GradientBoostingRegressor
from sklearn.tree import DecisionTreeClassifier

COLUMNS = ["Age", "Number", "Start"]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("models")
    X, y = kyphosis()
    tree = DecisionTreeClassifier(max_depth=6, random_state=0).fit(X, y)
    joblib.dump(tree, out / "rtService.joblib")
    ada = AdaBoostClassifier(n_estimators=5, random_state=0).fit(X, y)
    joblib.dump(ada, out / "ada.joblib")
    gbr = GradientBoostingRegressor(n_estimators=10, random_state=0).fit(X, X.Age * 0.1)
    joblib.dump(gbr, out / "gbr.pkl")
    return {"dir": out, "tree": tree, "ada": ada, "gbr": gbr}


@pytest.fixture(scope="module")
def tree_server(serve: Any, files: dict[str, Any]) -> Any:
    return serve(str(files["dir"] / "rtService.joblib"), "--output-names", "{class}_Pred")


def test_native_runtime_is_chosen_and_says_so(tree_server: Any) -> None:
    log = tree_server.log()
    assert "native tree runtime: sklearn.tree.DecisionTreeClassifier" in log
    assert "no Python on the request path" in log
    assert "as 'rtService'" in log


def test_data_frame_columns_in_named_outputs_out(tree_server: Any, files: dict[str, Any]) -> None:
    X, _ = kyphosis(1000, seed=5)
    body = {c: X[c].tolist() for c in COLUMNS}
    r = httpx.post(f"{tree_server.url}/predict", json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    want = files["tree"].predict_proba(X)
    assert set(out) == {"absent_Pred", "present_Pred"}
    np.testing.assert_allclose(out["absent_Pred"], want[:, 0], atol=1e-9)
    np.testing.assert_allclose(out["present_Pred"], want[:, 1], atol=1e-9)
    # Columns in another order, an extra one ignored; a missing one named.
    one = {"Start": [3], "x": [1], "Number": [70], "Age": [5]}
    r = httpx.post(f"{tree_server.url}/predict", json=one)
    assert r.json()["present_Pred"] == [files["tree"].predict_proba(pd.DataFrame(
        {"Age": [5.0], "Number": [70.0], "Start": [3.0]}))[0, 1]]  # fmt: skip
    r = httpx.post(f"{tree_server.url}/predict", json={"Start": [3], "Number": [70]})
    assert r.status_code == 400
    assert (
        'column "Age" is missing; the model takes Age, Number, Start' in r.json()["status"]["info"]
    )


def test_seldon_rows_reordered_by_names_over_rest_and_grpc(
    tree_server: Any, files: dict[str, Any], pb: Any
) -> None:
    X, _ = kyphosis(20, seed=6)
    want = files["tree"].predict_proba(X)
    swapped = X[["Start", "Number", "Age"]]
    msg = {"data": {"names": list(swapped.columns), "ndarray": swapped.values.tolist()}}
    r = httpx.post(f"{tree_server.url}/api/v1.0/predictions", json=msg)
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert data["names"] == ["absent_Pred", "present_Pred"]
    np.testing.assert_allclose(data["ndarray"], want, atol=1e-9)
    with tree_server.channel() as ch:
        reply = pb.grpc.SeldonStub(ch).Predict(
            json_format.ParseDict(msg, pb.msgs.SeldonMessage()), timeout=10
        )
    got = json_format.MessageToDict(reply)["data"]["ndarray"]
    np.testing.assert_allclose(got, want, atol=1e-9)


def test_v2_matrix_and_columns(tree_server: Any, files: dict[str, Any]) -> None:
    import tritonclient.http as triton

    X, _ = kyphosis(50, seed=7)
    want = files["tree"].predict_proba(X)
    client = triton.InferenceServerClient(tree_server.url.removeprefix("http://"))
    matrix = triton.InferInput("x", [50, 3], "FP64")
    matrix.set_data_from_numpy(X.values, binary_data=True)
    res = client.infer("rtService", [matrix])
    np.testing.assert_allclose(res.as_numpy("predict_proba"), want, atol=1e-9)
    labels = [b.decode() for b in res.as_numpy("predict")]
    assert labels == list(files["tree"].predict(X))
    columns = []
    for c in COLUMNS:
        i = triton.InferInput(c, [50], "FP64")
        i.set_data_from_numpy(X[c].values, binary_data=False)
        columns.append(i)
    res = client.infer("rtService", columns, outputs=[triton.InferRequestedOutput("predict_proba")])
    np.testing.assert_allclose(res.as_numpy("predict_proba"), want, atol=1e-9)
    meta = client.get_model_metadata("rtService")
    assert [i["name"] for i in meta["inputs"]] == COLUMNS
    assert "inferwire-trees" in meta["platform"]


def test_bad_rows_get_clear_errors(tree_server: Any) -> None:
    url = f"{tree_server.url}/predict"
    cases = [
        ({"data": {"ndarray": [[1, 2]]}}, "expected 3 features per row (Age, Number, Start)"),
        ({"data": {"ndarray": [["a", "b", "c"]]}}, "rectangular array of numbers"),
        ({"Age": [1, 2], "Number": [1], "Start": [1, 2]}, "has 1 values; the others have 2"),
        ({"Age": ["x"], "Number": [1], "Start": [1]}, 'column "Age": "x" is not a number'),
        ({"strData": "hello"}, "expected rows of features"),
    ]
    for body, message in cases:
        r = httpx.post(url, json=body)
        assert r.status_code == 400, (body, r.text)
        assert message in r.json()["status"]["info"], r.text
    ok = httpx.post(url, json={"data": {"ndarray": [[1, 5, 3]]}})
    assert ok.status_code == 200


def test_python_runtime_for_what_native_cannot_score(serve: Any, files: dict[str, Any]) -> None:
    s = serve(str(files["dir"] / "ada.joblib"))
    assert "Python runtime for sklearn (the native runtime cannot:" in s.log()
    X, _ = kyphosis(10, seed=8)
    r = httpx.post(f"{s.url}/predict", json={"data": {"ndarray": X.values.tolist()}})
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(
        r.json()["data"]["ndarray"], files["ada"].predict_proba(X.values), atol=1e-9
    )
    r = httpx.post(f"{s.url}/predict", json={c: X[c].tolist() for c in COLUMNS})
    assert r.status_code == 200, r.text


def test_runtime_setting(serve: Any, files: dict[str, Any]) -> None:
    s = serve(str(files["dir"] / "gbr.pkl"), "--runtime", "python")
    assert "Python runtime for sklearn" in s.log()
    X, _ = kyphosis(5, seed=9)
    r = httpx.post(f"{s.url}/predict", json={"data": {"ndarray": X.values.tolist()}})
    np.testing.assert_allclose(r.json()["data"]["ndarray"], files["gbr"].predict(X), atol=1e-9)
    with pytest.raises(RuntimeError, match="the native runtime cannot serve it"):
        serve(str(files["dir"] / "ada.joblib"), "--runtime", "native")


def test_unreadable_model_file_is_a_start_error(serve: Any, tmp_path: Path) -> None:
    bad = tmp_path / "broken.joblib"
    bad.write_bytes(b"not a pickle")
    with pytest.raises(RuntimeError, match="cannot read the model"):
        serve(str(bad))


def test_native_and_grpc_errors(tree_server: Any, pb: Any) -> None:
    with tree_server.channel() as ch:
        with pytest.raises(grpc.RpcError) as e:
            pb.grpc.SeldonStub(ch).Predict(
                json_format.ParseDict({"data": {"ndarray": [[1]]}}, pb.msgs.SeldonMessage()),
                timeout=10,
            )
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "expected 3 features" in (e.value.details() or "")


def test_onnx_models_run_through_onnxruntime(serve: Any, files: dict[str, Any]) -> None:
    from skl2onnx import to_onnx

    X, _ = kyphosis(20, seed=10)
    onx = to_onnx(files["ada"], X.values[:1].astype(np.float32), options={"zipmap": False})
    path = files["dir"] / "ada.onnx"
    path.write_bytes(onx.SerializeToString())
    s = serve(str(path))
    assert "Python runtime for onnxruntime" in s.log()
    r = httpx.post(f"{s.url}/predict", json={"data": {"ndarray": X.values.tolist()}})
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(
        r.json()["data"]["ndarray"], files["ada"].predict_proba(X.values), atol=1e-6
    )
