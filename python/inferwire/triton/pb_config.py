"""The model configuration as ``triton_python_backend_utils`` shows it to a model: the
dict ``json.loads(args["model_config"])`` gives, its lookups, and ``ModelConfig``, the
object ``auto_complete_config`` receives and returns. Re-exported by ``pb_utils``.

ModelConfig's refusals raise ``ValueError`` in Triton's words, as Triton's does."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

_INPUT_PROPERTIES = ("name", "data_type", "dims", "optional")
_OUTPUT_PROPERTIES = ("name", "data_type", "dims")


def get_input_config_by_name(model_config: Mapping[str, Any], name: str) -> Any:
    """The ``input`` entry of the model configuration named ``name``, or None."""
    return _by_name(model_config.get("input", ()), name)


def get_output_config_by_name(model_config: Mapping[str, Any], name: str) -> Any:
    """The ``output`` entry of the model configuration named ``name``, or None."""
    return _by_name(model_config.get("output", ()), name)


def _by_name(entries: Any, name: str) -> Any:
    return next((entry for entry in entries if entry.get("name") == name), None)


def using_decoupled_model_transaction_policy(model_config: Mapping[str, Any]) -> bool:
    """Whether the configuration sets ``model_transaction_policy { decoupled: true }``."""
    return bool(model_config.get("model_transaction_policy", {}).get("decoupled", False))


class ModelConfig:
    """The configuration ``auto_complete_config(auto_complete_model_config)`` receives.

    Built as Triton builds it, from the configuration as a JSON string
    (``ModelConfig(json.dumps(config))``); a dict is taken too, and copied. The model may
    change only ``max_batch_size``, the scheduler (``set_dynamic_batching``), ``input``,
    ``output`` and ``model_transaction_policy``; ``as_dict()`` is what it returns, and
    what the server then loads the model with."""

    __slots__ = ("_model_config",)

    def __init__(self, model_config: str | Mapping[str, Any]) -> None:
        if isinstance(model_config, str):
            config = json.loads(model_config)
        else:
            config = copy.deepcopy(dict(model_config))
        if not isinstance(config, dict):
            raise TypeError(
                f"ModelConfig takes the model configuration as a JSON object, got"
                f" {type(config).__name__}"
            )
        # Triton's configuration always has these; a minimal config.pbtxt may not.
        config.setdefault("name", "")
        config.setdefault("max_batch_size", 0)
        config.setdefault("input", [])
        config.setdefault("output", [])
        self._model_config: dict[str, Any] = config

    @property
    def _name(self) -> str:
        return str(self._model_config["name"])

    def as_dict(self) -> dict[str, Any]:
        """The configuration (the object itself: read it, change it through the setters)."""
        return self._model_config

    def set_max_batch_size(self, max_batch_size: int) -> None:
        """Sets ``max_batch_size``; refused below a non-zero value the configuration gives."""
        configured = self._model_config["max_batch_size"]
        if configured > max_batch_size:
            raise ValueError(
                f"configuration specified max_batch_size {configured}, but in"
                f" auto-complete-config function for model '{self._name}' specified"
                f" max_batch_size {max_batch_size}"
            )
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self) -> None:
        """Makes ``dynamic_batching`` the scheduler (as configured if it already is);
        refused when the configuration chose sequence batching or an ensemble."""
        for scheduler in ("sequence_batching", "ensemble_scheduling"):
            if scheduler in self._model_config:
                raise ValueError(
                    f"Configuration specified scheduling_choice as '{scheduler}', but"
                    f" auto-complete-config function for model '{self._name}' tries to set"
                    " scheduling_choice as 'dynamic_batching'"
                )
        self._model_config.setdefault("dynamic_batching", {})

    def add_input(self, input: Mapping[str, Any]) -> None:  # Triton names it `input`
        """Adds an input (``name``, ``data_type``, ``dims``, optionally ``optional``), or
        completes the configured input of that name; refused if they disagree."""
        self._add_tensor("input", input, _INPUT_PROPERTIES)

    def add_output(self, output: Mapping[str, Any]) -> None:
        """Adds an output (``name``, ``data_type``, ``dims``), or completes the configured
        output of that name; refused if they disagree."""
        self._add_tensor("output", output, _OUTPUT_PROPERTIES)

    def _add_tensor(self, kind: str, spec: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
        model = self._name
        where = f"in auto-complete-config function for model '{model}'"
        tensor = spec.get("name")
        if any(key not in allowed for key in spec):
            listed = ", ".join(f"'{key}'" for key in allowed[:-1]) + f" and '{allowed[-1]}'"
            raise ValueError(f"{kind} '{tensor}' {where} contains property other than {listed}.")
        if "name" not in spec:
            raise ValueError(f"{kind} {where} is missing 'name' property.")
        for required in ("data_type", "dims"):
            if required not in spec:
                raise ValueError(f"{kind} '{tensor}' {where} is missing '{required}' property.")

        for current in self._model_config[kind]:
            if current.get("name") != tensor:
                continue
            configured_type = current.get("data_type", "TYPE_INVALID")
            if configured_type not in ("TYPE_INVALID", spec["data_type"]):
                raise ValueError(
                    f"unable to load model '{model}', configuration expects datatype"
                    f" {configured_type} for {kind} '{tensor}', model provides"
                    f" {spec['data_type']}"
                )
            configured_dims = current.get("dims")
            if configured_dims and configured_dims != spec["dims"]:
                raise ValueError(
                    f"model '{model}', tensor '{tensor}': the model expects dims"
                    f" {spec['dims']} but the model configuration specifies dims"
                    f" {configured_dims}"
                )
            if "optional" in current and "optional" in spec:
                if current["optional"] != spec["optional"]:
                    raise ValueError(
                        f"model '{model}', tensor '{tensor}': the model expects optional"
                        f" {spec['optional']} but the model configuration specifies"
                        f" optional {current['optional']}"
                    )
            current["data_type"] = spec["data_type"]
            current["dims"] = spec["dims"]
            if "optional" in spec:
                current["optional"] = spec["optional"]
            return
        self._model_config[kind].append(dict(spec))

    def set_model_transaction_policy(self, transaction_policy_dict: Mapping[str, Any]) -> None:
        """Sets ``model_transaction_policy`` (only ``decoupled``); refused if the
        configuration already sets ``decoupled`` otherwise."""
        if any(key != "decoupled" for key in transaction_policy_dict):
            raise ValueError(
                "model transaction property in auto-complete-config function for model"
                f" '{self._name}' contains property other than 'decoupled'."
            )
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" not in transaction_policy_dict:
            return
        wanted = transaction_policy_dict["decoupled"]
        if "decoupled" in policy and policy["decoupled"] != wanted:
            raise ValueError(
                "trying to change decoupled property in auto-complete-config for model"
                f" '{self._name}', which is already set to '{policy['decoupled']}'."
            )
        policy["decoupled"] = wanted

    def __repr__(self) -> str:
        return f"ModelConfig({json.dumps(self._model_config)})"
