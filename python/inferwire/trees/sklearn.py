"""scikit-learn trees and ensembles in the inferwire tree format.

Each converter reads the fitted arrays scikit-learn predicts from (``tree_`` for
DecisionTree and the forests, the stages of GradientBoosting, the predictors of
HistGradientBoosting) and states how they combine, so that the native scorer returns what
``predict_proba`` (classifiers) or ``predict`` (regressors) returns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedModel

FORMAT = {"format": "inferwire-trees", "version": 1}


def _name(model: Any) -> str:
    return f"{type(model).__module__.split('._')[0]}.{type(model).__name__}"


def _common(model: Any, task: str) -> dict[str, Any]:
    names = getattr(model, "feature_names_in_", None)
    out: dict[str, Any] = {
        **FORMAT,
        "source": _name(model),
        "task": task,
        "n_features": int(model.n_features_in_),
        "feature_names": [str(n) for n in names] if names is not None else [],
    }
    if task == "classification":
        out["classes"] = np.asarray(model.classes_).tolist()
    return out


def floats(values: Any) -> list[Any]:
    """Numbers, with the non-finite ones as the strings the format uses."""
    arr = np.asarray(values, dtype=np.float64).ravel()
    out: list[Any] = arr.tolist()
    # Almost always all finite: one vectorised check, the loop only for the rest.
    for i in np.flatnonzero(~np.isfinite(arr)).tolist():
        v = out[i]
        out[i] = "nan" if v != v else ("inf" if v > 0 else "-inf")
    return out


def _tree(est: Any, classification: bool, scale: float = 1.0) -> dict[str, Any]:
    """A fitted ``sklearn.tree`` estimator's ``tree_`` as a format tree."""
    t = est.tree_
    if t.n_outputs != 1:
        raise UnsupportedModel("multi-output trees are not supported by the native runtime")
    leaf = t.children_left < 0
    value = t.value[:, 0, :].astype(np.float64)
    if classification:
        # predict_proba divides each leaf by its total; an all-zero leaf stays zero.
        total = value.sum(axis=1, keepdims=True)
        value = np.divide(value, total, out=np.zeros_like(value), where=total > 0)
    missing = getattr(t, "missing_go_to_left", None)
    return {
        "feature": np.where(leaf, -1, t.feature).tolist(),
        "threshold": floats(np.where(leaf, 0.0, t.threshold)),
        "left": np.where(leaf, 0, t.children_left).tolist(),
        "right": np.where(leaf, 0, t.children_right).tolist(),
        "missing_left": [bool(m) for m in missing] if missing is not None else [],
        "value": floats(value * scale),
    }


def _decision_tree(model: Any, classification: bool) -> dict[str, Any]:
    out = _common(model, "classification" if classification else "regression")
    width = len(model.classes_) if classification else 1
    return {
        **out,
        "n_outputs": width,
        "aggregate": "sum",
        "link": "identity",
        "split": "le",
        "features_as_f32": True,
        "trees": [_tree(model, classification)],
    }


def _forest(model: Any, classification: bool) -> dict[str, Any]:
    out = _common(model, "classification" if classification else "regression")
    return {
        **out,
        "n_outputs": len(model.classes_) if classification else 1,
        "aggregate": "mean",
        "link": "identity",
        "split": "le",
        "features_as_f32": True,
        "trees": [_tree(e, classification) for e in model.estimators_],
    }


def _gradient_boosting(model: Any, classification: bool) -> dict[str, Any]:
    if model.init_ == "zero":
        base = np.zeros(model.estimators_.shape[1])
    elif hasattr(model.init_, "predict") and type(model.init_).__name__.startswith("Dummy"):
        probe = np.zeros((1, model.n_features_in_), dtype=np.float32)
        base = np.asarray(model._raw_predict_init(probe), dtype=np.float64)[0]
    else:
        raise UnsupportedModel("a custom `init` estimator is not supported by the native runtime")
    lr = float(model.learning_rate)
    k = model.estimators_.shape[1]
    out = _common(model, "classification" if classification else "regression")
    # Exponential loss turns the raw score into a probability as expit(2 · raw).
    factor = 2.0 if classification and getattr(model, "loss", "") == "exponential" else 1.0
    trees = []
    for stage in model.estimators_:
        for c, est in enumerate(stage):
            tree = _tree(est, False, scale=lr * factor)
            if k > 1:
                tree["output"] = c
            trees.append(tree)
    link = "identity" if not classification else ("sigmoid" if k == 1 else "softmax")
    return {
        **out,
        "n_outputs": k,
        "aggregate": "sum",
        "base": (base * factor).tolist(),
        "link": link,
        "split": "le",
        "features_as_f32": True,
        "trees": trees,
    }


def _hist_gradient_boosting(model: Any, classification: bool) -> dict[str, Any]:
    if getattr(model, "_preprocessor", None) is not None:
        raise UnsupportedModel("categorical features are not supported by the native runtime")
    loss = type(model._loss).__name__
    if not classification and loss not in ("HalfSquaredError", "AbsoluteError", "PinballLoss"):
        raise UnsupportedModel(
            f"loss {loss} (a non-identity link) is not supported by the native runtime"
        )
    k = len(model._predictors[0])
    trees = []
    for stage in model._predictors:
        for c, predictor in enumerate(stage):
            nodes = predictor.nodes
            if nodes["is_categorical"].any():
                raise UnsupportedModel("categorical splits are not supported by the native runtime")
            leaf = nodes["is_leaf"].astype(bool)
            tree = {
                "feature": np.where(leaf, -1, nodes["feature_idx"]).tolist(),
                "threshold": floats(np.where(leaf, 0.0, nodes["num_threshold"])),
                "left": np.where(leaf, 0, nodes["left"]).tolist(),
                "right": np.where(leaf, 0, nodes["right"]).tolist(),
                "missing_left": nodes["missing_go_to_left"].astype(bool).tolist(),
                "value": floats(nodes["value"]),
            }
            if k > 1:
                tree["output"] = c
            trees.append(tree)
    base = np.asarray(model._baseline_prediction, dtype=np.float64).ravel()
    out = _common(model, "classification" if classification else "regression")
    return {
        **out,
        "n_outputs": k,
        "aggregate": "sum",
        "base": base.tolist(),
        "link": "identity" if not classification else ("sigmoid" if k == 1 else "softmax"),
        "split": "le",
        "features_as_f32": False,
        "trees": trees,
    }


_CONVERTERS = {
    "DecisionTreeClassifier": (_decision_tree, True),
    "DecisionTreeRegressor": (_decision_tree, False),
    "ExtraTreeClassifier": (_decision_tree, True),
    "ExtraTreeRegressor": (_decision_tree, False),
    "RandomForestClassifier": (_forest, True),
    "RandomForestRegressor": (_forest, False),
    "ExtraTreesClassifier": (_forest, True),
    "ExtraTreesRegressor": (_forest, False),
    "GradientBoostingClassifier": (_gradient_boosting, True),
    "GradientBoostingRegressor": (_gradient_boosting, False),
    "HistGradientBoostingClassifier": (_hist_gradient_boosting, True),
    "HistGradientBoostingRegressor": (_hist_gradient_boosting, False),
}


def convert_sklearn(model: Any) -> dict[str, Any]:
    entry = _CONVERTERS.get(type(model).__name__)
    if entry is None:
        raise UnsupportedModel(f"{_name(model)} is not a tree model the native runtime scores")
    if not hasattr(model, "n_features_in_"):
        raise UnsupportedModel(f"{_name(model)} is not fitted")
    fn, classification = entry
    return fn(model, classification)
