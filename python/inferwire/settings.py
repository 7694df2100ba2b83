"""Server settings: one definition, read from flags, then ``INFERWIRE_*`` environment
variables, then the Seldon wrapper's variables, then a settings file (``--settings``,
YAML or JSON), then defaults (in that order of precedence). Every value is validated
before the server starts, and a key the file does not know is an error, not ignored."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .errors import SettingsError


@dataclass(frozen=True)
class Option:
    """How one setting is named on the command line and in the environment."""

    help: str
    env: tuple[str, ...] = ()


def _opt(default: Any, help: str, *seldon_env: str) -> Any:
    return field(default=default, metadata={"option": Option(help, seldon_env)})


@dataclass
class Settings:
    host: str = _opt("0.0.0.0", "address to listen on")
    http_port: int = _opt(9000, "REST port (HTTP/1.1 and h2c)", "PREDICTIVE_UNIT_HTTP_SERVICE_PORT")
    grpc_port: int = _opt(5000, "gRPC port", "PREDICTIVE_UNIT_GRPC_SERVICE_PORT")
    model_name: str = _opt(
        "",
        "model name in replies' meta.requestPath and V2 routes (default: the class name, or "
        "the model file's name without its suffix)",
        "PREDICTIVE_UNIT_ID",
    )
    model_image: str = _opt(
        "",
        "value beside the name in meta.requestPath (Seldon puts the image there)",
        "PREDICTIVE_UNIT_IMAGE",
    )
    model_version: str = _opt(
        "", "the model's version on V2 routes (/v2/models/NAME/versions/VERSION); empty: none"
    )
    model_repository: str = _opt(
        "", "folder of models, one subfolder with a model-settings.yaml/json each (V2 routes)"
    )
    default_model: str = _opt(
        "", "with a repository and no MODEL: the model the Seldon routes call (default: first)"
    )
    parameters: str = _opt(
        "",
        "constructor arguments, Seldon style: JSON list of {name, value, type}",
        "PREDICTIVE_UNIT_PARAMETERS",
    )
    raw_arrays: str = _opt(
        "numpy", "arrays in predict_raw's dict: numpy (no copy) or list (as Seldon's REST)"
    )
    auth_tokens: str = _opt(
        "",
        "file of bearer tokens, one per line: NAME SCOPES SHA256 (inferwire auth token); set "
        "with auth_users or alone to require a token on every route but health and metrics",
    )
    auth_users: str = _opt(
        "",
        "file of users for POST /login, one per line: NAME SCOPES ARGON2-HASH "
        "(inferwire auth user)",
    )
    auth_secret: str = _opt(
        "",
        "key that signs login tokens (16+ characters); empty: a random one per start, so "
        "tokens end with the server",
    )
    auth_token_ttl: float = _opt(3600.0, "seconds a login token stays valid")
    auth_secret_file: str = _opt(
        "",
        "file holding auth_secret (trimmed; 16+ characters): keeps the key off the command "
        "line, where ps shows it",
    )
    allow_unauthenticated_repository: bool = _opt(
        False,
        "without auth, serve the repository API anyway (publish, delete, load, unload, index): "
        "anyone who can reach the port can then run code in the server; trusted networks only",
    )
    login_user_failures: int = _opt(
        5, "failed logins per username within login_window before POST /login answers 429"
    )
    login_client_failures: int = _opt(
        20, "failed logins per client address (IPv6: per /64) within login_window before 429"
    )
    login_window: float = _opt(
        60.0, "seconds failed logins are counted for, from the first; then the count restarts"
    )
    tls_cert: str = _opt(
        "", "PEM certificate chain: serve REST and gRPC over TLS (empty: plaintext)"
    )
    tls_key: str = _opt("", "PEM private key of tls_cert")
    tls_client_ca: str = _opt(
        "", "PEM CA certificates: require client certificates signed by them (mutual TLS)"
    )
    runtime: str = _opt(
        "auto",
        "for a trained model file: native (tree models scored in Rust), python (the library's "
        "own predict), or auto (native when it can score the model)",
    )
    output_names: str = _opt(
        "{class}",
        "native tree models: the name of each output, {class} replaced by the class label "
        "(e.g. {class}_Pred)",
    )
    max_body_bytes: int = _opt(
        64 * 1024 * 1024,
        "largest REST body or gRPC message, bytes, before and after inflating (Content-Encoding "
        "gzip/deflate, grpc-encoding gzip)",
    )
    body_timeout: float = _opt(
        30.0,
        "seconds a request body (REST) or each request message (gRPC) has to arrive after the "
        "head or the previous message; past it 408 (the connection closes) / DEADLINE_EXCEEDED",
    )
    max_body_bytes_in_flight: int = _opt(
        256 * 1024 * 1024,
        "request-body bytes a worker holds at once while receiving and inflating them (counted "
        "by Content-Length or gRPC's message length when given); a body that would exceed it "
        "gets 503 + Retry-After / RESOURCE_EXHAUSTED at once",
    )
    max_elements: int = _opt(64 * 1024 * 1024, "largest number of elements in one tensor")
    max_json_depth: int = _opt(32, "deepest nesting of ndarray lists")
    max_connections: int = _opt(
        10000,
        "open connections per worker, REST and gRPC together; past it, new ones wait in the "
        "kernel's backlog until one closes",
    )
    header_timeout: float = _opt(
        30.0,
        "seconds an HTTP/1.1 connection has to send a whole request head, counted from its "
        "start or its previous response: slow senders and idle keep-alive connections are "
        "closed",
    )
    max_streams: int = _opt(
        200, "HTTP/2 streams (REST h2 and gRPC calls) open at once per connection"
    )
    workers: int = _opt(
        1,
        "worker processes forked after the model is loaded, taking connections from one "
        "shared accept queue",
    )
    model_threads: int = _opt(
        1, "model calls that may run at once (more than 1 helps models that release the GIL)"
    )
    max_concurrency: int = _opt(
        0,
        "requests admitted to the model at once, running or gathered into a batch "
        "(0: model_threads x max_batch_size)",
    )
    max_queue: int = _opt(1024, "requests waiting for admission before 503 / RESOURCE_EXHAUSTED")
    max_batch_size: int = _opt(1, "requests joined into one predict call (1: no batching)")
    max_batch_delay: float = _opt(
        0.0,
        "seconds a batch's first request waits for more (0: batch only what is already waiting)",
    )
    timeout: float = _opt(
        60.0,
        "seconds a request may take before 504 / DEADLINE_EXCEEDED; queued requests past it "
        "are dropped, not computed (0: no limit; a shorter gRPC deadline always applies)",
    )
    io_threads: int = _opt(2, "threads doing networking, parsing and encoding, per worker")
    grace_period: float = _opt(30.0, "seconds open requests may take to finish after SIGTERM")
    stuck_after: float = _opt(
        120.0,
        "seconds after which a model call that has not returned counts as stuck: /live "
        "answers 503, and the worker drains and is replaced (0: never)",
    )
    supervisor: str = _opt(
        "on",
        "on: even one worker runs forked under a supervisor that replaces it if it dies or "
        "is recycled; off: one process, nothing restarts it (only with --workers 1)",
    )
    max_requests: int = _opt(
        0,
        "a worker that has answered this many requests (plus its share of "
        "max_requests_jitter) drains and is replaced, nothing lost (0: never)",
    )
    max_requests_jitter: int = _opt(
        0,
        "up to this many requests more, drawn per worker, so that workers are not all "
        "replaced at once (0: a tenth of max_requests)",
    )
    max_worker_memory: int = _opt(
        0,
        "MiB of resident memory past which a worker drains and is replaced, checked every "
        "second (0: no limit)",
    )
    access_log: str = _opt("off", "one line per request on stderr: off, text or json")
    log_level: str = _opt("info", "debug, info, warning or error")
    log_repeats_every: float = _opt(
        60.0,
        "seconds between summary lines for a model error that repeats: the first error of a "
        "kind (call, exception type, raising line) is logged with its traceback, repeats are "
        "counted (0: a traceback every time)",
    )

    def validate(self) -> Settings:
        for port in ("http_port", "grpc_port"):
            value = getattr(self, port)
            if not 0 <= value <= 65535:
                raise SettingsError(f"{port}: {value} is not a TCP port (0-65535)")
        if self.http_port == self.grpc_port and self.http_port != 0:
            raise SettingsError(
                f"http_port and grpc_port are both {self.http_port}: give them different ports"
            )
        at_least_one = (
            "max_body_bytes",
            "max_body_bytes_in_flight",
            "max_elements",
            "max_json_depth",
            "max_connections",
            "max_streams",
            "max_queue",
            "io_threads",
            "workers",
            "model_threads",
            "max_batch_size",
        )
        for name in at_least_one:
            if getattr(self, name) < 1:
                raise SettingsError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.workers > MAX_WORKERS:
            raise SettingsError(f"workers: at most {MAX_WORKERS}, got {self.workers}")
        if self.header_timeout <= 0:
            raise SettingsError(f"header_timeout: must be above 0, got {self.header_timeout}")
        if self.body_timeout <= 0:
            raise SettingsError(f"body_timeout: must be above 0, got {self.body_timeout}")
        if self.max_body_bytes_in_flight < self.max_body_bytes:
            raise SettingsError(
                f"max_body_bytes_in_flight {self.max_body_bytes_in_flight} is below "
                f"max_body_bytes {self.max_body_bytes}, so the largest body could never be "
                "received: raise it or lower max_body_bytes"
            )
        for name in (
            "grace_period",
            "max_batch_delay",
            "timeout",
            "max_concurrency",
            "stuck_after",
            "max_requests",
            "max_requests_jitter",
            "max_worker_memory",
        ):
            if getattr(self, name) < 0:
                raise SettingsError(f"{name}: must not be negative, got {getattr(self, name)}")
        if 0 < self.max_concurrency < self.max_batch_size:
            raise SettingsError(
                f"max_concurrency {self.max_concurrency} admits fewer requests than "
                f"max_batch_size {self.max_batch_size}, so batches could never fill: raise it "
                "or leave it 0 (model_threads x max_batch_size)"
            )
        if self.max_batch_delay > 0 and self.max_batch_size == 1:
            raise SettingsError(
                "max_batch_delay is set but max_batch_size is 1 (no batching): set "
                "max_batch_size above 1 or leave max_batch_delay 0"
            )
        if self.supervisor not in ("on", "off"):
            raise SettingsError(f"supervisor: {self.supervisor!r} is not on or off")
        if self.supervisor == "off" and self.workers > 1:
            raise SettingsError(
                f"supervisor: off serves from one process, but workers is {self.workers}"
            )
        if self.supervisor == "off" and (self.max_requests or self.max_worker_memory):
            raise SettingsError(
                "supervisor: off leaves nothing to replace a recycled worker: drop "
                "max_requests and max_worker_memory, or turn the supervisor on"
            )
        if self.access_log not in ("off", "text", "json"):
            raise SettingsError(f"access_log: {self.access_log!r} is not off, text or json")
        if self.raw_arrays not in ("numpy", "list"):
            raise SettingsError(f"raw_arrays: {self.raw_arrays!r} is not numpy or list")
        if self.auth_secret and len(self.auth_secret) < 16:
            raise SettingsError("auth_secret: at least 16 characters")
        if self.auth_token_ttl <= 0:
            raise SettingsError("auth_token_ttl: must be above 0 seconds")
        if self.auth_secret_file:
            if self.auth_secret:
                raise SettingsError("auth_secret and auth_secret_file: give one of them, not both")
            self.signing_key()
        for name in ("login_user_failures", "login_client_failures"):
            if getattr(self, name) < 1:
                raise SettingsError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.login_window <= 0:
            raise SettingsError("login_window: must be above 0 seconds")
        for key in ("auth_tokens", "auth_users"):
            path = getattr(self, key)
            if path and not os.path.isfile(path):
                raise SettingsError(f"{key}: {path} is not a file")
        if bool(self.tls_cert) != bool(self.tls_key):
            raise SettingsError("tls_cert and tls_key go together: give both, or neither")
        if self.tls_client_ca and not self.tls_cert:
            raise SettingsError("tls_client_ca needs tls_cert and tls_key (the server's own)")
        for key in ("tls_cert", "tls_key", "tls_client_ca"):
            path = getattr(self, key)
            if path and not os.path.isfile(path):
                raise SettingsError(f"{key}: {path} is not a file")
        if self.runtime not in ("auto", "native", "python"):
            raise SettingsError(f"runtime: {self.runtime!r} is not auto, native or python")
        if self.log_level.lower() not in ("debug", "info", "warning", "error"):
            raise SettingsError(
                f"log_level: {self.log_level!r} is not debug, info, warning or error"
            )
        if self.log_repeats_every < 0:
            raise SettingsError("log_repeats_every: must be 0 (off) or more seconds")
        self.constructor_parameters()
        return self

    def constructor_parameters(self) -> dict[str, Any]:
        """``parameters`` as keyword arguments, typed as the Seldon wrapper types them."""
        if not self.parameters:
            return {}
        try:
            items = json.loads(self.parameters)
        except json.JSONDecodeError as e:
            raise SettingsError(f"parameters: not JSON: {e}") from e
        if not isinstance(items, list):
            raise SettingsError("parameters: must be a JSON list of {name, value, type}")
        kinds: dict[str, Callable[[Any], Any]] = {
            "INT": int,
            "FLOAT": float,
            "DOUBLE": float,
            "STRING": str,
            "BOOL": _bool,
        }
        out: dict[str, Any] = {}
        for i, p in enumerate(items):
            if not isinstance(p, dict) or "name" not in p or "value" not in p:
                raise SettingsError(f"parameters[{i}]: needs name and value")
            kind = str(p.get("type", "STRING")).upper()
            if kind not in kinds:
                raise SettingsError(
                    f"parameters[{i}].type: {kind} is not one of {', '.join(kinds)}"
                )
            try:
                out[p["name"]] = kinds[kind](p["value"])
            except (TypeError, ValueError) as e:
                raise SettingsError(f"parameters[{i}].value: {e}") from e
        return out

    def signing_key(self) -> str:
        """The key that signs login tokens: auth_secret, the contents of auth_secret_file,
        or empty (the caller makes a random one)."""
        if not self.auth_secret_file:
            return self.auth_secret
        path = self.auth_secret_file
        try:
            with open(path, encoding="utf-8") as fh:
                key = fh.read().strip()
        except (OSError, UnicodeDecodeError) as e:
            raise SettingsError(
                f"auth_secret_file: {path}: {getattr(e, 'strerror', None) or e}"
            ) from e
        if len(key) < 16:
            raise SettingsError(
                f"auth_secret_file: {path} holds {len(key)} characters (after trimming); the "
                "key needs at least 16"
            )
        return key

    def to_core(self) -> dict[str, Any]:
        """The dict the Rust core reads (it crosses the boundary once)."""
        d = asdict(self)
        for key in (
            "parameters",
            "raw_arrays",
            "model_repository",
            "default_model",
            "runtime",
            "output_names",
            "log_repeats_every",
        ):
            d.pop(key)
        # The core's filter (tracing) spells it "warn"; "warning" would be ignored with a
        # complaint on stderr at every start.
        level = self.log_level.lower()
        d["log_level"] = "warn" if level == "warning" else level
        d["max_requests_jitter"] = self.max_requests_jitter or self.max_requests // 10
        d["max_worker_memory"] = self.max_worker_memory * 1024 * 1024
        # Made once here, before workers fork, so every worker accepts the same logins.
        d.pop("auth_secret")
        d.pop("auth_secret_file")
        d["auth_key"] = self.signing_key() or secrets.token_hex(32)
        return d


def _bool(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


def _strict_bool(v: Any, source: str) -> bool:
    """A yes/no setting: true/false, yes/no, on/off, 1/0; anything else is an error (so
    that a misspelt "flase" does not turn a safety switch on)."""
    if isinstance(v, bool):
        return v
    text = str(v).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{source}: {v!r} is not true or false")


def env_name(name: str) -> str:
    return "INFERWIRE_" + name.upper()


# The shared metrics memory has a slot per worker (crates/inferwire-server/src/metrics.rs).
MAX_WORKERS = 64

SETTINGS_ENV = "INFERWIRE_SETTINGS"


def read_file(path: str) -> dict[str, Any]:
    """A settings file: a YAML or JSON mapping of setting names (``max_batch_size`` or
    ``max-batch-size``) to values. Unknown names are an error naming the file and key."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as e:
        raise SettingsError(f"settings file {path}: {e.strerror or e}") from e
    try:
        if path.endswith(".json"):
            data = json.loads(text)
        else:
            import yaml  # YAML is a superset of JSON: one parser for both.

            data = yaml.safe_load(text)
    except Exception as e:
        raise SettingsError(f"settings file {path}: not valid YAML/JSON: {e}") from e
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsError(f"settings file {path}: must be a mapping of setting names to values")
    known = {f.name for f in fields(Settings)}
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in known:
            raise SettingsError(
                f"settings file {path}: unknown setting {key!r} (known: {', '.join(sorted(known))})"
            )
        if name == "parameters" and not isinstance(value, str):
            value = json.dumps(value)
        out[name] = value
    return out


def from_sources(
    flags: dict[str, Any],
    environ: dict[str, str] | None = None,
    settings_file: str | None = None,
) -> Settings:
    """Flags (non-None), then INFERWIRE_* env vars, then Seldon's env vars, then the
    settings file (``settings_file`` or ``$INFERWIRE_SETTINGS``), then defaults."""
    environ = dict(os.environ) if environ is None else environ
    path = settings_file or environ.get(SETTINGS_ENV) or None
    from_file = read_file(path) if path else {}
    values: dict[str, Any] = {}
    for f in fields(Settings):
        option: Option = f.metadata["option"]
        raw: Any = flags.get(f.name)
        source = f"--{f.name.replace('_', '-')}"
        if raw is None:
            for var in (env_name(f.name), *option.env):
                if var in environ and environ[var] != "":
                    raw, source = environ[var], var
                    break
        if raw is None and f.name in from_file:
            raw, source = from_file[f.name], f"{f.name} in {path}"
        if raw is None:
            continue
        kind: type = type(f.default)
        if kind is bool:
            values[f.name] = _strict_bool(raw, source)
            continue
        if isinstance(raw, bool) or (kind is int and isinstance(raw, float)):
            raise SettingsError(f"{source}: {raw!r} is not a valid {kind.__name__}")
        try:
            values[f.name] = kind(raw)
        except (TypeError, ValueError) as e:
            raise SettingsError(f"{source}: {raw!r} is not a valid {kind.__name__}") from e
    return Settings(**values).validate()


def markdown_table() -> str:
    """The settings reference table (docs/reference/configuration.md embeds it; a test
    checks the two agree)."""
    rows = ["| flag | environment | default | meaning |", "|---|---|---|---|"]
    for f in fields(Settings):
        option: Option = f.metadata["option"]
        envs = ", ".join(f"`{e}`" for e in (env_name(f.name), *option.env))
        flag = f"`--{f.name.replace('_', '-')}`"
        rows.append(f"| {flag} | {envs} | `{f.default!r}` | {option.help} |")
    return "\n".join(rows) + "\n"
