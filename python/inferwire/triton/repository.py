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
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import runtimes
from ..errors import ModelLoadError, SettingsError
from ..repository import ModelSettings, Repository
from . import config as triton_config
from . import overrides
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


@dataclass(frozen=True)
class Override:
    """What a load call brought in place of the repository's files (Triton's load
    parameters): ``config``, the config's JSON form; ``folder``, the model's folder made
    of the call's ``file:`` contents."""

    config: str | None = None
    folder: Path | None = None

    def replay(self) -> dict[str, Any]:
        """What the other workers build the same load from (``TritonRepository.reload``)."""
        return {"config": self.config, "folder": str(self.folder) if self.folder else None}


class TritonRepository(Repository):
    def __init__(self, root: str | Path, dialect: Any = None, options: Options | None = None):
        super().__init__(root, dialect)
        self.options = options or Options()
        # Why a model could not be read or built, by name (the index shows it).
        self._failures: dict[str, str] = {}
        # The overrides the last load of each model brought (a load without any reads
        # the repository's files again), and the folders this process made for them.
        self._overrides: dict[str, Override] = {}
        self._made: set[Path] = set()

    # -- the layout ----------------------------------------------------------------------

    def model_folders(self) -> list[Path]:
        """Every model's folder: the root's subfolders (hidden ones left out), or the
        folder a load call's files made."""
        found = {
            p.name: p
            for p in self.root.iterdir()
            if p.is_dir() and not p.name.startswith((".", "_"))
        }
        for name, override in self._overrides.items():
            if override.folder is not None:
                found[name] = override.folder
        return [found[name] for name in sorted(found)]

    def config_of(self, folder: Path, *, complete: bool = False) -> ModelConfig:
        """The model's config.pbtxt, or the config its last load call brought
        (``complete``: with its Python class's ``auto_complete_config`` run, as Triton
        runs it at load)."""
        override = self._overrides.get(folder.name)
        if override is not None and override.folder is not None:
            folder = override.folder
        hook = _auto_complete_hook(folder) if complete else None
        given = override.config if override is not None else None
        return triton_config.read(folder, strict=self.options.strict, auto=hook, given=given)

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

    # -- loads through the API -----------------------------------------------------------

    def load_versions(self, name: str) -> list[tuple[Any, Any]]:
        return self._load_as(name, None)

    def load_with(self, name: str, parameters: dict[str, Any]) -> tuple[list[Any], Any]:
        """A load call with Triton's parameters: ``config`` (the config's JSON form, read
        instead of config.pbtxt) and ``file:<version>/<path>`` (the model's files, in
        base64, which then need ``config``: the model loads from them, not from the
        repository). They hold until the model's next load."""
        self._explicit_only()
        try:
            given = overrides.read(name, parameters)
        except ModelLoadError as e:
            raise overrides.PollError(e) from None
        if given is None:
            return self._load_as(name, None), None
        config, files = given
        made: Path | None = None
        try:
            if files:
                made = overrides.write(name, files)
                self._made.add(made.parent)
            folder = made or self.root / name
            if not folder.is_dir():
                raise ModelLoadError(f"the repository has no model named {name!r}")
            # Read first, as Triton's poll does: a config it refuses fails the load
            # before anything is built.
            triton_config.read(folder, strict=self.options.strict, given=config)
        except (OSError, SettingsError, ModelLoadError) as e:
            if made is not None:
                self._forget(made)
            raise overrides.PollError(e) from None
        override = Override(config, made)
        try:
            built = self._load_as(name, override)
        except BaseException:
            if made is not None:
                self._forget(made)
            raise
        return built, override.replay()

    def reload(self, name: str, replay: Any) -> list[Any]:
        """Another worker's ``load_with``: the same config, the folder that worker made."""
        if not replay:
            return self._load_as(name, None)
        folder = replay.get("folder")
        return self._load_as(name, Override(replay.get("config"), Path(folder) if folder else None))

    def _explicit_only(self) -> None:
        if not self.options.explicit:
            # Triton's words: the API loads only in explicit mode.
            raise ModelLoadError(
                "explicit model load / unload is not allowed if polling is enabled"
            )

    def _load_as(self, name: str, override: Override | None) -> list[tuple[Any, Any]]:
        """Loads ``name`` with ``override`` in place (None: from the repository's files);
        a failed load leaves the previous one's in place."""
        self._explicit_only()
        if override is None and not (self.root / name).is_dir():
            # A model a load's files brought, loaded again without them.
            no_model = ModelLoadError(f"the repository has no model named {name!r}")
            raise overrides.PollError(no_model)
        previous = self._overrides.pop(name, None)
        if override is not None:
            self._overrides[name] = override
        try:
            built = super().load_versions(name)
        except BaseException:
            self._overrides.pop(name, None)
            if previous is not None:
                self._overrides[name] = previous
            raise
        if previous is not None and previous.folder is not None and previous != override:
            self._forget(previous.folder)
        return built

    def _forget(self, folder: Path) -> None:
        """Removes a folder a load call's files made here (another worker's is its own)."""
        if folder.parent in self._made:
            self._made.discard(folder.parent)
            shutil.rmtree(folder.parent, ignore_errors=True)

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
