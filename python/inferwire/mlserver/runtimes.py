"""MLServer's built-in runtimes (``mlserver_sklearn.SKLearnModel``,
``mlserver_xgboost.XGBoostModel``, ``mlserver_lightgbm.LightGBMModel``) served by
inferwire's own: the model file is found and read as MLServer's runtime reads it, scored
by the native tree runtime when it can score the model, else by the library in Python;
either way the V2 replies carry the outputs MLServer's runtime answers (``predict``,
``predict_proba``, ``transform``; the default from ``parameters.extra.predict_fn``), a 1-D
result shaped ``[rows, 1]`` as MLServer's numpy codec shapes it."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from .. import modelfile
from ..contract import Adapter, Request
from ..error_log import errors
from ..errors import BadRequest, ModelLoadError
from .settings import MLServerModel, Runtime

log = logging.getLogger("inferwire")


def read(runtime: Runtime, path: Path) -> Any:
    """The trained model, read as MLServer's runtime reads it."""
    if path.is_dir():
        raise ModelLoadError(
            f"{path}: no model file in the folder (MLServer's {runtime.library} runtime looks "
            f"for {', '.join(runtime.wellknown)}); set parameters.uri"
        )
    return modelfile.read(path, runtime.library)


def adapter(ml: MLServerModel, name: str, runtime_choice: str = "auto") -> tuple[Any, str]:
    """What the core serves for the model (a ``TreeEnsemble`` or an adapter) and a log
    line saying how."""
    runtime = ml.runtime
    assert runtime is not None
    path = ml.model_path()
    model = read(runtime, path)
    default = str(ml.extra.get("predict_fn", "predict"))
    # `transform` is the estimator's own (a pipeline's steps): never native.
    tree, why = modelfile.native(
        model,
        path,
        "python" if default == "transform" else runtime_choice,
        mlserver_runtime=runtime.library,
        default_output=default,
        metadata=json.dumps({"name": name, **ml.metadata}),
    )
    if tree is not None:
        return tree, (
            f"{ml.implementation} ({path.name}) on the native tree runtime: "
            f"{tree.source}, {tree.n_trees} trees; no Python on the request path"
        )
    served = RuntimeAdapter(LibraryRuntime(model, runtime, default), name, ml)
    return served, f"{ml.implementation} ({path.name}) in Python{why}"


# MLServer's numpy codec marks each output it encodes.
NUMPY = {"content_type": "np"}


def batch_dim(y: Any) -> Any:
    """MLServer's numpy codec: a 1-D result is a column, ``[rows, 1]``."""
    y = np.asarray(y)
    return y.reshape(-1, 1) if y.ndim == 1 else y


class LibraryRuntime:
    """The estimator's own methods, as MLServer's runtime calls them."""

    def __init__(self, model: Any, runtime: Runtime, default: str) -> None:
        self.model = model
        self.runtime = runtime
        self.default = default

    def outputs(self, X: Any, wanted: list[str]) -> list[tuple[Any, ...]]:
        if self.runtime.library == "lightgbm":
            # mlserver_lightgbm answers Booster.predict as `predict`, whatever is asked.
            return [("predict", batch_dim(self.model.predict(X)), NUMPY)]
        out = []
        for name in wanted or [self.default]:
            if name not in self.runtime.outputs:
                raise BadRequest(
                    f"outputs: {name!r} is not one this runtime answers "
                    f"({', '.join(self.runtime.outputs)})"
                )
            final = self.model.steps[-1][-1] if hasattr(self.model, "steps") else self.model
            if not hasattr(final, name):
                raise BadRequest(f"outputs: {type(final).__name__} models have no {name}")
            out.append((name, batch_dim(getattr(self.model, name)(X)), NUMPY))
        return out


class RuntimeAdapter(Adapter):
    """A Python runtime's V2 requests answered with exactly the outputs asked for (the
    core keeps them in the request's order); Seldon's predict gets the default output."""

    def __init__(self, runtime: LibraryRuntime, name: str, ml: MLServerModel) -> None:
        super().__init__(name)
        self.model = runtime  # what the memory budget measures
        self.runtime = runtime
        self.configure(ml)

    def seldon_predict(self, X: Any) -> Any:
        return self.runtime.outputs(X, [])[0][1]

    def infer(self, request: Request) -> list[tuple[Any, ...]]:
        X, _ = self.decode(request)
        try:
            return self.runtime.outputs(X, request.requested)
        except BadRequest:
            raise
        except Exception as e:
            errors.error(f"{self.name}.predict", e)
            raise
