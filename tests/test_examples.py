"""The bundled example (the quick start's model and its gRPC client) keeps working."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
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
