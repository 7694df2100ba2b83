"""inferwire: a model server for Python models with a Rust core."""

from __future__ import annotations

from ._core import __version__
from .client import (
    AsyncClient,
    AuthError,
    BadRequestError,
    Client,
    ClientError,
    NotFoundError,
    OverloadedError,
    ServerError,
    UnreachableError,
)
from .errors import BadRequest, InferwireError, ModelLoadError, SettingsError
from .local import local
from .model import Model
from .publishing import PublishError, publish
from .server import serve
from .settings import Settings

__all__ = [
    "AsyncClient",
    "AuthError",
    "BadRequest",
    "BadRequestError",
    "Client",
    "ClientError",
    "InferwireError",
    "Model",
    "ModelLoadError",
    "NotFoundError",
    "OverloadedError",
    "PublishError",
    "ServerError",
    "Settings",
    "SettingsError",
    "UnreachableError",
    "__version__",
    "local",
    "publish",
    "serve",
]
