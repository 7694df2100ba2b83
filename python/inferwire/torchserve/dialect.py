"""TorchServe's dialect on the Python side (``inferwire torchserve``): its model store,
the models ``--models`` names loaded at start, and ``serve``, the command's entry. Its
inference API (``/ping``, ``/predictions``, ``/explanations``) and error bodies are the
core's (``crates/inferwire-server/src/rest/torchserve.rs``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..dialects import Dialect
from .cli import TorchServeConfig
from .metrics import metrics_text as handler_metrics_text
from .repository import TorchServeRepository

log = logging.getLogger("inferwire")


class TorchServeDialect(Dialect):
    name = "torchserve"
    entry = "/predictions/MODEL"
    default_model = False

    def __init__(self, config: TorchServeConfig | None = None) -> None:
        self.config = config

    def metrics_text(self) -> Callable[[], str] | None:
        # The handlers' context.metrics, after the core's TorchServe series. The page is
        # metrics_mode=prometheus's whatever the mode: no metric logs are written.
        mode = self.config.metrics_mode if self.config is not None else "prometheus"
        if mode == "log" and self.config is not None and self.config.metrics is not None:
            log.warning(
                "metrics_mode=log (TorchServe's default): inferwire writes no ts_metrics.log "
                "or model_metrics.log; TorchServe's metrics are on the metrics port in "
                "Prometheus' format, as metrics_mode=prometheus serves them"
            )
        elif mode == "legacy":
            log.warning(
                "metrics_mode=legacy: inferwire writes no metric logs; every TorchServe "
                "metric is on the metrics port in Prometheus' format (as "
                "metrics_mode=prometheus), not only the three ts_* series"
            )
        return handler_metrics_text

    def repository(self, root: str | Path) -> Any:
        c = self.config
        if c is None:
            return TorchServeRepository(root, self, load_all=True)
        return TorchServeRepository(
            root, self, c.models, c.load_all, c.allowed_urls, c.model_config, c.envelope
        )


def serve(config: TorchServeConfig, settings: Any) -> int:
    """Serves TorchServe's inference and management APIs from ``config``'s model store,
    with ``settings`` (the inferwire settings ``cli.main`` validated) in its dialect."""
    from .. import settings as inferwire_settings
    from ..server import serve as serve_models

    served = inferwire_settings.from_sources(
        {
            **config.settings,
            "model_repository": config.model_store,
            "v2_dialect": "torchserve",
            "server_name": "torchserve",
            # TorchServe's token authorization: its keys, checked by the core.
            "torchserve_key_file": config.key_file if config.token_auth else "",
            "torchserve_token_minutes": config.token_expiration_min,
            "management_port": config.management.port,
            "grpc_management_port": config.grpc_management.port,
            # TorchServe's model API (register, unregister) is its explicit opt-in to
            # loading archives at run time, as the repository API's opt-in is inferwire's.
            "allow_unauthenticated_repository": config.enable_model_api,
            "load_models_at_startup": True,
        }
    )
    if config.envelope in ("kserve", "kservev2"):
        log.info(
            "service_envelope=%s: KServe's protocol on port %s as well (the KServe wrapper's "
            "in TorchServe's KServe image), under the inference API's token rule",
            config.envelope,
            served.kserve_port or served.http_port,
        )
    if config.envelope == "kservev2" and served.kserve_grpc_port:
        log.info(
            "service_envelope=kservev2: KServe's V2 gRPC on port %s (the KServe wrapper's "
            "gRPC port), under the inference API's token rule",
            served.kserve_grpc_port,
        )
    if config.enable_model_api:
        log.warning(
            "enable_model_api is on: anyone who can reach the management port%s can register "
            "archives of the model store (an archive runs its handler's code) and unregister "
            "models",
            " with the management key" if config.token_auth else "",
        )
    if not config.token_auth:
        log.warning(
            "token authorization is off (--disable-token-auth / disable_token_authorization): "
            "TorchServe's APIs take requests without a key"
        )
    serve_models(None, served, dialect=TorchServeDialect(config))
    return 0
