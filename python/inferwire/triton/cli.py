"""``inferwire tritonserver``: Triton's command line as its users type it. Each option
Triton documents is honoured, mapped to inferwire's setting of the same meaning, or
accepted with one warning saying why it changes nothing here (``OPTIONS``, also the
migration guide's table); an option Triton does not have is refused.

Triton's flags are values (``--strict-model-config=false``, ``--allow-grpc true``), given
as ``--flag=value`` or ``--flag value``; inferwire's own settings come from
``INFERWIRE_*`` variables and the ``INFERWIRE_SETTINGS`` file underneath them
(``INFERWIRE_SYSTEM_SHARED_MEMORY=true`` turns on the shared-memory extension, which
Triton serves by default and inferwire only when asked)."""

from __future__ import annotations

import logging
import sys
from typing import Any

from ..errors import InferwireError, SettingsError
from .repository import Options

log = logging.getLogger("inferwire")

# The Triton release whose answers the dialect gives (server metadata's version).
TRITON_VERSION = "2.51.0"
# The extensions Triton 2.51's server metadata lists.
EXTENSIONS = (
    "classification,sequence,model_repository,model_repository(unload_dependents),"
    "schedule_policy,model_configuration,system_shared_memory,cuda_shared_memory,"
    "binary_tensor_data,parameters,statistics,trace,logging"
)

# What inferwire does with each of Triton's options (docs table; its test reads it).
OPTIONS: dict[str, str] = {
    "model-repository": "honoured: the repository served (one; also --model-store)",
    "model-store": "honoured: as --model-repository",
    "http-port": "honoured: REST port (default 8000)",
    "grpc-port": "honoured: gRPC port (default 8001)",
    "metrics-port": "honoured: metrics port (default 8002, path /metrics)",
    "http-address": "honoured: the address every port listens on",
    "grpc-address": "honoured: the address every port listens on",
    "metrics-address": "honoured: the address every port listens on",
    "allow-http": "accepted: REST is always served (false is refused)",
    "allow-grpc": "accepted: gRPC is always served (false is refused)",
    "allow-metrics": "honoured: false serves no metrics port",
    "model-control-mode": "honoured: none (the default), poll and explicit",
    "load-model": "honoured: in explicit mode, the models loaded at start (* for all)",
    "strict-model-config": "honoured: true needs every model's config.pbtxt",
    "disable-auto-complete-config": "honoured: as --strict-model-config=true",
    "exit-on-error": "honoured: false serves the models that load, the others UNAVAILABLE",
    "repository-poll-secs": "honoured: in poll mode, seconds between reads of the repository "
    "(default 15; each worker reads and loads on its own); ignored otherwise",
    "log-verbose": "honoured: above 0 logs at debug",
    "log-info": "honoured: false logs warnings and errors only",
    "log-warning": "accepted",
    "log-error": "accepted",
    "exit-timeout-secs": "honoured: seconds open requests may take after SIGTERM",
    "id": "honoured: the server's name in its metadata (default triton)",
    "backend-config": "accepted: backends' settings do not apply to in-process models",
    "backend-directory": "ignored: models run in this server's Python",
    "repoagent-directory": "ignored: no repository agents",
    "log-file": "ignored: logs go to stderr",
    "log-format": "ignored: inferwire's log format",
    "trace-config": "ignored: see the trace extension (/v2/trace/setting)",
    "cache-config": "ignored: no response cache",
    "rate-limit": "ignored: admission is bounded by max_concurrency and max_queue",
    "rate-limit-resource": "ignored: no rate limiter",
    "pinned-memory-pool-byte-size": "ignored: no GPU memory",
    "cuda-memory-pool-byte-size": "ignored: no GPU memory",
    "cuda-virtual-address-size": "ignored: no GPU memory",
    "min-supported-compute-capability": "ignored: no GPU",
    "buffer-manager-thread-count": "ignored",
    "model-load-thread-count": "ignored: models load one at a time",
    "model-load-retry-count": "ignored",
    "model-namespacing": "ignored: one repository",
    "http-thread-count": "ignored: the core's I/O threads serve REST",
    "http-header-forward-pattern": "ignored",
    "grpc-infer-allocation-pool-size": "ignored",
    "grpc-use-ssl": "ignored: TLS is inferwire's --tls-cert / --tls-key (INFERWIRE_TLS_*)",
    "grpc-server-cert": "ignored: see --grpc-use-ssl",
    "grpc-server-key": "ignored: see --grpc-use-ssl",
    "grpc-root-cert": "ignored: see --grpc-use-ssl",
    "grpc-keepalive-time": "ignored",
    "grpc-keepalive-timeout": "ignored",
    "grpc-keepalive-permit-without-calls": "ignored",
    "grpc-http2-max-pings-without-data": "ignored",
    "grpc-http2-min-recv-ping-interval-without-data": "ignored",
    "grpc-http2-max-ping-strikes": "ignored",
    "grpc-restricted-protocol": "ignored: restrict with auth scopes",
    "http-restricted-api": "ignored: restrict with auth scopes",
    "grpc-infer-response-compression-level": "ignored: replies are not compressed",
    "reuse-http-port": "ignored",
    "reuse-grpc-port": "ignored",
    "allow-gpu-metrics": "ignored: no GPU",
    "allow-cpu-metrics": "ignored",
    "metrics-interval-ms": "ignored: metrics are read at each scrape",
    "metrics-config": "ignored",
    "allow-sagemaker": "ignored: no SageMaker endpoint",
    "allow-vertex-ai": "ignored: no Vertex AI endpoint",
    "host-policy": "ignored",
    "response-cache-byte-size": "ignored: no response cache",
    "strict-readiness": "ignored: ready means every model loaded at start is ready",
    "model-config-name": "ignored: the config is config.pbtxt",
}


def _bool(flag: str, value: str | None) -> bool:
    text = (value or "true").strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"--{flag}: {value!r} is not a boolean (true or false)")


def _int(flag: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise SettingsError(f"--{flag}: {value!r} is not an integer") from None


def parse(argv: list[str]) -> tuple[dict[str, Any], Options]:
    """Triton's options as inferwire's settings, and the repository's options."""
    given: dict[str, list[str]] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--"):
            raise SettingsError(f"{arg!r}: tritonserver takes --options only")
        name, eq, value = arg[2:].partition("=")
        if name not in OPTIONS:
            raise SettingsError(f"--{name}: not an option of tritonserver")
        if not eq:
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is not None and not nxt.startswith("--"):
                value, i = nxt, i + 1
            else:
                value = ""
        given.setdefault(name, []).append(value)
        i += 1
    return _settings(given)


def _settings(given: dict[str, list[str]]) -> tuple[dict[str, Any], Options]:
    def one(name: str, default: str = "") -> str:
        values = given.get(name)
        return values[-1] if values else default

    settings: dict[str, Any] = {
        "v2_dialect": "triton",
        "server_name": one("id", "triton"),
        "server_version": TRITON_VERSION,
        "server_extensions": EXTENSIONS,
        "http_port": _int("http-port", one("http-port", "8000")),
        "grpc_port": _int("grpc-port", one("grpc-port", "8001")),
        "metrics_port": _int("metrics-port", one("metrics-port", "8002")),
        "metrics_endpoint": "/metrics",
    }
    repositories = given.get("model-repository", []) + given.get("model-store", [])
    if not repositories:
        raise SettingsError("--model-repository: required (the folder of models to serve)")
    if len(set(repositories)) > 1:
        raise SettingsError(
            "--model-repository: inferwire serves one repository; given " + ", ".join(repositories)
        )
    settings["model_repository"] = repositories[0]
    addresses = {one(a) for a in ("http-address", "grpc-address", "metrics-address")} - {""}
    if len(addresses) > 1:
        raise SettingsError(
            "--http-address, --grpc-address, --metrics-address: inferwire listens on one "
            "address for every port; give them the same value"
        )
    if addresses:
        settings["host"] = addresses.pop()
    for flag in ("allow-http", "allow-grpc"):
        if flag in given and not _bool(flag, one(flag)):
            raise SettingsError(f"--{flag}=false: inferwire always serves REST and gRPC")
    if "allow-metrics" in given and not _bool("allow-metrics", one("allow-metrics")):
        settings["metrics_endpoint"] = ""
        settings["metrics_port"] = 0
    verbose = _int("log-verbose", one("log-verbose", "0"))
    if verbose > 0:
        settings["log_level"] = "debug"
    elif "log-info" in given and not _bool("log-info", one("log-info")):
        settings["log_level"] = "warning"
    if "exit-timeout-secs" in given:
        settings["grace_period"] = float(_int("exit-timeout-secs", one("exit-timeout-secs")))
    mode = one("model-control-mode", "none").lower()
    if mode not in ("none", "poll", "explicit"):
        raise SettingsError(f"--model-control-mode: {mode!r} is not none, poll or explicit")
    load = given.get("load-model", [])
    if load and mode != "explicit":
        raise SettingsError("--load-model: only with --model-control-mode=explicit")
    if mode == "poll":
        # Triton's poll mode: the repository read again every --repository-poll-secs.
        secs = _int("repository-poll-secs", one("repository-poll-secs", "15"))
        if secs <= 0:
            raise SettingsError("--repository-poll-secs: must be above 0 in poll mode")
        settings["repository_poll_secs"] = float(secs)
    if mode == "explicit":
        # Triton's opt-in to loading and unloading through the API (which runs code):
        # the explicit, logged opt-in inferwire asks for when there is no auth.
        settings["allow_unauthenticated_repository"] = True
        settings["load_models_at_startup"] = bool(load)
    strict = "strict-model-config" in given and _bool(
        "strict-model-config", one("strict-model-config")
    )
    if "disable-auto-complete-config" in given:
        strict = True
    options = Options(
        strict=strict,
        exit_on_error=_bool("exit-on-error", one("exit-on-error", "true")),
        explicit=mode == "explicit",
        load=tuple(load),
    )
    for name in given:
        how = OPTIONS[name]
        if how.startswith("ignored") or (name == "repository-poll-secs" and mode != "poll"):
            log.warning("--%s: %s", name, how.partition(": ")[2] or "ignored")
    return settings, options


def usage() -> str:
    width = max(len(n) for n in OPTIONS) + 4
    lines = [f"  --{name:<{width}}{how}" for name, how in OPTIONS.items()]
    return (
        "usage: inferwire tritonserver --model-repository=DIR [--option=value ...]\n\n"
        "Triton's options, and what inferwire does with each:\n" + "\n".join(lines)
    )


def markdown_table() -> str:
    """Every tritonserver option and what inferwire does with it: ``OPTIONS`` as the
    migration guide's table (tests/docs/test_docs.py checks the guide holds it)."""
    rows = ["| tritonserver option | inferwire |", "|---|---|"]
    for name, how in OPTIONS.items():
        status, _, what = how.partition(": ")
        rows.append(f"| `--{name}` | **{status}**{': ' + what if what else ''} |")
    return "\n".join(rows) + "\n"


def run(argv: list[str]) -> int:
    from .. import settings as inferwire_settings
    from ..server import serve
    from .dialect import TritonDialect

    logging.basicConfig(
        level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    try:
        if argv[:1] in (["-h"], ["--help"]):
            print(usage())
            return 0
        flags, options = parse(argv)
        settings = inferwire_settings.from_sources(flags)
    except InferwireError as e:
        print(f"inferwire tritonserver: {e}", file=sys.stderr)
        return 2
    logging.getLogger().setLevel(settings.log_level.upper())
    dialect = TritonDialect(options)
    try:
        serve(None, settings, dialect=dialect)
    except (InferwireError, RuntimeError) as e:
        print(f"inferwire tritonserver: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0
