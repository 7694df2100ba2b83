"""Server settings: one definition, read from flags, then ``INFERWIRE_*`` environment
variables, then the Seldon wrapper's variables, then defaults (in that order of
precedence). Every value is validated before the server starts."""

from __future__ import annotations

import json
import os
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
        "model name in replies' meta.requestPath (default: the class name)",
        "PREDICTIVE_UNIT_ID",
    )
    model_image: str = _opt(
        "",
        "value beside the name in meta.requestPath (Seldon puts the image there)",
        "PREDICTIVE_UNIT_IMAGE",
    )
    parameters: str = _opt(
        "",
        "constructor arguments, Seldon style: JSON list of {name, value, type}",
        "PREDICTIVE_UNIT_PARAMETERS",
    )
    raw_arrays: str = _opt(
        "numpy", "arrays in predict_raw's dict: numpy (no copy) or list (as Seldon's REST)"
    )
    max_body_bytes: int = _opt(64 * 1024 * 1024, "largest REST body or gRPC message, bytes")
    max_elements: int = _opt(64 * 1024 * 1024, "largest number of elements in one tensor")
    max_json_depth: int = _opt(32, "deepest nesting of ndarray lists")
    max_queue: int = _opt(1024, "requests waiting for the model before 503 / UNAVAILABLE")
    io_threads: int = _opt(2, "threads doing networking, parsing and encoding")
    grace_period: float = _opt(30.0, "seconds open requests may take to finish after SIGTERM")
    log_level: str = _opt("info", "debug, info, warning or error")

    def validate(self) -> Settings:
        for port in ("http_port", "grpc_port"):
            value = getattr(self, port)
            if not 0 <= value <= 65535:
                raise SettingsError(f"{port}: {value} is not a TCP port (0-65535)")
        if self.http_port == self.grpc_port and self.http_port != 0:
            raise SettingsError(
                f"http_port and grpc_port are both {self.http_port}: give them different ports"
            )
        for name in ("max_body_bytes", "max_elements", "max_json_depth", "max_queue", "io_threads"):
            if getattr(self, name) < 1:
                raise SettingsError(f"{name}: must be at least 1, got {getattr(self, name)}")
        if self.grace_period < 0:
            raise SettingsError(f"grace_period: must not be negative, got {self.grace_period}")
        if self.raw_arrays not in ("numpy", "list"):
            raise SettingsError(f"raw_arrays: {self.raw_arrays!r} is not numpy or list")
        if self.log_level.lower() not in ("debug", "info", "warning", "error"):
            raise SettingsError(
                f"log_level: {self.log_level!r} is not debug, info, warning or error"
            )
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

    def to_core(self) -> dict[str, Any]:
        """The dict the Rust core reads (it crosses the boundary once)."""
        d = asdict(self)
        d.pop("parameters")
        d.pop("raw_arrays")
        d["log_level"] = self.log_level.lower()
        return d


def _bool(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


def env_name(name: str) -> str:
    return "INFERWIRE_" + name.upper()


def from_sources(flags: dict[str, Any], environ: dict[str, str] | None = None) -> Settings:
    """Flags (non-None), then INFERWIRE_* env vars, then Seldon's env vars, then defaults."""
    environ = dict(os.environ) if environ is None else environ
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
        if raw is None:
            continue
        kind: type = type(f.default)
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
