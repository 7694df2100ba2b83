"""inferwire: a model server for Python models with a Rust core."""

from __future__ import annotations

from ._core import __version__
from .client import AsyncClient, Client
from .errors import (
    AuthError,
    BadRequest,
    BadRequestError,
    ClientError,
    InferwireError,
    ModelLoadError,
    NotFoundError,
    OverloadedError,
    PublishError,
    ServerError,
    SettingsError,
    UnreachableError,
    UnsupportedModel,
)
from .local import local
from .model import Model
from .publishing import publish
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
    "UnsupportedModel",
    "__version__",
    "local",
    "publish",
    "serve",
]
