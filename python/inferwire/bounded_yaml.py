"""YAML as every file the server reads is parsed: the safe loader, then bounds on the
file's size, its nesting and the values it stands for with aliases expanded (a few
anchors referring to each other otherwise stand for billions of values, and an alias to
its own parent for an endless one). Past a bound, a ``SettingsError`` whose message
starts with ``where`` (the file, and the key where there is one): at startup, exit 2.
Used for settings files, model-settings files, Seldon graph files, ``MODEL_METADATA``
and TorchServe's ``model-config.yaml``."""

from __future__ import annotations

from typing import Any

import yaml

from .errors import SettingsError

MAX_YAML_BYTES = 1024 * 1024
MAX_YAML_DEPTH = 32
MAX_YAML_NODES = 100_000


def load_yaml(text: str | bytes, where: str) -> Any:
    """One YAML document, refused past ``MAX_YAML_BYTES``, ``MAX_YAML_DEPTH`` levels or
    ``MAX_YAML_NODES`` values counted with aliases expanded."""
    return _load(text, where, lambda t: yaml.safe_load(t))


def load_yaml_all(text: str | bytes, where: str) -> list[Any]:
    """Every document of a multi-document file, bounded as ``load_yaml`` bounds one (the
    node count over all of them)."""
    docs: list[Any] = _load(text, where, lambda t: list(yaml.safe_load_all(t)))
    return docs


def _load(text: str | bytes, where: str, parse: Any) -> Any:
    if len(text) > MAX_YAML_BYTES:
        raise SettingsError(f"{where}: larger than {MAX_YAML_BYTES} bytes")
    try:
        data = parse(text)
    except yaml.YAMLError as e:
        raise SettingsError(f"{where}: not valid YAML/JSON: {e}") from None
    except RecursionError:
        raise SettingsError(f"{where}: nested too deeply") from None
    _bounded(data, where)
    return data


def _bounded(data: Any, where: str) -> None:
    # Iterative: a recursive structure (an alias to its own parent) meets the depth
    # limit, an alias bomb meets the node limit, before either costs much.
    count = 0
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > MAX_YAML_NODES:
            raise SettingsError(
                f"{where}: more than {MAX_YAML_NODES} values (counting what aliases repeat)"
            )
        if depth > MAX_YAML_DEPTH:
            raise SettingsError(f"{where}: nested deeper than {MAX_YAML_DEPTH} levels")
        if isinstance(value, dict):
            for k, v in value.items():
                stack.append((k, depth + 1))
                stack.append((v, depth + 1))
        elif isinstance(value, (list, tuple, set)):
            stack.extend((v, depth + 1) for v in value)
