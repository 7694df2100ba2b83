"""Running a model: build it, wrap it, and hand it to the Rust core."""

from __future__ import annotations

import logging
from typing import Any

from . import _core, loader
from .seldon import SeldonAdapter
from .settings import Settings

log = logging.getLogger("inferwire")


def _describe(host: str, http_port: int, grpc_port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return (
        f"REST  http://{shown}:{http_port}/api/v1.0/predictions  (HTTP/1.1 and h2c)\n"
        f"gRPC  {shown}:{grpc_port}  "
        "(seldon.protos.Seldon, seldon.protos.Model, health, reflection)"
    )


def serve(model: Any, settings: Settings | None = None, *, spec: str | None = None) -> None:
    """Serves ``model`` (an instance, or a ``module:Class`` / file spec) until SIGINT or
    SIGTERM. Blocks; the GIL is released while waiting."""
    settings = (settings or Settings()).validate()
    if isinstance(model, str):
        spec = model
        model = loader.build(model, settings.constructor_parameters())
    name = settings.model_name or type(model).__name__
    image = settings.model_image or spec or type(model).__name__
    core_settings = {**settings.to_core(), "model_name": name, "model_image": image}
    server = _core.Server(core_settings, SeldonAdapter(model, name, settings.raw_arrays))

    def on_bound(http_port: int, grpc_port: int) -> None:
        log.info(
            "serving %s as %r\n%s",
            spec or type(model).__name__,
            name,
            _describe(settings.host, http_port, grpc_port),
        )

    server.serve(on_bound)
    log.info("stopped")
