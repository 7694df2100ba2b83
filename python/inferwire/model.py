"""The model API. Subclassing is optional: any class with these methods works, as with
the Seldon Python wrapper."""

from __future__ import annotations

from typing import Any


class Model:
    """A Seldon-compatible model. Override ``predict`` (numpy in, numpy/list out) or
    ``predict_raw`` (the whole request as a dict). Every other method is optional."""

    def load(self) -> None:
        """Called once before the server starts taking requests."""

    def predict(self, X: Any, features_names: list[str] | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError("override predict() or predict_raw()")
