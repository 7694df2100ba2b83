"""Triton's dialect on the Python side (``inferwire tritonserver``): its repository
layout, its Python models' custom metrics on the metrics page, and the switches of its
command line that change how the repository is read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..dialects import Dialect
from ..errors import SettingsError
from . import pb_utils
from .repository import Options, TritonRepository


class TritonDialect(Dialect):
    name = "triton"
    entry = "/v2/models/MODEL/infer"
    default_model = False

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or Options()

    def repository(self, root: str | Path) -> Any:
        return TritonRepository(root, self, self.options)

    def started(self, repository: Any) -> None:
        failures = repository.failures() if repository is not None else {}
        if failures and self.options.exit_on_error:
            # Triton's --exit-on-error (its default): a model that fails stops the server.
            reasons = "; ".join(f"{name}: {why}" for name, why in sorted(failures.items()))
            raise SettingsError(
                f"failed to load all models ({reasons}); --exit-on-error=false serves the others"
            )

    def stopped(self) -> None:
        # Triton calls each instance's finalize() when the server shuts down.
        from .python_model import finalize_all

        finalize_all()

    def metrics_text(self) -> Callable[[], str] | None:
        # What models record with pb_utils.MetricFamily, after the server's own.
        return pb_utils.metrics_text
