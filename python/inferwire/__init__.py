"""inferwire: a model server for Python models with a Rust core."""

from __future__ import annotations

from ._core import __version__
from .errors import BadRequest, InferwireError, ModelLoadError, SettingsError
from .model import Model
from .publishing import PublishError, publish
from .server import serve
from .settings import Settings

__all__ = [
    "BadRequest",
    "InferwireError",
    "Model",
    "ModelLoadError",
    "PublishError",
    "Settings",
    "SettingsError",
    "__version__",
    "publish",
    "serve",
]
