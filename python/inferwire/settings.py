"""Server settings, declared once in a pydantic-settings schema: the command line's flags,
the ``INFERWIRE_*`` environment variables, the Seldon wrapper's variables, settings files,
model-settings files (``inferwire.repository``), the docs table and the Rust core's
config are all derived from the fields below. Precedence: flags, then ``INFERWIRE_*``,
then Seldon's variables, then a settings file (``--settings``, YAML or JSON), then the
defaults. Every value is validated before the server starts, and a key a file does not
know is an error, not ignored."""

from __future__ import annotations

import difflib
import json
import os
import secrets
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from .errors import SettingsError

# The shared metrics memory has a slot per worker (crates/inferwire-server/src/metrics.rs).
MAX_WORKERS = 64

SETTINGS_ENV = "INFERWIRE_SETTINGS"
ENV_PREFIX = "INFERWIRE_"


# -- value types: what each source may give (a flag and an env var are text) -----------------


def _int(v: Any) -> Any:
    # 1.5 or true in a file would be truncated or taken as 1 by pydantic's lax int.
    if isinstance(v, (bool, float)):
        raise ValueError("not an int")
    return v


def _float(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError("not a float")
    return v


def _str(v: Any) -> Any:
    # A YAML file's `model_version: 2` is a number: taken as the text it was written as.
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return v


def _strict_bool(v: Any) -> bool:
    """true/false, yes/no, on/off, 1/0; anything else is an error (so that a misspelt
    "flase" does not turn a safety switch on)."""
    if isinstance(v, bool):
        return v
    text = str(v).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError("not true or false")


def _lower(v: Any) -> Any:
    return v.lower() if isinstance(v, str) else v


Int = Annotated[int, BeforeValidator(_int)]
Float = Annotated[float, BeforeValidator(_float)]
Str = Annotated[str, BeforeValidator(_str)]
Bool = Annotated[bool, BeforeValidator(_strict_bool)]


def _opt(default: Any, help: str, *seldon_env: str, shown: str = "") -> Any:
    """A setting: its default, its help (the flag's and the docs'), the Seldon wrapper's
    variables that also set it, and (``shown``) its default in words when the empty
    value stands for something the server works out."""
    extra: dict[str, Any] = {"seldon_env": list(seldon_env), "shown": shown}
    return Field(default, description=help, json_schema_extra=extra)


class ModelServing(BaseModel):
    """The settings a model in a repository may set for itself in its model-settings file
    (``inferwire.repository.ModelSettings``), with the same defaults as the server's."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    model_threads: Int = _opt(
        1, "model calls that may run at once (more than 1 helps models that release the GIL)"
    )
    max_concurrency: Int = _opt(
        0,
        "requests admitted to the model at once, running or gathered into a batch "
        "(0: model_threads x max_batch_size)",
    )
    max_queue: Int = _opt(1024, "requests waiting for admission before 503 / RESOURCE_EXHAUSTED")
    max_batch_size: Int = _opt(1, "requests joined into one predict call (1: no batching)")
    max_batch_delay: Float = _opt(
        0.0,
        "seconds a batch's first request waits for more (0: batch only what is already waiting)",
    )
    raw_arrays: Literal["numpy", "list"] = _opt(
        "numpy", "arrays in predict_raw's dict: numpy (no copy) or list (as Seldon's REST)"
    )
    runtime: Literal["auto", "native", "python"] = _opt(
        "auto",
        "for a trained model file: native (tree models scored in Rust), python (the library's "
        "own predict), or auto (native when it can score the model)",
    )
    output_names: Str = _opt(
        "{class}",
        "native tree models: the name of each output, {class} replaced by the class label "
        "(e.g. {class}_Pred)",
    )

    @model_validator(mode="after")
    def _check_serving(self) -> ModelServing:
        for name in ("max_queue", "model_threads", "max_batch_size"):
            if getattr(self, name) < 1:
                raise SettingsError(f"{name}: must be at least 1, got {getattr(self, name)}")
        for name in ("max_batch_delay", "max_concurrency"):
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
        return self

    def runner(self) -> dict[str, Any]:
        """How the model's runner admits, queues and batches: the core's keys."""
        return {
            "model_threads": self.model_threads,
            # Derived here only: 0 means enough to keep every model thread's batch full.
            "max_concurrency": self.max_concurrency or self.model_threads * self.max_batch_size,
            "max_queue": self.max_queue,
            "max_batch_size": self.max_batch_size,
            "max_batch_delay": self.max_batch_delay,
        }


class Settings(BaseSettings, ModelServing):
    """Every setting of ``inferwire serve``. ``Settings(max_batch_size=4)`` validates what
    it is given (and reads no environment); ``from_sources`` reads flags, environment and
    a settings file as the command line does. A bad value raises ``SettingsError``."""

    model_config = SettingsConfigDict(
        extra="forbid",
        validate_assignment=True,
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,
        case_sensitive=False,
    )

    host: Str = _opt("0.0.0.0", "address to listen on")
    http_port: Int = _opt(9000, "REST port (HTTP/1.1 and h2c)", "PREDICTIVE_UNIT_HTTP_SERVICE_PORT")
    grpc_port: Int = _opt(5000, "gRPC port", "PREDICTIVE_UNIT_GRPC_SERVICE_PORT")
    metrics_port: Int = _opt(
        0,
        "a port serving only the metrics at metrics_endpoint, as Seldon's wrapper does (its "
        "operator sets 6000 and scrapes it); 0: none (the REST port serves /metrics)",
        "PREDICTIVE_UNIT_METRICS_SERVICE_PORT",
    )
    metrics_endpoint: Str = _opt(
        "/prometheus",
        "the path metrics_port answers on",
        "PREDICTIVE_UNIT_METRICS_ENDPOINT",
    )
    model_name: Str = _opt(
        "",
        "model name in replies' meta.requestPath and V2 routes",
        "PREDICTIVE_UNIT_ID",
        shown="the class name, or the model file's name without its suffix",
    )
    service_type: Literal[
        "", "MODEL", "ROUTER", "TRANSFORMER", "OUTPUT_TRANSFORMER", "COMBINER", "OUTLIER_DETECTOR"
    ] = _opt(
        "",
        "the Seldon graph component type the class is (as seldon-core's --service-type); "
        "every type's routes are served either way, as Seldon's wrapper does",
        "SERVICE_TYPE",
        shown="from the class's methods",
    )
    model_image: Str = _opt(
        "",
        "value beside the name in meta.requestPath (Seldon puts the image there)",
        "PREDICTIVE_UNIT_IMAGE",
    )
    include_metrics_in_client_response: Bool = _opt(
        True,
        "Seldon replies carry the model's metrics in meta.metrics (counted on /metrics "
        "either way); false leaves them out, as the wrapper's variable of this name does",
        "INCLUDE_METRICS_IN_CLIENT_RESPONSE",
    )
    model_version: Str = _opt(
        "", "the model's version on V2 routes (/v2/models/NAME/versions/VERSION); empty: none"
    )
    model_repository: Str = _opt(
        "", "folder of models, one subfolder with a model-settings.yaml/json each (V2 routes)"
    )
    load_models_at_startup: Bool = _opt(
        True,
        "load every model of model_repository at start (false: none until the repository "
        "API loads it, as MLServer's setting of this name)",
    )
    load_models_on_request: Bool = _opt(
        False,
        "a request for a model of model_repository that is not loaded loads it (once, "
        "however many requests wait for it)",
    )
    repository_poll_secs: Float = _opt(
        0.0,
        "seconds between reads of model_repository for models added, changed or removed, "
        "each loaded, reloaded or unloaded by every worker on its own (Triton's poll mode; "
        "0: never)",
    )
    model_memory_budget: Int = _opt(
        0,
        "MiB the repository's models may hold in a worker, as measured when each loads: "
        "past it the least recently used are unloaded, and loaded again on request (0: no "
        "budget; a budget loads models on request, and none at start)",
    )
    default_model: Str = _opt(
        "",
        "with a repository and no MODEL: the model the Seldon routes call",
        shown="the first",
    )
    parameters: Str = _opt(
        "",
        "constructor arguments, Seldon style: JSON list of {name, value, type}",
        "PREDICTIVE_UNIT_PARAMETERS",
    )
    graph_predictor: Str = _opt(
        "",
        "when MODEL is a SeldonDeployment file: the predictor whose graph is served",
        shown="the first",
    )
    graph_nodes: Str = _opt(
        "",
        "when MODEL is a SeldonDeployment file: each graph node's class, name=module:Class "
        "separated by commas (else the MODEL_NAME in its container's env)",
    )
    auth_tokens: Str = _opt(
        "",
        "file of bearer tokens, one per line: NAME SCOPES SHA256 (inferwire auth token); set "
        "with auth_users or alone to require a token on every route but health and metrics",
    )
    auth_users: Str = _opt(
        "",
        "file of users for POST /login, one per line: NAME SCOPES ARGON2-HASH "
        "(inferwire auth user)",
    )
    auth_secret: Str = _opt(
        "",
        "key that signs login tokens (16+ characters); empty: a random one per start, so "
        "tokens end with the server",
    )
    auth_token_ttl: Float = _opt(3600.0, "seconds a login token stays valid")
    auth_secret_file: Str = _opt(
        "",
        "file holding auth_secret (trimmed; 16+ characters): keeps the key off the command "
        "line, where ps shows it",
    )
    allow_unauthenticated_repository: Bool = _opt(
        False,
        "without auth, serve the repository API anyway (publish, delete, load, unload, index): "
        "anyone who can reach the port can then run code in the server; trusted networks only",
    )
    system_shared_memory: Bool = _opt(
        False,
        "Triton's system shared-memory extension: clients on this host register /dev/shm "
        "objects and pass tensors in them by reference; with auth, registering needs the "
        "publish scope",
    )
    shared_memory_max_regions: Int = _opt(
        64, "system shared-memory regions registered at once, at most"
    )
    shared_memory_max_bytes: Int = _opt(
        1024 * 1024 * 1024,
        "the registered system shared-memory regions' total size, bytes, at most (tensors "
        "read from them count against max_body_bytes per request)",
    )
    login_user_failures: Int = _opt(
        5, "failed logins per username within login_window before POST /login answers 429"
    )
    login_client_failures: Int = _opt(
        20, "failed logins per client address (IPv6: per /64) within login_window before 429"
    )
    login_window: Float = _opt(
        60.0, "seconds failed logins are counted for, from the first; then the count restarts"
    )
    tls_cert: Str = _opt(
        "", "PEM certificate chain: serve REST and gRPC over TLS (empty: plaintext)"
    )
    tls_key: Str = _opt("", "PEM private key of tls_cert")
    tls_client_ca: Str = _opt(
        "", "PEM CA certificates: require client certificates signed by them (mutual TLS)"
    )
    max_body_bytes: Int = _opt(
        64 * 1024 * 1024,
        "largest REST body or gRPC message, bytes, before and after inflating (Content-Encoding "
        "gzip/deflate, grpc-encoding gzip)",
    )
    body_timeout: Float = _opt(
        30.0,
        "seconds a request body (REST) or each request message (gRPC) has to arrive after the "
        "head or the previous message; past it 408 (the connection closes) / DEADLINE_EXCEEDED",
    )
    max_body_bytes_in_flight: Int = _opt(
        256 * 1024 * 1024,
        "request-body bytes a worker holds at once while receiving and inflating them (counted "
        "by Content-Length or gRPC's message length when given); a body that would exceed it "
        "gets 503 + Retry-After / RESOURCE_EXHAUSTED at once",
    )
    max_elements: Int = _opt(64 * 1024 * 1024, "largest number of elements in one tensor")
    max_json_depth: Int = _opt(32, "deepest nesting of ndarray lists")
    max_connections: Int = _opt(
        10000,
        "open connections per worker, REST and gRPC together; past it, new ones wait in the "
        "kernel's backlog until one closes",
    )
    header_timeout: Float = _opt(
        30.0,
        "seconds an HTTP/1.1 connection has to send a whole request head, counted from its "
        "start or its previous response: slow senders and idle keep-alive connections are "
        "closed",
    )
    max_streams: Int = _opt(
        200, "HTTP/2 streams (REST h2 and gRPC calls) open at once per connection"
    )
    stream_max_open: Int = _opt(
        1024,
        "streamed replies (infer_stream, generate_stream, ModelStreamInfer) open at once per "
        "worker; past it 503 + Retry-After / RESOURCE_EXHAUSTED",
    )
    stream_max_pieces: Int = _opt(65536, "pieces one streamed reply may send")
    stream_max_bytes: Int = _opt(256 * 1024 * 1024, "encoded bytes one streamed reply may send")
    stream_idle_timeout: Float = _opt(
        60.0,
        "seconds a stream may go without a piece from the model, or with its reader taking "
        "none (the model is then stopped); a gRPC ModelStreamInfer call, without a request "
        "while none is being answered",
    )
    stream_timeout: Float = _opt(3600.0, "seconds one streamed reply may last")
    grpc_stream_reply: Literal["triton", "mlserver"] = _opt(
        "triton",
        "how gRPC ModelStreamInfer replies are shaped: Triton's ModelStreamInferResponse "
        "(errors as replies, final-response flags) or MLServer's bare ModelInferResponse (a "
        "failed request ends the call with its status)",
    )
    v2_invalid_status: Int = _opt(
        400,
        "HTTP status of a V2 REST inference request that is not valid: 400 (Triton's and "
        "KServe's) or 422 (MLServer's; inferwire start's default)",
    )
    v2_dialect: Literal["inferwire", "mlserver", "triton", "torchserve"] = _opt(
        "inferwire",
        "whose answers the V2 dataplane gives where servers differ: inferwire's (KServe's "
        "protocol in inferwire's words), MLServer's (inferwire start's default: its "
        "not-found messages and 422 bodies, a uuid for a request without an id, CloudEvents "
        "headers on inference replies, the request's headers passed to the model as "
        "parameters.headers), Triton's (inferwire tritonserver's default: its error words "
        "and statuses, raw gRPC replies, its nv_* metrics) or TorchServe's (inferwire "
        "torchserve's: its inference API, /ping, /predictions and its error bodies)",
    )
    torchserve_key_file: Str = _opt(
        "",
        "TorchServe's key_file.json (inferwire torchserve writes it and sets this): its "
        "inference API then takes only requests with its inference key, as TorchServe's "
        "token authorization does",
    )
    torchserve_token_minutes: Float = _opt(
        60.0,
        "how long a key TorchServe's token API (GET /token) makes lasts, in minutes "
        "(inferwire torchserve sets it from token_expiration_min)",
    )
    management_port: Int = _opt(
        0,
        "TorchServe's management API's port (inferwire torchserve sets it from "
        "management_address); 0 or the REST port: its routes are served on the REST port",
    )
    grpc_management_port: Int = _opt(
        0,
        "TorchServe's gRPC management service's port (inferwire torchserve sets it from "
        "grpc_management_port); 0 or the gRPC port: in TorchServe's dialect, the service is "
        "served on the gRPC port",
    )
    kserve_port: Int = _opt(
        0,
        "the port of KServe's wrapper in TorchServe's KServe image (inferwire torchserve "
        "sets it to 8080 with a kserve or kservev2 service envelope): KServe's v1 routes and "
        "V2's health, metadata and infer routes; 0: none",
    )
    kserve_grpc_port: Int = _opt(
        0,
        "the gRPC port of KServe's wrapper in TorchServe's KServe image (inferwire torchserve "
        "sets it to 8081 with the kservev2 service envelope): KServe's V2 gRPC (health, "
        "readiness, metadata, ModelInfer through the envelope); 0 or the gRPC port: none",
    )
    server_name: Str = _opt("inferwire", "the server's name in GET /v2 and ServerMetadata")
    server_version: Str = _opt(
        "", "the server's version in GET /v2 and ServerMetadata (empty: inferwire's)"
    )
    server_extensions: Str = _opt(
        "*",
        "the protocol extensions GET /v2 and ServerMetadata list, comma-separated (*: those "
        "inferwire serves; empty: none, as MLServer says)",
    )
    cors_allow_origins: Str = _opt(
        "",
        "origins whose pages may call the REST API from a browser, comma-separated (*: any; "
        "empty: none, no CORS headers)",
    )
    cors_allow_methods: Str = _opt(
        "GET", "methods such a page may use, comma-separated (*: any), as its preflight asks"
    )
    cors_allow_headers: Str = _opt(
        "", "request headers such a page may send beyond the safelisted ones (*: any)"
    )
    cors_allow_credentials: Bool = _opt(False, "such a page may send cookies and auth")
    cors_expose_headers: Str = _opt("", "reply headers such a page may read, comma-separated")
    cors_max_age: Int = _opt(600, "seconds a browser may keep a preflight's answer")
    workers: Int = _opt(
        1,
        "worker processes forked after the model is loaded, taking connections from one "
        "shared accept queue",
    )
    timeout: Float = _opt(
        60.0,
        "seconds a request may take before 504 / DEADLINE_EXCEEDED; queued requests past it "
        "are dropped, not computed (0: no limit; a shorter gRPC deadline always applies)",
    )
    io_threads: Int = _opt(2, "threads doing networking, parsing and encoding, per worker")
    grace_period: Float = _opt(30.0, "seconds open requests may take to finish after SIGTERM")
    stuck_after: Float = _opt(
        120.0,
        "seconds after which a model call that has not returned counts as stuck: /live "
        "answers 503, and the worker drains and is replaced (0: never)",
    )
    supervisor: Literal["on", "off"] = _opt(
        "on",
        "on: even one worker runs forked under a supervisor that replaces it if it dies or "
        "is recycled; off: one process, nothing restarts it (only with --workers 1)",
    )
    max_requests: Int = _opt(
        0,
        "a worker that has answered this many requests (plus its share of "
        "max_requests_jitter) drains and is replaced, nothing lost (0: never)",
    )
    max_requests_jitter: Int = _opt(
        0,
        "up to this many requests more, drawn per worker, so that workers are not all "
        "replaced at once (0: a tenth of max_requests)",
    )
    max_worker_memory: Int = _opt(
        0,
        "MiB of resident memory past which a worker drains and is replaced, checked every "
        "second (0: no limit)",
    )
    access_log: Literal["off", "text", "json"] = _opt(
        "off", "one line per request on stderr: off, text or json"
    )
    log_level: Annotated[Literal["debug", "info", "warning", "error"], BeforeValidator(_lower)] = (
        _opt("info", "debug, info, warning or error")
    )
    log_repeats_every: Float = _opt(
        60.0,
        "seconds between summary lines for a model error that repeats: the first error of a "
        "kind (call, exception type, raising line) is logged with its traceback, repeats are "
        "counted (0: a traceback every time)",
    )
    # Traces: OpenTelemetry's own variables (OTEL_*) set these too, below INFERWIRE_*.
    otlp_endpoint: Str = _opt(
        "",
        "OTLP collector's base URL (http://host:4318 for HTTP/protobuf, http://host:4317 for "
        "gRPC); setting it turns traces on, sent to its /v1/traces over HTTP/protobuf "
        "(empty: no traces)",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    )
    otlp_traces_endpoint: Str = _opt(
        "",
        "the URL spans are sent to, used as it is (over otlp_endpoint); setting it turns traces on",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    )
    otlp_protocol: Literal["http/protobuf", "grpc"] = _opt(
        "http/protobuf",
        "how spans are sent: http/protobuf or grpc (OTLP's gRPC TraceService, as MLServer's "
        "tracing_server)",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    )
    otlp_headers: Str = _opt(
        "",
        "headers added to every export, key=value pairs split by commas, values "
        "percent-encoded (e.g. an API key)",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_HEADERS",
    )
    otlp_timeout: Float = _opt(
        10.0, "seconds an export may take; past it its spans count as failed"
    )
    trace_sampler: Literal[
        "always_on",
        "always_off",
        "traceidratio",
        "parentbased_always_on",
        "parentbased_always_off",
        "parentbased_traceidratio",
    ] = _opt(
        "parentbased_always_on",
        "which requests are traced: parentbased_* follow the caller's traceparent and apply "
        "the rest to requests that bring none; traceidratio keeps trace_sampler_arg of them",
        "OTEL_TRACES_SAMPLER",
    )
    trace_sampler_arg: Float = _opt(
        1.0,
        "the share of traces the traceidratio samplers keep, 0 to 1",
        "OTEL_TRACES_SAMPLER_ARG",
    )
    trace_service_name: Str = _opt(
        "inferwire", "service.name of the exported spans", "OTEL_SERVICE_NAME"
    )
    trace_queue: Int = _opt(
        2048,
        "traced requests waiting for export, per worker; past it their spans are dropped "
        "(counted in inferwire_trace_spans_dropped_total)",
    )

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as e:
            raise explain(e) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Only from_sources reads the environment and a file: Settings(...) in Python code
        # is what it says.
        if _READING.get() is None:
            return (init_settings,)
        return (init_settings, env_settings, SeldonEnv(settings_cls), SettingsFile(settings_cls))

    @model_validator(mode="after")
    def _check(self) -> Settings:
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
            "io_threads",
            "workers",
            "login_user_failures",
            "login_client_failures",
            "shared_memory_max_regions",
            "shared_memory_max_bytes",
            "stream_max_open",
            "stream_max_pieces",
            "stream_max_bytes",
            "trace_queue",
        )
        for name in at_least_one:
            if getattr(self, name) < 1:
                raise SettingsError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.workers > MAX_WORKERS:
            raise SettingsError(f"workers: at most {MAX_WORKERS}, got {self.workers}")
        if self.header_timeout <= 0:
            raise SettingsError(f"header_timeout: must be above 0, got {self.header_timeout}")
        for name in ("body_timeout", "stream_idle_timeout", "stream_timeout"):
            if getattr(self, name) <= 0:
                raise SettingsError(f"{name}: must be above 0, got {getattr(self, name)}")
        if self.max_body_bytes_in_flight < self.max_body_bytes:
            raise SettingsError(
                f"max_body_bytes_in_flight {self.max_body_bytes_in_flight} is below "
                f"max_body_bytes {self.max_body_bytes}, so the largest body could never be "
                "received: raise it or lower max_body_bytes"
            )
        for name in (
            "grace_period",
            "timeout",
            "stuck_after",
            "max_requests",
            "max_requests_jitter",
            "max_worker_memory",
        ):
            if getattr(self, name) < 0:
                raise SettingsError(f"{name}: must not be negative, got {getattr(self, name)}")
        if self.supervisor == "off" and self.workers > 1:
            raise SettingsError(
                f"supervisor: off serves from one process, but workers is {self.workers}"
            )
        if self.supervisor == "off" and (self.max_requests or self.max_worker_memory):
            raise SettingsError(
                "supervisor: off leaves nothing to replace a recycled worker: drop "
                "max_requests and max_worker_memory, or turn the supervisor on"
            )
        if self.auth_secret and len(self.auth_secret) < 16:
            raise SettingsError("auth_secret: at least 16 characters")
        if self.auth_token_ttl <= 0:
            raise SettingsError("auth_token_ttl: must be above 0 seconds")
        if self.auth_secret_file:
            if self.auth_secret:
                raise SettingsError("auth_secret and auth_secret_file: give one of them, not both")
            self.signing_key()
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
        if not 0 <= self.metrics_port <= 65535:
            raise SettingsError(f"metrics_port: 0 (none) or a port, got {self.metrics_port}")
        if self.metrics_port and self.metrics_port in (self.http_port, self.grpc_port):
            raise SettingsError(
                f"metrics_port {self.metrics_port} is also the REST or gRPC port: pick another"
            )
        if not self.metrics_endpoint.startswith("/"):
            raise SettingsError(
                f"metrics_endpoint: a path starting with /, got {self.metrics_endpoint!r}"
            )
        if self.model_memory_budget < 0:
            raise SettingsError(
                f"model_memory_budget: must not be negative, got {self.model_memory_budget}"
            )
        if self.v2_invalid_status not in (400, 422):
            raise SettingsError(f"v2_invalid_status: 400 or 422, got {self.v2_invalid_status}")
        if not 0 <= self.trace_sampler_arg <= 1:
            raise SettingsError(
                f"trace_sampler_arg: a ratio from 0 to 1, got {self.trace_sampler_arg}"
            )
        if self.otlp_timeout <= 0:
            raise SettingsError(f"otlp_timeout: must be above 0, got {self.otlp_timeout}")
        if self.log_repeats_every < 0:
            raise SettingsError("log_repeats_every: must be 0 (off) or more seconds")
        self.constructor_parameters()
        return self

    def constructor_parameters(self) -> dict[str, Any]:
        """``parameters`` as keyword arguments, typed as the Seldon wrapper types them."""
        return parse_parameters(self.parameters) if self.parameters else {}

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

    def to_core(self, serving: ModelServing | None = None, **given: Any) -> Any:
        """The Rust core's config (``inferwire._core.CoreConfig``), built once: every key
        is a keyword argument there, so a missing or misspelt one is a TypeError. The
        runner settings are ``serving``'s when given (a repository's default model), and
        ``given`` supplies what the server works out (the model's name and image)."""
        from . import _core

        d = self.model_dump(exclude=PYTHON_ONLY)
        d.update((serving or self).runner())
        # The core's filter (tracing) spells it "warn"; "warning" would be ignored with a
        # complaint on stderr at every start.
        d["log_level"] = "warn" if self.log_level == "warning" else self.log_level
        d["supervised"] = self.supervisor == "on"
        d["max_requests_jitter"] = self.max_requests_jitter or self.max_requests // 10
        d["max_worker_memory"] = self.max_worker_memory * 1024 * 1024
        # Made once here, before workers fork, so every worker accepts the same logins.
        d["auth_key"] = self.signing_key() or secrets.token_hex(32)
        d.setdefault("repository_sync_dir", "")
        d.setdefault("shared_memory_dir", "")
        d.update(given)
        return _core.CoreConfig(**d)


# Settings the Python side acts on; the rest cross to the core (Settings.to_core).
PYTHON_ONLY = {
    "parameters",
    "graph_predictor",
    "graph_nodes",
    "raw_arrays",
    "service_type",
    "model_repository",
    "load_models_at_startup",
    "default_model",
    "runtime",
    "output_names",
    "log_repeats_every",
    "auth_secret",
    "auth_secret_file",
    "supervisor",
}


def parse_parameters(text: str) -> dict[str, Any]:
    """Seldon's constructor parameters (a JSON list of {name, value, type}) as keyword
    arguments, typed as the Seldon wrapper types them."""
    try:
        items = json.loads(text)
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
            raise SettingsError(f"parameters[{i}].type: {kind} is not one of {', '.join(kinds)}")
        try:
            out[p["name"]] = kinds[kind](p["value"])
        except (TypeError, ValueError) as e:
            raise SettingsError(f"parameters[{i}].value: {e}") from e
    return out


def _bool(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


# -- what the schema says about each field -------------------------------------------------


def env_name(name: str) -> str:
    return ENV_PREFIX + name.upper()


def flag_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def seldon_env(field: FieldInfo) -> list[str]:
    extra = field.json_schema_extra
    return list(extra["seldon_env"]) if isinstance(extra, dict) else []  # type: ignore[arg-type]


def env_names(name: str) -> list[str]:
    """The variables that set ``name``, the first found winning."""
    return [env_name(name), *seldon_env(Settings.model_fields[name])]


def choices(field: FieldInfo) -> tuple[str, ...]:
    """A setting's allowed values, when it has a fixed set."""
    kind = field.annotation
    return tuple(get_args(kind)) if get_origin(kind) is Literal else ()


def type_name(field: FieldInfo) -> str:
    kind = field.annotation
    return getattr(kind, "__name__", "str") if not choices(field) else "str"


def shown_default(field: FieldInfo) -> str:
    """The default as --help and the docs show it: in words where the empty value stands
    for something the server works out, else its Python literal."""
    extra = field.json_schema_extra
    words = extra.get("shown") if isinstance(extra, dict) else None
    return str(words) if words else repr(field.default)


def _or(values: tuple[str, ...]) -> str:
    return f"{', '.join(values[:-1])} or {values[-1]}"


def unknown(key: str, known: list[str]) -> str:
    """The message for a key a file does not know: the close match, then every key."""
    near = difflib.get_close_matches(key, known, n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return f"unknown setting {key!r}{hint} (known: {', '.join(sorted(known))})"


# -- sources (pydantic-settings), in order of precedence after the flags ----------------------


@dataclass(frozen=True)
class _Reading:
    """A from_sources call under way: the settings file's values, and where a setting's
    value came from (for messages)."""

    from_file: dict[str, Any]
    where: Callable[[str], str]


# None outside from_sources: Settings(...) then reads its arguments only.
_READING: ContextVar[_Reading | None] = ContextVar("reading", default=None)


def _from_file() -> dict[str, Any]:
    reading = _READING.get()
    return reading.from_file if reading else {}


class SeldonEnv(PydanticBaseSettingsSource):
    """Other servers' variables for a setting: the Seldon Python wrapper's
    (``PREDICTIVE_UNIT_*``) and OpenTelemetry's (``OTEL_*``), below ``INFERWIRE_*``."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        for var in seldon_env(field):
            if os.environ.get(var, "") != "":
                return os.environ[var], var, False
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        out = {}
        for name, field in self.settings_cls.model_fields.items():
            value, _, _ = self.get_field_value(field, name)
            if value is not None:
                out[name] = value
        return out


class SettingsFile(PydanticBaseSettingsSource):
    """The ``--settings`` file (read by ``from_sources``), below every variable."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return _from_file().get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(_from_file())


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
            # YAML is a superset of JSON: one parser for both.
            from .bounded_yaml import load_yaml

            data = load_yaml(text, f"settings file {path}")
    except SettingsError:
        raise
    except Exception as e:
        raise SettingsError(f"settings file {path}: not valid YAML/JSON: {e}") from e
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsError(f"settings file {path}: must be a mapping of setting names to values")
    known = list(Settings.model_fields)
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in Settings.model_fields:
            raise SettingsError(f"settings file {path}: {unknown(str(key), known)}")
        if name == "parameters" and not isinstance(value, str):
            value = json.dumps(value)
        out[name] = value
    return out


def from_sources(
    flags: dict[str, Any],
    settings_file: str | None = None,
    base: dict[str, Any] | None = None,
    base_source: str = "",
) -> Settings:
    """Flags (non-None), then INFERWIRE_* env vars, then Seldon's env vars, then the
    settings file (``settings_file`` or ``$INFERWIRE_SETTINGS``), then ``base`` (what
    ``base_source``, MLServer's settings, gave), then defaults."""
    path = settings_file or os.environ.get(SETTINGS_ENV) or None
    file_values = read_file(path) if path else {}
    from_file = {**(base or {}), **file_values}
    given = {k: v for k, v in flags.items() if v is not None}

    def where(name: str) -> str:
        """Which source gave ``name`` its value (for a message about it)."""
        if name in given:
            return flag_name(name)
        for var in env_names(name):
            if os.environ.get(var, "") != "":
                return var
        if name in file_values:
            return f"{name} in {path}"
        return f"{name} from {base_source}" if name in (base or {}) else name

    token = _READING.set(_Reading(from_file, where))
    try:
        return Settings(**given)
    finally:
        _READING.reset(token)


def explain(e: ValidationError, schema: type[BaseModel] | None = None) -> SettingsError:
    """pydantic's first complaint, worded as the rest of inferwire's messages."""
    fields = (schema or Settings).model_fields
    err = e.errors()[0]
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, SettingsError):  # a check of ours, already worded
        return cause
    name = str(err["loc"][0]) if err["loc"] else ""
    field = fields.get(name)
    if field is None:
        return SettingsError(unknown(name, list(fields)))
    value = err.get("input")
    allowed = choices(field)
    if allowed:
        return SettingsError(f"{name}: {value!r} is not {_or(allowed)}")
    reading = _READING.get()
    where = reading.where(name) if reading else name
    if field.annotation is bool:
        return SettingsError(f"{where}: {value!r} is not true or false")
    return SettingsError(f"{where}: {value!r} is not a valid {type_name(field)}")


def flag_help(name: str) -> str:
    """A setting's --help text: its meaning, default and variables."""
    field = Settings.model_fields[name]
    allowed = choices(field)
    one_of = (
        f"one of {', '.join(allowed)}; "
        if allowed and _or(allowed) not in (field.description or "")
        else ""
    )
    return (
        f"{field.description} ({one_of}default: {shown_default(field)}; "
        f"env: {', '.join(env_names(name))})"
    )


def markdown_table() -> str:
    """The settings reference table (docs/reference/configuration.md embeds it; a test
    checks the two agree)."""
    rows = [
        "| flag | environment | default | per model | meaning |",
        "|---|---|---|---|---|",
    ]
    for name, field in Settings.model_fields.items():
        envs = ", ".join(f"`{e}`" for e in env_names(name))
        extra = field.json_schema_extra
        words = extra.get("shown") if isinstance(extra, dict) else None
        default = str(words) if words else f"`{field.default!r}`"
        # A model in a repository may set it in its model-settings file.
        per_model = "yes" if name in ModelServing.model_fields else ""
        rows.append(
            f"| `{flag_name(name)}` | {envs} | {default} | {per_model} | {field.description} |"
        )
    return "\n".join(rows) + "\n"
