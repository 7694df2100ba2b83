"""Finding and building the user's model from ``module:Class``, ``module.Class`` or a
file path (``path/to/model.py`` or ``path/to/model.py:Class``)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

from .errors import ModelLoadError


def _module_from_file(path: Path) -> Any:
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # Sibling modules of the model file import like they do under the Seldon wrapper.
    sys.path.insert(0, str(path.parent.resolve()))
    spec.loader.exec_module(module)
    return module


def _pick_class(module: Any, where: str) -> type:
    """Without an explicit class: the class named like the module (Seldon's convention),
    else the only class defined there with ``predict`` or ``predict_raw``."""
    stem = module.__name__.rsplit(".", 1)[-1]
    named = getattr(module, stem, None)
    if inspect.isclass(named):
        return named
    found = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and obj.__module__ == module.__name__
        and (hasattr(obj, "predict") or hasattr(obj, "predict_raw"))
    ]
    if len(found) == 1:
        return found[0]
    names = ", ".join(sorted(c.__name__ for c in found)) or "none"
    raise ModelLoadError(
        f"{where}: name the model class as {where}:ClassName "
        f"(classes with predict or predict_raw: {names})"
    )


def resolve_class(spec: str) -> type:
    """The model class named by ``spec``; the built-in names (``noop``, ``echo``,
    ``image-stats``) come first."""
    from .builtin import BUILTIN

    if spec in BUILTIN:
        return BUILTIN[spec]
    target, _, cls_name = spec.partition(":")
    path = Path(target)
    try:
        if target.endswith(".py") or path.is_file():
            if not path.is_file():
                raise ModelLoadError(f"model file {target} does not exist")
            module = _module_from_file(path)
        elif cls_name:
            sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(target)
        else:
            sys.path.insert(0, str(Path.cwd()))
            try:
                module = importlib.import_module(target)
            except ModuleNotFoundError:
                mod_name, _, cls_name = target.rpartition(".")
                if not mod_name:
                    raise
                module = importlib.import_module(mod_name)
    except ModelLoadError:
        raise
    except Exception as e:
        raise ModelLoadError(f"cannot import the model {spec!r}: {type(e).__name__}: {e}") from e
    if not cls_name:
        return _pick_class(module, spec)
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise ModelLoadError(f"{module.__name__} has no attribute {cls_name!r}")
    if not callable(cls):
        raise ModelLoadError(f"{spec} is not a class or factory")
    return cls  # type: ignore[no-any-return]


def build(spec: str, parameters: dict[str, Any] | None = None, cls: Any = None) -> Any:
    """Instantiates the model (with Seldon-style constructor parameters) and calls ``load``;
    ``cls``: the class ``spec`` names, when it was resolved already."""
    cls = cls if cls is not None else resolve_class(spec)
    try:
        model = cls(**(parameters or {}))
    except Exception as e:
        raise ModelLoadError(f"cannot construct {spec}: {type(e).__name__}: {e}") from e
    load = getattr(model, "load", None)
    if callable(load):
        try:
            load()
        except Exception as e:
            raise ModelLoadError(f"{spec}.load() failed: {type(e).__name__}: {e}") from e
    return model
