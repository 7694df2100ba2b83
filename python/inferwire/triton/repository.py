"""A Triton model repository, read as Triton reads it::

    models/
      add_sub/
        config.pbtxt      # name, backend "python", inputs, outputs, batching, ...
        1/model.py        # class TritonPythonModel
        2/model.py
      densenet/
        config.pbtxt      # platform "onnxruntime_onnx"
        1/model.onnx

Every folder under the root is a model, named by its folder; its numbered folders are its
versions, and the config's ``version_policy`` says which are served (by default the
newest). Each version is built by the runtime registry's row for its backend
(``inferwire.runtimes``); ``Repository`` does the rest (loading, the API, budgets)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import runtimes
from ..errors import ModelLoadError, SettingsError
from ..repository import ModelSettings, Repository
from . import config as triton_config
from .config import ModelConfig

log = logging.getLogger("inferwire")


@dataclass
class TritonModel:
    """What a Triton repository says of one version of a model (``runtimes.Source``'s
    ``triton``): its config as read, its folder, its version."""

    config: ModelConfig
    folder: Path
    version: str

    @property
    def backend(self) -> str:
        return self.config.backend or self.config.platform


@dataclass(frozen=True)
class Options:
    """``tritonserver``'s switches that change how the repository is read."""

    strict: bool = False
    exit_on_error: bool = True
    # Explicit model control: the API loads and unloads; only ``load`` load at start
    # ("*": every model).
    explicit: bool = False
    load: tuple[str, ...] = ()


class TritonRepository(Repository):
    def __init__(self, root: str | Path, dialect: Any = None, options: Options | None = None):
        super().__init__(root, dialect)
        self.options = options or Options()
        # Why a model could not be read or built, by name (the index shows it).
        self._failures: dict[str, str] = {}

    # -- the layout ----------------------------------------------------------------------

    def model_folders(self) -> list[Path]:
        """Every model's folder: the root's subfolders (hidden ones left out)."""
        return sorted(
            p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
        )

    def config_of(self, folder: Path, *, complete: bool = False) -> ModelConfig:
        """The model's config.pbtxt (``complete``: with its Python class's
        ``auto_complete_config`` run, as Triton runs it at load)."""
        hook = _auto_complete_hook(folder) if complete else None
        return triton_config.read(folder, strict=self.options.strict, auto=hook)

    def _served(self, folder: Path, config: ModelConfig) -> list[Path]:
        """The version folders the version policy serves, newest first."""
        numbered = [int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit()]
        return [folder / str(v) for v in config.served_versions(numbered)]

    def folders(self) -> dict[str, Path]:
        out: dict[str, Path] = {}
        versions: dict[str, list[Path]] = {}
        for folder in self.model_folders():
            try:
                config = self.config_of(folder)
                served = self._served(folder, config)
                if not served:
                    raise ModelLoadError(f"{folder.name}: no version folder to serve")
            except (SettingsError, ModelLoadError) as e:
                self._failed(folder.name, e)
                continue
            out[folder.name] = served[0]
            if len(served) > 1:
                versions[folder.name] = served[1:]
        self._versions = versions
        return out

    def _failed(self, name: str, e: Exception) -> None:
        """A model that cannot be served: logged once, and listed UNAVAILABLE with the
        reason (``--exit-on-error`` stops the server after the start's loads instead:
        ``TritonDialect.started``)."""
        if self._failures.get(name) != str(e):
            log.error("model %s is unavailable: %s", name, e)
        self._failures[name] = str(e)

    def failures(self) -> dict[str, str]:
        return dict(self._failures)

    def names(self) -> list[str]:
        served = list(self.folders())
        return served + sorted(n for n in self._failures if n not in served)

    def watched(self) -> dict[str, list[Path]]:
        # Every model folder, the config and every version in it (a model that failed
        # too: fixing its files loads it).
        return {folder.name: [folder] for folder in self.model_folders()}

    def startup_names(self) -> list[str]:
        from . import ensemble

        names = chosen = self.names()
        if self.options.explicit and "*" not in self.options.load:
            for name in self.options.load:
                if name not in names:
                    self._failed(name, ModelLoadError(f"failed to load '{name}': no such model"))
            chosen = [n for n in self.options.load if n in names]

        def steps(name: str) -> list[str]:
            return ensemble.step_models(self.config_of(self.root / name))

        # An ensemble loads with the models it names, after them.
        return ensemble.load_order(chosen, names, steps)

    def load_versions(self, name: str) -> list[tuple[Any, Any]]:
        if not self.options.explicit:
            # Triton's words: the API loads only in explicit mode.
            raise ModelLoadError(
                "explicit model load / unload is not allowed if polling is enabled"
            )
        return super().load_versions(name)

    def _holds(self, folder: Path) -> bool:
        return folder.is_dir()

    def read(self, folder: Path) -> ModelSettings:
        """The settings of one version folder: the model's config as inferwire's."""
        config = self.config_of(folder.parent)
        return self._settings(folder, config)

    def _settings(self, folder: Path, config: ModelConfig) -> ModelSettings:
        return ModelSettings(
            name=folder.parent.name,
            implementation=str(folder / config.default_model_filename),
            version=folder.name,
            **triton_config.serving(config),
        )

    def build_versions(self, name: str) -> list[tuple[Any, ModelSettings]]:
        try:
            return super().build_versions(name)
        except (SettingsError, ModelLoadError) as e:
            self._failed(name, e)
            return []

    def build_at(self, folder: Path) -> tuple[Any, ModelSettings]:
        with self._lock:
            config = self.config_of(folder.parent, complete=True)
            for line in triton_config.warnings(config):
                log.warning("model %s: %s", config.name, line)
            s = self._settings(folder, config)
            source = runtimes.Source(
                s.implementation,
                s,
                name=s.name,
                folder=folder,
                triton=TritonModel(config, folder.parent, folder.name),
            )
            built = runtimes.build(source)
            if built.how:
                log.info("model %s version %s: %s", s.name, s.version, built.how)
            self._failures.pop(s.name, None)
            return built.adapter, s


def _auto_complete_hook(folder: Path) -> Any:
    """A Python model's ``auto_complete_config``, run on the partial config (the class
    of the newest version folder's model.py, as Triton's stub imports it)."""

    def hook(raw: dict[str, Any]) -> dict[str, Any]:
        backend = raw.get("backend") or ""
        if backend != "python":
            return raw
        filename = raw.get("default_model_filename") or "model.py"
        numbered = sorted(
            (int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit()),
            reverse=True,
        )
        for v in numbered:
            path = folder / str(v) / filename
            if path.is_file():
                from .python_model import auto_complete, import_model

                module = import_model(path, folder.name, str(v))
                complete = auto_complete(module.TritonPythonModel)
                return complete(raw) if complete is not None else raw
        return raw

    return hook
