"""Running a model: build it, wrap it, and hand it to the Rust core."""

from __future__ import annotations

import logging
import shutil
import tempfile
from typing import Any

from . import _core, dialects, graph, runtimes
from .error_log import errors
from .errors import SettingsError
from .repository import ModelSettings
from .settings import Settings
from .workers import run_workers

log = logging.getLogger("inferwire")


def _describe(host: str, http_port: int, grpc_port: int, tls: bool = False, entry: str = "") -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    scheme, http2 = ("https", "h2") if tls else ("http", "h2c")
    entry = entry or "/api/v1.0/predictions"
    return (
        f"REST  {scheme}://{shown}:{http_port}{entry}  (HTTP/1.1 and {http2})\n"
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
    dialect: dialects.Dialect | None = None,
) -> None:
    """Serves ``model`` (an instance, or a ``module:Class`` / file spec) and the models of
    ``settings.model_repository`` until SIGINT or SIGTERM. Blocks; the GIL is released
    while waiting. With ``settings.workers`` above 1 every model is loaded here once and
    the workers are forked from this process. The dialect ``settings.v2_dialect`` names
    (MLServer's for ``inferwire start``; ``dialect``, one made with options of its own,
    ``inferwire tritonserver``'s) says how the repository is read."""
    settings = settings or Settings()
    errors.configure(settings.log_repeats_every)
    dialect = dialect or dialects.chosen(settings.v2_dialect)
    dialect.prepare(settings)
    repo = dialect.repository(settings.model_repository) if settings.model_repository else None
    others: list[tuple[Any, ModelSettings]] = []
    if repo is not None and settings.load_models_at_startup and not settings.model_memory_budget:
        others = [built for n in repo.startup_names() for built in repo.build_versions(n)]
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
    dialect.started(repo)
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
    else:
        made = runtimes.build(
            runtimes.Source(
                model if isinstance(model, str) else "",
                settings,
                name=settings.model_name,
                model=None if isinstance(model, str) else model,
                parameters=settings.constructor_parameters,
            )
        )
        if isinstance(model, str):
            spec = model
        if made.how:
            log.info("%s: %s", spec, made.how)
        model = made.model if made.model is not None else model
        adapter, name = made.adapter, made.name
        # Seldon's requestPath names the unit and its image, never a path on the server;
        # an unnamed unit (no model_name, i.e. PREDICTIVE_UNIT_ID) is left out of it, as
        # the wrapper leaves it out (the core adds no entry without an image).
        image = (settings.model_image or made.image or name) if settings.model_name else ""
        batch = settings.max_batch_size
        others += [(a, ModelSettings.model_validate(node)) for a, node in made.more]
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
        server = _core.Server(config, adapter, built, repo, dialect.metrics_text())
    except ValueError as e:  # files the core reads: TLS certificates, token and user files
        raise SettingsError(str(e)) from None
    workers = f" with {settings.workers} workers" if settings.workers > 1 else ""
    batching = f", batching up to {batch} requests" if batch > 1 else ""
    more = f" and {len(others)} more from {settings.model_repository}" if others else ""
    # The server holds the models now: one unloaded later is then freed (and an MLModel's
    # unload() runs) once it has finished its requests.
    if isinstance(model, graph.Graph):
        more = f" with its {len(model.nodes)} nodes each on its own routes"

    serving_what = (
        f"serving {spec or type(model).__name__ if model is not None else 'the repository'} "
        f"as {name!r}{more}"
    )
    if not dialect.default_model and model is None:
        # A repository with no model of its own for Seldon's routes (Triton's).
        count = len(built) + (adapter is not None)
        serving_what = f"serving {count} models of {settings.model_repository}"

    del built, others

    def on_bound(http_port: int, grpc_port: int) -> None:
        log.info(
            "%s%s%s\n%s",
            serving_what,
            workers,
            batching,
            _describe(settings.host, http_port, grpc_port, bool(settings.tls_cert), dialect.entry),
        )
        if settings.metrics_port:
            shown = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
            log.info(
                "metrics http://%s:%d%s  (that path only)",
                shown,
                settings.metrics_port,
                settings.metrics_endpoint,
            )

    try:
        if supervised:
            run_workers(server, settings.workers, settings.grace_period, on_bound, dialect.stopped)
        else:
            server.serve(on_bound)
            dialect.stopped()
            errors.flush()
    finally:
        if sync_dir is not None:
            shutil.rmtree(sync_dir, ignore_errors=True)
        if shm_dir is not None:
            shutil.rmtree(shm_dir, ignore_errors=True)
    log.info("stopped")
