"""The Python side of each dialect: what, beyond the Rust core's replies, makes inferwire
serve as another server does. A dialect is chosen once, by name (``v2_dialect``), and
``serve`` and the repository ask it; none of them tests which one it is. Adding one means
a class here or in its own package, and a row in ``DIALECTS``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


class Dialect:
    """inferwire's own dialect, and every hook's default: nothing to add."""

    name = "inferwire"
    # The REST route the start's log shows first.
    entry = "/api/v1.0/predictions"
    # Whether a repository's first model is the one Seldon's routes answer (and the log
    # says the server serves it).
    default_model = True

    def prepare(self, settings: Any) -> None:
        """Before any model loads (``settings``: the server's)."""

    def metrics_text(self) -> Callable[[], str] | None:
        """What follows inferwire's metrics at each scrape (None: nothing)."""
        return None

    def open_repository(self, root: Path) -> None:
        """A model repository at ``root`` is about to be read."""

    def repository(self, root: str | Path) -> Any:
        """The model repository at ``root``, read in this dialect's layout (inferwire's
        and MLServer's: a settings file per model folder)."""
        from .repository import Repository

        return Repository(root, self)

    def started(self, repository: Any) -> None:
        """The models loaded at start are built (``repository``: None without one): the
        dialect may refuse to go on (raise ``SettingsError``)."""

    def stopped(self) -> None:
        """The server has drained (in each worker): what the dialect's models do at
        shutdown."""

    def serves_env_model(self) -> bool:
        """Whether a repository without settings files serves the model the environment
        describes (``env_model_settings``)."""
        return False

    def owns_settings_file(self, path: Path) -> bool:
        """Whether a model's settings file is in this dialect's format, whatever it says
        (a file in another server's format is recognised by its keys in any dialect)."""
        return False


def _mlserver() -> Dialect:
    from .mlserver.dialect import MLServerDialect

    return MLServerDialect()


def _triton() -> Dialect:
    from .triton.dialect import TritonDialect

    return TritonDialect()


def _torchserve() -> Dialect:
    from .torchserve.dialect import TorchServeDialect

    return TorchServeDialect()


# Name → the dialect (made when chosen: a dialect's package is imported only then).
DIALECTS: dict[str, Callable[[], Dialect]] = {
    "inferwire": Dialect,
    "mlserver": _mlserver,
    "triton": _triton,
    "torchserve": _torchserve,
}


def chosen(name: str) -> Dialect:
    """The dialect named ``name`` (a ``v2_dialect`` value)."""
    try:
        return DIALECTS[name]()
    except KeyError:
        raise ValueError(f"no dialect {name!r} ({', '.join(DIALECTS)})") from None
