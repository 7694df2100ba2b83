"""LightGBM boosters (``LGBMClassifier``, ``LGBMRegressor``, ``Booster``) in the inferwire
tree format, read from LightGBM's own text model (``model_to_string()``).

LightGBM numbers internal nodes from 0 and leaves separately (a child ``-1 - i`` is leaf
``i``); here leaves follow the internal nodes. A row goes left when ``x <= threshold``
(float64). For missing values, a split whose missing type is NaN sends NaN where
``default_left`` says; with missing type None, LightGBM reads NaN as 0.0, which is where it
goes here. Splits that treat zero as missing, categorical splits and linear trees are
refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedModel
from .sklearn import FORMAT, floats

_CATEGORICAL, _DEFAULT_LEFT = 1, 2


def _header(text: str) -> dict[str, str]:
    out = {}
    for line in text.split("\nTree=", 1)[0].splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out


def _trees(text: str) -> list[dict[str, str]]:
    body = text.split("end of trees", 1)[0]
    trees = []
    for block in body.split("\nTree=")[1:]:
        fields = {}
        for line in block.splitlines()[1:]:
            key, sep, value = line.partition("=")
            if sep:
                fields[key] = value
        trees.append(fields)
    return trees


def _tree(f: dict[str, str], scale: float) -> dict[str, Any]:
    if f.get("is_linear", "0") != "0":
        raise UnsupportedModel("linear trees are not supported by the native runtime")
    if int(f.get("num_cat", "0")) > 0:
        raise UnsupportedModel("categorical splits are not supported by the native runtime")
    leaves = [float(v) * scale for v in f["leaf_value"].split()]
    n_leaves = int(f["num_leaves"])
    n_int = n_leaves - 1
    if n_int == 0:
        return {"feature": [-1], "threshold": [0.0], "left": [0], "right": [0],
                "value": floats(leaves)}  # fmt: skip

    def ints(key: str) -> list[int]:
        return [int(v) for v in f[key].split()]

    feature, decision = ints("split_feature"), ints("decision_type")
    threshold = [float(v) for v in f["threshold"].split()]

    def node(child: int) -> int:
        return child if child >= 0 else n_int + (-child - 1)

    missing_left = []
    for i, d in enumerate(decision):
        if d & _CATEGORICAL:
            raise UnsupportedModel("categorical splits are not supported by the native runtime")
        missing = (d >> 2) & 3
        if missing == 1:
            raise UnsupportedModel(
                "splits that treat zero as missing (zero_as_missing) are not supported by the "
                "native runtime"
            )
        # NaN type: the default direction; None: NaN is read as 0.0.
        missing_left.append(bool(d & _DEFAULT_LEFT) if missing == 2 else 0.0 <= threshold[i])
    return {
        "feature": feature + [-1] * n_leaves,
        "threshold": floats(threshold + [0.0] * n_leaves),
        "left": [node(c) for c in ints("left_child")] + [0] * n_leaves,
        "right": [node(c) for c in ints("right_child")] + [0] * n_leaves,
        "missing_left": missing_left + [False] * n_leaves,
        "value": floats([0.0] * n_int + leaves),
    }


def convert_lightgbm(model: Any) -> dict[str, Any]:
    booster = getattr(model, "booster_", model)
    if not hasattr(booster, "model_to_string"):
        raise UnsupportedModel(f"{type(model).__name__} is not a fitted LightGBM model")
    text = booster.model_to_string()
    head = _header(text)
    objective = head.get("objective", "").split()
    name = objective[0] if objective else ""
    params = dict(p.split(":", 1) for p in objective[1:] if ":" in p)
    k = int(head.get("num_tree_per_iteration", "1"))
    scale = 1.0
    if name in ("binary", "cross_entropy"):
        task, link = "classification", "sigmoid"
        scale = float(params.get("sigmoid", "1"))
    elif name == "multiclass":
        task, link = "classification", "softmax"
    elif name in ("regression", "regression_l1", "huber", "fair", "quantile", "mape"):
        task, link = "regression", "identity"
    else:
        raise UnsupportedModel(
            f"objective {name or '(none)'} is not supported by the native runtime (its link is "
            "not identity, sigmoid or softmax)"
        )
    trees = []
    for i, f in enumerate(_trees(text)):
        tree = _tree(f, scale)
        if k > 1:
            tree["output"] = i % k
        trees.append(tree)
    names = head.get("feature_names", "").split()
    doc: dict[str, Any] = {
        **FORMAT,
        "source": f"lightgbm.{type(model).__name__}",
        "task": task,
        "n_features": int(head["max_feature_idx"]) + 1,
        "feature_names": names,
        "n_outputs": k,
        # Random-forest mode writes a bare `average_output` line in the header.
        "aggregate": "mean" if "average_output" in text.split("\nTree=", 1)[0].split() else "sum",
        "link": link,
        "split": "le",
        "features_as_f32": False,
        "trees": trees,
    }
    if task == "classification":
        classes = getattr(model, "classes_", None)
        n = 2 if link == "sigmoid" else k
        doc["classes"] = np.asarray(classes).tolist() if classes is not None else list(range(n))
    return doc
