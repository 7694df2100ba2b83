"""TorchServe model archives opened for serving: a ``.mar`` (the zip that
``torch-model-archiver`` writes, deflated or ``zip-store``), its ``tgz`` form
(``NAME.tar.gz``, every entry under one top folder), and the ``no-archive`` folder (files
beside ``MAR-INF/MANIFEST.json``).

An archive runs code when it is loaded, and may come from a URL someone else chose, so
extraction trusts nothing in it: entries are counted and sized before anything is
written (from the zip's own end record, so a forged directory of millions of entries is
refused before Python builds it), sizes are enforced while writing, compression ratios
are capped (zip and gzip bombs), and names that leave the folder (``..``, absolute,
drive letters), links, devices and duplicate names are refused. Every refusal is an
``ArchiveError`` naming the archive and the entry. The files go to a private temporary
folder (mode 0700) that ``ModelArchive.close`` removes."""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import struct
import tarfile
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from ..errors import ModelLoadError

log = logging.getLogger("inferwire")

# -- limits (each refusal names the one it hit) -------------------------------------------
# Files in one archive: TorchServe's own examples hold a handful; a tokenizer folder a
# few hundred.
MAX_ENTRIES = 10_000
# Bytes written in all, after decompression: big enough for a multi-GB checkpoint.
MAX_TOTAL_BYTES = 64 * 1024**3
# Uncompressed / compressed, per entry and for the whole archive. Weights compress by
# ~1.1x, text by ~10x; deflate's ceiling is ~1032x, reached only by crafted input.
MAX_RATIO = 200
# Entries smaller than this are not ratio-checked (a small file of spaces is harmless).
RATIO_FREE_BYTES = 1024 * 1024
# One entry's name, and its folder depth.
MAX_NAME_BYTES = 1024
MAX_NAME_DEPTH = 32
# MANIFEST.json is a few hundred bytes.
MAX_MANIFEST_BYTES = 1024 * 1024

MANIFEST = "MAR-INF/MANIFEST.json"
_CHUNK = 1024 * 1024


class ArchiveError(ModelLoadError):
    """A model archive that cannot be served: ``archive`` is its path, ``entry`` the
    entry at fault (empty when the archive as a whole is)."""

    def __init__(self, archive: str | Path, entry: str, problem: str) -> None:
        where = f"{archive}: entry {entry!r}: " if entry else f"{archive}: "
        super().__init__(where + problem)
        self.archive = str(archive)
        self.entry = entry
        self.problem = problem


@dataclass(frozen=True)
class Limits:
    """What extraction allows; the module's constants by default (tests lower them)."""

    max_entries: int = MAX_ENTRIES
    max_total_bytes: int = MAX_TOTAL_BYTES
    max_ratio: float = MAX_RATIO
    ratio_free_bytes: int = RATIO_FREE_BYTES


@dataclass(frozen=True)
class Manifest:
    """``MAR-INF/MANIFEST.json`` as ``torch-model-archiver`` 0.12 writes it. ``raw`` is
    the JSON as read: handlers get it as ``context.manifest``."""

    raw: dict[str, Any]
    runtime: str
    model_name: str
    model_version: str
    handler: str
    serialized_file: str = ""
    model_file: str = ""
    extensions: str = ""
    requirements_file: str = ""
    config_file: str = ""
    archiver_version: str = ""
    created_on: str = ""


@dataclass
class ModelArchive:
    """An opened archive: its files are in ``folder`` (the handler's ``model_dir``).
    ``extracted``: ``folder`` is a temporary copy that ``close`` removes (a no-archive
    folder is served where it is and left alone)."""

    source: Path
    folder: Path
    manifest: Manifest
    extracted: bool
    warnings: list[str] = field(default_factory=list)

    def path(self, name: str) -> Path:
        """A file of the archive named in its manifest (``serializedFile``, ...)."""
        return self.folder / name

    def close(self) -> None:
        if self.extracted:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> ModelArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_PREFIX = "inferwire-ts-"


def open_archive(
    source: str | Path, *, temp_dir: str | Path | None = None, limits: Limits | None = None
) -> ModelArchive:
    """The archive at ``source``: a ``.mar`` (zip) or ``.tar.gz`` file, told apart by
    their first bytes, or a no-archive folder (one holding ``MAR-INF/MANIFEST.json``, or
    a single folder that does, as TorchServe accepts). Files are extracted under
    ``temp_dir`` (the system's by default). Raises ``ArchiveError``."""
    path = Path(source)
    lim = limits or Limits()
    if path.is_dir():
        folder = _manifest_folder(path)
        return _opened(path, folder, extracted=False)
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except OSError as e:
        raise ArchiveError(path, "", e.strerror or str(e)) from None
    temp = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=temp_dir))
    try:
        if magic[:2] == b"PK":
            _extract_zip(path, temp, lim)
            folder = temp
        elif magic[:2] == b"\x1f\x8b":
            _extract_tgz(path, temp, lim)
            folder = temp
        else:
            raise ArchiveError(
                path, "", "neither a .mar (zip), a .tar.gz nor a folder with " + MANIFEST
            )
        return _opened(path, folder, extracted=True)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise


def _manifest_folder(path: Path) -> Path:
    if (path / MANIFEST).is_file():
        return path
    inside = [p for p in path.iterdir() if not p.name.startswith(".")]
    if len(inside) == 1 and inside[0].is_dir() and (inside[0] / MANIFEST).is_file():
        return inside[0]
    raise ArchiveError(path, "", f"a no-archive model folder holds {MANIFEST}; this one does not")


def _opened(source: Path, folder: Path, extracted: bool) -> ModelArchive:
    manifest = read_manifest(source, folder)
    archive = ModelArchive(source, folder, manifest, extracted)
    for key, name in (
        ("serializedFile", manifest.serialized_file),
        ("modelFile", manifest.model_file),
        ("configFile", manifest.config_file),
    ):
        if name and not _inside(folder, name):
            raise ArchiveError(source, name, f"the manifest's {key} is not a file of the archive")
    if manifest.requirements_file:
        text = (
            f"{source}: requirementsFile {manifest.requirements_file!r} is not installed: "
            "inferwire never runs pip for an archive; install what it lists into the "
            "server's environment yourself"
        )
        log.warning(text)
        archive.warnings.append(text)
    return archive


def _inside(folder: Path, name: str) -> bool:
    try:
        target = (folder / name).resolve()
        return target.is_file() and target.is_relative_to(folder.resolve())
    except (OSError, ValueError):
        return False


def read_manifest(source: Path, folder: Path) -> Manifest:
    """``MAR-INF/MANIFEST.json`` of the files in ``folder``, checked as TorchServe's
    frontend checks it (its words where it has them)."""
    file = folder / MANIFEST
    try:
        if file.stat().st_size > MAX_MANIFEST_BYTES:
            raise ArchiveError(source, MANIFEST, f"larger than {MAX_MANIFEST_BYTES} bytes")
        raw = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ArchiveError(
            source, MANIFEST, "missing: not a torch-model-archiver archive"
        ) from None
    except (OSError, ValueError) as e:
        raise ArchiveError(source, MANIFEST, f"not valid JSON: {e}") from None
    model = raw.get("model") if isinstance(raw, dict) else None
    if not isinstance(model, dict):
        raise ArchiveError(source, MANIFEST, "Missing Model entry in manifest file.")

    def text(where: dict[str, Any], key: str) -> str:
        value = where.get(key)
        if value is None:
            return ""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ArchiveError(source, MANIFEST, f"{key} must be a string, not {value!r}")
        return str(value)

    if not text(model, "modelName"):
        raise ArchiveError(source, MANIFEST, "Model name is not defined.")
    if not text(model, "modelVersion"):
        raise ArchiveError(source, MANIFEST, "Model version is not defined.")
    if not text(raw, "runtime"):
        raise ArchiveError(source, MANIFEST, "Runtime is not defined or invalid.")
    if not text(model, "handler"):
        raise ArchiveError(source, MANIFEST, "handler is not defined.")
    return Manifest(
        raw=raw,
        runtime=text(raw, "runtime"),
        model_name=text(model, "modelName"),
        model_version=text(model, "modelVersion"),
        handler=text(model, "handler"),
        serialized_file=text(model, "serializedFile"),
        model_file=text(model, "modelFile"),
        extensions=text(model, "extensions"),
        requirements_file=text(model, "requirementsFile"),
        config_file=text(model, "configFile"),
        archiver_version=text(raw, "archiverVersion"),
        created_on=text(raw, "createdOn"),
    )


# -- names ----------------------------------------------------------------------------


def safe_name(archive: Path, name: str) -> PurePosixPath | None:
    """An entry's name as a path inside the extraction folder; None for the folder
    itself ("" or "./"). Refuses what could land elsewhere or confuse the file system."""
    if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        raise ArchiveError(archive, name[:80] + "…", f"name longer than {MAX_NAME_BYTES} bytes")
    if "\x00" in name:
        raise ArchiveError(archive, name, "name holds a NUL character")
    if "\\" in name:
        # Windows writers use it as a separator; here it would be part of a name, and on
        # the way back to Windows a separator again.
        raise ArchiveError(archive, name, "name holds a backslash")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveError(archive, name, "absolute name: entries must stay inside the archive")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ArchiveError(archive, name, "name leaves the archive ('..')")
    if len(parts) > MAX_NAME_DEPTH:
        raise ArchiveError(archive, name, f"nested deeper than {MAX_NAME_DEPTH} folders")
    return PurePosixPath(*parts) if parts else None


class _Writer:
    """Writes entries under ``root``, counting and sizing them across the archive."""

    def __init__(self, archive: Path, root: Path, limits: Limits, packed_size: int) -> None:
        self.archive = archive
        self.root = root
        self.limits = limits
        self.packed_size = max(packed_size, 1)
        self.entries = 0
        self.total = 0
        self.seen: set[PurePosixPath] = set()

    def admit(self, name: str) -> PurePosixPath | None:
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise ArchiveError(self.archive, name, f"more than {self.limits.max_entries} entries")
        rel = safe_name(self.archive, name)
        if rel is None:
            return None
        if rel in self.seen:
            raise ArchiveError(self.archive, name, "duplicate name: the archive holds it twice")
        self.seen.add(rel)
        return rel

    def folder(self, rel: PurePosixPath, name: str) -> None:
        self._mkdirs(self.root.joinpath(*rel.parts), name)

    def _mkdirs(self, target: Path, name: str) -> None:
        try:
            target.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as e:
            raise ArchiveError(
                self.archive, name, f"cannot be written: {e.strerror or e}"
            ) from None

    def file(
        self, rel: PurePosixPath, name: str, declared: int, packed: int, src: IO[bytes]
    ) -> None:
        lim = self.limits
        self._check_total(name, self.total + declared)
        if declared > lim.ratio_free_bytes and declared > lim.max_ratio * max(packed, 1):
            raise ArchiveError(
                self.archive,
                name,
                f"compressed more than {lim.max_ratio:g}:1 ({packed} -> {declared} bytes): "
                "refused as a decompression bomb",
            )
        target = self.root.joinpath(*rel.parts)
        self._mkdirs(target.parent, name)
        written = 0
        try:
            # O_EXCL: a name that resolves onto an earlier entry (a file where a folder
            # was) fails instead of overwriting it; no entry's mode bits are kept.
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError as e:
            raise ArchiveError(
                self.archive, name, f"cannot be written: {e.strerror or e}"
            ) from None
        with os.fdopen(fd, "wb") as out:
            while chunk := src.read(_CHUNK):
                written += len(chunk)
                if written > declared:
                    raise ArchiveError(self.archive, name, "holds more bytes than its header says")
                self._check_total(name, self.total + written)
                out.write(chunk)
        self.total += written
        if self.total > lim.ratio_free_bytes and self.total > lim.max_ratio * self.packed_size:
            raise ArchiveError(
                self.archive,
                name,
                f"the archive expands more than {lim.max_ratio:g}:1 "
                f"({self.packed_size} -> {self.total} bytes so far): refused as a "
                "decompression bomb",
            )

    def _check_total(self, name: str, total: int) -> None:
        if total > self.limits.max_total_bytes:
            raise ArchiveError(
                self.archive,
                name,
                f"the archive expands past {self.limits.max_total_bytes} bytes",
            )


# -- zip (.mar) ---------------------------------------------------------------------------


def _declared_entries(fh: IO[bytes], size: int) -> int:
    """The entry count the zip's end-of-central-directory record declares (zip64's when
    present), read before ``zipfile`` builds one object per entry."""
    tail = min(size, 22 + 65535)
    fh.seek(size - tail)
    data = fh.read(tail)
    at = data.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(data):
        return -1
    count = int(struct.unpack("<H", data[at + 10 : at + 12])[0])
    locator = at - 20
    if locator >= 0 and data[locator : locator + 4] == b"PK\x06\x07":
        offset = int(struct.unpack("<Q", data[locator + 8 : locator + 16])[0])
        if 0 <= offset <= size - 56:
            fh.seek(offset)
            record = fh.read(56)
            if record[:4] == b"PK\x06\x06":
                return int(struct.unpack("<Q", record[32:40])[0])
    return count


def _extract_zip(path: Path, root: Path, limits: Limits) -> None:
    size = path.stat().st_size
    try:
        with open(path, "rb") as fh:
            declared = _declared_entries(fh, size)
            if declared > limits.max_entries:
                raise ArchiveError(
                    path, "", f"declares {declared} entries, more than {limits.max_entries}"
                )
            with zipfile.ZipFile(fh) as zf:
                writer = _Writer(path, root, limits, size)
                for info in zf.infolist():
                    _zip_entry(zf, info, writer)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as e:
        raise ArchiveError(path, "", f"not a readable zip: {e}") from None
    except (OSError, zlib.error) as e:
        raise ArchiveError(path, "", f"cannot be extracted: {e}") from None


def _zip_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, writer: _Writer) -> None:
    name = info.filename
    rel = writer.admit(name)
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise ArchiveError(writer.archive, name, "symbolic link: archives may hold only files")
    if mode and stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise ArchiveError(writer.archive, name, "not a file or folder: refused")
    if rel is None:
        return
    if info.is_dir():
        writer.folder(rel, name)
        return
    if info.flag_bits & 0x1:
        raise ArchiveError(writer.archive, name, "encrypted: cannot be served")
    try:
        with zf.open(info) as src:
            writer.file(rel, name, info.file_size, info.compress_size, src)
    except zipfile.BadZipFile as e:
        raise ArchiveError(writer.archive, name, f"corrupt: {e}") from None


# -- tgz ----------------------------------------------------------------------------------


def _extract_tgz(path: Path, root: Path, limits: Limits) -> None:
    """As TorchServe's frontend reads one: each name loses its first folder (the archiver
    puts everything under ``MODEL_NAME/``). Streamed, so a member is sized before any of
    its bytes are read."""
    size = path.stat().st_size
    writer = _Writer(path, root, limits, size)
    try:
        with tarfile.open(path, mode="r|gz") as tf:
            for member in tf:
                original = member.name
                name = original.split("/", 1)[1] if "/" in original else original
                try:
                    rel = writer.admit(name)
                except ArchiveError as e:
                    # Named as the archive has it, not as stripped.
                    raise ArchiveError(path, original, e.problem) from None
                if member.issym() or member.islnk():
                    raise ArchiveError(path, original, "link: archives may hold only files")
                if not (member.isfile() or member.isdir()):
                    raise ArchiveError(path, original, "not a file or folder: refused")
                if rel is None:
                    continue
                if member.isdir():
                    writer.folder(rel, original)
                    continue
                src = tf.extractfile(member)
                if src is None:
                    raise ArchiveError(path, original, "cannot be read")
                # A tar member is stored, not compressed: the gzip stream's ratio is the
                # whole archive's, checked as bytes are written.
                writer.file(rel, original, member.size, member.size, src)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        raise ArchiveError(path, "", f"not a readable .tar.gz: {e}") from None
