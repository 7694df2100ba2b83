"""MLServer-shaped model folders, written as MLServer's docs and examples write them: a
settings.json, and one folder per model with its model-settings.json and model file (or
models.py), each of MLServer's runtimes and custom classes. ``build(root)`` trains the
models here and returns them, for the tests' expected answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

COLUMNS = ["sepal_length", "sepal_width", "petal_length", "petal_width"]

CUSTOM = '''
import numpy as np


class Scaler:
    """Multiplies its input by ``factor`` (parameters.extra)."""

    def __init__(self, factor: float = 1.0) -> None:
        self.factor = factor

    def predict(self, X, features_names=None):
        return np.asarray(X) * self.factor
'''

NEGATE = """
import numpy as np


class Negate:
    def predict(self, X, features_names=None):
        return -np.asarray(X)
"""

UPPER = '''
import numpy as np


class Upper:
    """Its input arrives as a list of str: the settings give the input content type str."""

    def predict(self, X, features_names=None):
        assert isinstance(X, list) and all(isinstance(s, str) for s in X), X
        return np.array([s.upper() for s in X], dtype=object)
'''


def _write(folder: Path, settings: dict[str, Any], **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model-settings.json").write_text(json.dumps(settings, indent=2))
    for name, text in files.items():
        (folder / name).write_text(text)


def build(root: Path) -> dict[str, Any]:
    import joblib
    import lightgbm
    import pandas as pd
    import xgboost
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression

    X, y = load_iris(return_X_y=True)
    frame = pd.DataFrame(X, columns=COLUMNS)
    models: dict[str, Any] = {}
    (root / "settings.json").write_text(
        json.dumps(
            {
                "debug": True,
                "parallel_workers": 1,
                "metrics_endpoint": "/metrics",
                "load_models_at_startup": True,
                "server_name": "my-server",
                "cors_settings": {"allow_origins": ["*"]},
            }
        )
    )
    models["iris"] = RandomForestClassifier(n_estimators=8, max_depth=4, random_state=0).fit(
        frame, y
    )
    _write(
        root / "iris",
        {
            "name": "iris",
            "implementation": "mlserver_sklearn.SKLearnModel",
            "parameters": {"uri": "./model.joblib", "version": "v0.1.0"},
            "inputs": [{"name": "input-0", "datatype": "FP64", "shape": [-1, 4]}],
            "outputs": [{"name": "predict", "datatype": "INT64", "shape": [-1, 1]}],
            "warm_workers": True,  # deprecated in MLServer: warned about, once
        },
    )
    joblib.dump(models["iris"], root / "iris" / "model.joblib")
    models["iris-lr"] = LogisticRegression(max_iter=1000).fit(X, y)
    _write(
        root / "iris-lr",
        {
            "name": "iris-lr",
            "implementation": "mlserver_sklearn.SKLearnModel",
            "parameters": {"extra": {"predict_fn": "predict_proba"}},
        },
    )
    joblib.dump(models["iris-lr"], root / "iris-lr" / "model.pkl")
    models["xgb"] = xgboost.XGBClassifier(n_estimators=4, max_depth=2).fit(X, y)
    _write(root / "xgb", {"implementation": "mlserver_xgboost.XGBoostModel"})
    models["xgb"].save_model(root / "xgb" / "model.json")
    models["lgbm"] = lightgbm.LGBMClassifier(n_estimators=5, num_leaves=4, verbose=-1).fit(
        X, (y == 2).astype(int)
    )
    _write(
        root / "lgbm",
        {
            "name": "lgbm",
            "implementation": "mlserver_lightgbm.LightGBMModel",
            "parameters": {"uri": "./model.bst", "version": "3"},
        },
    )
    models["lgbm"].booster_.save_model(str(root / "lgbm" / "model.bst"))
    _write(
        root / "scaler",
        {
            "name": "scaler",
            "implementation": "models.Scaler",
            "platform": "custom",
            "versions": ["scaler/1.0"],
            "max_batch_size": 4,
            "max_batch_time": 0.005,
            "parameters": {"extra": {"factor": 3}, "content_type": "np"},
        },
        **{"models.py": CUSTOM},
    )
    # Deeper in the tree, and another models.py: MLServer finds both.
    _write(
        root / "more" / "negate",
        {"name": "negate", "implementation": "models.Negate"},
        **{"models.py": NEGATE},
    )
    _write(
        root / "upper",
        {
            "name": "upper",
            "implementation": "models.Upper",
            "inputs": [
                {
                    "name": "text",
                    "datatype": "BYTES",
                    "shape": [-1],
                    "parameters": {"content_type": "str"},
                }
            ],
        },
        **{"models.py": UPPER},
    )
    return models


def rows() -> np.ndarray:
    """The rows mlserver_client_calls.py sends."""
    return np.array([[5.1, 3.5, 1.4, 0.2], [6.2, 3.4, 5.4, 2.3], [5.9, 3.0, 4.2, 1.5]])


SUM = '''
import mlserver
import numpy as np
from mlserver import MLModel
from mlserver.codecs import NumpyCodec, NumpyRequestCodec
from mlserver.errors import InferenceError
from mlserver.types import InferenceRequest, InferenceResponse


class SumModel(MLModel):
    """Row sums plus parameters.extra.offset; an input named "bad" is refused (400)."""

    async def load(self) -> bool:
        self.offset = self.settings.parameters.extra.get("offset", 0)
        mlserver.register("rows_summed", "rows summed per request")
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        if payload.inputs[0].name == "bad":
            raise InferenceError("the input named bad is refused")
        if payload.inputs[0].name == "boom":
            raise RuntimeError("the model broke")
        x = self.decode_request(payload, default_codec=NumpyRequestCodec)
        total = np.asarray(x).sum(axis=1, keepdims=True) + self.offset
        mlserver.log(rows_summed=len(total))  # a custom metric: needs MLServer's context
        return InferenceResponse(
            model_name=self.name,
            model_version=self.version,
            outputs=[NumpyCodec.encode_output("total", total)],
        )
'''

TEXT = '''
from typing import List

import numpy as np
from mlserver import MLModel
from mlserver.codecs import decode_args


class TextModel(MLModel):
    """decode_args: the input "text" arrives as a list of str (its type hint)."""

    @decode_args
    async def predict(self, text: List[str]) -> np.ndarray:
        return np.array([len(t) for t in text])
'''

FRAME = '''
import pandas as pd
from mlserver import MLModel
from mlserver.codecs import PandasCodec
from mlserver.types import InferenceRequest, InferenceResponse


class FrameModel(MLModel):
    """A pandas request in, a pandas response out (encode_response)."""

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        df = self.decode_request(payload, default_codec=PandasCodec)
        out = pd.DataFrame({"doubled": df["a"] * 2, "label": df["b"].str.upper()})
        return self.encode_response(out, default_codec=PandasCodec)
'''


def build_mlmodels(root: Path) -> None:
    """Folders of MLServer MLModel subclasses (their server needs mlserver)."""
    _write(
        root / "sum",
        {
            "name": "sum",
            "implementation": "models.SumModel",
            "parameters": {"version": "2", "extra": {"offset": 10}},
            "inputs": [{"name": "x", "datatype": "FP64", "shape": [-1, 3]}],
        },
        **{"models.py": SUM},
    )
    _write(
        root / "text", {"name": "text", "implementation": "models.TextModel"}, **{"models.py": TEXT}
    )
    _write(
        root / "frame",
        {"name": "frame", "implementation": "models.FrameModel"},
        **{"models.py": FRAME},
    )


# The models MLServer's own endpoint tests serve (tests/fixtures.py there), written here
# to the same behaviour: row sums that echo the request's x- headers in the response's
# parameters, a text echo, a word-by-word stream and a model that always fails.
ENDPOINT_MODELS = """
import asyncio

import mlserver
from fastapi import Body
from mlserver import MLModel
from mlserver.codecs import NumpyCodec, StringCodec
from mlserver.errors import MLServerError
from mlserver.handlers.custom import custom_handler
from mlserver.types import InferenceRequest, InferenceResponse, Parameters


class SumModel(MLModel):
    @custom_handler(rest_path="/my-custom-endpoint")
    async def my_payload(self, payload: list = Body(...)) -> int:
        return sum(payload)

    @custom_handler(rest_path="/custom-endpoint-with-long-response")
    async def long_response_endpoint(self, length: int = Body(...)) -> dict:
        return {"foo": "x" * length}

    @custom_handler(rest_path="/custom-scaled", rest_method="POST")
    def scaled(self, values: list = Body(...), factor: float = Body(2.0)) -> dict:
        if factor == 0:
            raise MLServerError("factor: must not be 0")
        return {"scaled": [v * factor for v in values]}

    async def load(self) -> bool:
        self.calls = 0
        mlserver.register("rows_summed", "rows summed per request")
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        self.calls += 1
        x = self.decode(payload.inputs[0])
        mlserver.log(rows_summed=x.shape[0])
        total = NumpyCodec.encode_output(name="total", payload=x.sum(axis=1, keepdims=True))
        reply = InferenceResponse(
            id=payload.id, model_name=self.name, model_version=self.version, outputs=[total]
        )
        headers = (payload.parameters.headers if payload.parameters else None) or {}
        echoed = {k: v for k, v in headers.items() if k.startswith("x-")}
        if echoed:
            reply.parameters = Parameters(headers=echoed)
        return reply

    async def unload(self) -> bool:
        with open(self.settings.parameters.uri + "/unloaded", "a") as f:
            f.write(f"{self.calls}\\n")
        return True


class TextModel(MLModel):
    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        text = StringCodec.decode_input(payload.inputs[0])[0]
        return InferenceResponse(
            id=payload.id,
            model_name=self.name,
            outputs=[StringCodec.encode_output("output", [text], use_bytes=True)],
        )


class TextStreamModel(MLModel):
    async def predict_stream(self, payloads):
        payload = [p async for p in payloads][0]
        words = StringCodec.decode_input(payload.inputs[0])[0].split(" ")
        for i, word in enumerate(words):
            await asyncio.sleep(0.01)
            yield InferenceResponse(
                model_name=self.name,
                outputs=[
                    StringCodec.encode_output(
                        "output", [word if i == 0 else " " + word], use_bytes=True
                    )
                ],
            )


class ErrorModel(MLModel):
    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        raise MLServerError("something really bad happened")
"""


def build_endpoint_models(root: Path) -> None:
    """The folder MLServer's endpoint tests serve, as its testdata writes the settings."""
    (root / "settings.json").write_text(
        json.dumps({"debug": True, "host": "127.0.0.1", "parallel_workers": 1})
    )
    (root / "models.py").write_text(ENDPOINT_MODELS)
    tensor = {"datatype": "FP32", "name": "input-0", "shape": [128]}
    _write(
        root / "sum-model",
        {
            "name": "sum-model",
            "implementation": "models.SumModel",
            "max_batch_size": 10,
            "max_batch_time": 0.4,
            "versions": ["sum-model/v1.2.3"],
            "platform": "mlserver",
            "inputs": [{**tensor, "parameters": {"content_type": "np"}}],
            "outputs": [{"datatype": "FP32", "name": "output-0", "shape": [1]}],
            "parameters": {"version": "v1.2.3"},
            "cache_enabled": True,
        },
    )
    for name, cls in (
        ("text-model", "TextModel"),
        ("text-stream-model", "TextStreamModel"),
        ("error-model", "ErrorModel"),
    ):
        _write(
            root / name,
            {"name": name, "implementation": f"models.{cls}", "parameters": {"version": "v1.2.3"}},
        )
