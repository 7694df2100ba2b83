"""TorchServe's model store, read as TorchServe reads it: the archives ``--models`` names
(``name=file.mar``, a bare ``file.mar``, a no-archive folder, or ``all``: every archive
in the store), each served under its name, built by the runtime registry's row for
TorchServe archives (``runtimes``), which opens the archive and runs its handler
(``handler_model``). Loading and serving are ``Repository``'s."""

from __future__ import annotations

import atexit
import json
import logging
import re
import shutil
import tempfile
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from .. import runtimes
from ..errors import ModelLoadError, SettingsError
from ..repository import ModelSettings, Repository
from .cli import StartupModel, default_name

log = logging.getLogger("inferwire")

ARCHIVES = (".mar", ".tar.gz", ".tgz")
# An archive registered from a URL: at most this big, and this long without data.
MAX_DOWNLOAD = 16 * 1024**3
DOWNLOAD_TIMEOUT = 60.0
# What the management API's register takes; the ones not served yet are warned about.
IGNORED_PARAMETERS = {
    "initial_workers",
    "synchronous",
    "batch_size",
    "max_batch_delay",
    "response_timeout",
    "runtime",
    "handler",
    "s3_sse_kms",
    "queue_timeout",
}
REGISTER_PARAMETERS = {"url", "model_name", *IGNORED_PARAMETERS}
# config.properties' per-model keys (`models`, `model_snapshot`): served, and only shown.
SERVED_KEYS = {"batchSize", "maxBatchDelay", "minWorkers"}
INFORMATIVE_KEYS = {"marName", "defaultVersion", "maxWorkers", "responseTimeout"}
MANIFEST = "MAR-INF/MANIFEST.json"
# The parameter that hands the builder config.properties' service_envelope.
ENVELOPE = "service_envelope"
# A manifest larger than this is not one torch-model-archiver wrote.
MAX_MANIFEST = 1 << 20


class TorchServeRepository(Repository):
    def __init__(
        self,
        root: str | Path,
        dialect: Any = None,
        models: tuple[StartupModel, ...] = (),
        load_all: bool = False,
        allowed_urls: tuple[str, ...] = (),
        model_config: dict[str, dict[str, dict[str, Any]]] | None = None,
        envelope: str = "",
    ) -> None:
        super().__init__(root, dialect)
        # config.properties' service_envelope, around every model's handler.
        self.envelope = envelope
        self.models = models
        self.load_all = load_all
        self.allowed_urls = allowed_urls
        # config.properties' `models`: {model: {version: {batchSize, ...}}}.
        self.model_config = model_config or {}
        # Where archives registered from URLs are downloaded (made at the first).
        self._downloads: Path | None = None
        # Archive → the name it is served under, as `folders` last found them.
        self._names: dict[Path, str] = {}
        # Archives registered through the management API since the start, by name.
        self._registered: dict[str, Path] = {}
        # --models' http(s) URLs, downloaded once each.
        self._fetched: dict[str, Path] = {}

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
                out.append((m.name, self._fetch(m.url)))
                continue
            path = Path(m.url)
            out.append((m.name, path if path.is_absolute() else self.root / path))
        return out

    def _fetch(self, url: str) -> Path:
        """A ``--models`` URL's archive: an http(s) URL ``allowed_urls`` allows, downloaded
        at the first look, as register downloads one."""
        if url not in self._fetched:
            if not url.startswith(("http://", "https://")):
                raise SettingsError(
                    f"--models {url}: only http(s) URLs are fetched; put the archive in the "
                    "model store and name it"
                )
            try:
                self._fetched[url] = self._download(url)
            except ModelLoadError as e:
                raise SettingsError(f"--models {url}: {e}") from None
        return self._fetched[url]

    def folders(self) -> dict[str, Path]:
        out: dict[str, Path] = {}
        entries = self._entries() + [(n, p) for n, p in self._registered.items()]
        for given, path in entries:
            if not path.exists():
                raise SettingsError(f"--models: {path}: no such archive in the model store")
            name = given or _manifest_name(path) or default_name(str(path))
            if name in out:
                raise SettingsError(f"--models: two archives are served as {name!r}")
            out[name] = path
        self._names = {path: name for name, path in out.items()}
        self._versions = {}
        return out

    def startup_names(self) -> list[str]:
        # Only what --models names loads at start; registered archives come later.
        return [n for n in self.names() if n not in self._registered]

    def load_with(self, name: str, parameters: dict[str, Any]) -> tuple[list[Any], Any]:
        """The management API's register (``POST /models?url=...``): an archive of the
        model store by its file name, served as ``name``; what the other workers
        ``reload`` is the same archive."""
        unknown = sorted(set(parameters) - REGISTER_PARAMETERS)
        if unknown:
            raise ModelLoadError(f"unexpected parameter {unknown[0]!r}")
        url = str(parameters.get("url", ""))
        for key in sorted(set(parameters) & IGNORED_PARAMETERS):
            log.warning("register %s: %s=%s ignored (not served yet)", name, key, parameters[key])
        archive = self._in_store(url)
        return self.reload(name, {"archive": str(archive)}), {"archive": str(archive)}

    def reload(self, name: str, replay: Any) -> list[Any]:
        if replay:
            self._registered[name] = Path(replay["archive"])
        return self.load_versions(name)

    def _in_store(self, url: str) -> Path:
        """The archive a register names: a file or folder directly in the model store by
        its name, or an http(s) URL that ``allowed_urls`` allows, downloaded."""
        if url.startswith(("http://", "https://")):
            return self._download(url)
        if "://" in url:
            raise ModelLoadError(
                f"url {url!r}: only http(s) URLs are fetched; an archive on this machine is "
                "registered by its file name in the model store"
            )
        if not url or "/" in url or "\\" in url or url in (".", ".."):
            raise ModelLoadError(f"url {url!r}: must be an archive's file name in the model store")
        path = self.root / url
        if not path.exists():
            raise ModelLoadError(f"Model not found in model store: {url}")
        return path

    def _download(self, url: str) -> Path:
        """``url``'s archive, fetched into a private folder: only where ``allowed_urls``
        allows, redirects included; at most ``MAX_DOWNLOAD`` bytes, ``DOWNLOAD_TIMEOUT``
        seconds without data."""
        self._allowed(url)
        name = urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1]
        if not name.endswith(ARCHIVES) or name in ARCHIVES:
            raise ModelLoadError(f"url {url!r}: must name a model archive (.mar, .tar.gz)")
        if self._downloads is None:
            self._downloads = Path(tempfile.mkdtemp(prefix="inferwire-torchserve-"))
            atexit.register(shutil.rmtree, self._downloads, True)
        target = Path(tempfile.mkdtemp(dir=self._downloads)) / name
        opener = urllib.request.build_opener(_Redirects(self._allowed))
        try:
            with opener.open(url, timeout=DOWNLOAD_TIMEOUT) as r, open(target, "wb") as out:
                size = 0
                while chunk := r.read(1 << 20):
                    size += len(chunk)
                    if size > MAX_DOWNLOAD:
                        raise ModelLoadError(f"url {url!r}: larger than {MAX_DOWNLOAD} bytes")
                    out.write(chunk)
        except (OSError, ValueError) as e:
            shutil.rmtree(target.parent, ignore_errors=True)
            raise ModelLoadError(f"Failed to download archive from: {url}: {e}") from None
        except ModelLoadError:
            shutil.rmtree(target.parent, ignore_errors=True)
            raise
        return target

    def _allowed(self, url: str) -> None:
        if not any(re.fullmatch(p, url) for p in self.allowed_urls):
            raise ModelLoadError(f"Given URL {url} does not match any allowed URL(s)")

    def _holds(self, folder: Path) -> bool:
        return folder.exists()

    def read(self, folder: Path) -> ModelSettings:
        name = self._names.get(folder) or default_name(str(folder))
        return ModelSettings(name=name, implementation=str(folder))

    def build_at(self, folder: Path) -> tuple[Any, ModelSettings]:
        with self._lock:  # one import at a time: sys.path and sys.modules are shared
            s = self.read(folder)
            given = self.settings_of(s.name)
            source = runtimes.Source(
                str(folder),
                s,
                name=s.name,
                torchserve=True,
                parameters=lambda: {**given, ENVELOPE: self.envelope},
            )
            built = runtimes.build(source)
            model = built.adapter.model
            settings = ModelSettings(
                name=s.name,
                implementation=str(folder),
                version=model.version,
                **{**model.config.serving(), **_serving(given)},
            )
            return built.adapter, settings

    def settings_of(self, name: str) -> dict[str, Any]:
        """What config.properties says of model ``name`` (``model_snapshot``'s entry, then
        ``models``' for its version: the one ``model_snapshot`` names, the only one, or
        the ``defaultVersion``), over what its archive's model-config.yaml says."""
        out: dict[str, Any] = {}
        version = None
        for m in self.models:
            if m.name == name:
                out.update(m.config)
                version = m.version
        versions = self.model_config.get(name, {})
        chosen = versions.get(version) if version is not None else None
        if chosen is None and len(versions) == 1:
            chosen = next(iter(versions.values()))
        if chosen is None:
            chosen = next((v for v in versions.values() if v.get("defaultVersion")), None)
        out.update(chosen or {})
        for key in sorted(set(out) - SERVED_KEYS - INFORMATIVE_KEYS):
            log.warning("model %s: %s=%r in config.properties is not served", name, key, out[key])
        return out


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to a URL ``allowed_urls`` allows too."""

    def __init__(self, allowed: Any) -> None:
        self.allowed = allowed

    def redirect_request(self, req: Any, fp: Any, code: Any, msg: Any, headers: Any,
                         newurl: str) -> Any:  # fmt: skip
        self.allowed(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


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


def _serving(given: dict[str, Any]) -> dict[str, Any]:
    """inferwire's serving settings for config.properties' per-model keys."""
    out: dict[str, Any] = {}
    batch = given.get("batchSize")
    if isinstance(batch, int) and batch > 0:
        out["max_batch_size"] = batch
        delay = given.get("maxBatchDelay", 100)
        out["max_batch_delay"] = delay / 1000 if batch > 1 and isinstance(delay, int) else 0.0
    workers = given.get("minWorkers")
    if isinstance(workers, int) and workers > 0:
        out["model_threads"] = workers
    return out


def build(source: Any) -> Any:
    """The runtime registry's builder for a TorchServe archive: its handler, ready (with
    config.properties' batch size and worker count for it, when it gives them)."""
    from .adapter import HandlerAdapter
    from .handler_model import HandlerModel

    given = source.parameters()
    batch, workers = given.get("batchSize"), given.get("minWorkers")
    return HandlerAdapter(
        HandlerModel(
            source.spec,
            name=source.name,
            batch_size=batch if isinstance(batch, int) and batch > 0 else 0,
            instances=workers if isinstance(workers, int) and workers > 0 else 0,
            envelope=str(given.get(ENVELOPE) or ""),
        )
    )
