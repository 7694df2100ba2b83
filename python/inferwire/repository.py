"""A model repository: a folder with one subfolder per model, each holding a settings file
(``model-settings.yaml``, ``.yml`` or ``.json``) that names the model, its version, its
implementation and how it is served::

    models/
      iris/
        model-settings.yaml   # name: iris, implementation: model.py:Iris, version: "2"
        model.py
      echo/
        model-settings.json

Every model is loaded at start; the repository API (``POST /v2/repository/...``) loads,
reloads and unloads them at runtime."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, ValidationError

from . import modelfile, runtimes
from .bounded_yaml import load_yaml
from .dialects import Dialect
from .errors import ModelLoadError, SettingsError
from .mlserver import settings as mlserver_settings
from .mlserver.settings import MLServerModel
from .settings import ModelServing, Str, explain, unknown

SETTINGS_FILES = ("model-settings.yaml", "model-settings.yml", "model-settings.json")
log = logging.getLogger("inferwire")
# Names and versions become folder names: no separators, no dot-only names.
SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
# How deep under the repository's root settings files are looked for.
MAX_DEPTH = 6


class ModelSettings(ModelServing):
    """One model's settings file. ``implementation`` is ``file.py[:Class]`` (relative to
    the model's folder) or ``module:Class`` (importable from it). How the model is served
    (batching, threads, queue, runtime) is ``ModelServing``'s: the server's own settings,
    declared once in ``inferwire.settings``, with the same defaults and checks."""

    name: Str
    implementation: Str
    version: Str = ""
    # Constructor arguments: a mapping, or Seldon's list of {name, value, type}.
    parameters: dict[str, Any] | list[Any] = Field(default_factory=dict)
    # What an MLServer model-settings file says beyond these keys (None: inferwire's file).
    _mlserver: MLServerModel | None = PrivateAttr(default=None)

    def to_core(self, memory_bytes: int = 0) -> Any:
        """What the core serves the model with (``inferwire._core.CoreModelSpec``);
        ``memory_bytes``: what its load measured (``Repository.load``)."""
        from . import _core

        return _core.CoreModelSpec(
            name=self.name, version=self.version, memory_bytes=memory_bytes, **self.runner()
        )


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            data = load_yaml(text, str(path))
    except SettingsError:
        raise
    except Exception as e:
        raise SettingsError(f"{path}: not valid YAML/JSON: {e}") from e
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: must be a mapping of settings")
    return data


def settings_file(folder: Path) -> Path | None:
    return next((folder / f for f in SETTINGS_FILES if (folder / f).is_file()), None)


def _mlserver_settings(raw: dict[str, Any], folder: Path, where: str) -> ModelSettings:
    """An MLServer model-settings mapping (``mlserver_settings``) as ``ModelSettings``."""
    data, ml = mlserver_settings.model_settings(raw, folder, where)
    try:
        s = ModelSettings(**data)
    except ValidationError as e:
        raise SettingsError(f"{where}: {explain(e, ModelSettings)}") from None
    s._mlserver = ml
    return s


def read_model_settings(
    folder: Path, from_env: bool = False, dialect: Dialect | None = None
) -> ModelSettings:
    """The settings file in ``folder``, checked: unknown keys and bad values are errors
    that name the file. An MLServer model-settings file (every one the ``dialect`` says is
    MLServer's) is read as MLServer reads it; with ``from_env`` and no file, the model
    is MLServer's from ``MLSERVER_MODEL_*``."""
    path = settings_file(folder)
    if path is None and from_env:
        # As MLServer: a uri from the environment is relative to the working directory.
        return _mlserver_settings({}, Path.cwd(), "MLSERVER_MODEL_* variables")
    if path is None:
        raise SettingsError(f"{folder}: no {' / '.join(SETTINGS_FILES)}")
    raw = _read(path)
    owned = dialect is not None and dialect.owns_settings_file(path)
    if owned or mlserver_settings.is_mlserver(raw):
        if not raw.get("name"):
            raw = {**raw, "name": folder.name}
        return _mlserver_settings(raw, folder, str(path))
    data = {str(k).replace("-", "_"): v for k, v in raw.items()}
    data.setdefault("name", folder.name)
    known = ModelSettings.model_fields
    for key in data:
        if key not in known:
            raise SettingsError(f"{path}: {unknown(key, list(known))}")
    if "implementation" not in data:
        raise SettingsError(f"{path}: implementation is required (file.py:Class or module:Class)")
    # A file is typed (unlike a flag's text): "4" for a number is a mistake, not a number.
    for key, value in data.items():
        kind = known[key].annotation
        if kind is int and (not isinstance(value, int) or isinstance(value, bool)):
            raise SettingsError(f"{path}: {key}: {value!r} is not an integer")
        if kind is float and (
            not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0
        ):
            raise SettingsError(f"{path}: {key} must be a number of seconds >= 0")
        if kind is not int and kind is not float and key != "parameters":
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                raise SettingsError(f"{path}: {key} must be a string")
    if not isinstance(data.get("parameters", {}), (dict, list)):
        raise SettingsError(
            f"{path}: parameters must be a mapping or a list of {{name, value, type}}"
        )
    try:
        return ModelSettings(**data)
    except ValidationError as e:
        raise SettingsError(f"{path}: {explain(e, ModelSettings)}") from None


class Repository:
    """The models under ``root``; called by the core (from any thread) to list and load."""

    def __init__(self, root: str | Path, dialect: Dialect | None = None) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise SettingsError(f"model repository {root}: not a folder")
        self._lock = threading.Lock()
        # The dialect says how its settings files are read (`inferwire start`: every
        # model-settings.json is MLServer's) and whether, with none anywhere, the model
        # is the environment's (MLServer's MLSERVER_MODEL_* variables, KServe's runtime).
        self.dialect = dialect or Dialect()
        self.from_env = self.dialect.serves_env_model()
        self.dialect.open_repository(self.root)
        # Name → folder as last read (`build` reads the whole repository only on a miss);
        # and the folders of models' other versions.
        self._known: dict[str, Path] = {}
        self._versions: dict[str, list[Path]] = {}
        # Each model's files as the last poll saw them (None: not polled yet).
        self._seen: dict[str, tuple[tuple[str, int, int], ...]] | None = None

    def _holds(self, folder: Path) -> bool:
        return settings_file(folder) is not None or (self.from_env and folder == self.root)

    def _settings_folders(self) -> list[Path]:
        """Every folder holding a settings file: the root itself and the folders under
        it, as deep as MLServer's search goes (hidden folders and uploads left out)."""
        found = []
        for top, dirs, _ in os.walk(self.root):
            depth = len(Path(top).relative_to(self.root).parts)
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < MAX_DEPTH else []
            if settings_file(Path(top)) is not None:
                found.append(Path(top))
        return found

    def folders(self) -> dict[str, Path]:
        """Model name → folder, for every folder with a settings file: where several
        folders name one model, each with its own version (served side by side, as
        MLServer serves them), the newest version's (``versions`` gives the others)."""
        found: dict[str, dict[str, Path]] = {}
        for folder in self._settings_folders():
            s = self.read(folder)
            seen = found.setdefault(s.name, {})
            if seen and (not s.version or "" in seen or s.version in seen):
                other = seen.get(s.version) or next(iter(seen.values()))
                raise SettingsError(
                    f"model repository {self.root}: {self._shown(other)} and "
                    f"{self._shown(folder)} both name a model {s.name!r} "
                    f"{'at version ' + repr(s.version) if s.version else 'without a version'} "
                    "(several versions of one model are served side by side when each folder "
                    "gives its own version)"
                )
            seen[s.version] = folder
        out = {name: by[newest(list(by))] for name, by in found.items()}
        self._versions = {
            name: [f for v, f in by.items() if f != out[name]]
            for name, by in found.items()
            if len(by) > 1
        }
        if not out and self.from_env:
            out[self.read(self.root).name] = self.root
        return out

    def versions(self, name: str) -> list[Path]:
        """The folders of model ``name``'s other versions, as ``folders`` last found them."""
        return list(self._versions.get(name, ()))

    def _shown(self, folder: Path) -> str:
        return f"{folder.relative_to(self.root)}/" if folder != self.root else "the root folder"

    def read(self, folder: Path) -> ModelSettings:
        """The model settings of ``folder`` (the environment's model for the root when
        ``from_env`` and it has no file)."""
        at_root = self.from_env and folder == self.root
        return read_model_settings(folder, from_env=at_root, dialect=self.dialect)

    def names(self) -> list[str]:
        return list(self.folders())

    def failures(self) -> dict[str, str]:
        """Why models the repository lists could not be built, by name (the index shows
        them UNAVAILABLE with the reason); the core remembers its own loads' failures."""
        return {}

    def watched(self) -> dict[str, list[Path]]:
        """Each model's folders, as polling reads them for changes."""
        return {name: [folder, *self.versions(name)] for name, folder in self.folders().items()}

    def poll(self) -> list[tuple[str, Any]]:
        """What changed since the last call (``repository_poll_secs``; the first call
        notes what is there): each model added or whose files changed, with its versions
        built as ``load_versions`` builds them (or the exception that stopped it), and
        each model gone, with None."""
        try:
            seen = {name: fingerprint(paths) for name, paths in self.watched().items()}
        except SettingsError as e:
            log.warning("polling %s: %s", self.root, e)
            return []
        before, self._seen = self._seen, seen
        if before is None:
            return []
        changes: list[tuple[str, Any]] = []
        for name, print_ in seen.items():
            if before.get(name) != print_:
                try:
                    changes.append((name, Repository.load_versions(self, name)))
                except Exception as e:  # the model's own code may raise anything
                    changes.append((name, e))
        changes += [(name, None) for name in before.keys() - seen.keys()]
        return changes

    def startup_names(self) -> list[str]:
        """The models loaded at start (with ``load_models_at_startup``): every one."""
        return self.names()

    def publish(self, name: str, version: str, data: bytes, filename: str) -> Any:
        return publish(self, name, version, data, filename)

    def delete(self, name: str, version: str) -> Any:
        return delete(self, name, version)

    def published(self) -> list[dict[str, Any]]:
        return published(self)

    def load(self, name: str, folder: Path | None = None) -> tuple[Any, Any]:
        """Builds model ``name`` (its newest version, or the one in ``folder``) for the
        core: (its adapter, its ``CoreModelSpec``), with the memory the build added to
        the process (its resident set), which counts against ``model_memory_budget``."""
        before = resident_bytes()
        adapter, settings = self.build(name) if folder is None else self.build_at(folder)
        memory = measure(adapter, resident_bytes() - before)
        give_back_memory()
        return adapter, settings.to_core(memory)

    def load_versions(self, name: str) -> list[tuple[Any, Any]]:
        """``load`` of every version of ``name``, the newest first (the repository read
        afresh: a load through the API sees folders added since)."""
        with self._lock:
            self._known = self.folders()
        return [self.load(name), *(self.load(name, f) for f in self.versions(name))]

    def load_with(self, name: str, parameters: dict[str, Any]) -> tuple[list[Any], Any]:
        """``load_versions`` for a load call that brought ``parameters`` (Triton's
        ``config`` and ``file:`` overrides): the versions, and what the other workers'
        ``reload`` builds the same from (None: the repository's own files). This
        repository's models load from their settings, so it takes no parameters."""
        if parameters:
            raise ModelLoadError(
                "this repository's models load from their own files; it takes no load "
                f"parameters (got {', '.join(sorted(parameters))})"
            )
        return self.load_versions(name), None

    def reload(self, name: str, replay: Any) -> list[Any]:
        """What another worker's ``load_with`` built, from the ``replay`` it returned."""
        return self.load_versions(name)

    def build_versions(self, name: str) -> list[tuple[Any, ModelSettings]]:
        """``build`` of every version of ``name``, the newest first."""
        return [self.build(name), *(self.build_at(f) for f in self.versions(name))]

    def build(self, name: str) -> tuple[Any, ModelSettings]:
        """Builds model ``name`` (its newest version): (its adapter, its settings)."""
        with self._lock:
            folder = self._known.get(name)
            s = self.read(folder) if folder is not None and self._holds(folder) else None
            if s is None or s.name != name:
                # Not where it was: read every settings file again (hundreds, for a
                # repository of hundreds of models; a load on request must not).
                self._known = self.folders()
                folder = self._known.get(name)
                if folder is None:
                    raise ModelLoadError(f"the repository has no model named {name!r}")
        assert folder is not None
        return self.build_at(folder)

    def build_at(self, folder: Path) -> tuple[Any, ModelSettings]:
        """Builds the model of ``folder``: (its adapter, its settings), by the runtime
        registry's row for it."""
        with self._lock:  # one import at a time: sys.path and sys.modules are shared
            s = self.read(folder)
            built = runtimes.build(self.source(folder, s))
            if built.how:
                log.info("model %s: %s", s.name, built.how)
            return built.adapter, s

    def source(self, folder: Path, s: ModelSettings) -> runtimes.Source:
        """What the registry builds the model of ``folder`` from: an MLServer file's
        ``implementation`` (its constructor arguments ``parameters.extra``, its modules
        also in the repository's root, as ``mlserver start FOLDER`` imports them), else
        inferwire's."""
        ml = s._mlserver
        if ml is not None:
            return runtimes.Source(
                ml.implementation,
                s,
                name=s.name,
                folder=ml.folder,
                search=(self.root,),
                parameters=lambda: dict(ml.extra),
                mlserver=ml,
            )
        return runtimes.Source(
            s.implementation,
            s,
            name=s.name,
            folder=folder,
            parameters=lambda: runtimes.constructor_parameters(s.parameters, folder),
        )


# Files polling looks at in one model's folders; past it, a change deeper in is missed.
MAX_WATCHED_FILES = 10_000


def fingerprint(paths: list[Path]) -> tuple[tuple[str, int, int], ...]:
    """The files under ``paths`` with their modification times and sizes: what changes
    when a model's files do."""
    found: list[tuple[str, int, int]] = []
    for root in paths:
        for top, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
            for f in sorted(files):
                try:
                    st = os.stat(os.path.join(top, f))
                except OSError:
                    continue
                found.append((os.path.join(top, f), st.st_mtime_ns, st.st_size))
                if len(found) >= MAX_WATCHED_FILES:
                    return tuple(found)
    return tuple(found)


def measure(adapter: Any, resident_delta: int) -> int:
    """What a loaded model costs in memory, for ``model_memory_budget``: the native tree
    runtime's arrays; for a Python model, its pickled size (its arrays' bytes, which the
    first load's imports do not inflate as the process's resident memory would), else
    the growth of the resident memory during its load."""
    native = getattr(adapter, "memory_bytes", None)
    if isinstance(native, int):
        return native
    import pickle

    try:
        return len(pickle.dumps(getattr(adapter, "model", adapter), protocol=5))
    except Exception:
        return max(resident_delta, 0)


def give_back_memory() -> None:
    """Returns the C heap's free pages to the system (glibc's ``malloc_trim``): a load
    reads a model file into objects it then drops (a scikit-learn forest converted to
    the native runtime's arrays), and without this the process keeps their pages, so
    that its resident memory says little about what the models hold."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc


def resident_bytes() -> int:
    """This process's resident memory (Linux's /proc; 0 where there is none)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def newest(versions: list[str]) -> str:
    """The newest of a model's versions, as MLServer orders them: by number when all are
    whole numbers, else as text (none is newer than any)."""
    if "" in versions:
        return ""
    try:
        return str(max(versions, key=int))
    except ValueError:
        return max(versions)


# -- publishing ----------------------------------------------------------------------------
#
# A published model lives in the repository as NAME/versions/VERSION/<file>, with
# NAME/model-settings.json naming the version that serves (the newest published). Older
# versions stay on disk: deleting the serving one rolls back to the newest left.


def _check_name(kind: str, value: str) -> None:
    if not SAFE.match(value) or value in (".", ".."):
        raise ModelLoadError(
            f"{kind} {value!r}: letters, digits, '.', '_' and '-' only (1 to 100, not starting "
            "with '.', '_' or '-')"
        )


def _versions(folder: Path) -> list[str]:
    root = folder / "versions"
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and any(p.iterdir())]
    return [p.name for p in sorted(found, key=lambda p: p.stat().st_mtime_ns)]


def publish(repo: Repository, name: str, version: str, data: bytes, filename: str) -> Any:
    """Stores and builds a published model: (adapter, settings). The upload is read and
    converted in a scratch folder, once: a model that fails leaves the repository and the
    serving version untouched, and one that builds is what serves."""
    _check_name("name", name)
    _check_name("version", version)
    suffix = Path(filename).suffix.lower()
    if suffix not in modelfile.SUFFIXES:
        raise ModelLoadError(
            f"file {filename!r}: not a model file ({', '.join(modelfile.SUFFIXES)})"
        )
    with repo._lock:
        folder = repo.root / name
        existing = repo.folders().get(name)
        if existing is not None and existing != folder:
            raise ModelLoadError(f"{existing.name}/ already holds a model named {name!r}")
        if existing is not None and not (folder / "versions").is_dir():
            raise ModelLoadError(f"model {name!r} is not a published model: it cannot be replaced")
        with tempfile.TemporaryDirectory(dir=repo.root, prefix=".upload-") as scratch:
            staged = Path(scratch) / f"model{suffix}"
            staged.write_bytes(data)
            # Validates and converts: raises with the reason for a corrupt upload.
            adapter, how = modelfile.adapter(str(staged), name)
            log.info("published %s %s: %s", name, version, how)
            target = folder / "versions" / version
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                shutil.rmtree(target)
            Path(scratch, "v").mkdir()
            shutil.move(str(staged), Path(scratch, "v", staged.name))
            Path(scratch, "v").rename(target)
        settings = _write_settings(folder, name, version, f"versions/{version}/model{suffix}")
    return adapter, settings.to_core()


def _write_settings(folder: Path, name: str, version: str, implementation: str) -> ModelSettings:
    settings = ModelSettings(name=name, implementation=implementation, version=version)
    doc = {"name": name, "version": version, "implementation": implementation}
    tmp = folder / ".model-settings.json.tmp"
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(folder / "model-settings.json")  # atomic: a restart sees old or new
    return settings


def delete(repo: Repository, name: str, version: str) -> Any:
    """Removes a published version; returns what serves now (adapter, settings), or None
    when no version is left (the model is removed)."""
    _check_name("name", name)
    _check_name("version", version)
    with repo._lock:
        folder = repo.root / name
        target = folder / "versions" / version
        if not target.is_dir():
            have = ", ".join(_versions(folder)) or "none"
            raise ModelLoadError(f"model {name!r} has no published version {version!r} ({have})")
        shutil.rmtree(target)
        left = _versions(folder)
        if not left:
            shutil.rmtree(folder)
            return None
        newest = left[-1]
        file = next((folder / "versions" / newest).iterdir()).name
        _write_settings(folder, name, newest, f"versions/{newest}/{file}")
    return repo.load(name)


def published(repo: Repository) -> list[dict[str, Any]]:
    """Every published model: its versions, oldest first, and the one serving."""
    out = []
    for name, folder in repo.folders().items():
        versions = _versions(folder)
        if versions:
            serving = read_model_settings(folder).version
            out.append({"name": name, "versions": versions, "serving": serving})
    return out
