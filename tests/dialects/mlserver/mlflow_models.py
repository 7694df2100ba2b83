"""Saves MLflow models for tests/dialects/mlserver (run with the virtualenv of
scripts/mlserver-client-env.sh, which has mlflow): python mlflow_models.py ROOT. Writes
MLServer-shaped folders (model-settings.json naming mlserver_mlflow.MLflowRuntime, the
MLflow model in ./model) and prints each model's expected predictions as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mlflow.sklearn
import numpy as np
import pandas as pd
from mlflow.models import infer_signature
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

COLUMNS = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
ROWS = [[5.1, 3.5, 1.4, 0.2], [6.2, 3.4, 5.4, 2.3], [5.9, 3.0, 4.2, 1.5]]


def main() -> None:
    root = Path(sys.argv[1])
    X, y = load_iris(return_X_y=True)
    frame = pd.DataFrame(X, columns=COLUMNS)
    expected = {}
    for name, data in (("mlflow-columns", frame), ("mlflow-tensor", X)):
        model = LogisticRegression(max_iter=1000).fit(data, y)
        folder = root / name
        folder.mkdir(parents=True)
        signature = infer_signature(data, model.predict(data))
        mlflow.sklearn.save_model(
            model, str(folder / "model"), signature=signature, serialization_format="cloudpickle"
        )
        settings = {
            "name": name,
            "implementation": "mlserver_mlflow.MLflowRuntime",
            "parameters": {"uri": "./model"},
        }
        (folder / "model-settings.json").write_text(json.dumps(settings))
        rows = pd.DataFrame(ROWS, columns=COLUMNS) if name == "mlflow-columns" else np.array(ROWS)
        expected[name] = model.predict(rows).tolist()
    print(json.dumps(expected))


main()
