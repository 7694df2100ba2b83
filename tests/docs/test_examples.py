"""The bundled example (the quick start's model and its gRPC client) keeps working."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from conftest import ROOT
from seldon_client import rest


def test_seldon_model_example(serve: Any) -> None:
    server = serve(str(ROOT / "examples/seldon_model/model.py:IrisLikeClassifier"))
    body = {"data": {"names": ["a", "b", "c", "d"], "ndarray": [[5.1, 3.5, 1.4, 0.2]]}}
    reply = rest(server.url, body).json()
    assert reply["data"]["names"] == ["setosa", "versicolor", "virginica"]
    probabilities = np.array(reply["data"]["ndarray"])
    assert probabilities.shape == (1, 3) and abs(probabilities.sum() - 1) < 1e-9
    assert probabilities.argmax() == 0
    assert reply["meta"]["tags"] == {"model": "iris-like", "version": "1"}

    out = subprocess.run(
        [sys.executable, str(ROOT / "examples/seldon_model/grpc_call.py"), server.grpc_target],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert '"names": ["setosa", "versicolor", "virginica"]' in out.stdout
    assert '"shape": [2, 3]' in out.stdout


def demo(name: str) -> str:
    """Runs ``examples/NAME/demo.py`` as a user would, and returns what it printed."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name / "demo.py")],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_seldon_model_demo() -> None:
    out = demo("seldon_model")
    assert "REST classes: ['setosa', 'versicolor', 'virginica']" in out
    assert "REST probabilities: [[0.972, 0.021, 0.007], [0.0, 0.009, 0.991]]" in out
    assert "REST tags: {'model': 'iris-like', 'version': '1'}" in out
    assert "V2 output: {'output-0': [[0.972, 0.021, 0.007]" in out
    assert "3 features: 500 ValueError: matmul" in out
    assert '"names": ["setosa", "versicolor", "virginica"]' in out and '"shape": [2, 3]' in out


def test_every_example_folder_has_a_demo_and_a_readme() -> None:
    """examples/README.md promises both in every folder, and a row in its table."""
    index = (ROOT / "examples/README.md").read_text()
    folders = [p for p in (ROOT / "examples").iterdir() if p.is_dir() and p.name[0] not in "._"]
    for folder in sorted(folders):
        assert (folder / "demo.py").is_file(), folder.name
        assert (folder / "README.md").is_file(), folder.name
        assert f"[{folder.name}]({folder.name})" in index, folder.name


def test_sklearn_example() -> None:
    out = demo("sklearn")
    assert "native tree runtime: sklearn.ensemble.RandomForestClassifier, 20 trees" in out
    assert "columns: {'setosa': [" in out
    assert "same as predict_proba: True" in out


def test_xgboost_example() -> None:
    out = demo("xgboost")
    assert "REST predict_proba: [[" in out and "gRPC predict: [" in out
    assert "same as predict_proba: True" in out


def test_image_model_example() -> None:
    out = demo("image_model")
    lines = [line for line in out.splitlines() if "'shape': [48, 64, 3]" in line]
    assert len(lines) == 4, out  # bytes, gRPC binData, multipart, base64: the same answer
    assert len({line.split(": ", 1)[1] for line in lines}) == 1


@pytest.mark.optin
def test_pytorch_example() -> None:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        asked = os.environ.get("INFERWIRE_TEST_TORCH", "")
        if asked == "1":
            pytest.fail("INFERWIRE_TEST_TORCH=1 but torch is not installed")
        if asked.startswith("no-disk"):
            pytest.skip(f"scripts/test.sh left torch out for want of disk ({asked})")
        pytest.skip(
            "torch is not installed (about 5 GB from PyPI): INFERWIRE_TEST_TORCH=1 bash "
            "scripts/test.sh installs it and runs this test, as .ci/run does"
        )
    out = demo("pytorch")
    assert "classes: ['setosa', 'versicolor', 'virginica']" in out
    rest = next(line for line in out.splitlines() if line.startswith("REST: "))
    grpc = next(line for line in out.splitlines() if line.startswith("gRPC: "))
    assert rest[6:] == grpc[6:] and rest.count("[") == 4  # three rows of probabilities
    assert "same as the network in this process: True" in out


def test_repository_example() -> None:
    out = demo("repository")
    assert "doubler: [3.0, 4.0]" in out
    assert "index: [('doubler', 'READY'), ('iris', 'READY')]" in out


def test_auth_example() -> None:
    out = demo("auth")
    assert "without a token: 401 authentication required" in out
    assert "with the bot's token: [1.0, 1.0]" in out
    assert "with alice's login token: [1.0, 2.0]" in out


def test_batching_example() -> None:
    out = demo("batching")
    assert "no batching: 64 requests in" in out and "model calls: 64" in out
    batched = next(line for line in out.splitlines() if line.startswith("--max-batch-size"))
    assert int(batched.rsplit(" ", 1)[1]) <= 16, batched  # 64 requests in a few calls


def test_tls_example() -> None:
    out = demo("tls")
    assert "serving on https://127.0.0.1:" in out
    assert "HTTPS predict: [[1.0, 2.0]]" in out
    assert "gRPC with TLS infer: [0.0, 1.0, 2.0]" in out


def test_streaming_example() -> None:
    out = demo("streaming")
    pieces = [line for line in out.splitlines() if line.startswith("gRPC piece at")]
    assert [p.split(": ", 1)[1] for p in pieces] == [
        f"OUT [{v}] IDX [{i}]" for i, v in enumerate([4, 2, 0, 1])
    ]
    # Each piece came when it was yielded, about 100 ms apart, not all at the end.
    times = [float(p.split("at")[1].split("ms")[0]) for p in pieces]
    assert times[-1] - times[0] > 200, times
    assert (
        "SSE event: {'model_name': 'repeat_int32', 'model_version': '', 'OUT': 1, 'IDX': 3}" in out
    )
