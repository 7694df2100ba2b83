"""inferwire: a model server for Python models with a Rust core."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from .server import serve
    from .settings import Settings


def __getattr__(name: str) -> Any:
    # The server side (the pydantic settings schema) loads on first use, so that a program
    # that only uses the client does not pay for importing it.
    if name == "serve":
        from .server import serve

        return serve
    if name == "Settings":
        from .settings import Settings

        return Settings
    raise AttributeError(f"module 'inferwire' has no attribute {name!r}")


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
