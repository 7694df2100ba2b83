"""Running a model: build it, wrap it, and hand it to the Rust core."""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from . import _core, graph, loader, mlserver_metrics, modelfile
from .error_log import errors
from .errors import SettingsError
from .repository import ModelSettings, Repository
from .seldon import SeldonAdapter, announce_type
from .settings import Settings
from .workers import run_workers

log = logging.getLogger("inferwire")


def _describe(host: str, http_port: int, grpc_port: int, tls: bool = False) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    scheme, http2 = ("https", "h2") if tls else ("http", "h2c")
    return (
        f"REST  {scheme}://{shown}:{http_port}/api/v1.0/predictions  (HTTP/1.1 and {http2})\n"
        f"gRPC  {shown}:{grpc_port}{' (TLS)' if tls else ''}  "
        "(seldon.protos.Seldon, seldon.protos.Model, the Seldon graph component services, "
        "inference.GRPCInferenceService, inference.model_repository.ModelRepositoryService, "
        "health, reflection)"
    )


def serve(
    model: Any = None,
    settings: Settings | None = None,
    *,
    spec: str | None = None,
    mlserver: bool = False,
) -> None:
    """Serves ``model`` (an instance, or a ``module:Class`` / file spec) and the models of
    ``settings.model_repository`` until SIGINT or SIGTERM. Blocks; the GIL is released
    while waiting. With ``settings.workers`` above 1 every model is loaded here once and
    the workers are forked from this process. ``mlserver`` (``inferwire start``): the
    repository's model-settings.json files are MLServer's, and a repository with none
    serves MLServer's model from ``MLSERVER_MODEL_*``."""
    settings = settings or Settings()
    errors.configure(settings.log_repeats_every)
    if mlserver:
        mlserver_metrics.prepare(settings.workers)
    repo = (
        Repository(settings.model_repository, mlserver=mlserver)
        if settings.model_repository
        else None
    )
    others: list[tuple[Any, ModelSettings]] = []
    if repo is not None and settings.load_models_at_startup and not settings.model_memory_budget:
        others = [built for n in repo.names() for built in repo.build_versions(n)]
    elif repo is not None and settings.model_memory_budget:
        log.info(
            "model_memory_budget %d MiB: the models of %s load when first asked for; past the "
            "budget the least recently used are unloaded",
            settings.model_memory_budget,
            settings.model_repository,
        )
    elif repo is not None:
        log.info(
            "load_models_at_startup is off: %s waits for %s to load its models",
            settings.model_repository,
            "requests" if settings.load_models_on_request else "the repository API",
        )
    # What the server works out below, for the core's config (Settings.to_core).
    serving: ModelSettings | None = None
    version = settings.model_version
    if settings.allow_unauthenticated_repository and not (
        settings.auth_tokens or settings.auth_users
    ):
        log.warning(
            "allow_unauthenticated_repository is on and auth is off: anyone who can reach the "
            "REST port %s or the gRPC port %s can publish and delete models (a published model "
            "file can run code in this server), and load, unload and list the repository's "
            "models",
            settings.http_port,
            settings.grpc_port,
        )
    if model is None and repo is not None and not others:
        # An empty repository waits for models to be published.
        adapter, name, image, batch = None, settings.model_name or "none", "", 1
        version = ""
    elif model is None:
        # The repository's default model answers the Seldon protocol's routes.
        if not others:
            raise SettingsError(
                "nothing to serve: give a model, or a --model-repository with models in it"
            )
        names = [o[1].name for o in others]
        wanted = settings.default_model or names[0]
        if wanted not in names:
            raise SettingsError(
                f"default_model: the repository has no model {wanted!r} ({', '.join(names)})"
            )
        adapter, serving = others.pop(names.index(wanted))
        name, version = serving.name, serving.version
        image = settings.model_image or name
        batch = serving.max_batch_size
    elif isinstance(model, str) and modelfile.is_model_file(model):
        spec = model
        name = settings.model_name or Path(spec).stem
        # Seldon's requestPath names the model and its image, never a path on the server.
        image = settings.model_image or name
        adapter, how = modelfile.adapter(
            spec, name, settings.runtime, settings.output_names, settings.raw_arrays
        )
        log.info("%s: %s", spec, how)
        batch = settings.max_batch_size
    elif isinstance(model, str) and graph.is_deployment(model):
        spec = model
        sdep = graph.build(
            graph.read(model, settings.graph_predictor, graph.parse_node_map(settings.graph_nodes))
        )
        model = sdep
        name = settings.model_name or sdep.spec.deployment
        image = settings.model_image or name
        adapter = graph.GraphAdapter(sdep, name, settings.raw_arrays)
        batch = settings.max_batch_size
        # Each node on its own routes too, unless the graph itself has its name.
        for node_name, node_adapter in graph.node_adapters(sdep):
            if node_name == name:
                log.warning(
                    "graph node %r is served inside the graph only: the graph has its name",
                    node_name,
                )
                continue
            # The predictor's name stands for the version on /api/NODE/VERSION.
            node_settings = ModelSettings(
                name=node_name, implementation=f"{spec}#{node_name}", version=sdep.spec.predictor
            )
            others.append((node_adapter, node_settings))
        log.info(
            "graph %s (predictor %s): %s",
            name,
            sdep.spec.predictor,
            ", ".join(f"{n.name} ({n.spec.type})" for n in sdep.nodes),
        )
    else:
        if isinstance(model, str):
            spec = model
            model = loader.build(model, settings.constructor_parameters())
        name = settings.model_name or type(model).__name__
        image = settings.model_image or type(model).__name__
        adapter = SeldonAdapter(model, name, settings.raw_arrays)
        announce_type(adapter, settings.service_type)
        if adapter.has_predict_raw and settings.max_batch_size > 1:
            raise SettingsError(
                f"max_batch_size: {type(model).__name__} defines predict_raw, whose requests "
                "cannot be joined; batching needs predict (set max_batch_size to 1)"
            )
        batch = settings.max_batch_size
    if model is not None and any(o[1].name == name for o in others):
        raise SettingsError(f"model_name: the repository also has a model named {name!r}")
    shm_dir = None
    if settings.system_shared_memory:
        # Made before the workers fork: where they share the clients' registrations.
        shm_dir = tempfile.mkdtemp(prefix="inferwire-shm-")
        log.warning(
            "system_shared_memory is on: clients on this host can register /dev/shm objects "
            "(up to %d regions, %d bytes in all) and pass tensors in them%s",
            settings.shared_memory_max_regions,
            settings.shared_memory_max_bytes,
            ""
            if settings.auth_tokens or settings.auth_users
            else "; auth is off, so any client that reaches the ports can register",
        )
    sync_dir = None
    supervised = settings.supervisor == "on"
    if supervised:
        if repo is not None:
            # Where the workers pass repository API changes to each other.
            sync_dir = tempfile.mkdtemp(prefix="inferwire-repository-")
    try:
        config = settings.to_core(
            serving,
            model_name=name,
            model_image=image,
            model_version=version,
            repository_sync_dir=sync_dir or "",
            shared_memory_dir=shm_dir or "",
        )
        built = [(a, s.to_core()) for a, s in others]
        metrics_text = mlserver_metrics.text if mlserver else None
        server = _core.Server(config, adapter, built, repo, metrics_text)
    except ValueError as e:  # files the core reads: TLS certificates, token and user files
        raise SettingsError(str(e)) from None
    workers = f" with {settings.workers} workers" if settings.workers > 1 else ""
    batching = f", batching up to {batch} requests" if batch > 1 else ""
    more = f" and {len(others)} more from {settings.model_repository}" if others else ""
    # The server holds the models now: one unloaded later is then freed (and an MLModel's
    # unload() runs) once it has finished its requests.
    del built, others
    if isinstance(model, graph.Graph):
        more = f" with its {len(model.nodes)} nodes each on its own routes"

    def on_bound(http_port: int, grpc_port: int) -> None:
        log.info(
            "serving %s as %r%s%s%s\n%s",
            spec or type(model).__name__ if model is not None else "the repository",
            name,
            more,
            workers,
            batching,
            _describe(settings.host, http_port, grpc_port, bool(settings.tls_cert)),
        )
        if settings.metrics_port:
            shown = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
            log.info(
                "metrics http://%s:%d%s  (that path only, as Seldon's wrapper serves them)",
                shown,
                settings.metrics_port,
                settings.metrics_endpoint,
            )

    try:
        if supervised:
            run_workers(server, settings.workers, settings.grace_period, on_bound)
        else:
            server.serve(on_bound)
            errors.flush()
    finally:
        if sync_dir is not None:
            shutil.rmtree(sync_dir, ignore_errors=True)
        if shm_dir is not None:
            shutil.rmtree(shm_dir, ignore_errors=True)
    log.info("stopped")
