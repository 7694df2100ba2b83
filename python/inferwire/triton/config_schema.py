"""Triton's ``ModelConfig`` message: its fields, and its two written forms read into plain
dicts (``parse``: protobuf's text format, as ``config.pbtxt`` is written; ``from_json``:
its JSON form, as Triton hands a config to a backend's auto-complete). What Triton makes of
the message (defaults, checks, its JSON answer) is ``config.py``'s.

The fields of ``ModelConfig`` and of every message it uses are written from
``protobuf/model_config.proto`` (triton-inference-server/common) in the proto's
declaration order, the order Triton's JSON answer prints them in.

A field's type is written as in the proto: ``string``, ``bool``, ``int32``, ``int64``,
``uint32``, ``uint64``, ``float``, ``double``, ``enum <Enum>``, a message's name, each
optionally ``repeated``, or ``map<key, value>``. Nested messages and enums are named
``Outer.Inner``. ``ONEOFS`` lists each message's oneof groups: at most one member of a
group may be given, and a oneof member is printed in JSON only when set.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from typing import Any, NamedTuple, NoReturn

from ..errors import SettingsError


class ConfigError(SettingsError):
    """A model configuration that cannot be read, or that Triton would refuse to load: the
    message starts with the file and names the field."""


ENUMS: dict[str, tuple[str, ...]] = {
    # Every enum here numbers its values 0, 1, 2, ... in this order.
    "DataType": tuple(
        "TYPE_INVALID TYPE_BOOL TYPE_UINT8 TYPE_UINT16 TYPE_UINT32 TYPE_UINT64 TYPE_INT8 "
        "TYPE_INT16 TYPE_INT32 TYPE_INT64 TYPE_FP16 TYPE_FP32 TYPE_FP64 TYPE_STRING "
        "TYPE_BF16".split()
    ),
    "ModelInstanceGroup.Kind": ("KIND_AUTO", "KIND_GPU", "KIND_CPU", "KIND_MODEL"),
    "ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind": ("KIND_NVDLA",),
    "ModelInput.Format": ("FORMAT_NONE", "FORMAT_NHWC", "FORMAT_NCHW"),
    "BatchInput.Kind": tuple(
        "BATCH_ELEMENT_COUNT BATCH_ACCUMULATED_ELEMENT_COUNT "
        "BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO BATCH_MAX_ELEMENT_COUNT_AS_SHAPE "
        "BATCH_ITEM_SHAPE BATCH_ITEM_SHAPE_FLATTEN".split()
    ),
    "BatchOutput.Kind": ("BATCH_SCATTER_WITH_INPUT_SHAPE",),
    "ModelOptimizationPolicy.ModelPriority": ("PRIORITY_DEFAULT", "PRIORITY_MAX", "PRIORITY_MIN"),
    "ModelQueuePolicy.TimeoutAction": ("REJECT", "DELAY"),
    "ModelSequenceBatching.Control.Kind": tuple(
        "CONTROL_SEQUENCE_START CONTROL_SEQUENCE_READY CONTROL_SEQUENCE_END "
        "CONTROL_SEQUENCE_CORRID".split()
    ),
}

_ACCELERATORS = "repeated ModelOptimizationPolicy.ExecutionAccelerators.Accelerator"
_MESSAGES: dict[str, dict[str, str]] = {
    "ModelConfig": {
        "name": "string",
        "platform": "string",
        "backend": "string",
        "runtime": "string",
        "version_policy": "ModelVersionPolicy",
        "max_batch_size": "int32",
        "input": "repeated ModelInput",
        "output": "repeated ModelOutput",
        "batch_input": "repeated BatchInput",
        "batch_output": "repeated BatchOutput",
        "optimization": "ModelOptimizationPolicy",
        "dynamic_batching": "ModelDynamicBatching",
        "sequence_batching": "ModelSequenceBatching",
        "ensemble_scheduling": "ModelEnsembling",
        "instance_group": "repeated ModelInstanceGroup",
        "default_model_filename": "string",
        "cc_model_filenames": "map<string, string>",
        "metric_tags": "map<string, string>",
        "parameters": "map<string, ModelParameter>",
        "model_warmup": "repeated ModelWarmup",
        "model_operations": "ModelOperations",
        "model_transaction_policy": "ModelTransactionPolicy",
        "model_repository_agents": "ModelRepositoryAgents",
        "response_cache": "ModelResponseCache",
        "model_metrics": "ModelMetrics",
    },
    "ModelRateLimiter": {"resources": "repeated ModelRateLimiter.Resource", "priority": "uint32"},
    "ModelRateLimiter.Resource": {"name": "string", "global": "bool", "count": "uint32"},
    "ModelInstanceGroup": {
        "name": "string",
        "kind": "enum ModelInstanceGroup.Kind",
        "count": "int32",
        "rate_limiter": "ModelRateLimiter",
        "gpus": "repeated int32",
        "secondary_devices": "repeated ModelInstanceGroup.SecondaryDevice",
        "profile": "repeated string",
        "passive": "bool",
        "host_policy": "string",
    },
    "ModelInstanceGroup.SecondaryDevice": {
        "kind": "enum ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind",
        "device_id": "int64",
    },
    "ModelTensorReshape": {"shape": "repeated int64"},
    "ModelInput": {
        "name": "string",
        "data_type": "enum DataType",
        "format": "enum ModelInput.Format",
        "dims": "repeated int64",
        "reshape": "ModelTensorReshape",
        "is_shape_tensor": "bool",
        "allow_ragged_batch": "bool",
        "optional": "bool",
        "is_non_linear_format_io": "bool",
    },
    "ModelOutput": {
        "name": "string",
        "data_type": "enum DataType",
        "dims": "repeated int64",
        "reshape": "ModelTensorReshape",
        "label_filename": "string",
        "is_shape_tensor": "bool",
        "is_non_linear_format_io": "bool",
    },
    "BatchInput": {
        "kind": "enum BatchInput.Kind",
        "target_name": "repeated string",
        "data_type": "enum DataType",
        "source_input": "repeated string",
    },
    "BatchOutput": {
        "target_name": "repeated string",
        "kind": "enum BatchOutput.Kind",
        "source_input": "repeated string",
    },
    "ModelVersionPolicy": {
        "latest": "ModelVersionPolicy.Latest",
        "all": "ModelVersionPolicy.All",
        "specific": "ModelVersionPolicy.Specific",
    },
    "ModelVersionPolicy.Latest": {"num_versions": "uint32"},
    "ModelVersionPolicy.All": {},
    "ModelVersionPolicy.Specific": {"versions": "repeated int64"},
    "ModelOptimizationPolicy": {
        "graph": "ModelOptimizationPolicy.Graph",
        "priority": "enum ModelOptimizationPolicy.ModelPriority",
        "cuda": "ModelOptimizationPolicy.Cuda",
        "execution_accelerators": "ModelOptimizationPolicy.ExecutionAccelerators",
        "input_pinned_memory": "ModelOptimizationPolicy.PinnedMemoryBuffer",
        "output_pinned_memory": "ModelOptimizationPolicy.PinnedMemoryBuffer",
        "gather_kernel_buffer_threshold": "uint32",
        "eager_batching": "bool",
    },
    "ModelOptimizationPolicy.Graph": {"level": "int32"},
    "ModelOptimizationPolicy.Cuda": {
        "graphs": "bool",
        "busy_wait_events": "bool",
        "graph_spec": "repeated ModelOptimizationPolicy.Cuda.GraphSpec",
        "output_copy_stream": "bool",
    },
    "ModelOptimizationPolicy.Cuda.GraphSpec": {
        "batch_size": "int32",
        "input": "map<string, ModelOptimizationPolicy.Cuda.GraphSpec.Shape>",
        "graph_lower_bound": "ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound",
    },
    "ModelOptimizationPolicy.Cuda.GraphSpec.Shape": {"dim": "repeated int64"},
    "ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound": {
        "batch_size": "int32",
        "input": "map<string, ModelOptimizationPolicy.Cuda.GraphSpec.Shape>",
    },
    "ModelOptimizationPolicy.ExecutionAccelerators": {
        "gpu_execution_accelerator": _ACCELERATORS,
        "cpu_execution_accelerator": _ACCELERATORS,
    },
    "ModelOptimizationPolicy.ExecutionAccelerators.Accelerator": {
        "name": "string",
        "parameters": "map<string, string>",
    },
    "ModelOptimizationPolicy.PinnedMemoryBuffer": {"enable": "bool"},
    "ModelQueuePolicy": {
        "timeout_action": "enum ModelQueuePolicy.TimeoutAction",
        "default_timeout_microseconds": "uint64",
        "allow_timeout_override": "bool",
        "max_queue_size": "uint32",
    },
    "ModelDynamicBatching": {
        "preferred_batch_size": "repeated int32",
        "max_queue_delay_microseconds": "uint64",
        "preserve_ordering": "bool",
        "priority_levels": "uint64",
        "default_priority_level": "uint64",
        "default_queue_policy": "ModelQueuePolicy",
        "priority_queue_policy": "map<uint64, ModelQueuePolicy>",
    },
    "ModelSequenceBatching": {
        "direct": "ModelSequenceBatching.StrategyDirect",
        "oldest": "ModelSequenceBatching.StrategyOldest",
        "max_sequence_idle_microseconds": "uint64",
        "control_input": "repeated ModelSequenceBatching.ControlInput",
        "state": "repeated ModelSequenceBatching.State",
        "iterative_sequence": "bool",
    },
    "ModelSequenceBatching.Control": {
        "kind": "enum ModelSequenceBatching.Control.Kind",
        "int32_false_true": "repeated int32",
        "fp32_false_true": "repeated float",
        "bool_false_true": "repeated bool",
        "data_type": "enum DataType",
    },
    "ModelSequenceBatching.ControlInput": {
        "name": "string",
        "control": "repeated ModelSequenceBatching.Control",
    },
    "ModelSequenceBatching.InitialState": {
        "data_type": "enum DataType",
        "dims": "repeated int64",
        "zero_data": "bool",
        "data_file": "string",
        "name": "string",
    },
    "ModelSequenceBatching.State": {
        "input_name": "string",
        "output_name": "string",
        "data_type": "enum DataType",
        "dims": "repeated int64",
        "initial_state": "repeated ModelSequenceBatching.InitialState",
        "use_same_buffer_for_input_output": "bool",
        "use_growable_memory": "bool",
    },
    "ModelSequenceBatching.StrategyDirect": {
        "max_queue_delay_microseconds": "uint64",
        "minimum_slot_utilization": "float",
    },
    "ModelSequenceBatching.StrategyOldest": {
        "max_candidate_sequences": "int32",
        "preferred_batch_size": "repeated int32",
        "max_queue_delay_microseconds": "uint64",
        "preserve_ordering": "bool",
    },
    "ModelEnsembling": {
        "step": "repeated ModelEnsembling.Step",
        "max_inflight_requests": "uint32",
    },
    "ModelEnsembling.Step": {
        "model_name": "string",
        "model_version": "int64",
        "input_map": "map<string, string>",
        "output_map": "map<string, string>",
        "model_namespace": "string",
    },
    "ModelParameter": {"string_value": "string"},
    "ModelWarmup": {
        "name": "string",
        "batch_size": "uint32",
        "inputs": "map<string, ModelWarmup.Input>",
        "count": "uint32",
    },
    "ModelWarmup.Input": {
        "data_type": "enum DataType",
        "dims": "repeated int64",
        "zero_data": "bool",
        "random_data": "bool",
        "input_data_file": "string",
    },
    "ModelOperations": {"op_library_filename": "repeated string"},
    "ModelTransactionPolicy": {"decoupled": "bool"},
    "ModelRepositoryAgents": {"agents": "repeated ModelRepositoryAgents.Agent"},
    "ModelRepositoryAgents.Agent": {"name": "string", "parameters": "map<string, string>"},
    "ModelResponseCache": {"enable": "bool"},
    "ModelMetrics": {"metric_control": "repeated ModelMetrics.MetricControl"},
    "ModelMetrics.MetricControl": {
        "metric_identifier": "ModelMetrics.MetricControl.MetricIdentifier",
        "histogram_options": "ModelMetrics.MetricControl.HistogramOptions",
    },
    "ModelMetrics.MetricControl.MetricIdentifier": {"family": "string"},
    "ModelMetrics.MetricControl.HistogramOptions": {"buckets": "repeated double"},
}

ONEOFS: dict[str, tuple[tuple[str, ...], ...]] = {
    "ModelConfig": (("dynamic_batching", "sequence_batching", "ensemble_scheduling"),),
    "ModelVersionPolicy": (("latest", "all", "specific"),),
    "ModelSequenceBatching": (("direct", "oldest"),),
    "ModelSequenceBatching.InitialState": (("zero_data", "data_file"),),
    "ModelWarmup.Input": (("zero_data", "random_data", "input_data_file"),),
    "ModelMetrics.MetricControl": (("histogram_options",),),
}

SCALARS = ("string", "bool", "int32", "int64", "uint32", "uint64", "float", "double")
# The integer types' ranges, as the text format checks them.
RANGES = {
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}


class Field(NamedTuple):
    """One field: ``kind`` is scalar, enum, message or map; ``type`` the scalar type, enum
    or message name (a map's value type); ``key`` a map's key type."""

    name: str
    kind: str
    type: str
    repeated: bool = False
    key: str = ""
    oneof: bool = False

    @property
    def entry(self) -> str:
        """A map's entries are messages of two fields, named here by the map's type."""
        return f"map<{self.key}, {self.type}>"


def _field(message: str, name: str, spec: str) -> Field:
    oneof = any(name in group for group in ONEOFS.get(message, ()))
    if spec.startswith("map<"):
        key, value = (s.strip() for s in spec[4:-1].split(","))
        return Field(name, "map", value, True, key, oneof)
    repeated = spec.startswith("repeated ")
    spec = spec.removeprefix("repeated ")
    if spec.startswith("enum "):
        return Field(name, "enum", spec[5:], repeated, oneof=oneof)
    kind = "scalar" if spec in SCALARS else "message"
    return Field(name, kind, spec, repeated, oneof=oneof)


MESSAGES: dict[str, dict[str, Field]] = {
    message: {name: _field(message, name, spec) for name, spec in fields.items()}
    for message, fields in _MESSAGES.items()
}
for _fields in list(MESSAGES.values()):
    for _f in _fields.values():
        if _f.kind == "map":
            MESSAGES[_f.entry] = {
                "key": Field("key", "scalar", _f.key),
                "value": Field("value", "scalar" if _f.type in SCALARS else "message", _f.type),
            }


def default(field: Field) -> object:
    """The value a field without presence has when it is not given."""
    if field.kind == "map":
        return {}
    if field.repeated:
        return []
    if field.kind == "enum":
        return ENUMS[field.type][0]
    return {"string": "", "bool": False, "float": 0.0, "double": 0.0}.get(field.type, 0)


# -- the text format ------------------------------------------------------------------------

MAX_BYTES = 1 << 20  # a config.pbtxt larger than this is refused unread
MAX_DEPTH = 32  # messages inside messages
MAX_VALUES = 100_000  # values and messages in one config

_TOKEN = re.compile(
    r"""(?P<space>(?:[ \t\r\n\f\v]+|\#[^\n]*)+)
    |(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    |(?P<number>(?:0[xX][0-9a-fA-F]+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?[fF]?)(?![\w.]))
    |(?P<word>[A-Za-z_]\w*)
    |(?P<symbol>[{}<>\[\]:,;-])""",
    re.VERBOSE,
)
_ESCAPE = re.compile(
    rb"""\\(?:([abfnrtv\\?'"])|([0-7]{1,3})|x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{4})"""
    rb"""|U([0-9a-fA-F]{8})|(.))""",
    re.DOTALL,
)
_ESCAPES = dict(zip(b"abfnrtv\\?'\"", b"\a\b\f\n\r\t\v\\?'\"", strict=True))
_BOOLS = {"true": True, "True": True, "t": True, "false": False, "False": False, "f": False}
_FLOATS = {"inf": math.inf, "infinity": math.inf, "nan": math.nan}


def parse(text: str, where: str) -> dict[str, Any]:
    """A ``ModelConfig`` in protobuf's text format (``config.pbtxt``) as a plain dict keyed
    by the proto's field names: only the fields the text gives; repeated fields as lists,
    messages as dicts, maps as dicts, enums by name, 64-bit integers as ints. Read as
    protobuf's ``TextFormat::Parse`` (which Triton calls) reads it: ``field: value``,
    ``field { ... }`` or ``field: { ... }`` or ``< ... >``, lists ``field: [a, b]`` and
    ``field [ {...}, {...} ]``, a repeated field given several times, ``#`` comments,
    ``,``/``;`` after a field, quoted strings with C escapes and adjacent ones joined,
    decimal/hex/octal integers, floats with ``inf``/``nan``, booleans as
    true/True/t/false/False/f/1/0, enums by name or number. An unknown field, a value of
    the wrong type, a field given twice or two members of a oneof are errors, as they are
    to Triton; so are more than ``MAX_BYTES`` of text, messages nested deeper than
    ``MAX_DEPTH`` and more than ``MAX_VALUES`` values. ``where`` (the file) starts every
    error's message, then the line and the field."""
    size = len(text) if len(text) > MAX_BYTES else len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise ConfigError(
            f"{where}: {size} bytes, more than a model configuration may have ({MAX_BYTES})"
        )
    reader = _Reader(text, where)
    return reader.message("ModelConfig", "", "")


class _Reader:
    def __init__(self, text: str, where: str) -> None:
        self.text, self.where = text, where
        self.start = self.end = 0  # the current token
        self.kind = self.value = self.path = ""
        self.depth = self.values = 0
        self.next()

    def fail(self, path: str, message: str) -> NoReturn:
        line = self.text.count("\n", 0, self.start) + 1
        raise ConfigError(f"{self.where}: line {line}: {path + ': ' if path else ''}{message}")

    def shown(self) -> str:
        return repr(self.value) if self.kind != "end" else "the end of the file"

    def next(self) -> None:
        pos = self.end
        m = _TOKEN.match(self.text, pos)
        if m is not None and m.lastgroup == "space":
            pos = m.end()
            m = _TOKEN.match(self.text, pos)
        self.start = pos
        if m is None:
            if pos == len(self.text):
                self.kind, self.value = "end", ""
                return
            if self.text[pos] in "\"'":
                self.fail(self.path, "a string is not closed on the line it starts")
            bad = re.match(r"\S{1,20}", self.text[pos:])
            self.fail(self.path, f"cannot read {bad.group() if bad else self.text[pos]!r}")
        self.kind, self.value, self.end = m.lastgroup or "", m.group(), m.end()

    def at(self, symbol: str) -> bool:
        return self.kind == "symbol" and self.value == symbol

    def count(self, path: str) -> None:
        self.values += 1
        if self.values > MAX_VALUES:
            self.fail(path, f"more than {MAX_VALUES} values in one model configuration")

    def message(self, type_name: str, path: str, close: str) -> dict[str, Any]:
        fields = MESSAGES[type_name]
        out: dict[str, Any] = {}
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(path, f"messages nested deeper than {MAX_DEPTH} levels")
        while not (self.at(close) if close else self.kind == "end"):
            self.path = path
            if self.kind != "word":
                expected = f"a field of {type_name}" + (f" or {close!r}" if close else "")
                self.fail(path, f"expected {expected}, got {self.shown()}")
            name, field = self.value, fields.get(self.value)
            at = f"{path}.{name}" if path else name
            if field is None:
                close_match = difflib.get_close_matches(name, list(fields), 1)
                hint = f"; did you mean {close_match[0]!r}?" if close_match else ""
                self.fail(at, f"not a field of {type_name} ({', '.join(fields)}){hint}")
            if not field.repeated and name in out:
                self.fail(at, "given more than once")
            for group in ONEOFS.get(type_name, ()):
                other = next((g for g in group if g in out and name in group), None)
                if other is not None:
                    self.fail(at, f"given with {other}; only one of {', '.join(group)}")
            self.path = at
            self.next()
            self.field(field, at, out)
            if self.at(",") or self.at(";"):
                self.next()
        self.depth -= 1
        return out

    def field(self, field: Field, at: str, out: dict[str, Any]) -> None:
        """The field's value(s) after its name, into ``out``."""
        if field.kind in ("message", "map"):  # the colon is optional before a message
            if self.at(":"):
                self.next()
            if self.at("[") and not field.repeated:
                self.fail(at, "takes one message, not a list")
            if self.at("["):
                self.listed(lambda: self.submessage(field, at, out), at)
            else:
                self.submessage(field, at, out)
            return
        if not self.at(":"):
            self.fail(at, f"expected ':' after {field.name}, got {self.shown()}")
        self.next()
        if not field.repeated:
            if self.at("["):
                self.fail(at, "takes one value, not a list")
            out[field.name] = self.scalar(field, at)
            return
        items = out.setdefault(field.name, [])
        if self.at("["):
            self.listed(lambda: items.append(self.scalar(field, f"{at}[{len(items)}]")), at)
        else:
            items.append(self.scalar(field, f"{at}[{len(items)}]"))

    def listed(self, read: Callable[[], object], at: str) -> None:
        self.next()
        if not self.at("]"):
            read()
            while self.at(","):
                self.next()
                read()
            if not self.at("]"):
                self.fail(at, f"expected ',' or ']' in the list, got {self.shown()}")
        self.next()

    def submessage(self, field: Field, at: str, out: dict[str, Any]) -> None:
        if not (self.at("{") or self.at("<")):
            self.fail(at, f"expected '{{' to start the message, got {self.shown()}")
        close = "}" if self.value == "{" else ">"
        self.count(at)
        self.next()
        if field.kind == "map":
            entries = out.setdefault(field.name, {})
            entry = self.message(field.entry, f"{at}[{len(entries)}]", close)
            value = MESSAGES[field.entry]["value"]
            entries[entry.get("key", default(MESSAGES[field.entry]["key"]))] = entry.get(
                "value", {} if value.kind == "message" else default(value)
            )
        elif field.repeated:
            items = out.setdefault(field.name, [])
            items.append(self.message(field.type, f"{at}[{len(items)}]", close))
        else:
            out[field.name] = self.message(field.type, at, close)
        self.path = ""
        self.next()

    def scalar(self, field: Field, at: str) -> Any:
        self.count(at)
        self.path = ""  # what cannot be read from here on follows the value
        if field.kind == "enum":
            names = ENUMS[field.type]
            noun = "a data type" if field.type == "DataType" else f"a {field.type}"
            listed = ", ".join(names[1:] if field.type == "DataType" else names)
            if self.kind == "word":
                if self.value not in names:
                    self.fail(at, f"{self.value!r} is not {noun} ({listed})")
                value: Any = self.value
                self.next()
                return value
            number = self.integer(at)
            if not 0 <= number < len(names):
                self.fail(at, f"{number} is not {noun} ({listed})")
            return names[number]
        kind, text = self.kind, self.value
        if field.type == "string":
            if kind != "string":
                self.fail(at, f"expected a quoted string, got {self.shown()}")
            data = b""
            while self.kind == "string":
                data += self.unquote(at)
                self.next()
            try:  # through UTF-16 so that a \\u surrogate pair becomes one character
                text = data.decode("utf-8", "surrogatepass")
                return text.encode("utf-16", "surrogatepass").decode("utf-16")
            except UnicodeError:
                self.fail(at, "the string is not valid UTF-8")
        if field.type == "bool":
            if (kind == "word" and text in _BOOLS) or (kind == "number" and text in ("0", "1")):
                self.next()
                return _BOOLS.get(text, text == "1")
            self.fail(at, f"expected true or false, got {self.shown()}")
        if field.type in ("float", "double"):
            sign = -1.0 if self.at("-") else 1.0
            if sign < 0:
                self.next()
            if self.kind == "number" and not _is_float(self.value):
                return sign * self.integer(at)
            if self.kind == "word" and self.value.lower() in _FLOATS:
                value = _FLOATS[self.value.lower()]
            elif self.kind == "number" and not self.value.lower().startswith("0x"):
                value = float(self.value.rstrip("fF"))
            else:
                self.fail(at, f"expected a number, got {self.shown()}")
            self.next()
            return sign * value
        value = self.integer(at)
        low, high = RANGES[field.type]
        if not low <= value <= high:
            self.fail(at, f"{value} is out of range for {field.type} ({low} to {high})")
        return value

    def integer(self, at: str) -> int:
        sign = -1 if self.at("-") else 1
        if sign < 0:
            self.next()
        text = self.value
        if self.kind != "number" or _is_float(text):
            self.fail(at, f"expected an integer, got {self.shown()}")
        if len(text) > 24:  # longer than any 64-bit integer is written
            self.fail(at, f"{text[:24]}... is out of range (too many digits)")
        try:
            value = int(text, 16 if text[:2] in ("0x", "0X") else 8 if text[0] == "0" else 10)
        except ValueError:
            self.fail(at, f"{text!r} is not an octal number (it starts with 0)")
        self.next()
        return sign * value

    def unquote(self, at: str) -> bytes:
        def escape(m: re.Match[bytes]) -> bytes:
            simple, octal, hexa, u4, u8, bad = m.groups()
            if bad is not None:
                raise ValueError(f"\\{bad.decode('utf-8', 'replace')} is not an escape")
            if simple:
                return bytes([_ESCAPES[simple[0]]])
            if octal or hexa:
                return bytes([int(octal or hexa, 8 if octal else 16) & 0xFF])
            return chr(int(u4 or u8, 16)).encode("utf-8", "surrogatepass")

        body = self.value[1:-1].encode("utf-8", "surrogatepass")
        try:
            return _ESCAPE.sub(escape, body) if b"\\" in body else body
        except (ValueError, OverflowError) as e:
            self.fail(at, f"the string has a bad escape: {e}")


def _is_float(text: str) -> bool:
    return not text.lower().startswith("0x") and any(c in text for c in ".eEfF")


# -- the JSON form --------------------------------------------------------------------------


def from_json(obj: Any, where: str, type_name: str = "ModelConfig") -> dict[str, Any]:
    """A message in its JSON form (protobuf's, with the proto's field names, as Triton hands
    a config to a backend's auto-complete and as its JSON answer writes it) as ``parse``
    gives it: 64-bit integers as numbers or strings, enums by name or number, floats as
    numbers or "NaN"/"Infinity"/"-Infinity", a null as the field not given."""
    return _from_json(type_name, obj, where, "")


def _from_json(type_name: str, obj: Any, where: str, path: str) -> dict[str, Any]:
    def fail(at: str, message: str) -> NoReturn:
        raise ConfigError(f"{where}: {at or type_name}: {message}")

    if not isinstance(obj, dict):
        fail(path, f"expected an object, got {type(obj).__name__}")
    fields = MESSAGES[type_name]
    out: dict[str, Any] = {}
    for name, value in obj.items():
        at, field = f"{path}.{name}" if path else name, fields.get(name)
        if field is None:
            fail(at, f"not a field of {type_name} ({', '.join(fields)})")
        if value is None:
            continue
        for group in ONEOFS.get(type_name, ()):
            if name in group and any(g in out for g in group):
                fail(at, f"given with another of {', '.join(group)}")
        if field.kind == "map":
            if not isinstance(value, dict):
                fail(at, f"expected an object, got {type(value).__name__}")
            key, item = MESSAGES[field.entry]["key"], MESSAGES[field.entry]["value"]
            out[name] = {
                _json_scalar(key, k, where, f"{at}[{k!r}]"): _json_value(
                    item, v, where, f"{at}[{k!r}]"
                )
                for k, v in value.items()
            }
        elif field.repeated:
            if not isinstance(value, list):
                fail(at, f"expected a list, got {type(value).__name__}")
            out[name] = [_json_value(field, v, where, f"{at}[{i}]") for i, v in enumerate(value)]
        else:
            out[name] = _json_value(field, value, where, at)
    return out


def _json_value(field: Field, value: Any, where: str, at: str) -> Any:
    if field.kind == "message":
        return _from_json(field.type, value, where, at)
    return _json_scalar(field, value, where, at)


def _json_scalar(field: Field, value: Any, where: str, at: str) -> Any:
    kind = field.type if field.kind == "scalar" else "enum"
    if kind == "enum":
        names = ENUMS[field.type]
        if value in names:
            return value
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
            return names[value]
    elif kind == "string" and isinstance(value, str):
        return value
    elif kind == "bool" and isinstance(value, bool):
        return value
    elif kind in ("float", "double"):
        special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if value in special:
            return special[value]
    elif kind in RANGES and not isinstance(value, bool):
        number = value
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
            number = int(value)
        elif isinstance(value, float) and value.is_integer():
            number = int(value)
        low, high = RANGES[kind]
        if isinstance(number, int) and low <= number <= high:
            return number
    raise ConfigError(f"{where}: {at}: {value!r} is not a {kind} value")
