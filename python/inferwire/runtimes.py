"""The runtime registry: every source a model can come from, one row each, with how it is
recognised and the builder that makes what the core serves (an adapter, or the native
tree runtime's ``TreeEnsemble``). ``inferwire serve``, ``inferwire start``, the repository
API and loads on request all build through ``build``: a new kind of model is a new row
in ``ROWS``, not a branch in the server or the repository.

The rows are tried in order and the first that recognises the source builds it; the
last, a Python class, takes whatever is left."""

from __future__ import annotations

import functools
import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import loader, modelfile
from .errors import SettingsError
from .settings import ModelServing, parse_parameters

log = logging.getLogger("inferwire")


@dataclass
class Source:
    """What names one model, and how it is to be served.

    ``spec``: a class path (``module:Class``, ``file.py[:Class]``, a built-in name), a
    model file, a SeldonDeployment file, or an MLServer ``implementation``; ``model``: an
    object given instead (``inferwire.serve(MyModel())``). ``name``: the name to serve it
    under (empty: the builder's default, from the file or class). ``folder``: the model's
    folder in a repository, where relative paths start and its modules are imported from
    (``search``: more folders holding modules, as ``mlserver start`` has its root on the
    path). ``serving``: its settings (the runtime choice, raw arrays, batching);
    ``parameters``: its constructor arguments, read only by a class's builder;
    ``mlserver``: what an MLServer model-settings file says of it (``MLServerModel``);
    ``triton``: what a Triton repository says of it (``triton.repository.TritonModel``);
    ``torchserve``: ``spec`` is a TorchServe model archive (``torchserve.repository``)."""

    spec: str
    serving: ModelServing
    name: str = ""
    model: Any = None
    folder: Path | None = None
    search: tuple[Path, ...] = ()
    parameters: Callable[[], dict[str, Any]] = dict
    mlserver: Any = None
    triton: Any = None
    torchserve: bool = False

    @property
    def path(self) -> str:
        """``spec`` as a path: relative to the model's folder, if it has one."""
        return str(self.folder / self.spec) if self.folder is not None else self.spec

    @functools.cached_property
    def class_spec(self) -> str:
        """``spec`` as the loader finds the class: a file or module of the model's folder
        (which then goes on the import path, as the Seldon wrapper and MLServer have it)."""
        if self.folder is None:
            return self.spec
        impl, _, cls = self.spec.partition(":")
        if impl.endswith(".py"):
            return str(self.folder / impl) + (f":{cls}" if cls else "")
        if str(self.folder) not in sys.path:
            sys.path.insert(0, str(self.folder))
        return folder_spec(self.folder, self.spec, *self.search)

    @functools.cached_property
    def cls(self) -> Any:
        """The class ``spec`` names (imported once)."""
        return loader.resolve_class(self.class_spec)

    def where(self) -> str:
        """How messages name the model: its folder, if it has one."""
        return f"{self.folder}: " if self.folder is not None else ""


@dataclass
class Built:
    """What a row built: ``adapter`` is what the core serves; ``how`` a log line saying
    how; ``name`` the name it serves under and ``image`` Seldon's image name for it (empty:
    the name); ``model`` the object behind it; ``more`` other models served beside it (a
    graph's nodes), each an adapter and its ``ModelSettings`` keys."""

    adapter: Any
    name: str
    how: str = ""
    image: str = ""
    model: Any = None
    more: list[tuple[Any, dict[str, str]]] = field(default_factory=list)


@dataclass(frozen=True)
class Row:
    """One source kind: its name (for the docs and errors), whether a source is one, and
    the builder."""

    kind: str
    recognises: Callable[[Source], bool]
    build: Callable[[Source], Built]


# -- the builders ----------------------------------------------------------------------


def _model_file(s: Source) -> Built:
    name = s.name or Path(s.path).stem
    serving = s.serving
    adapter, how = modelfile.adapter(
        s.path, name, serving.runtime, serving.output_names, serving.raw_arrays
    )
    return Built(adapter, name, how)


def _graph(s: Source) -> Built:
    from . import graph

    predictor = getattr(s.serving, "graph_predictor", "")
    nodes = graph.parse_node_map(getattr(s.serving, "graph_nodes", ""))
    sdep = graph.build(graph.read(s.path, predictor, nodes))
    name = s.name or sdep.spec.deployment
    built = Built(graph.GraphAdapter(sdep, name, s.serving.raw_arrays), name, model=sdep)
    # Each node on its own routes too, unless the graph itself has its name.
    for node_name, node_adapter in graph.node_adapters(sdep):
        if node_name == name:
            log.warning(
                "graph node %r is served inside the graph only: the graph has its name",
                node_name,
            )
            continue
        # The predictor's name stands for the version on /api/NODE/VERSION.
        node = {"name": node_name, "implementation": f"{s.path}#{node_name}"}
        built.more.append((node_adapter, {**node, "version": sdep.spec.predictor}))
    built.how = f"graph (predictor {sdep.spec.predictor}): " + ", ".join(
        f"{n.name} ({n.spec.type})" for n in sdep.nodes
    )
    return built


def _mlflow(s: Source) -> Built:
    from .mlserver import mlflow_runtime

    adapter, how = mlflow_runtime.adapter(s.mlserver, s.name)
    return Built(adapter, s.name, how)


def _mlserver_runtime(s: Source) -> Built:
    from .mlserver import runtimes

    adapter, how = runtimes.adapter(s.mlserver, s.name, s.serving.runtime)
    return Built(adapter, s.name, how)


def _mlmodel(s: Source) -> Built:
    from .mlserver import models

    adapter = models.adapter(s.cls, s.name, s.mlserver)
    return Built(adapter, s.name, f"{s.mlserver.implementation}, an MLServer MLModel")


def _python_class(s: Source) -> Built:
    """A Seldon-style class (or an object given as it is), called as Seldon's wrapper
    calls it."""
    from .seldon import SeldonAdapter, announce_type

    model = s.model
    if model is None:
        model = loader.build(s.class_spec, s.parameters(), s.cls)
    name = s.name or type(model).__name__
    adapter = SeldonAdapter(model, name, s.serving.raw_arrays)
    if s.mlserver is not None:
        adapter.configure(s.mlserver)
    announce_type(adapter, getattr(s.serving, "service_type", ""))
    if adapter.has_predict_raw and s.serving.max_batch_size > 1:
        raise SettingsError(
            f"{s.where()}max_batch_size: {type(model).__name__} defines predict_raw, whose "
            "requests cannot be joined; batching needs predict (set max_batch_size to 1)"
        )
    return Built(adapter, name, image=type(model).__name__, model=model)


def _triton_python(s: Source) -> Built:
    from .triton import bls, python_model

    t = s.triton
    module = python_model.import_model(Path(s.spec), t.config.name, t.version)
    adapter = python_model.TritonPythonAdapter(
        module.TritonPythonModel, t.config, t.version, t.folder
    )
    bls.register(adapter)
    instances = max(t.config.instance_count, 1)
    how = f"Triton Python backend, {instances} instance{'s' if instances > 1 else ''}"
    return Built(adapter, t.config.name, how + (", decoupled" if adapter.streams else ""))


def _torchserve(s: Source) -> Built:
    from .torchserve import repository

    adapter = repository.build(s)
    return Built(adapter, adapter.name, f"TorchServe archive, handler {adapter.model.handler}")


def _triton_onnx(s: Source) -> Built:
    from .triton import onnx_model

    return _triton_built(s, onnx_model.build(s.triton, Path(s.spec)), "ONNX Runtime (CPU)")


def _triton_torch(s: Source) -> Built:
    from .triton import torch_model

    return _triton_built(s, torch_model.build(s.triton, Path(s.spec)), "TorchScript (CPU)")


def _triton_ensemble(s: Source) -> Built:
    from .triton import ensemble

    adapter = ensemble.build(s.triton)
    steps = " -> ".join(step.model for step in adapter.steps)
    return _triton_built(s, adapter, f"ensemble of {steps}", threads=adapter.concurrency)


def _triton_built(s: Source, adapter: Any, how: str, threads: int = 0) -> Built:
    """A Triton model built: served with its completed config's settings (a backend's
    auto-complete may turn batching on), and reachable from BLS and ensembles."""
    from .triton import bls
    from .triton import config as triton_config

    for key, value in triton_config.serving(adapter.config).items():
        setattr(s.serving, key, value)
    if threads:
        s.serving.model_threads = threads
    bls.register(adapter)
    return Built(adapter, adapter.name, f"Triton {how}")


def _triton_unavailable(s: Source) -> Built:
    from .errors import ModelLoadError

    t = s.triton
    backend = t.config.platform if t.config.backend == "pytorch" else t.backend or "(none)"
    raise ModelLoadError(
        f"backend {backend!r} is not available in inferwire: it serves Triton's Python "
        'backend, ONNX Runtime (platform "onnxruntime_onnx"), TorchScript (platform '
        '"pytorch_libtorch") and ensembles; see docs/guides/migrating-from-triton.md'
    )


def _triton_backend(s: Source) -> str:
    return str(s.triton.backend) if s.triton is not None else ""


def _triton_platform(s: Source) -> str:
    return str(s.triton.config.platform) if s.triton is not None else ""


def _implementation(s: Source) -> str:
    return str(getattr(s.mlserver, "implementation", ""))


def _is_mlmodel(s: Source) -> bool:
    """An MLServer implementation naming a subclass of MLServer's ``MLModel``."""
    return s.mlserver is not None and any(
        c.__name__ == "MLModel" and c.__module__.startswith("mlserver")
        for c in getattr(s.cls, "__mro__", ())
    )


def _mlserver_runtimes() -> Any:
    from .mlserver.settings import RUNTIMES

    return RUNTIMES


ROWS: list[Row] = [
    Row("Python object", lambda s: s.model is not None, _python_class),
    Row("Triton Python backend", lambda s: _triton_backend(s) == "python", _triton_python),
    Row("Triton ONNX Runtime", lambda s: _triton_platform(s) == "onnxruntime_onnx", _triton_onnx),
    Row("Triton TorchScript", lambda s: _triton_platform(s) == "pytorch_libtorch", _triton_torch),
    Row("Triton ensemble", lambda s: _triton_platform(s) == "ensemble", _triton_ensemble),
    Row("Triton backend not served here", lambda s: s.triton is not None, _triton_unavailable),
    Row("TorchServe model archive (its handler)", lambda s: s.torchserve, _torchserve),
    Row(
        "MLServer's MLflow runtime",
        lambda s: _implementation(s) == "mlserver_mlflow.MLflowRuntime",
        _mlflow,
    ),
    Row(
        "MLServer's scikit-learn, XGBoost and LightGBM runtimes",
        lambda s: _implementation(s) in _mlserver_runtimes(),
        _mlserver_runtime,
    ),
    Row(
        "model file (native tree runtime, else the library in Python)",
        lambda s: modelfile.is_model_file(s.path),
        _model_file,
    ),
    Row("Seldon graph (SeldonDeployment file)", lambda s: _is_deployment(s.path), _graph),
    Row("MLServer MLModel class", _is_mlmodel, _mlmodel),
    Row("Python class", lambda s: True, _python_class),
]


def _is_deployment(spec: str) -> bool:
    from . import graph

    return graph.is_deployment(spec)


def row_for(source: Source) -> Row:
    """The first row that recognises ``source``."""
    return next(row for row in ROWS if row.recognises(source))


def build(source: Source) -> Built:
    """What the core serves for ``source``, built by its row."""
    return row_for(source).build(source)


# -- where a class is found ----------------------------------------------------------------


def folder_spec(folder: Path, spec: str, *more: Path) -> str:
    """``module:Class`` or ``module.Class`` as the file in the model's folder (else in
    ``more``: the repository's, as ``mlserver start FOLDER`` has it on sys.path) that
    holds the module, when there is one: each folder's own ``models.py``, not the first
    one imported, nor one in the working directory (MLServer imports from there too)."""
    if ":" in spec:
        module, _, cls = spec.partition(":")
    elif "." in spec and not spec.endswith(".py"):
        module, _, cls = spec.rpartition(".")
    else:
        return spec
    for where in (folder, *more):
        file = where / (module.replace(".", "/") + ".py")
        if file.is_file() and cls:
            return f"{file}:{cls}"
    return spec


def constructor_parameters(parameters: dict[str, Any] | list[Any], where: Path) -> dict[str, Any]:
    """A settings file's ``parameters``: a mapping, or Seldon's list of {name, value,
    type}, as keyword arguments."""
    if isinstance(parameters, dict):
        return dict(parameters)
    try:
        return parse_parameters(json.dumps(parameters))
    except SettingsError as e:
        raise SettingsError(f"{where}: {e}") from e
