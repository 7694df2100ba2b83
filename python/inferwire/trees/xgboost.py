"""XGBoost boosters (``XGBClassifier``, ``XGBRegressor``, ``Booster``) in the inferwire tree
format, read from the booster's own JSON model (``save_raw("json")``).

XGBoost sends a row left when ``x < split`` in float32, and missing values where
``default_left`` says. Thresholds are written as float32 values, so the comparison is the
same. The intercept (``base_score``, which XGBoost keeps in the objective's own space) is
measured rather than re-derived: the booster's margin for one row, minus the trees' sum
for that row.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..errors import UnsupportedModel
from .sklearn import FORMAT, floats

_LINKS = {
    "binary:logistic": ("classification", "sigmoid"),
    "multi:softprob": ("classification", "softmax"),
    "multi:softmax": ("classification", "softmax"),
    "reg:squarederror": ("regression", "identity"),
    "reg:absoluteerror": ("regression", "identity"),
    "reg:pseudohubererror": ("regression", "identity"),
    "reg:quantileerror": ("regression", "identity"),
    "binary:logitraw": ("regression", "identity"),
}


def convert_xgboost(model: Any) -> dict[str, Any]:
    import xgboost

    booster = model.get_booster() if hasattr(model, "get_booster") else model
    if not isinstance(booster, xgboost.Booster):
        raise UnsupportedModel(f"{type(model).__name__} is not an XGBoost model")
    learner = json.loads(bytes(booster.save_raw("json")))["learner"]
    objective = learner["objective"]["name"]
    if objective not in _LINKS:
        raise UnsupportedModel(
            f"objective {objective} is not supported by the native runtime (its link is not "
            "identity, sigmoid or softmax)"
        )
    gb = learner["gradient_booster"]
    if gb["name"] != "gbtree":
        raise UnsupportedModel(f"booster {gb['name']} is not supported (gbtree only)")
    task, link = _LINKS[objective]
    params = learner["learner_model_param"]
    n_features = int(params["num_feature"])
    n_class = int(params.get("num_class", "0"))
    if int(params.get("num_target", "1")) > 1:
        raise UnsupportedModel("multi-target models are not supported by the native runtime")
    k = max(n_class, 1)
    trees = []
    for t, cls in zip(gb["model"]["trees"], gb["model"]["tree_info"], strict=True):
        if any(t["split_type"]):
            raise UnsupportedModel("categorical splits are not supported by the native runtime")
        left = np.asarray(t["left_children"])
        leaf = left < 0
        thresholds = np.asarray(t["split_conditions"], dtype=np.float32).astype(np.float64)
        tree = {
            "feature": np.where(leaf, -1, t["split_indices"]).tolist(),
            "threshold": floats(np.where(leaf, 0.0, thresholds)),
            "left": np.where(leaf, 0, left).tolist(),
            "right": np.where(leaf, 0, t["right_children"]).tolist(),
            "missing_left": [bool(d) for d in t["default_left"]],
            "value": floats(np.where(leaf, thresholds, 0.0)),
        }
        if k > 1:
            tree["output"] = int(cls)
        trees.append(tree)
    names = booster.feature_names or []
    doc: dict[str, Any] = {
        **FORMAT,
        "source": f"xgboost.{type(model).__name__}",
        "task": task,
        "n_features": n_features,
        "feature_names": list(names),
        "n_outputs": k,
        "aggregate": "sum",
        "base": [0.0] * k,
        "link": "identity",
        "split": "lt",
        "features_as_f32": True,
        "trees": trees,
    }
    doc["base"] = _intercept(booster, doc, k)
    doc["link"] = link
    if task == "classification":
        classes = getattr(model, "classes_", None)
        n = 2 if link == "sigmoid" else k
        doc["classes"] = np.asarray(classes).tolist() if classes is not None else list(range(n))
    return doc


def _intercept(booster: Any, doc: dict[str, Any], k: int) -> list[float]:
    """The booster's margin at a zero row minus the trees' sum there."""
    import xgboost

    from .._core import TreeEnsemble

    probe = np.zeros((1, doc["n_features"]), dtype=np.float32)
    margin = booster.predict(
        xgboost.DMatrix(probe, feature_names=booster.feature_names), output_margin=True
    )
    trees_sum = TreeEnsemble(json.dumps(doc)).predict(probe.astype(np.float64))[0]
    base = np.asarray(margin, dtype=np.float64).reshape(k) - trees_sum
    return [float(b) for b in base]
