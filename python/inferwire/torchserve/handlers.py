"""A manifest's ``handler`` resolved as TorchServe's model loader resolves it
(``ts/model_loader.py``), into the two calls the server makes: ``initialize(context)``
once per instance, ``handle(data, context)`` per batch.

- ``file.py`` or ``module`` (``.py`` and any folder part dropped), optionally
  ``:function``: the module from the model's folder (else from the import path);
  failing that import, TorchServe's default handler of that name
  (``ts.torch_handler.image_classifier``, ...), which needs the ``torchserve`` package.
- The module has the function (``handle`` unless named): it is the entry point, and
  initialization calls it with ``data=None``, as TorchServe does.
- Otherwise the module must define exactly one class (classes it only imports do not
  count), which must have ``handle``; its ``initialize`` is the initialization.

Every model's handler module is imported under a name of its own (two archives both
shipping ``handler.py`` would otherwise share one module); its folder goes first on the
import path for the modules beside it."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import itertools
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import ModelLoadError
from .envelope import ENVELOPES, wrap

log = logging.getLogger("inferwire")

# The handlers TorchServe 0.12 ships in ts.torch_handler, by the names archives use.
DEFAULT_HANDLERS = (
    "base_handler",
    "image_classifier",
    "image_segmenter",
    "object_detector",
    "text_classifier",
    "densenet_handler",
    "vision_handler",
    "text_handler",
)
INSTALL_HINT = "pip install torchserve torch torchvision"

Entry = Callable[[Any, Any], Any]


@dataclass
class Resolved:
    """A handler ready to run: ``handle(data, context)``, ``initialize(context)``, and
    ``describe``, how logs name it."""

    handle: Entry
    initialize: Callable[[Any], Any]
    describe: str
    module: ModuleType


_counter = itertools.count(1)
_import_lock = threading.Lock()
# Folders of models loaded in this process: a module imported from one of them is set
# aside when another model imports a module of the same name from its own folder.
_model_folders: set[Path] = set()


def resolve(handler: str, model_dir: Path, model_name: str, envelope: str = "") -> Resolved:
    """The entry points ``handler`` (a manifest's) names for the model in ``model_dir``;
    each call makes new objects (one per instance). Raises ``ModelLoadError``."""
    module_part, _, function = handler.partition(":")
    module = load_module(module_part, model_dir, model_name)
    function = function or "handle"
    if hasattr(module, function):
        entry = getattr(module, function)
        if not callable(entry):
            raise ModelLoadError(f"handler {handler!r}: {function} is not a function")

        def initialize(ctx: Any) -> Any:
            return entry(None, ctx)

        resolved = Resolved(entry, initialize, f"{module_part}:{function}", module)
    else:
        resolved = _class_entry(module, handler)
    if envelope:
        resolved = _enveloped(resolved, envelope)
    return resolved


def _class_entry(module: ModuleType, handler: str) -> Resolved:
    classes = [
        c for _, c in inspect.getmembers(module, inspect.isclass) if c.__module__ == module.__name__
    ]
    if len(classes) != 1:
        names = ", ".join(c.__name__ for c in classes) or "none"
        raise ModelLoadError(
            f"handler {handler!r}: expected only one class in custom service code or a "
            f"function entry point (classes defined: {names})"
        )
    cls = classes[0]
    try:
        instance = cls()
    except Exception as e:
        raise ModelLoadError(
            f"handler {handler!r}: {cls.__name__}() failed: {type(e).__name__}: {e}"
        ) from e
    if not hasattr(instance, "handle"):
        raise ModelLoadError(f"handler {handler!r}: expect handle method in class {cls.__name__}")
    if not hasattr(instance, "initialize"):
        raise ModelLoadError(f"handler {handler!r}: {cls.__name__} has no initialize method")
    return Resolved(instance.handle, instance.initialize, cls.__name__, module)


def _enveloped(resolved: Resolved, envelope: str) -> Resolved:
    """TorchServe's ``service_envelope`` (json, body, kserve, kservev2): a wrapper from
    ``ts.torch_handler.request_envelope`` that unwraps requests and wraps replies
    (KServe's two are inferwire's own, ``envelope.py``: KServe's runtime has no torch)."""
    if envelope in ENVELOPES:
        return Resolved(
            wrap(envelope, resolved.handle),
            resolved.initialize,
            f"{resolved.describe} in envelope {envelope}",
            resolved.module,
        )
    try:
        module = importlib.import_module(f"ts.torch_handler.request_envelope.{envelope}")
    except ImportError as e:
        raise ModelLoadError(
            f"service envelope {envelope!r} is TorchServe's "
            f"ts.torch_handler.request_envelope.{envelope}: it needs `{INSTALL_HINT}` ({e})"
        ) from e
    classes: list[Any] = [
        c for _, c in inspect.getmembers(module, inspect.isclass) if c.__module__ == module.__name__
    ]
    if not classes:
        raise ModelLoadError(f"service envelope {envelope!r}: its module defines no class")
    wrapped = classes[0](resolved.handle)
    return Resolved(
        wrapped.handle,
        resolved.initialize,
        f"{resolved.describe} in envelope {envelope}",
        resolved.module,
    )


def load_module(name: str, model_dir: Path, model_name: str) -> ModuleType:
    """The handler's module: ``name`` (``x.py`` or ``x``, folders dropped) from
    ``model_dir``, else importable as it is, else TorchServe's default handler."""
    stem = name[:-3] if name.endswith(".py") else name
    stem = stem.split("/")[-1]
    if not stem:
        raise ModelLoadError(f"handler {name!r}: names no module")
    folder = model_dir.resolve()
    with _import_lock:
        _model_folders.add(folder)
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
        own = _own_file(folder, stem)
        if own is not None:
            return _import_file(own, stem, folder, model_name)
        try:
            return importlib.import_module(stem)
        except ModuleNotFoundError as e:
            if e.name is not None and e.name != stem and not stem.startswith(e.name + "."):
                # The module exists but something it imports does not.
                raise ModelLoadError(
                    f"handler {name!r}: importing it failed: No module named {e.name!r}"
                ) from e
        except Exception as e:
            raise ModelLoadError(
                f"handler {name!r}: importing it failed: {type(e).__name__}: {e}"
            ) from e
        return _default_handler(stem, name)


def _own_file(folder: Path, stem: str) -> Path | None:
    if "." in stem:
        return None
    for candidate in (folder / f"{stem}.py", folder / stem / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _import_file(file: Path, stem: str, folder: Path, model_name: str) -> ModuleType:
    _set_aside_others(folder)
    safe = "".join(c if c.isalnum() else "_" for c in model_name)
    unique = f"_inferwire_ts_{safe}_{next(_counter)}_{stem}"
    search = [str(file.parent)] if file.name == "__init__.py" else None
    spec = importlib.util.spec_from_file_location(unique, file, submodule_search_locations=search)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"handler {file.name}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:
        sys.modules.pop(unique, None)
        if isinstance(e, ModuleNotFoundError) and e.name and e.name.split(".")[0] == "ts":
            raise ModelLoadError(
                f"handler {file.name}: it imports TorchServe's {e.name}: it needs `{INSTALL_HINT}`"
            ) from e
        if not isinstance(e, Exception):
            raise
        raise ModelLoadError(
            f"handler {file.name}: importing it failed: {type(e).__name__}: {e}"
        ) from e
    return module


def _set_aside_others(folder: Path) -> None:
    """Forgets (in ``sys.modules``) the modules another model's folder gave, so that this
    model's ``import model`` finds its own ``model.py``; the other model keeps the module
    objects it already holds."""
    others = [f for f in _model_folders if f != folder]
    if not others:
        return
    for key, mod in list(sys.modules.items()):
        file = getattr(mod, "__file__", None)
        if not file or key.startswith("_inferwire_ts_"):
            continue
        try:
            path = Path(file).resolve()
        except (OSError, ValueError):
            continue
        if any(path.is_relative_to(f) for f in others):
            del sys.modules[key]


def _default_handler(stem: str, name: str) -> ModuleType:
    try:
        return importlib.import_module(f"ts.torch_handler.{stem}")
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if missing == "ts" or missing.startswith("ts."):
            if missing in ("ts", "ts.torch_handler") or stem in DEFAULT_HANDLERS:
                raise ModelLoadError(
                    f"handler {name!r}: no module {stem!r} in the archive or on the import "
                    f"path, and TorchServe's default handler ts.torch_handler.{stem} needs "
                    f"`{INSTALL_HINT}`"
                ) from e
            raise ModelLoadError(
                f"handler {name!r}: no module {stem!r} in the archive, on the import path, "
                "or among TorchServe's default handlers "
                f"({', '.join(DEFAULT_HANDLERS)})"
            ) from e
        raise ModelLoadError(
            f"handler {name!r}: TorchServe's default handler ts.torch_handler.{stem} needs "
            f"module {missing!r}: `{INSTALL_HINT}` (and {missing.split('.')[0]})"
        ) from e
    except Exception as e:
        raise ModelLoadError(
            f"handler {name!r}: importing ts.torch_handler.{stem} failed: {type(e).__name__}: {e}"
        ) from e


_cwd_lock = threading.RLock()


@contextlib.contextmanager
def in_model_folder(model_dir: Path) -> Iterator[None]:
    """The model's folder as the working directory while its handler is imported and
    initialized, as TorchServe starts its Python worker there (handlers open files such as
    ``index_to_name.json`` by relative path). The process has one working directory, so
    loads take turns, and it is put back after: a handler's calls run in the server's."""
    with _cwd_lock:
        before = os.getcwd()
        os.chdir(model_dir)
        try:
            yield
        finally:
            os.chdir(before)


def forget_folder(model_dir: Path) -> None:
    """A model's folder is gone (its archive closed): off the import path and the list."""
    if sys.is_finalizing():
        return  # the interpreter is going: its import path with it
    folder = model_dir.resolve()
    with _import_lock:
        _model_folders.discard(folder)
        while str(folder) in sys.path:
            sys.path.remove(str(folder))
