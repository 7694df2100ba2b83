"""MLServer's settings, read as MLServer reads them: a folder's ``settings.json`` (the
server's) and its models' ``model-settings.json`` files, and the ``MLSERVER_*`` and
``MLSERVER_MODEL_*`` variables KServe's ServingRuntime sets. ``inferwire start FOLDER`` is
``mlserver start FOLDER``: each key becomes inferwire's setting of the same meaning, and a
key with no meaning here is accepted with one warning naming it (``KEYS`` says which).

A model-settings file is MLServer's when it names one of MLServer's runtimes, or a dotted
``module.Class`` with MLServer's keys (``parameters.uri``/``extra``/..., ``max_batch_time``,
``inputs``, ...): then ``parameters`` are MLServer's ``ModelParameters`` and the model's
constructor arguments are ``parameters.extra``, as in MLServer."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SettingsError

log = logging.getLogger("inferwire")

SERVER_FILE = "settings.json"

# What inferwire does with each key MLServer documents: "mapped" keys become the setting
# named after the colon; "accepted" ones are honoured as MLServer does; "ignored" ones are
# warned about once. Read by the docs' table (docs/guides/migrating-from-mlserver.md) and
# its test.
SERVER_KEYS: dict[str, str] = {
    "debug": "ignored: inferwire logs at info (--log-level)",
    "parallel_workers": "mapped: workers (0 and 1 both serve from one process)",
    "parallel_workers_timeout": "ignored: workers stop within grace_period",
    "environments_dir": "ignored: models run in the server's own Python environment",
    "model_repository_implementation": "ignored: the repository is always the folder",
    "model_repository_root": "ignored: the folder given to start is the repository, as "
    "mlserver start's folder is",
    "model_repository_implementation_args": "ignored: the repository is always the folder",
    "load_models_at_startup": "mapped: load_models_at_startup",
    "server_name": "mapped: server_name (MLServer's default, mlserver; also the CloudEvents "
    "source)",
    "server_version": "mapped: server_version (MLServer's default: the installed mlserver's "
    "version, else 1.7.1, the release inferwire start follows)",
    "extensions": "mapped: server_extensions (MLServer's default, none)",
    "host": "mapped: host",
    "http_port": "mapped: http_port (MLServer's default, 8080)",
    "root_path": "ignored: routes are served at the root",
    "grpc_port": "mapped: grpc_port (MLServer's default, 8081)",
    "grpc_max_message_length": "mapped: max_body_bytes (the larger of it and the default)",
    "cors_settings": "mapped: cors_allow_origins, cors_allow_methods, cors_allow_headers, "
    "cors_allow_credentials, cors_expose_headers and cors_max_age (allow_origin_regex is "
    "ignored, with a warning)",
    "metrics_endpoint": "mapped: metrics_endpoint (null: no metrics port, as in MLServer)",
    "metrics_port": "mapped: metrics_port (MLServer's default, 8082)",
    "metrics_rest_server_prefix": "ignored: REST metrics keep inferwire's names (see the table)",
    "metrics_dir": "ignored: workers share their metrics in memory",
    "use_structured_logging": "mapped: access_log json when true",
    "logging_settings": "ignored: --log-level and --access-log",
    "kafka_enabled": "ignored: no Kafka server (a warning when true)",
    "kafka_servers": "ignored: no Kafka server",
    "kafka_topic_input": "ignored: no Kafka server",
    "kafka_topic_output": "ignored: no Kafka server",
    "tracing_server": "mapped: otlp_traces_endpoint, with otlp_protocol grpc (host:port of "
    "an OTLP gRPC collector, as MLServer sends its spans)",
    "cache_enabled": "ignored: no response cache",
    "cache_size": "ignored: no response cache",
    "gzip_enabled": "ignored: replies are not compressed",
}

MODEL_KEYS: dict[str, str] = {
    "name": "mapped: name (default: the folder's name)",
    "implementation": "mapped: an MLServer runtime (below) or a module.Class",
    "platform": "accepted: the model's metadata",
    "versions": "accepted: the model's metadata",
    "inputs": "accepted: the model's metadata; an input's parameters.content_type is its default",
    "outputs": "accepted: the model's metadata",
    "parallel_workers": "ignored: deprecated in MLServer; the server's workers serve every model",
    "warm_workers": "ignored: deprecated in MLServer; models load before serving",
    "max_batch_size": "mapped: max_batch_size (0 and 1: no batching)",
    "max_batch_time": "mapped: max_batch_delay, in seconds (when max_batch_size is above 1)",
    "parameters": "accepted: MLServer's ModelParameters (below)",
    "cache_enabled": "ignored: no response cache",
}

PARAMETER_KEYS: dict[str, str] = {
    "uri": "accepted: the model file or folder, relative to the settings file",
    "version": "mapped: version",
    "environment_path": "ignored: models run in the server's own Python environment",
    "environment_tarball": "ignored: models run in the server's own Python environment",
    "inference_pool_gid": "ignored: one pool of workers serves every model",
    "autogenerate_inference_pool_gid": "ignored: one pool of workers serves every model",
    "format": "ignored: the runtime reads the model file by its library",
    "content_type": "accepted: the request's content type when it gives none (np, pd, ...)",
    "extra": "accepted: the runtime's options (predict_fn) or a custom class's constructor "
    "arguments",
}

# Keys no inferwire model-settings file has: their presence makes a file MLServer's.
_MLSERVER_ONLY = {"platform", "versions", "inputs", "outputs", "max_batch_time"} | {
    "parallel_workers",
    "warm_workers",
    "cache_enabled",
}


@dataclass(frozen=True)
class Runtime:
    """One of MLServer's built-in runtimes, served by inferwire's own: the library, the
    file names MLServer looks for in a model folder, and the outputs it answers."""

    library: str
    wellknown: tuple[str, ...]
    outputs: tuple[str, ...]


RUNTIMES: dict[str, Runtime] = {
    "mlserver_sklearn.SKLearnModel": Runtime(
        "sklearn",
        ("model.joblib", "model.pickle", "model.pkl"),
        ("predict", "predict_proba", "transform"),
    ),
    "mlserver_xgboost.XGBoostModel": Runtime(
        "xgboost", ("model.bst", "model.json", "model.ubj"), ("predict", "predict_proba")
    ),
    "mlserver_lightgbm.LightGBMModel": Runtime("lightgbm", ("model.bst",), ("predict",)),
}


@dataclass
class MLServerModel:
    """What an MLServer model-settings file says beyond inferwire's own settings: where
    the model is, its runtime's options, its metadata, its default content types."""

    implementation: str
    folder: Path
    uri: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    content_type: str = ""
    input_content_types: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    # The settings as MLServer's own ModelSettings read them (an MLModel subclass gets
    # them), and the file they came from ("" for the environment's model).
    raw: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    @property
    def runtime(self) -> Runtime | None:
        return RUNTIMES.get(self.implementation)

    def model_path(self) -> Path:
        """The model's file (or folder), found as MLServer's ``get_model_uri`` finds it:
        the uri relative to the settings file's folder, and in a folder the runtime's
        well-known file names."""
        uri = self.uri or "."
        if "://" in uri and not uri.startswith("file://"):
            raise SettingsError(
                f"{self.folder}: parameters.uri {uri!r}: only local paths are served (KServe's "
                "storage initializer downloads the model to /mnt/models)"
            )
        path = Path(uri.removeprefix("file://"))
        if not path.is_absolute():
            path = self.folder / path
        if path.is_file():
            return path
        if path.is_dir():
            runtime = self.runtime
            for name in runtime.wellknown if runtime else ():
                if (path / name).is_file():
                    return path / name
            return path
        raise SettingsError(f"{self.folder}: parameters.uri: {path} is neither a file nor a folder")


def is_mlserver(data: dict[str, Any]) -> bool:
    """Whether a model-settings mapping is written as MLServer writes it."""
    impl = data.get("implementation")
    if impl in RUNTIMES or impl == "mlserver_mlflow.MLflowRuntime" or set(data) & _MLSERVER_ONLY:
        return True
    if impl is None:
        return bool(os.environ.get("MLSERVER_MODEL_IMPLEMENTATION"))
    params = data.get("parameters")
    if isinstance(params, dict) and params and set(params) <= set(PARAMETER_KEYS):
        return ":" not in str(impl) and not str(impl).endswith(".py")
    return False


# What has been warned about: a settings file is read again at every load and index,
# and each key is worth one warning, not one per read.
_WARNED: set[tuple[str, str]] = set()


def _once(where: str, key: str, message: str) -> None:
    if (where, key) not in _WARNED:
        _WARNED.add((where, key))
        log.warning("%s: %s", where, message)


def _warn(where: str, key: str, why: str) -> None:
    _once(where, key, f"{key} has no effect in inferwire ({why.split(': ', 1)[-1]})")


def _json_env(name: str) -> Any:
    text = os.environ[name]
    try:
        return json.loads(text)
    except ValueError:
        return text


def model_env() -> dict[str, Any]:
    """An MLServer model-settings mapping from ``MLSERVER_MODEL_*`` (MLServer's model from
    the environment, which KServe's runtime describes): model keys and, as in MLServer's
    ``ModelParameters``, the parameters' keys under the same prefix."""
    out: dict[str, Any] = {}
    whole = (
        _json_env("MLSERVER_MODEL_PARAMETERS")
        if os.environ.get("MLSERVER_MODEL_PARAMETERS")
        else {}
    )
    params: dict[str, Any] = dict(whole) if isinstance(whole, dict) else {}
    for key in MODEL_KEYS:
        var = f"MLSERVER_MODEL_{key.upper()}"
        if os.environ.get(var, "") != "" and key != "parameters":
            listed = key in ("versions", "inputs", "outputs")
            out[key] = _json_env(var) if listed else os.environ[var]
    for key in PARAMETER_KEYS:
        var = f"MLSERVER_MODEL_{key.upper()}"
        if os.environ.get(var, "") != "":
            params[key] = _json_env(var) if key == "extra" else os.environ[var]
    if params:
        out["parameters"] = params
    return out


def _number(where: str, key: str, value: Any, kind: type) -> Any:
    if isinstance(value, str):
        try:
            value = kind(value)
        except ValueError:
            raise SettingsError(f"{where}: {key}: {value!r} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise SettingsError(f"{where}: {key}: {value!r} is not a number >= 0")
    if kind is int and isinstance(value, float):
        if not value.is_integer():
            raise SettingsError(f"{where}: {key}: {value!r} is not an integer")
        value = int(value)
    return value


def model_settings(
    data: dict[str, Any], folder: Path, where: str
) -> tuple[dict[str, Any], MLServerModel]:
    """An MLServer model-settings mapping as inferwire's model settings (the keys of
    ``inferwire.repository.ModelSettings``) and what else it says. Keys from
    ``MLSERVER_MODEL_*`` fill what the file leaves out, as in MLServer."""
    env = model_env()
    data = {**{k: v for k, v in env.items() if k != "parameters"}, **data}
    params = data.get("parameters") or {}
    if not isinstance(params, dict):
        raise SettingsError(f"{where}: parameters must be a mapping (MLServer's ModelParameters)")
    params = {**env.get("parameters", {}), **params}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key not in MODEL_KEYS:
            _once(where, key, f"{key} is not one of MLServer's model settings; ignored")
        elif MODEL_KEYS[key].startswith("ignored") and value not in (None, False, [], {}):
            _warn(where, key, MODEL_KEYS[key])
    for key, value in params.items():
        if key not in PARAMETER_KEYS:
            _once(where, f"parameters.{key}", f"parameters.{key} is not one of MLServer's; ignored")
        elif PARAMETER_KEYS[key].startswith("ignored") and value not in (None, False, ""):
            _warn(where, f"parameters.{key}", PARAMETER_KEYS[key])
    impl = data.get("implementation")
    if not impl or not isinstance(impl, str):
        raise SettingsError(
            f"{where}: implementation is required (an MLServer runtime such as "
            "mlserver_sklearn.SKLearnModel, or module.Class), or MLSERVER_MODEL_IMPLEMENTATION"
        )
    name = data.get("name") or folder.name
    if not isinstance(name, str):
        raise SettingsError(f"{where}: name must be a string")
    out["name"] = name
    out["implementation"] = impl
    version = params.get("version")
    if version not in (None, ""):
        out["version"] = str(version)
    batch = _number(where, "max_batch_size", data.get("max_batch_size", 0), int)
    out["max_batch_size"] = max(batch, 1)
    delay = _number(where, "max_batch_time", data.get("max_batch_time", 0.0), float)
    if batch > 1:
        out["max_batch_delay"] = float(delay)
    extra = params.get("extra") or {}
    if not isinstance(extra, dict):
        raise SettingsError(f"{where}: parameters.extra must be a mapping")
    metadata: dict[str, Any] = {}
    for key in ("platform", "versions", "inputs", "outputs"):
        if data.get(key):
            metadata[key] = data[key]
    for key in ("inputs", "outputs"):
        items = metadata.get(key, [])
        if not isinstance(items, list) or not all(
            isinstance(i, dict) and isinstance(i.get("name"), str) for i in items
        ):
            raise SettingsError(f"{where}: {key} must be a list of {{name, datatype, shape}}")
    inputs = {
        i["name"]: i["parameters"]["content_type"]
        for i in metadata.get("inputs", [])
        if isinstance(i.get("parameters"), dict) and i["parameters"].get("content_type")
    }
    content_type = params.get("content_type") or ""
    if not isinstance(content_type, str):
        raise SettingsError(f"{where}: parameters.content_type must be a string")
    uri = params.get("uri") or ""
    if not isinstance(uri, str):
        raise SettingsError(f"{where}: parameters.uri must be a string")
    raw = {**data, "parameters": params}
    source = where if Path(where).is_file() else ""
    ml = MLServerModel(impl, folder, uri, dict(extra), content_type, inputs, metadata, raw, source)
    if ml.runtime is None:
        out["parameters"] = dict(extra)
    else:
        wanted = extra.get("predict_fn", "predict")
        if wanted not in ml.runtime.outputs:
            raise SettingsError(
                f"{where}: parameters.extra.predict_fn: {wanted!r} is not one of "
                f"{', '.join(ml.runtime.outputs)}"
            )
    return out, ml


def _message_length(where: str, value: Any) -> dict[str, Any]:
    """MLServer's gRPC message limit as inferwire's body limits: only ever raised (-1,
    MLServer's "no limit", keeps inferwire's, which bound every request)."""
    from ..settings import Settings

    try:
        n = int(value) if value is not None else 0
    except (TypeError, ValueError):
        raise SettingsError(
            f"{where}: grpc_max_message_length: {value!r} is not a number"
        ) from None
    body = Settings.model_fields["max_body_bytes"].default
    in_flight = Settings.model_fields["max_body_bytes_in_flight"].default
    if n <= body:
        return {}
    return {"max_body_bytes": n, "max_body_bytes_in_flight": max(in_flight, n)}


# The MLServer release whose behaviour inferwire start follows.
MLSERVER_VERSION = "1.7.1"


def mlserver_version() -> str:
    """What MLServer's ``/v2`` says of its version: the installed mlserver's, else the
    release inferwire follows."""
    from importlib import metadata

    try:
        return metadata.version("mlserver")
    except metadata.PackageNotFoundError:
        return MLSERVER_VERSION


def _cors(where: str, value: Any) -> dict[str, Any]:
    """MLServer's ``cors_settings`` as inferwire's ``cors_*`` settings."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SettingsError(f"{where}: cors_settings: must be a mapping, got {value!r}")
    out: dict[str, Any] = {}
    for key, setting in (
        ("allow_origins", "cors_allow_origins"),
        ("allow_methods", "cors_allow_methods"),
        ("allow_headers", "cors_allow_headers"),
        ("expose_headers", "cors_expose_headers"),
    ):
        items = value.get(key)
        if items is None:
            continue
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise SettingsError(f"{where}: cors_settings.{key}: must be a list of strings")
        out[setting] = ",".join(items)
    if value.get("allow_credentials") is not None:
        out["cors_allow_credentials"] = bool(value["allow_credentials"])
    if value.get("max_age") is not None:
        out["cors_max_age"] = _number(where, "cors_settings.max_age", value["max_age"], int)
    if value.get("allow_origin_regex"):
        _once(
            where,
            "allow_origin_regex",
            "cors_settings.allow_origin_regex is not taken; list the origins in allow_origins",
        )
    return out


def server_settings(folder: Path) -> dict[str, Any]:
    """inferwire's settings from ``FOLDER/settings.json`` over the ``MLSERVER_*``
    variables (MLServer's file wins over its variables), with MLServer's defaults."""
    data: dict[str, Any] = {}
    for key in SERVER_KEYS:
        var = f"MLSERVER_{key.upper()}"
        if os.environ.get(var, "") != "":
            structured = key in ("cors_settings", "extensions")
            data[key] = _json_env(var) if structured else os.environ[var]
    path = folder / SERVER_FILE
    if path.is_file():
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise SettingsError(f"{path}: not valid JSON: {e}") from e
        if not isinstance(found, dict):
            raise SettingsError(f"{path}: must be a mapping of settings")
        data.update(found)
    where = str(path) if path.is_file() else "MLSERVER_* variables"
    out: dict[str, Any] = {
        "http_port": 8080,
        "grpc_port": 8081,
        "metrics_port": 8082,
        "metrics_endpoint": "/metrics",
        # MLServer's answer to a request that does not validate (FastAPI's), and its
        # dialect where it differs from Triton's (messages, ids, headers, metadata).
        "v2_invalid_status": 422,
        "v2_dialect": "mlserver",
        "grpc_stream_reply": "mlserver",
        "server_name": "mlserver",
        "server_version": mlserver_version(),
        "server_extensions": "",
        "model_repository": str(folder),
    }
    for key, value in data.items():
        how = SERVER_KEYS.get(key)
        if how is None:
            _once(where, key, f"{key} is not one of MLServer's settings; ignored")
        elif how.startswith("ignored"):
            if value not in (None, False, [], {}, "") and not (key == "debug"):
                _warn(where, key, how)
        elif key in ("host", "http_port", "grpc_port", "metrics_port", "metrics_endpoint"):
            out[key] = value
        elif key in ("server_name", "server_version"):
            out[key] = str(value)
        elif key == "cors_settings":
            out.update(_cors(where, value))
        elif key == "extensions":
            if not isinstance(value, list) or not all(isinstance(e, str) for e in value):
                raise SettingsError(f"{where}: extensions: must be a list of names, got {value!r}")
            out["server_extensions"] = ",".join(value)
        elif key == "parallel_workers":
            out["workers"] = max(_number(where, key, value, int), 1)
        elif key == "load_models_at_startup":
            out["load_models_at_startup"] = value
        elif key == "use_structured_logging":
            if str(value).lower() in ("1", "true", "yes", "on"):
                out["access_log"] = "json"
        elif key == "grpc_max_message_length":
            out.update(_message_length(where, value))
        elif key == "tracing_server":
            if value:
                out["otlp_traces_endpoint"] = str(value)
                out["otlp_protocol"] = "grpc"
        elif key == "model_repository_root":
            pass  # the folder given to `start` is the repository, as in MLServer
    if "metrics_endpoint" in data and data["metrics_endpoint"] is None:
        # MLServer's way to turn its metrics server off: no metrics-only port (the REST
        # port's /metrics stays, behind the same access as before).
        out["metrics_port"] = 0
        out["metrics_endpoint"] = "/metrics"
    if data.get("kafka_enabled") in (True, "true", "True", "1"):
        log.warning("%s: kafka_enabled: inferwire serves no Kafka topics", where)
    return out


def markdown_table() -> str:
    """Every MLServer setting and what inferwire does with it (the migration guide's
    table, checked against this module by tests/docs/test_docs.py)."""
    rows = ["| MLServer setting | variable | inferwire |", "|---|---|---|"]

    def add(shown: str, var: str, how: str) -> None:
        status, _, what = how.partition(": ")
        rows.append(f"| {shown} | `{var}` | **{status}**: {what} |")

    for key, how in SERVER_KEYS.items():
        add(f"`{key}` (settings.json)", f"MLSERVER_{key.upper()}", how)
    for key, how in MODEL_KEYS.items():
        add(f"`{key}` (model-settings.json)", f"MLSERVER_MODEL_{key.upper()}", how)
    for key, how in PARAMETER_KEYS.items():
        add(f"`parameters.{key}`", f"MLSERVER_MODEL_{key.upper()}", how)
    return "\n".join(rows) + "\n"
