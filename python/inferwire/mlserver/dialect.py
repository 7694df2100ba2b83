"""MLServer's dialect on the Python side (``inferwire start``): MLServer's settings files
and variables, its custom metrics, and its import path."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..dialects import Dialect
from . import metrics


class MLServerDialect(Dialect):
    name = "mlserver"

    def prepare(self, settings: Any) -> None:
        metrics.prepare(settings.workers)

    def metrics_text(self) -> Callable[[], str] | None:
        return metrics.text

    def open_repository(self, root: Path) -> None:
        # As `mlserver start FOLDER`: a module at the folder's top (models.py beside
        # settings.json) serves the models below it. Each model's own folder goes before
        # it when its class is imported.
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))

    def serves_env_model(self) -> bool:
        # KServe's MLServer runtime: no settings file, the model in MLSERVER_MODEL_*.
        return bool(os.environ.get("MLSERVER_MODEL_IMPLEMENTATION"))

    def owns_settings_file(self, path: Path) -> bool:
        # Every model-settings.json is MLServer's.
        return path.suffix == ".json"


def start_settings(folder_arg: str | None) -> tuple[dict[str, Any], str]:
    """``inferwire start [FOLDER]``'s settings, under inferwire's own flags and variables:
    the folder's settings.json over the ``MLSERVER_*`` variables, and where they came
    from (for messages)."""
    from ..errors import SettingsError
    from .settings import SERVER_FILE, server_settings

    folder = Path(folder_arg or os.environ.get("MLSERVER_MODELS_DIR") or ".")
    if not folder.is_dir():
        raise SettingsError(f"start: {folder} is not a folder")
    return server_settings(folder), f"{folder / SERVER_FILE} or MLSERVER_* variables"
