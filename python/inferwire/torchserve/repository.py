"""TorchServe's model store, read as TorchServe reads it: the archives ``--models`` names
(``name=file.mar``, a bare ``file.mar``, a no-archive folder, or ``all``: every archive
in the store), each served under its name, built by the runtime registry's row for
TorchServe archives (``runtimes``), which opens the archive and runs its handler
(``handler_model``). Loading and serving are ``Repository``'s."""

from __future__ import annotations

import json
import logging
import zipfile
from pathlib import Path
from typing import Any

from .. import runtimes
from ..errors import SettingsError
from ..repository import ModelSettings, Repository
from .cli import StartupModel, default_name

log = logging.getLogger("inferwire")

ARCHIVES = (".mar", ".tar.gz", ".tgz")
MANIFEST = "MAR-INF/MANIFEST.json"
# A manifest larger than this is not one torch-model-archiver wrote.
MAX_MANIFEST = 1 << 20


class TorchServeRepository(Repository):
    def __init__(
        self,
        root: str | Path,
        dialect: Any = None,
        models: tuple[StartupModel, ...] = (),
        load_all: bool = False,
    ) -> None:
        super().__init__(root, dialect)
        self.models = models
        self.load_all = load_all
        # Archive → the name it is served under, as `folders` last found them.
        self._names: dict[Path, str] = {}

    def _entries(self) -> list[tuple[str | None, Path]]:
        """(the name given, or None, and the archive) of each model to serve."""
        if self.load_all:
            found = sorted(
                p
                for p in self.root.iterdir()
                if p.name.endswith(ARCHIVES) or (p / MANIFEST).is_file()
            )
            return [(None, p) for p in found]
        out: list[tuple[str | None, Path]] = []
        for m in self.models:
            if "://" in m.url:
                raise SettingsError(
                    f"--models {m.url}: loading archives from URLs is not served yet; put the "
                    "archive in the model store and name it"
                )
            path = Path(m.url)
            out.append((m.name, path if path.is_absolute() else self.root / path))
        return out

    def folders(self) -> dict[str, Path]:
        out: dict[str, Path] = {}
        for given, path in self._entries():
            if not path.exists():
                raise SettingsError(f"--models: {path}: no such archive in the model store")
            name = given or _manifest_name(path) or default_name(str(path))
            if name in out:
                raise SettingsError(f"--models: two archives are served as {name!r}")
            out[name] = path
        self._names = {path: name for name, path in out.items()}
        self._versions = {}
        return out

    def _holds(self, folder: Path) -> bool:
        return folder.exists()

    def read(self, folder: Path) -> ModelSettings:
        name = self._names.get(folder) or default_name(str(folder))
        return ModelSettings(name=name, implementation=str(folder))

    def build_at(self, folder: Path) -> tuple[Any, ModelSettings]:
        with self._lock:  # one import at a time: sys.path and sys.modules are shared
            s = self.read(folder)
            built = runtimes.build(runtimes.Source(str(folder), s, name=s.name, torchserve=True))
            model = built.adapter.model
            settings = ModelSettings(
                name=s.name,
                implementation=str(folder),
                version=model.version,
                **model.config.serving(),
            )
            return built.adapter, settings


def _manifest_name(path: Path) -> str:
    """The archive's ``modelName`` (what TorchServe serves it as when ``--models`` gives no
    name), read without extracting; "" when it cannot be read here (the load then says
    why)."""
    try:
        if path.is_dir():
            raw = (path / MANIFEST).read_bytes()[:MAX_MANIFEST]
        elif path.name.endswith(".mar") and zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                info = z.getinfo(MANIFEST)
                if info.file_size > MAX_MANIFEST:
                    return ""
                raw = z.read(info)
        else:
            return ""
        manifest = json.loads(raw)
        name = manifest.get("model", {}).get("modelName", "")
        return name if isinstance(name, str) else ""
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, AttributeError):
        return ""


def build(source: Any) -> Any:
    """The runtime registry's builder for a TorchServe archive: its handler, ready."""
    from .adapter import HandlerAdapter
    from .handler_model import HandlerModel

    return HandlerAdapter(HandlerModel(source.spec, name=source.name))
