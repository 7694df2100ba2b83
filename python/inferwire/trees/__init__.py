"""Trained tree models converted into inferwire's tree format, which the native runtime
scores in Rust (docs/reference/tree-format.md)."""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedModel
from .sklearn import convert_sklearn

__all__ = ["UnsupportedModel", "convert"]


def convert(model: Any) -> dict[str, Any]:
    """The model in the inferwire tree format (a JSON-ready dict), or ``UnsupportedModel``
    saying why the native runtime cannot score it."""
    module = type(model).__module__
    if module.startswith("sklearn."):
        return convert_sklearn(model)
    if module.startswith("xgboost"):
        from .xgboost import convert_xgboost

        return convert_xgboost(model)
    if module.startswith("lightgbm"):
        from .lightgbm import convert_lightgbm

        return convert_lightgbm(model)
    raise UnsupportedModel(
        f"{module}.{type(model).__name__} is not a model the native runtime scores"
    )
