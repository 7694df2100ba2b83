"""Trained model files served without a model class (``inferwire serve model.joblib``):
scored by the native tree runtime when it can score the model, else by a Python runtime
that calls the library's own ``predict_proba`` / ``predict``. A log line says which, and
why."""

from __future__ import annotations

import json
import logging
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import _core
from .errors import ModelLoadError
from .trees import UnsupportedModel, convert

log = logging.getLogger("inferwire")


def _pickle(path: Path) -> Any:
    try:
        import joblib
    except ImportError:
        with path.open("rb") as f:
            return pickle.load(f)
    return joblib.load(path)


def _booster(path: Path) -> Any:
    import xgboost

    booster = xgboost.Booster()
    booster.load_model(str(path))
    return booster


def _json(path: Path) -> Any:
    """An inferwire tree file (a dict for the native runtime), else an XGBoost model."""
    text = path.read_text()
    if '"inferwire-trees"' in text[:200]:
        return json.loads(text)
    return _booster(path)


def _xgboost_estimator(path: Path) -> Any:
    """As mlserver_xgboost reads it: a regressor, else (a TypeError says so) a classifier."""
    import xgboost

    try:
        model = xgboost.XGBRegressor()
        model.load_model(str(path))
        return model
    except TypeError:
        model = xgboost.XGBClassifier()
        model.load_model(str(path))
        return model


def _lightgbm(path: Path) -> Any:
    import lightgbm

    return lightgbm.Booster(model_file=str(path))


def _onnx(path: Path) -> Any:
    import onnxruntime

    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


# A model file's reader by its suffix: a pickle (joblib or plain), an inferwire tree file
# or an XGBoost model (.json, .ubj), a LightGBM text model (.txt, .model), an ONNX graph.
BY_SUFFIX: dict[str, Callable[[Path], Any]] = {
    ".joblib": _pickle,
    ".pkl": _pickle,
    ".pickle": _pickle,
    ".json": _json,
    ".ubj": _booster,
    ".txt": _lightgbm,
    ".model": _lightgbm,
    ".onnx": _onnx,
}
SUFFIXES = tuple(BY_SUFFIX)
# MLServer's runtimes read by library, whatever the suffix (model.bst is XGBoost's and
# LightGBM's), and its XGBoost runtime gives the scikit-learn estimator, not the Booster.
BY_LIBRARY: dict[str, Callable[[Path], Any]] = {
    "sklearn": _pickle,
    "xgboost": _xgboost_estimator,
    "lightgbm": _lightgbm,
}


def is_model_file(spec: str) -> bool:
    path = Path(spec)
    return path.suffix.lower() in SUFFIXES and path.is_file()


def read(path: Path, library: str = "") -> Any:
    """The trained model in ``path``: read as ``library``'s MLServer runtime reads it,
    else by its suffix (``BY_SUFFIX``)."""
    reader = BY_LIBRARY[library] if library else BY_SUFFIX.get(path.suffix.lower())
    if reader is None:
        raise ModelLoadError(f"{path}: not a model file ({', '.join(SUFFIXES)})")
    try:
        return reader(path)
    except ImportError as e:
        raise ModelLoadError(f"{path}: reading it needs {e.name}: pip install {e.name}") from e
    except Exception as e:
        raise ModelLoadError(f"{path}: cannot read the model: {type(e).__name__}: {e}") from e


def native(obj: Any, path: Any, runtime: str, **options: Any) -> tuple[Any, str]:
    """(the native runtime's ``TreeEnsemble`` for ``obj``, "") when ``runtime`` allows it
    and the runtime can score the model, else (None, why not: "" or a parenthesis for the
    log). ``runtime`` native makes "cannot" an error."""
    if runtime not in ("auto", "native"):
        return None, ""
    try:
        doc = obj if isinstance(obj, dict) else convert(obj)
        return _core.TreeEnsemble(json.dumps(doc), **options), ""
    except (UnsupportedModel, ValueError) as e:
        if runtime == "native":
            raise ModelLoadError(f"{path}: the native runtime cannot serve it: {e}") from e
        return None, f" (the native runtime cannot: {e})"


def build(path: str, runtime: str = "auto", output_names: str = "{class}") -> tuple[Any, str]:
    """(what to serve, a description for the log): a ``TreeEnsemble`` for the native
    runtime, or a model object with ``predict`` for the Python runtime."""
    obj = read(Path(path))
    tree, why = native(obj, path, runtime, output_names=output_names)
    if tree is not None:
        return tree, (
            f"native tree runtime: {tree.source}, {tree.n_trees} trees, "
            f"{tree.n_features} features; no Python on the request path"
        )
    if isinstance(obj, dict):
        raise ModelLoadError(f"{path}: an inferwire tree file is served by the native runtime")
    model = LibraryModel(obj)
    return model, f"Python runtime for {model.library}{why}"


def adapter(
    path: str,
    name: str,
    runtime: str = "auto",
    output_names: str = "{class}",
    raw_arrays: str = "numpy",
) -> tuple[Any, str]:
    """What the core serves for a model file, and the log line saying how: a
    ``TreeEnsemble`` (served natively), or the Python runtime's model behind a
    ``SeldonAdapter``."""
    built, how = build(path, runtime, output_names)
    if isinstance(built, _core.TreeEnsemble):
        return built, how
    from .seldon import SeldonAdapter

    return SeldonAdapter(built, name, raw_arrays), how


class LibraryModel:
    """A trained model run through its library, as Seldon's prepackaged servers do:
    probabilities for classifiers, predictions otherwise. A data-frame request (columns
    by name) becomes the columns the model was trained on, in order."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.library = type(model).__module__.split(".")[0]
        names = getattr(model, "feature_names_in_", None)
        if names is None and hasattr(model, "feature_name"):
            names = model.feature_name()  # lightgbm.Booster
        if names is None:
            names = getattr(model, "feature_names", None)  # xgboost.Booster
        self.feature_names = [str(n) for n in names] if names is not None else []
        classes = getattr(model, "classes_", None)
        if classes is not None and hasattr(model, "predict_proba"):
            self.class_names = [str(c) for c in classes]

    def _rows(self, X: Any) -> Any:
        if isinstance(X, dict):
            if not self.feature_names:
                raise ValueError("the model has no feature names: send rows as an array")
            missing = [n for n in self.feature_names if n not in X]
            if missing:
                raise ValueError(f"columns missing: {', '.join(missing)}")
            return np.column_stack([np.asarray(X[n], dtype=np.float64) for n in self.feature_names])
        X = np.asarray(X, dtype=np.float64)
        return X.reshape(1, -1) if X.ndim == 1 else X

    def predict(self, X: Any, features_names: list[str] | None = None, **kwargs: Any) -> Any:
        rows = self._rows(X)
        m = self.model
        if self.library == "onnxruntime":
            first = m.get_inputs()[0].name
            outputs = m.run(None, {first: rows.astype(np.float32)})
            return outputs[-1] if len(outputs) > 1 else outputs[0]
        if self.library == "xgboost" and not hasattr(m, "predict_proba"):
            import xgboost

            return m.predict(xgboost.DMatrix(rows, feature_names=m.feature_names))
        if getattr(m, "feature_names_in_", None) is not None:
            # Fitted on a data frame: give it one, so its columns are checked by name.
            import pandas as pd

            rows = pd.DataFrame(rows, columns=self.feature_names)
        if hasattr(m, "predict_proba"):
            return m.predict_proba(rows)
        return m.predict(rows)
