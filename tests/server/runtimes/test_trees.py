"""The native tree runtime scores every supported model kind exactly as the library does:
converted once (``inferwire.trees.convert``), scored in Rust, compared on held-out data
with ``predict_proba`` (classifiers) and ``predict`` (regressors) within 1e-6."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from inferwire._core import TreeEnsemble
from inferwire.trees import UnsupportedModel, convert
from sklearn import ensemble, tree
from sklearn.datasets import make_classification, make_regression
from sklearn.model_selection import train_test_split


def data(kind: str, classes: int = 2) -> tuple[Any, Any, Any, Any]:
    if kind == "classification":
        X, y = make_classification(
            n_samples=600, n_features=6, n_informative=4, n_classes=classes, random_state=3
        )
    else:
        X, y = make_regression(n_samples=600, n_features=6, noise=5.0, random_state=3)
    return train_test_split(X, y, test_size=0.4, random_state=0)  # type: ignore[no-any-return]


def native(model: Any) -> TreeEnsemble:
    return TreeEnsemble(json.dumps(convert(model)))


CLASSIFIERS = [
    tree.DecisionTreeClassifier(max_depth=8, random_state=0),
    tree.ExtraTreeClassifier(random_state=0),
    ensemble.RandomForestClassifier(n_estimators=15, random_state=0),
    ensemble.ExtraTreesClassifier(n_estimators=15, random_state=0),
    ensemble.GradientBoostingClassifier(n_estimators=20, random_state=0),
    ensemble.GradientBoostingClassifier(n_estimators=20, loss="exponential", random_state=0),
    ensemble.HistGradientBoostingClassifier(max_iter=20, random_state=0),
]
REGRESSORS = [
    tree.DecisionTreeRegressor(max_depth=8, random_state=0),
    ensemble.RandomForestRegressor(n_estimators=15, random_state=0),
    ensemble.ExtraTreesRegressor(n_estimators=15, random_state=0),
    ensemble.GradientBoostingRegressor(n_estimators=20, random_state=0),
    ensemble.GradientBoostingRegressor(n_estimators=20, loss="huber", random_state=0),
    ensemble.HistGradientBoostingRegressor(max_iter=20, random_state=0),
]


def label(m: Any) -> str:
    extra = getattr(m, "loss", "")
    return f"{type(m).__name__}{'-' + extra if extra in ('exponential', 'huber') else ''}"


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("model", CLASSIFIERS, ids=label)
def test_classifiers_match_predict_proba(model: Any, classes: int) -> None:
    if classes == 3 and getattr(model, "loss", "") == "exponential":
        pytest.skip("exponential loss is binary only")
    X_train, X_test, y_train, _ = data("classification", classes)
    model.fit(X_train, y_train)
    n = native(model)
    got = n.predict(X_test)
    want = model.predict_proba(X_test)
    assert got.shape == want.shape
    assert np.max(np.abs(got - want)) <= 1e-6, label(model)
    predicted = np.asarray(n.classes)[got.argmax(axis=1)]
    np.testing.assert_array_equal(predicted, model.predict(X_test))
    assert n.task == "classification" and n.n_features == 6


@pytest.mark.parametrize("model", REGRESSORS, ids=label)
def test_regressors_match_predict(model: Any) -> None:
    X_train, X_test, y_train, _ = data("regression")
    model.fit(X_train, y_train)
    got = native(model).predict(X_test)[:, 0]
    want = model.predict(X_test)
    assert np.max(np.abs(got - want)) <= 1e-6 * max(1.0, float(np.abs(want).max())), label(model)


def boosters() -> list[Any]:
    import lightgbm
    import xgboost

    quiet = {"verbose": -1}
    return [
        xgboost.XGBClassifier(n_estimators=15, max_depth=4),
        xgboost.XGBRFClassifier(n_estimators=8, max_depth=4),
        lightgbm.LGBMClassifier(n_estimators=15, num_leaves=8, **quiet),
        lightgbm.LGBMClassifier(
            boosting_type="rf", n_estimators=8, subsample=0.7, subsample_freq=1, **quiet
        ),
    ]


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("index", range(4))
def test_xgboost_and_lightgbm_classifiers(index: int, classes: int) -> None:
    model = boosters()[index]
    X_train, X_test, y_train, _ = data("classification", classes)
    rng = np.random.default_rng(1)
    X_train[rng.random(X_train.shape) < 0.05] = np.nan
    X_test[rng.random(X_test.shape) < 0.05] = np.nan
    model.fit(X_train, y_train)
    n = native(model)
    got = n.predict(X_test)
    assert np.max(np.abs(got - model.predict_proba(X_test))) <= 1e-6, label(model)
    np.testing.assert_array_equal(np.asarray(n.classes)[got.argmax(axis=1)], model.predict(X_test))


@pytest.mark.parametrize("library", ["xgboost", "lightgbm"])
def test_xgboost_and_lightgbm_regressors(library: str) -> None:
    import lightgbm
    import xgboost

    model = (
        xgboost.XGBRegressor(n_estimators=20, max_depth=4)
        if library == "xgboost"
        else lightgbm.LGBMRegressor(n_estimators=20, num_leaves=8, verbose=-1)
    )
    X_train, X_test, y_train, _ = data("regression")
    model.fit(X_train, y_train)
    got = native(model).predict(X_test)[:, 0]
    want = model.predict(X_test)
    assert np.max(np.abs(got - want)) <= 1e-6 * max(1.0, float(np.abs(want).max())), library


def test_missing_values_follow_the_library() -> None:
    X_train, X_test, y_train, _ = data("classification")
    rng = np.random.default_rng(0)
    X_train[rng.random(X_train.shape) < 0.1] = np.nan
    X_test[rng.random(X_test.shape) < 0.1] = np.nan
    for model in (
        tree.DecisionTreeClassifier(random_state=0),
        ensemble.RandomForestClassifier(n_estimators=10, random_state=0),
        ensemble.HistGradientBoostingClassifier(max_iter=15, random_state=0),
    ):
        model.fit(X_train, y_train)
        got = native(model).predict(X_test)
        assert np.max(np.abs(got - model.predict_proba(X_test))) <= 1e-6, label(model)


def test_string_classes_and_feature_names() -> None:
    pd = pytest.importorskip("pandas")
    X_train, _, y_train, _ = data("classification")
    cols = [f"f{i}" for i in range(6)]
    y = np.where(y_train == 1, "present", "absent")
    model = tree.DecisionTreeClassifier(max_depth=4).fit(pd.DataFrame(X_train, columns=cols), y)
    n = native(model)
    assert n.classes == ["absent", "present"] and n.feature_names == cols
    assert n.source == "sklearn.tree.DecisionTreeClassifier"


def test_large_batches_use_every_core_and_agree() -> None:
    X_train, _, y_train, _ = data("classification")
    model = ensemble.RandomForestClassifier(n_estimators=20, random_state=0).fit(X_train, y_train)
    X = np.random.default_rng(1).normal(size=(50_000, 6))
    assert np.max(np.abs(native(model).predict(X) - model.predict_proba(X))) <= 1e-6


def test_unsupported_models_and_bad_files_say_why() -> None:
    X_train, _, y_train, _ = data("classification")
    with pytest.raises(UnsupportedModel, match="not a tree model"):
        convert(ensemble.AdaBoostClassifier().fit(X_train, y_train))
    with pytest.raises(UnsupportedModel, match="not fitted"):
        convert(tree.DecisionTreeClassifier())
    with pytest.raises(UnsupportedModel, match="not a model the native runtime scores"):
        convert(object())
    with pytest.raises(ValueError, match="not an inferwire tree model"):
        TreeEnsemble("{}")
    doc = convert(tree.DecisionTreeClassifier(max_depth=2).fit(X_train, y_train))
    doc["trees"][0]["left"][0] = 0
    with pytest.raises(ValueError, match="tree 0: node 0: children"):
        TreeEnsemble(json.dumps(doc))
    n = native(tree.DecisionTreeClassifier(max_depth=2).fit(X_train, y_train))
    with pytest.raises(ValueError, match="X has 3 features; the model takes 6"):
        n.predict(np.zeros((2, 3)))
