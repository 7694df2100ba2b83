"""A repository load call's parameters, as Triton takes them: ``config``, the model's
config in its JSON form, read instead of its config.pbtxt; ``file:<version>/<path>``, the
model's files (base64 over REST, bytes over gRPC, which the core passes on in base64),
from which the model loads instead of its folder in the repository. The files are written
to a private temporary folder the other workers read too; the body limit bounds them."""

from __future__ import annotations

import atexit
import base64
import binascii
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import ModelLoadError

FILE = "file:"
# Which parameters a load takes (Triton's), for the error that names the others.
TAKEN = "config, file:<version>/<path>"


class PollError(ModelLoadError):
    """A load call's parameters the repository cannot take (Triton's poll of the
    repository fails before any model is built, and says so)."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"{POLL_FAILED}: {cause}")


# How Triton's message for a load whose repository poll failed goes on after the model's
# name; the core's Triton dialect answers it with Triton's status (INTERNAL).
POLL_FAILED = "failed to poll from model repository"


def read(name: str, parameters: dict[str, Any]) -> tuple[str | None, dict[str, bytes]] | None:
    """The config text and the files (relative path → contents) a load call brings;
    None for a call that brings neither."""
    if not parameters:
        return None
    config: str | None = None
    files: dict[str, bytes] = {}
    for key, value in parameters.items():
        if key == "config":
            if not isinstance(value, str):
                raise _bad(key, "must be a string: the model's config as JSON")
            config = value
        elif key.startswith(FILE):
            files[_relative(name, key)] = _contents(name, key, value)
        else:
            raise _bad(key, f"not a parameter a load takes ({TAKEN})")
    if files and config is None:
        raise ModelLoadError(
            "a load that brings the model's files (file:<version>/<path>) must bring "
            "its config too (config)"
        )
    return config, files


def write(name: str, files: dict[str, bytes]) -> Path:
    """Writes ``files`` as the folder of model ``name`` in a new private temporary folder
    (removed when the model loads again from elsewhere, or the process ends)."""
    top = Path(tempfile.mkdtemp(prefix="inferwire-triton-load-"))
    atexit.register(shutil.rmtree, top, True)
    folder = top / name
    for rel, data in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder


def _relative(name: str, key: str) -> str:
    """``file:1/model.py``'s path, checked: under a version folder, never outside the
    model's folder."""
    text = key[len(FILE) :]
    path = PurePosixPath(text)
    parts = path.parts
    if (
        not text
        or "\\" in text
        or "\0" in text
        or path.is_absolute()
        or any(p in ("", ".", "..") for p in parts)
        or text != "/".join(parts)
    ):
        raise _bad(key, "must be file:<version>/<path>, a relative path without '..'")
    if len(parts) < 2 or not parts[0].isdigit():
        raise _bad(key, "must name a file in a version folder (file:<version>/<path>)")
    return text


def _contents(name: str, key: str, value: Any) -> bytes:
    if not isinstance(value, str):
        raise _bad(key, "must be the file's contents in base64")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _bad(key, "must be the file's contents in base64") from None


def _bad(key: str, why: str) -> ModelLoadError:
    return ModelLoadError(f"load parameter {key!r}: {why}")
