"""TorchServe's ``config.properties``: the file read with Java's properties rules (as
TorchServe's frontend reads it), its ``$$VAR$$`` references, the ``TS_*`` variables that
override it under ``enable_envvars_config=true``, and ``KEYS``: every key TorchServe 0.12
reads, with what inferwire does with it (also the migration guide's table).

Each key is ``honoured`` (mapped to the inferwire setting named), ``dialect`` (kept in the
start configuration for the TorchServe dialect, which acts on it), ``accepted`` (read, with
one warning saying why it changes nothing here) or ``refused`` (an error saying what to do
instead). A key TorchServe does not know is ignored, as TorchServe ignores it, with a
warning (KServe's sample file carries ``NUM_WORKERS``)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import SettingsError

# Bounds: a properties file is a page of settings; the `models` JSON makes it longer.
MAX_FILE_BYTES = 1024 * 1024
MAX_KEYS = 4096

STATUSES = ("honoured", "dialect", "accepted", "refused")

# What inferwire does with each key TorchServe 0.12 reads (ConfigManager and ts/model_server.py).
KEYS: dict[str, str] = {
    # -- listeners
    "inference_address": "honoured: host, http_port and TLS (https); default http://127.0.0.1:8080",
    "management_address": "dialect: the management API's listener (default "
    "http://127.0.0.1:8081); the same address as inference_address serves both on one port",
    "metrics_address": "honoured: metrics_port, path /metrics (default http://127.0.0.1:8082)",
    "grpc_inference_address": "honoured: where it is inference_address's host (inferwire "
    "listens on one address; another is warned about); default 127.0.0.1",
    "grpc_inference_port": "honoured: grpc_port (default 7070)",
    "grpc_management_address": "dialect: the gRPC management service's address (default 127.0.0.1)",
    "grpc_management_port": "dialect: the gRPC management service's port (default 7071)",
    "grpc_inference_max_connection_age_ms": "accepted: connections are not aged out",
    "grpc_management_max_connection_age_ms": "accepted: connections are not aged out",
    "grpc_inference_max_connection_age_grace_ms": "accepted: connections are not aged out",
    "grpc_management_max_connection_age_grace_ms": "accepted: connections are not aged out",
    "enable_grpc_ssl": "honoured: TLS (tls_cert, tls_key), which inferwire serves on every port",
    "certificate_file": "honoured: tls_cert, when an address is https or enable_grpc_ssl=true",
    "private_key_file": "honoured: tls_key, with certificate_file",
    "keystore": "refused: a Java keystore; convert it to PEM (openssl pkcs12 -in FILE -nodes) "
    "and give certificate_file and private_key_file",
    "keystore_pass": "accepted: no keystore is read",
    "keystore_type": "accepted: no keystore is read",
    "use_native_io": "accepted: Netty's transport",
    "io_ratio": "accepted: Netty's tuning",
    "number_of_netty_threads": "honoured: io_threads (0: inferwire's default)",
    "netty_client_threads": "accepted: handlers run in the server's process, with no "
    "frontend-to-worker sockets",
    # -- models
    "model_store": "dialect: the folder archives are loaded from (--model-store)",
    "load_models": "dialect: the models loaded at start (--models): all, or [name=]archive "
    "(or an http(s) URL that allowed_urls allows, downloaded at start) separated by commas",
    "models": "dialect: each model version's settings (JSON), over its archive's "
    "model-config.yaml: batchSize and maxBatchDelay (the batches), minWorkers (handler "
    "instances); defaultVersion, marName, maxWorkers, responseTimeout read; others warned "
    "about",
    "model_snapshot": "dialect: the models a snapshot lists are loaded at start instead of "
    "load_models, with their settings as in models (KServe's file sets it)",
    "workflow_store": "accepted: workflows (.war) are not served",
    "default_workers_per_model": "honoured: workers, processes that each serve every model "
    "(default: the CPUs, as TorchServe)",
    "job_queue_size": "honoured: max_queue (default 100)",
    "max_request_size": "honoured: max_body_bytes, REST bodies and gRPC messages (default "
    "6553500 bytes)",
    "max_response_size": "dialect: a reply above it fails (default 6553500 bytes)",
    "default_response_timeout": "honoured: timeout and stuck_after, seconds (default 120)",
    "default_startup_timeout": "accepted: loading a model is not timed",
    "unregister_model_timeout": "dialect: seconds an unregister may take (default 120)",
    "decode_input_request": "dialect: JSON and text bodies decoded before the handler sees "
    "them (default true)",
    "limit_max_image_pixels": "dialect: the handlers' Pillow pixel limit (default true)",
    "default_service_handler": "dialect: the handler of an archive that names none",
    "service_envelope": "dialect: the envelope (json, body, kserve, kservev2) around a "
    "handler's input and output; kserve and kservev2 also serve KServe's protocol on 8080, "
    "and kservev2 KServe's V2 gRPC on 8081, as TorchServe's KServe image",
    "install_py_dep_per_model": "accepted: archives' requirements are not installed; install "
    "them in the server's environment",
    "blacklist_env_vars": "refused: handlers run in inferwire's process, which cannot hide "
    "variables from them; take secrets out of the server's environment instead",
    "number_of_gpu": "accepted: inferwire does not hand out GPUs; a handler picks its device",
    "ts_header_key_sequence_id": "dialect: the header naming a request's sequence",
    "ts_header_key_sequence_start": "dialect: the header starting a sequence",
    "ts_header_key_sequence_end": "dialect: the header ending a sequence",
    "ts_open_inference_protocol": "dialect: the open inference protocol on the inference port "
    "(also TS_OPEN_INFERENCE_PROTOCOL=oip)",
    # -- switches, security
    "enable_model_api": "dialect: registering and unregistering over the management API "
    "(default false)",
    "disable_token_authorization": "dialect: true turns token authorization off (default on: "
    "key_file.json)",
    "token_expiration_min": "dialect: minutes the inference and management keys stay valid "
    "(default 60)",
    "allowed_urls": "dialect: the URLs models may be registered from, regular expressions "
    "separated by commas (default any file or http(s) URL)",
    "use_env_allowed_urls": "honoured: TS_ALLOWED_URLS is read only when true",
    "enable_envvars_config": "honoured: TS_* variables override the file and the command line",
    "cors_allowed_origin": "honoured: cors_allow_origins",
    "cors_allowed_methods": "honoured: cors_allow_methods",
    "cors_allowed_headers": "honoured: cors_allow_headers",
    # -- metrics and logs
    "enable_metrics_api": "honoured: false serves no metrics port",
    "metrics_mode": "dialect: log or prometheus (TorchServe's metric names); legacy as prometheus",
    "metrics_format": "accepted: an older TorchServe's key; 0.12 reads metrics_mode",
    "metrics_config": "accepted: the dialect's metrics are TorchServe's default ones",
    "model_metrics_auto_detect": "accepted: every metric a handler records is on the "
    "metrics page, as with auto-detection on",
    "disable_system_metrics": "accepted: the host's CPU and memory metrics are always on the "
    "metrics page",
    "system_metrics_cmd": "accepted: inferwire collects no system metrics",
    "metric_time_interval": "accepted: inferwire collects no system metrics",
    "async_logging": "accepted: log4j's setting; logs go to stderr",
    "cpp_log_config": "accepted: no C++ backend",
    "debug": "honoured: one worker (workers=1) and log_level debug",
    # -- the JVM and TorchServe's own installation
    "vmargs": "accepted: no JVM",
    "prefer_direct_buffer": "accepted: no JVM",
    "plugins_path": "accepted: Java plugins are not loaded",
    "model_server_home": "accepted: no TorchServe installation is needed",
    "python": "accepted: handlers run in inferwire's Python",
    "initial_worker_port": "accepted: no worker ports",
    "initial_distribution_port": "accepted: no torchrun workers",
    "ipex_enable": "accepted: Intel Extension for PyTorch is not set up by the server",
    "ipex_gpu_enable": "accepted: Intel Extension for PyTorch is not set up by the server",
    "cpu_launcher_enable": "accepted: workers are not pinned to cores",
    "cpu_launcher_args": "accepted: workers are not pinned to cores",
    "version": "accepted: the version answered is TorchServe 0.12's",
}

# TorchServe reads a key from a TS_ variable when its Java constant is named TS_...; most
# are TS_ + the key in capitals, these not, and the keys below not at all.
_ENV_SPELLED = {
    "token_expiration_min": "TS_TOKEN_EXPIRATION_TIME_MIN",
    "ts_open_inference_protocol": "TS_OPEN_INFERENCE_PROTOCOL",
    "ts_header_key_sequence_id": "TS_HEADER_KEY_SEQUENCE_ID",
    "ts_header_key_sequence_start": "TS_HEADER_KEY_SEQUENCE_START",
    "ts_header_key_sequence_end": "TS_HEADER_KEY_SEQUENCE_END",
}
_FILE_ONLY = frozenset(
    {
        "enable_envvars_config",
        "use_env_allowed_urls",
        "models",
        "model_snapshot",
        "use_native_io",
        "io_ratio",
        "metric_time_interval",
        "system_metrics_cmd",
        "metrics_format",
        "version",
        "vmargs",
        "plugins_path",
        "python",
    }
)


def env_name(key: str) -> str | None:
    """The variable that sets ``key`` under ``enable_envvars_config=true``, or None."""
    if key not in KEYS or key in _FILE_ONLY:
        return None
    return _ENV_SPELLED.get(key, "TS_" + key.upper())


@dataclass(frozen=True)
class Entry:
    """A property's value, and where it came from (for messages): a file and line, a
    variable, or a command-line option."""

    value: str
    where: str


# -- Java's properties syntax ------------------------------------------------------------------

_BLANK = " \t\f"
_ESCAPED = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_NEWLINE = re.compile(r"\r\n|\r|\n")


def _unescape(raw: str, where: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 == len(raw):  # a lone backslash at the very end of the file: dropped
            break
        c = raw[i + 1]
        if c == "u":
            digits = raw[i + 2 : i + 6]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise SettingsError(
                    f"{where}: \\u{digits} is not a \\uXXXX escape (four hexadecimal digits)"
                )
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPED.get(c, c))  # any other escaped character stands for itself
        i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """A logical line's raw key and raw value: the key ends at the first unescaped ``=``,
    ``:`` or blank; blanks and one ``=`` or ``:`` separate it from the value."""
    i, n = 0, len(line)
    while i < n and line[i] not in "=:" + _BLANK:
        i += 2 if line[i] == "\\" else 1
    key = line[: min(i, n)]
    if i < n and line[i] in _BLANK:
        while i < n and line[i] in _BLANK:
            i += 1
        if i < n and line[i] in "=:":
            i += 1
    elif i < n:  # = or :
        i += 1
    while i < n and line[i] in _BLANK:
        i += 1
    return key, line[i:]


def _odd_backslashes(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def parse(text: str, source: str) -> dict[str, Entry]:
    """The properties in ``text`` (the file ``source``), as Java's ``Properties.load`` reads
    them: ``key=value``, ``key: value`` or ``key value``; ``#`` and ``!`` comment lines; a
    line ending in an odd number of backslashes continues on the next (whose leading blanks
    are dropped); escapes ``\\t \\n \\r \\f \\uXXXX``, any other escaped character standing
    for itself; the last of a repeated key wins. Values keep their trailing blanks, as
    Java's do; the typed readers strip them."""
    lines = _NEWLINE.split(text)
    out: dict[str, Entry] = {}
    i = 0
    while i < len(lines):
        number = i + 1
        line = lines[i].lstrip(_BLANK)
        i += 1
        if not line or line[0] in "#!":
            continue
        parts: list[str] = []
        while _odd_backslashes(line) and i < len(lines):
            parts.append(line[:-1])
            line = lines[i].lstrip(_BLANK)
            i += 1
        parts.append(line)
        where = f"{source} line {number}"
        raw_key, raw_value = _split("".join(parts))
        key = _unescape(raw_key, where)
        if key not in out and len(out) == MAX_KEYS:
            raise SettingsError(f"{where}: more than {MAX_KEYS} keys; is this a properties file?")
        out.pop(key, None)  # a repeated key takes its last place and line
        out[key] = Entry(_unescape(raw_value, where), where)
    return out


def read(path: str) -> dict[str, Entry]:
    """The properties file at ``path``, bounded in size. Java reads the file as Latin-1;
    UTF-8 is read as UTF-8 here (what an editor writes), anything else as Latin-1."""
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise SettingsError(
                f"{path}: {size} bytes; a properties file may hold at most {MAX_FILE_BYTES}"
            )
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise SettingsError(f"{path}: {e.strerror or e}") from e
    if len(data) > MAX_FILE_BYTES:  # it grew since the size was read
        raise SettingsError(f"{path}: a properties file may hold at most {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return parse(text, path)


# TorchServe replaces $$NAME$$ in the file's values with the variable NAME, always (not only
# under enable_envvars_config), and stops when the variable is not set.
_REFERENCE = re.compile(r"\$\$([^$]+[^$])\$\$")


def substitute(props: Mapping[str, Entry], environ: Mapping[str, str]) -> dict[str, Entry]:
    """``props`` with every ``$$NAME$$`` replaced by the variable ``NAME``."""

    def one(entry: Entry) -> Entry:
        def sub(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in environ:
                raise SettingsError(f"{entry.where}: $${name}$$: the variable {name} is not set")
            return environ[name]

        return Entry(_REFERENCE.sub(sub, entry.value), entry.where)

    return {key: one(entry) for key, entry in props.items()}


def from_env(props: Mapping[str, Entry], environ: Mapping[str, str]) -> dict[str, Entry]:
    """The ``TS_*`` variables' values over ``props``, when ``props`` says
    ``enable_envvars_config=true`` (TorchServe reads that switch from the file only);
    ``TS_ALLOWED_URLS`` only with ``use_env_allowed_urls=true`` as well, since it widens
    what registering may fetch."""
    out = dict(props)
    if not boolean(props, "enable_envvars_config", False):
        return out
    env_urls = _value(props, "use_env_allowed_urls", "false").strip().lower() == "true"
    for key in KEYS:
        var = env_name(key)
        if var is None or var not in environ:
            continue
        if key == "allowed_urls" and not env_urls:
            continue
        out[key] = Entry(environ[var], var)
    return out


# -- typed values ------------------------------------------------------------------------------


def _value(props: Mapping[str, Entry], key: str, default: str) -> str:
    entry = props.get(key)
    return entry.value if entry is not None else default


def where(props: Mapping[str, Entry], key: str) -> str:
    entry = props.get(key)
    return f"{key} ({entry.where})" if entry is not None else key


def text(props: Mapping[str, Entry], key: str, default: str = "") -> str:
    return _value(props, key, default).strip()


def boolean(props: Mapping[str, Entry], key: str, default: bool) -> bool:
    """true or false, in any case. Java takes anything but "true" as false; a misspelt
    value is an error here, so that "ture" does not leave a safety switch as it was."""
    entry = props.get(key)
    if entry is None:
        return default
    value = entry.value.strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise SettingsError(f"{where(props, key)}: {entry.value!r} is not true or false")


def integer(props: Mapping[str, Entry], key: str, default: int, low: int = 0) -> int:
    entry = props.get(key)
    if entry is None:
        return default
    try:
        value = int(entry.value.strip())
    except ValueError:
        raise SettingsError(f"{where(props, key)}: {entry.value!r} is not an integer") from None
    if value < low:
        raise SettingsError(f"{where(props, key)}: must be at least {low}, got {value}")
    return value


def number(props: Mapping[str, Entry], key: str, default: float) -> float:
    entry = props.get(key)
    if entry is None:
        return default
    try:
        value = float(entry.value.strip())
    except ValueError:
        raise SettingsError(f"{where(props, key)}: {entry.value!r} is not a number") from None
    if not value > 0:
        raise SettingsError(f"{where(props, key)}: must be above 0, got {entry.value.strip()}")
    return value


# -- addresses ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Listener:
    """Where one of TorchServe's servers listens: host, port, and TLS (https)."""

    host: str
    port: int
    tls: bool = False


# TorchServe's address form: http(s)://HOST[:PORT] (no IPv6 brackets), or unix:/PATH.
_ADDRESS = re.compile(r"(https?)://([^:^/]+)(?::([0-9]+))?|unix:(/.*)", re.IGNORECASE)
# The port an address without one gets, per listener, plain and https (TorchServe's).
_NO_PORT = {"inference": (80, 443), "management": (8081, 8444), "metrics": (8082, 8445)}


def address(props: Mapping[str, Entry], key: str, default: str) -> Listener:
    """``inference_address``, ``management_address`` or ``metrics_address`` as a listener."""
    value = text(props, key, default)
    m = _ADDRESS.fullmatch(value)
    if m is None:
        raise SettingsError(
            f"{where(props, key)}: {value!r} is not an address like http://127.0.0.1:8080 or "
            "https://0.0.0.0:8443"
        )
    if m.group(4) is not None:
        raise SettingsError(
            f"{where(props, key)}: {value!r}: inferwire listens on TCP ports, not unix sockets; "
            "give http://HOST:PORT"
        )
    tls = m.group(1).lower() == "https"
    if m.group(3) is None:
        port = _NO_PORT[key.removesuffix("_address")][tls]
    else:
        port = int(m.group(3))
        if port >= 65535:  # TorchServe's own bound
            raise SettingsError(f"{where(props, key)}: {port} is not a port (0-65534)")
    return Listener(m.group(2), port, tls)


def grpc_listener(props: Mapping[str, Entry], which: str, default_port: int) -> Listener:
    """``grpc_{which}_address`` (a bare host) and ``grpc_{which}_port``."""
    host_key, port_key = f"grpc_{which}_address", f"grpc_{which}_port"
    host = text(props, host_key, "127.0.0.1")
    if not host or any(c in host for c in "/ ") or "://" in host:
        raise SettingsError(f"{where(props, host_key)}: {host!r} is not a host (e.g. 0.0.0.0)")
    port = integer(props, port_key, default_port)
    if port > 65535:
        raise SettingsError(f"{where(props, port_key)}: {port} is not a port (0-65535)")
    return Listener(host, port, boolean(props, "enable_grpc_ssl", False))


def markdown_table() -> str:
    """Every config.properties key and what inferwire does with it: ``KEYS`` as the
    migration guide's table (tests/docs/test_docs.py checks the guide holds it)."""
    rows = [
        "| config.properties key | variable (enable_envvars_config=true) | inferwire |",
        "|---|---|---|",
    ]
    for key, how in KEYS.items():
        status, _, what = how.partition(": ")
        var = env_name(key)
        rows.append(
            f"| `{key}` | {f'`{var}`' if var else ''} | **{status}**{': ' + what if what else ''} |"
        )
    return "\n".join(rows) + "\n"
