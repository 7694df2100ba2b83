"""``inferwire torchserve``: TorchServe's command line as its users type it (``OPTIONS``,
also the migration guide's table), over its ``config.properties`` (``properties.KEYS``).

``parse`` turns the options, the file and the variables into one ``TorchServeConfig``: the
inferwire settings to serve with, TorchServe's listeners, the models to load at start,
TorchServe's own switches and the warnings. Precedence is TorchServe's, as its
ConfigManager applies it: ``TS_*`` variables (only under ``enable_envvars_config=true``)
over the command line, over the file (``$TS_CONFIG_FILE``, else ``--ts-config``, else
``./config.properties``), over TorchServe's defaults (8080, 8081, 8082; gRPC 7070, 7071).

``main`` runs the command: ``--start`` without ``--foreground`` starts the server in the
background and returns, as TorchServe does, recording its pid in TorchServe's pid file
(``$TMPDIR/.model_server.pid``), which ``--stop`` reads to stop it. Usage errors exit 2,
configuration errors 1 (TorchServe's own status for them)."""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

from ..errors import InferwireError, SettingsError
from ..settings import MAX_WORKERS
from . import properties as P
from . import tokens
from .context import TORCHSERVE_VERSION
from .properties import Entry, Listener

log = logging.getLogger("inferwire")

# How a background start runs the server (and how --stop knows the process is one).
MODULE = "inferwire.torchserve.cli"
# TorchServe's frontend, as its pid file names it (--stop stops that too).
TORCHSERVE_MAIN = "org.pytorch.serve.ModelServer"
# inferwire's own bound on bodies in flight, raised to fit one max_request_size body.
_IN_FLIGHT = 256 * 1024 * 1024


class UsageError(SettingsError):
    """The command line itself is wrong (exit status 2, as argparse's)."""


@dataclass(frozen=True)
class Option:
    names: tuple[str, ...]
    kind: Literal["switch", "value", "values"]
    how: str


# What inferwire does with each of torchserve's options (ts/arg_parser.py), keyed by name.
OPTIONS: dict[str, Option] = {
    "start": Option(("--start",), "switch", "honoured: starts the server (the default)"),
    "stop": Option(
        ("--stop",),
        "switch",
        "honoured: stops the server the pid file names, deletes key_file.json",
    ),
    "version": Option(("-v", "--version"), "switch", "honoured: prints TorchServe's version"),
    "help": Option(("-h", "--help"), "switch", "honoured: prints these options"),
    "ts_config": Option(
        ("--ts-config",),
        "value",
        "honoured: the config.properties read ($TS_CONFIG_FILE over it; else ./config.properties)",
    ),
    "model_store": Option(
        ("--model-store",), "value", "honoured: the folder archives are loaded from (required)"
    ),
    "models": Option(
        ("--models",),
        "values",
        "honoured: the models loaded at start: all, or [name=]archive or URL",
    ),
    "foreground": Option(
        ("--foreground",),
        "switch",
        "honoured: serves in this process; without it the server runs in the background",
    ),
    "no_config_snapshots": Option(
        ("--no-config-snapshots", "--ncs"),
        "switch",
        "honoured: inferwire writes and restores no snapshots, with or without it",
    ),
    "disable_token_auth": Option(
        ("--disable-token-auth", "--dt"),
        "switch",
        "honoured: token authorization off (no key_file.json)",
    ),
    "enable_model_api": Option(
        ("--enable-model-api",),
        "switch",
        "honoured: registering and unregistering over the management API",
    ),
    "workflow_store": Option(
        ("--workflow-store",), "value", "accepted: workflows (.war) are not served"
    ),
    "log_config": Option(
        ("--log-config",), "value", "accepted: a log4j2 file; inferwire logs to stderr"
    ),
    "cpp_log_config": Option(("--cpp-log-config",), "value", "accepted: no C++ backend"),
    "plugins_path": Option(
        ("--plugins-path", "--ppath"), "value", "accepted: Java plugins are not loaded"
    ),
}

# Keys whose TorchServe default changes nothing here: no warning when a file restates it.
_DEFAULTS_SILENT = {
    "install_py_dep_per_model": "false",
    "prefer_direct_buffer": "false",
    "async_logging": "false",
    "use_native_io": "true",
    "disable_system_metrics": "false",
    "model_metrics_auto_detect": "false",
    "ipex_enable": "false",
    "ipex_gpu_enable": "false",
    "cpu_launcher_enable": "false",
    "keystore_type": "pkcs12",
    "metrics_format": "prometheus",  # KServe's files still set it, beside metrics_mode
}
_METRICS_MODES = ("log", "prometheus", "legacy")
DEFAULT_ALLOWED_URLS = "file://.*|http(s)?://.*"
# TorchServe's service envelopes (ts.torch_handler.request_envelope).
SERVICE_ENVELOPES = ("json", "body", "kserve", "kservev2")
# Where KServe sends requests for the kserve-torchserve runtime: the KServe wrapper's port
# in TorchServe's KServe image, which starts the wrapper beside TorchServe.
KSERVE_PORT = 8080
PORT_ENV = "INFERWIRE_KSERVE_PORT"
# The wrapper's gRPC port (KServe's V2 gRPC, protocol grpc-v2, which KServe serves with the
# kservev2 envelope), 8081 as the wrapper starts KServe's model server with it.
KSERVE_GRPC_PORT = 8081
GRPC_PORT_ENV = "INFERWIRE_KSERVE_GRPC_PORT"


@dataclass(frozen=True)
class StartupModel:
    """A model to load at start: ``url`` is an archive in the model store (or a folder), or
    an http(s) URL; ``name`` is the name it was given (None: the archive's manifest
    decides), ``default_name`` the one TorchServe derives from ``url`` otherwise.
    ``version`` and ``config`` come from a ``model_snapshot``."""

    url: str
    name: str | None
    default_name: str
    version: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TorchServeConfig:
    """What ``torchserve --start`` asks for, and how inferwire serves it.

    The TorchServe dialect consumes it so: ``settings`` go to
    ``inferwire.settings.from_sources`` (``main`` does that and hands both over); it binds
    ``management`` and ``grpc_management`` beside the core's ports (on ``inference``'s port
    when the two listeners are equal: TorchServe then serves both APIs there); it loads
    ``models`` (or every archive of ``model_store`` when ``load_all``) with ``model_config``'s
    per-version settings; it opens ``tokens.KeyFile(key_file, token_expiration_min)`` when
    ``token_auth``; it registers and unregisters only when ``enable_model_api``, fetching only
    from ``allowed_urls``; and reads any other key from ``properties`` with
    ``inferwire.torchserve.properties``' typed readers."""

    settings: dict[str, Any]
    inference: Listener
    management: Listener
    metrics: Listener | None  # None: enable_metrics_api=false
    grpc_inference: Listener
    grpc_management: Listener
    model_store: str
    load_all: bool
    models: tuple[StartupModel, ...]
    model_config: dict[str, dict[str, dict[str, Any]]]
    enable_model_api: bool
    token_auth: bool
    token_expiration_min: float
    key_file: str  # where key_file.json goes; empty without token authorization
    allowed_urls: tuple[str, ...]
    metrics_mode: str
    max_response_size: int
    default_workers_per_model: int
    unregister_model_timeout: int
    config_file: str | None
    properties: dict[str, Entry]
    foreground: bool
    warnings: tuple[str, ...]
    envelope: str = ""  # service_envelope: TorchServe's (json, body) or KServe's


# -- the command line --------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _parser() -> _Parser:
    """torchserve's parser, from ``OPTIONS``: the same spellings, abbreviations and
    exclusive actions, so that a command line TorchServe takes is taken here."""
    p = _Parser(prog="inferwire torchserve", add_help=False)
    actions = p.add_mutually_exclusive_group()
    for dest, option in OPTIONS.items():
        target = actions if dest in ("start", "stop", "version") else p
        if option.kind == "switch":
            target.add_argument(*option.names, dest=dest, action="store_true")
        elif option.kind == "value":
            target.add_argument(*option.names, dest=dest)
        else:
            target.add_argument(*option.names, dest=dest, nargs="+")
    return p


def parse_args(argv: list[str]) -> dict[str, Any]:
    """The options as given (UsageError for one torchserve does not have)."""
    return vars(_parser().parse_args(argv))


def usage() -> str:
    width = max(len(", ".join(o.names)) for o in OPTIONS.values()) + 2
    lines = [f"  {', '.join(o.names):<{width}}{o.how}" for o in OPTIONS.values()]
    return (
        "usage: inferwire torchserve [--start | --stop] --model-store DIR [--models ...] "
        "[--ts-config FILE] ...\n\n"
        "TorchServe's options, and what inferwire does with each:\n" + "\n".join(lines)
    )


def markdown_table() -> str:
    """Every torchserve option and what inferwire does with it: ``OPTIONS`` as the migration
    guide's table (tests/docs/test_docs.py checks the guide holds it)."""
    rows = ["| torchserve option | inferwire |", "|---|---|"]
    for option in OPTIONS.values():
        status, _, what = option.how.partition(": ")
        names = ", ".join(f"`{n}`" for n in option.names)
        rows.append(f"| {names} | **{status}**{': ' + what if what else ''} |")
    return "\n".join(rows) + "\n"


# -- options, file and variables → one configuration ------------------------------------------


def _config_file(args: Mapping[str, Any], environ: Mapping[str, str], cwd: str) -> str | None:
    path = environ.get("TS_CONFIG_FILE") or args.get("ts_config")
    if path:
        if not os.path.isfile(path):
            raise SettingsError(f"--ts-config file not found: {path}")
        return str(path)
    default = os.path.join(cwd, "config.properties")
    return default if os.path.isfile(default) else None


def _with_options(props: dict[str, Entry], args: Mapping[str, Any]) -> dict[str, Entry]:
    """The command line's values over the file's (the keys TorchServe's options set)."""
    out = dict(props)
    if args.get("model_store"):
        out["model_store"] = Entry(args["model_store"], "--model-store")
    if args.get("workflow_store"):
        out["workflow_store"] = Entry(args["workflow_store"], "--workflow-store")
    if args.get("models"):
        out["load_models"] = Entry(",".join(args["models"]), "--models")
    if args.get("enable_model_api"):
        out["enable_model_api"] = Entry("true", "--enable-model-api")
    if args.get("disable_token_auth"):
        out["disable_token_authorization"] = Entry("true", "--disable-token-auth")
    return out


def default_name(url: str) -> str:
    """The model name TorchServe derives from an archive's path or URL: its last part,
    without ``.mar`` or ``.model``, anything but letters, digits and _ made _."""
    last = url.rstrip("/").rsplit("/", 1)[-1]
    if ".mar" in url or ".model" in url:
        last = last.rsplit(".", 1)[0]
    return re.sub(r"\W|^_", "_", last)


def _startup_models(value: str) -> tuple[bool, tuple[StartupModel, ...]]:
    if value.strip().lower() == "all":
        return True, ()
    models = []
    for item in value.split(","):
        name, eq, url = item.strip().partition("=")
        if not eq:
            name, url = "", name
        url = url.strip()
        if url:  # TorchServe skips an empty one
            models.append(StartupModel(url, name.strip() or None, default_name(url)))
    return False, tuple(models)


def _json_object(props: Mapping[str, Entry], key: str) -> dict[str, Any] | None:
    entry = props.get(key)
    if entry is None or not entry.value.strip():
        return None
    try:
        data = json.loads(entry.value)
    except json.JSONDecodeError as e:
        raise SettingsError(f"{P.where(props, key)}: not JSON: {e}") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{P.where(props, key)}: must be a JSON object")
    return data


def _model_config(props: Mapping[str, Entry]) -> dict[str, dict[str, dict[str, Any]]]:
    """``models``: {model: {version: {setting: value}}}."""
    data = _json_object(props, "models") or {}
    for name, versions in data.items():
        if not isinstance(versions, dict) or not all(
            isinstance(v, dict) for v in versions.values()
        ):
            raise SettingsError(
                f"{P.where(props, 'models')}: {name!r} must map each version to an object of "
                'settings, e.g. {"1.0": {"minWorkers": 1}}'
            )
    return data


def _snapshot_models(props: Mapping[str, Entry]) -> tuple[StartupModel, ...] | None:
    """``model_snapshot``'s models: {"models": {model: {version: {"marName": ...}}}}."""
    data = _json_object(props, "model_snapshot")
    if data is None:
        return None
    models = data.get("models")
    bad = SettingsError(
        f'{P.where(props, "model_snapshot")}: needs "models": '
        '{model: {version: {"marName": "file.mar", ...}}}'
    )
    if not isinstance(models, dict):
        raise bad
    out = []
    for name, versions in models.items():
        if not isinstance(versions, dict):
            raise bad
        for version, config in versions.items():
            if not isinstance(config, dict) or not isinstance(config.get("marName"), str):
                raise bad
            url = config["marName"]
            out.append(StartupModel(url, str(name), default_name(url), str(version), config))
    return tuple(out)


def _allowed_urls(props: Mapping[str, Entry]) -> tuple[str, ...]:
    patterns = tuple(P.text(props, "allowed_urls", DEFAULT_ALLOWED_URLS).split(","))
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as e:
            raise SettingsError(
                f"{P.where(props, 'allowed_urls')}: {pattern!r} is not a regular expression: {e}"
            ) from None
    return patterns


def _key_warnings(props: Mapping[str, Entry]) -> list[str]:
    """One warning per key that changes nothing here; an error for a refused one."""
    out = []
    for key, entry in props.items():
        how = P.KEYS.get(key)
        if how is None:
            out.append(
                f"{entry.where}: {key} is not a key of TorchServe 0.12: ignored, as TorchServe "
                "ignores it"
            )
            continue
        status, _, why = how.partition(": ")
        value = entry.value.strip()
        if status == "refused" and value:
            raise SettingsError(f"{P.where(props, key)}: {why}")
        if status == "accepted" and _DEFAULTS_SILENT.get(key) != value.lower():
            out.append(f"{P.where(props, key)}: {why}")
    return out


def _workers(props: Mapping[str, Entry], warnings: list[str]) -> int:
    """``default_workers_per_model``, else TorchServe's default: the CPUs (1 in debug)."""
    if P.boolean(props, "debug", False):
        return 1
    workers = P.integer(props, "default_workers_per_model", 0) or (os.cpu_count() or 1)
    if workers > MAX_WORKERS:
        warnings.append(
            f"{P.where(props, 'default_workers_per_model')}: {workers} workers; inferwire runs "
            f"at most {MAX_WORKERS}"
        )
        workers = MAX_WORKERS
    return workers


def _listeners(
    props: Mapping[str, Entry], warnings: list[str]
) -> tuple[Listener, Listener, Listener | None, Listener, Listener]:
    inference = P.address(props, "inference_address", "http://127.0.0.1:8080")
    management = P.address(props, "management_address", "http://127.0.0.1:8081")
    metrics: Listener | None = P.address(props, "metrics_address", "http://127.0.0.1:8082")
    if not P.boolean(props, "enable_metrics_api", True):
        metrics = None
    grpc_inference = P.grpc_listener(props, "inference", 7070)
    grpc_management = P.grpc_listener(props, "management", 7071)
    # inferwire listens on one address for all its ports: the inference API's.
    others = {
        "management_address": management,
        "metrics_address": metrics,
        "grpc_inference_address": grpc_inference,
        "grpc_management_address": grpc_management,
    }
    for key, listener in others.items():
        if listener is not None and listener.host != inference.host:
            warnings.append(
                f"{P.where(props, key)}: {listener.host} is not used: inferwire listens on one "
                f"address, inference_address's ({inference.host}), for every port"
            )
    return inference, management, metrics, grpc_inference, grpc_management


def _tls(
    props: Mapping[str, Entry], listeners: dict[str, Listener | None], warnings: list[str]
) -> dict[str, Any]:
    """TLS on every port when any listener asks for it (inferwire's TLS is all or none)."""
    secure = [k for k, v in listeners.items() if v is not None and v.tls]
    files = [k for k in ("certificate_file", "private_key_file") if P.text(props, k)]
    if not secure:
        if files:
            warnings.append(
                f"{', '.join(files)}: not used: no address is https and enable_grpc_ssl is not "
                "true (as TorchServe)"
            )
        return {}
    if len(files) < 2:
        raise SettingsError(
            f"{secure[0]} asks for TLS: give certificate_file and private_key_file (TorchServe "
            "would make a self-signed certificate; make one with openssl req -x509 -newkey "
            "rsa:2048 -nodes -keyout key.pem -out cert.pem -days 365)"
        )
    plain = [k for k, v in listeners.items() if v is not None and not v.tls]
    if plain:
        warnings.append(
            f"{', '.join(plain)}: served over TLS as well: inferwire serves TLS on every port "
            f"when one asks for it ({', '.join(secure)})"
        )
    return {
        "tls_cert": P.text(props, "certificate_file"),
        "tls_key": P.text(props, "private_key_file"),
    }


def _settings(
    props: Mapping[str, Entry],
    inference: Listener,
    metrics: Listener | None,
    grpc_inference: Listener,
    workers: int,
) -> dict[str, Any]:
    max_request = P.integer(props, "max_request_size", 6553500, low=1)
    timeout = float(P.integer(props, "default_response_timeout", 120, low=1))
    settings: dict[str, Any] = {
        "host": inference.host,
        "http_port": inference.port,
        "grpc_port": grpc_inference.port,
        "metrics_port": metrics.port if metrics is not None else 0,
        "metrics_endpoint": "/metrics",
        "max_body_bytes": max_request,
        "max_body_bytes_in_flight": max(_IN_FLIGHT, max_request),
        "max_queue": P.integer(props, "job_queue_size", 100, low=1),
        # TorchServe's response timeout both fails the request and replaces the worker.
        "timeout": timeout,
        "stuck_after": timeout,
        "workers": workers,
    }
    threads = P.integer(props, "number_of_netty_threads", 0)
    if threads:
        settings["io_threads"] = threads
    if P.boolean(props, "debug", False):
        settings["log_level"] = "debug"
    cors = {
        "cors_allowed_origin": "cors_allow_origins",
        "cors_allowed_methods": "cors_allow_methods",
        "cors_allowed_headers": "cors_allow_headers",
    }
    for key, name in cors.items():
        if key in props:
            settings[name] = ",".join(s.strip() for s in P.text(props, key).split(","))
    return settings


def _envelope(
    props: Mapping[str, Entry],
    settings: dict[str, Any],
    others: tuple[Listener | None, ...],
    environ: Mapping[str, str],
    warnings: list[str],
) -> str:
    """``service_envelope`` (``TS_SERVICE_ENVELOPE``); with KServe's (kserve, kservev2),
    the KServe wrapper's port as well, as TorchServe's KServe image serves it (8080, or
    inferwire's ``INFERWIRE_KSERVE_PORT``), and with kservev2 its gRPC port (8081, or
    ``INFERWIRE_KSERVE_GRPC_PORT``)."""
    envelope = P.text(props, "service_envelope").strip()
    if envelope and envelope not in SERVICE_ENVELOPES:
        raise SettingsError(
            f"{P.where(props, 'service_envelope')}: {envelope!r} is not one of TorchServe's "
            f"envelopes ({', '.join(SERVICE_ENVELOPES)})"
        )
    if envelope in ("kserve", "kservev2"):
        given = environ.get(PORT_ENV, "").strip()
        port = int(given) if given.isdigit() else KSERVE_PORT
        if any(o is not None and o.port == port for o in others):
            raise SettingsError(
                f"service_envelope={envelope}: KServe's requests come to port {port}, which "
                "another of config.properties' addresses takes; move it (KServe's "
                "config.properties puts inference and management on 8085)"
            )
        if not given:  # else the variable sets it, as any inferwire setting's
            settings["kserve_port"] = KSERVE_PORT
    if envelope == "kservev2" and not environ.get(GRPC_PORT_ENV, "").strip():
        # (The variable, when set, sets the port as any inferwire setting's.)
        taken = (settings.get("http_port"), settings.get("kserve_port"))
        if KSERVE_GRPC_PORT in taken or any(
            o is not None and o.port == KSERVE_GRPC_PORT for o in others
        ):
            # TorchServe's management API defaults to 8081: a file that kept it there
            # served kservev2 over REST before, and still does.
            warnings.append(
                f"service_envelope=kservev2: KServe's V2 gRPC is not served: its port, "
                f"{KSERVE_GRPC_PORT} (the KServe wrapper's), is another address's in "
                f"config.properties (KServe's file puts management on 8085); "
                f"{GRPC_PORT_ENV} moves it"
            )
        else:
            settings["kserve_grpc_port"] = KSERVE_GRPC_PORT
    return envelope


def configure(
    args: Mapping[str, Any], environ: Mapping[str, str] | None = None, cwd: str | None = None
) -> TorchServeConfig:
    """The configuration ``torchserve --start`` with these options would serve."""
    environ = os.environ if environ is None else environ
    cwd = os.getcwd() if cwd is None else cwd
    config_file = _config_file(args, environ, cwd)
    props = P.substitute(P.read(config_file), environ) if config_file else {}
    props = P.from_env(_with_options(props, args), environ)
    warnings = _key_warnings(props)
    for dest, option in OPTIONS.items():
        if args.get(dest) and option.how.startswith("accepted"):
            warnings.append(f"{option.names[0]}: {option.how.partition(': ')[2]}")

    model_store = P.text(props, "model_store")
    if not model_store:
        raise SettingsError("Missing mandatory parameter --model-store")
    store = model_store if os.path.isabs(model_store) else os.path.join(cwd, model_store)
    if not os.path.isdir(store):
        raise SettingsError(f"--model-store directory not found: {model_store}")

    inference, management, metrics, grpc_inference, grpc_management = _listeners(props, warnings)
    tls = _tls(
        props,
        {
            "inference_address": inference,
            "management_address": management,
            "metrics_address": metrics,
            "grpc_inference_port": grpc_inference,
            "grpc_management_port": grpc_management,
        },
        warnings,
    )
    workers = _workers(props, warnings)
    settings = {**_settings(props, inference, metrics, grpc_inference, workers), **tls}

    envelope = _envelope(
        props, settings, (management, metrics, grpc_inference, grpc_management), environ, warnings
    )

    snapshot = _snapshot_models(props)
    if snapshot is not None:
        load_all, models = False, snapshot
        if "load_models" in props:
            warnings.append(
                f"{P.where(props, 'load_models')}: not used: model_snapshot lists the models "
                "to load (as TorchServe)"
            )
    else:
        load_all, models = _startup_models(P.text(props, "load_models"))

    metrics_mode = P.text(props, "metrics_mode", "log").replace(" ", "").lower()
    if metrics_mode not in _METRICS_MODES:
        raise SettingsError(
            f"{P.where(props, 'metrics_mode')}: {metrics_mode!r} is not log, prometheus or legacy"
        )
    token_auth = not P.boolean(props, "disable_token_authorization", False)
    enable_model_api = P.boolean(props, "enable_model_api", False)
    allowed_urls = _allowed_urls(props)
    if enable_model_api and not token_auth:
        warnings.append(
            "enable_model_api with token authorization off: anyone who can reach the "
            "management port can register archives, which run code in the server"
        )
    if enable_model_api and ",".join(allowed_urls) == DEFAULT_ALLOWED_URLS:
        warnings.append(
            "allowed_urls: models may be registered from any URL or file; limit it in "
            "config.properties for production (as TorchServe warns)"
        )
    return TorchServeConfig(
        settings=settings,
        inference=inference,
        management=management,
        metrics=metrics,
        grpc_inference=grpc_inference,
        grpc_management=grpc_management,
        model_store=os.path.realpath(store),
        load_all=load_all,
        models=models,
        model_config=_model_config(props),
        enable_model_api=enable_model_api,
        token_auth=token_auth,
        token_expiration_min=P.number(props, "token_expiration_min", tokens.DEFAULT_EXPIRATION_MIN),
        key_file=os.path.join(cwd, tokens.KEY_FILE) if token_auth else "",
        allowed_urls=allowed_urls,
        metrics_mode=metrics_mode,
        max_response_size=P.integer(props, "max_response_size", 6553500, low=1),
        default_workers_per_model=workers,
        unregister_model_timeout=P.integer(props, "unregister_model_timeout", 120, low=1),
        config_file=config_file,
        properties=props,
        foreground=bool(args.get("foreground")),
        warnings=tuple(warnings),
        envelope=envelope,
    )


def parse(
    argv: list[str], environ: Mapping[str, str] | None = None, cwd: str | None = None
) -> TorchServeConfig:
    """``torchserve`` options (for a start) as the configuration to serve."""
    return configure(parse_args(argv), environ, cwd)


# -- the pid file: --start refuses a second server, --stop stops the first ---------------------


def pid_file() -> str:
    """TorchServe's pid file, in the temporary folder ($TMPDIR, else /tmp)."""
    return os.path.join(tempfile.gettempdir(), ".model_server.pid")


def _cmdline(pid: int) -> list[str] | None:
    """A live process's arguments (None: no such process, or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            if fh.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                return None
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
    except (OSError, IndexError):
        return None


def is_server(args: list[str]) -> bool:
    """Whether a command line is this server's (run as ``-m inferwire.torchserve.cli`` or
    ``inferwire torchserve``) or TorchServe's own frontend."""
    if MODULE in args or TORCHSERVE_MAIN in args:
        return True
    return any(
        os.path.basename(a) == "inferwire" and b == "torchserve"
        for a, b in itertools.pairwise(args)
    )


def running_server(path: str) -> int | None:
    """The pid the pid file names, if that process is a model server still running; a pid
    file naming no process is removed, as TorchServe does."""
    pid = _read_pid(path)
    if pid is None:
        return None
    args = _cmdline(pid)
    if args is None:
        print("Removing orphan pid file.")
        try:
            os.unlink(path)
        except OSError:
            pass
        return None
    return pid if is_server(args) else None


def stop(path: str | None = None, wait: bool = False, key_file: str = tokens.KEY_FILE) -> int:
    """``--stop``: SIGTERM to the server, its key file deleted; with ``wait`` (TorchServe's
    ``--stop --foreground``), up to 60 seconds for it to exit."""
    path = path or pid_file()
    pid = running_server(path)
    if pid is None:
        print("TorchServe is not currently running.")
        return 0
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        print("TorchServe already stopped.")
    else:
        try:
            os.unlink(key_file)
        except FileNotFoundError:
            pass
        if wait:
            deadline = time.monotonic() + 60
            while _cmdline(pid) is not None and time.monotonic() < deadline:
                time.sleep(0.05)
            if _cmdline(pid) is not None:
                print("Stopping TorchServe took too long.")
        else:
            print("TorchServe has stopped.")
    try:
        os.unlink(path)
    except OSError:
        pass
    return 0


def _read_pid(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as fh:
            return int(fh.readline())
    except (OSError, ValueError):
        return None


def _write_pid(path: str, pid: int) -> None:
    with open(path, "w", encoding="ascii") as fh:
        fh.write(str(pid))


# -- running it --------------------------------------------------------------------------------

Serve = Callable[[TorchServeConfig, Any], int]


def background(argv: list[str], path: str) -> subprocess.Popen[bytes]:
    """Start the server as a detached child serving in the foreground and record its pid
    (TorchServe's --start without --foreground, which then returns)."""
    child = subprocess.Popen(
        [sys.executable, "-m", MODULE, *argv, "--foreground"], start_new_session=True
    )
    _write_pid(path, child.pid)
    return child


def _foreground(config: TorchServeConfig, settings: Any, serve: Serve, path: str) -> int:
    _write_pid(path, os.getpid())
    key_file = None
    try:
        if config.token_auth:
            key_file = tokens.KeyFile.create(
                os.path.dirname(config.key_file), config.token_expiration_min
            )
            log.info("%s%s", tokens.NOTICE, key_file.path)
        return serve(config, settings)
    except KeyboardInterrupt:
        return 0
    except (InferwireError, RuntimeError) as e:
        print(f"inferwire torchserve: {e}", file=sys.stderr)
        return 1
    finally:
        if key_file is not None:
            key_file.remove()
        if _read_pid(path) == os.getpid():  # not a later server's
            os.unlink(path)


def main(
    argv: list[str] | None = None,
    environ: Mapping[str, str] | None = None,
    pid_path: str | None = None,
    serve: Serve | None = None,
) -> int:
    """The command: its exit status. ``serve`` (the dialect's entry by default) is called
    with the configuration and the validated inferwire ``Settings`` to serve in the
    foreground."""
    from .. import __version__
    from .. import settings as inferwire_settings

    argv = sys.argv[1:] if argv is None else argv
    path = pid_path or pid_file()
    logging.basicConfig(
        level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    try:
        args = parse_args(argv)
    except UsageError as e:
        print(f"inferwire torchserve: {e} (inferwire torchserve --help)", file=sys.stderr)
        return 2
    if args["help"]:
        print(usage())
        return 0
    if args["version"]:
        print(f"TorchServe Version is {TORCHSERVE_VERSION} (inferwire {__version__})")
        return 0
    if args["stop"]:
        return stop(path, wait=bool(args["foreground"]))
    running = running_server(path)
    if running is not None and running != os.getpid():
        print(
            "TorchServe is already running, please use inferwire torchserve --stop to stop it.",
            file=sys.stderr,
        )
        return 1
    try:
        config = configure(args, environ)
        settings = inferwire_settings.from_sources(config.settings)
    except InferwireError as e:
        print(f"inferwire torchserve: {e}", file=sys.stderr)
        return 1
    if not config.foreground:
        if os.getpid() != 1:
            background(argv, path)
            return 0
        # A container's main process (KServe's kserve-torchserve runtime runs `torchserve
        # --start`; TorchServe's image then keeps the container up with its entrypoint's
        # `tail -f /dev/null`): backgrounded, the container would exit with it.
        log.info("running as process 1 (a container's main process): --start serves in the "
                 "foreground, as --foreground does")  # fmt: skip
    for warning in config.warnings:
        log.warning("%s", warning)
    logging.getLogger().setLevel(settings.log_level.upper())
    if serve is None:
        from .dialect import serve as dialect_serve

        serve = dialect_serve
    return _foreground(config, settings, serve, path)


if __name__ == "__main__":
    sys.exit(main())
