"""Triton's config.pbtxt read as Triton reads it (inferwire.triton.config), in-process, no
server: every form of protobuf's text format, checked against protobuf's own parser on
Triton's ModelConfig (tritonclient's model_config_pb2); configs as Triton's repositories
write them (the vendored Python-backend examples and samples written here); every error,
naming the file, the line and the field; the bounds; auto-complete and the load-time
checks; version policies; the JSON Triton answers, checked against protobuf's JSON printer
with the 64-bit fix-ups Triton's ModelConfigToJson makes; and inferwire's settings."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format, text_format
from inferwire.settings import ModelServing
from inferwire.triton import config as C
from inferwire.triton.config_schema import ENUMS, MESSAGES, ONEOFS
from tritonclient.grpc import model_config_pb2 as pb

VENDORED = Path(__file__).parents[2] / "vendor" / "triton_python_backend" / "repository"


def reference(text: str) -> Any:
    """protobuf's own reading of the text (TextFormat::Parse's rules, as Triton reads it)."""
    return text_format.Parse(text, pb.ModelConfig())


def as_message(raw: dict[str, Any]) -> Any:
    return json_format.ParseDict(raw, pb.ModelConfig())


def same_as_protobuf(text: str) -> dict[str, Any]:
    raw = C.parse(text, "config.pbtxt")
    assert as_message(raw) == reference(text)
    return raw


def model(
    root: Path, name: str, text: str | None, files: tuple[str, ...] = ("1/model.py",)
) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    if text is not None:
        (folder / "config.pbtxt").write_text(text)
    for file in files:
        path = folder / file
        path.parent.mkdir(parents=True, exist_ok=True)
        if file.endswith("/"):
            path.mkdir(exist_ok=True)
        else:
            path.write_text("")
    return folder


def fails(match: str) -> Any:
    return pytest.raises(C.ConfigError, match=match)


# --- the schema is model_config.proto's -----------------------------------------------------


def _proto_messages() -> dict[str, Any]:
    out: dict[str, Any] = {}

    def walk(d: Any) -> None:
        name = d.full_name.removeprefix("inference.")
        if d.GetOptions().map_entry or name in out:
            return
        out[name] = d
        for f in d.fields:
            if f.message_type is not None:
                walk(f.message_type)

    walk(pb.ModelConfig.DESCRIPTOR)
    return out


def test_schema_has_every_field_of_model_config_proto() -> None:
    scalar = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 8: "bool",
              9: "string", 13: "uint32"}  # fmt: skip
    proto = _proto_messages()
    assert set(proto) <= set(MESSAGES)
    for name, d in proto.items():
        ours = MESSAGES[name]
        assert list(ours) == [f.name for f in d.fields], name  # declaration order too
        for f in d.fields:
            field = ours[f.name]
            entry = f.message_type.GetOptions().map_entry if f.message_type else False
            if entry:
                key, value = f.message_type.fields
                assert (field.kind, field.key) == ("map", scalar[key.type])
                want = value.message_type.full_name if value.message_type else scalar[value.type]
                assert field.type == want.removeprefix("inference."), f.name
            elif f.enum_type is not None:
                assert (field.kind, field.type) == ("enum", f.enum_type.full_name[10:])
                assert ENUMS[field.type] == tuple(v.name for v in f.enum_type.values)
                assert [v.number for v in f.enum_type.values] == list(range(len(ENUMS[field.type])))
            elif f.message_type is not None:
                assert (field.kind, field.type) == ("message", f.message_type.full_name[10:])
            else:
                assert (field.kind, field.type) == ("scalar", scalar[f.type]), f.name
            assert field.repeated == f.is_repeated, f.name
        real = [tuple(x.name for x in o.fields) for o in d.oneofs]
        assert list(ONEOFS.get(name, ())) == real, name


# --- the text format, form by form, against protobuf's parser ---------------------------------

# fmt: off
SYNTAX = {
    "field: value": ('name: "m" max_batch_size: 8', {"name": "m", "max_batch_size": 8}),
    "message in braces": ('input { name: "a" }', {"input": [{"name": "a"}]}),
    "message after a colon": ('input: { name: "a" }', {"input": [{"name": "a"}]}),
    "angle brackets": ('input < name: "a" dims: 1 >', {"input": [{"name": "a", "dims": [1]}]}),
    "list of messages": ('input [ { name: "a" }, { name: "b" } ]', {"input": [{"name": "a"}, {"name": "b"}]}),
    "list of messages after a colon": ('output: [ { name: "a" }, < name: "b" > ]', {"output": [{"name": "a"}, {"name": "b"}]}),
    "list of values": ("input { dims: [ 1, -1, 3 ] }", {"input": [{"dims": [1, -1, 3]}]}),
    "empty list": ("input { dims: [] }", {"input": [{"dims": []}]}),
    "repeated scalar given several times": ("input { dims: 1 dims: 2 dims: [3, 4] }", {"input": [{"dims": [1, 2, 3, 4]}]}),
    "repeated message given several times": ('input [{ name: "a" }] input { name: "b" } input: [{ name: "c" }]', {"input": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}),
    "comments": ('# a model\nname: "m" # its name\n# max_batch_size: 9\n', {"name": "m"}),
    "separators": ('name: "m"; max_batch_size: 2, backend: "python";', {"name": "m", "max_batch_size": 2, "backend": "python"}),
    "single quotes": ("name: 'm'", {"name": "m"}),
    "escapes": (r'name: "a\"b\'c\\d\n\t\x41\101\u00e9\U0001F600"', {"name": "a\"b'c\\d\n\tAAé\U0001f600"}),
    "utf-8 text": ('name: "modèle"', {"name": "modèle"}),
    "adjacent strings joined": ('name: "a" \'b\'\n  "c"', {"name": "abc"}),
    "negative": ("max_batch_size: -4", {"max_batch_size": -4}),
    "hex": ("max_batch_size: 0x1F", {"max_batch_size": 31}),
    "octal": ("max_batch_size: 010", {"max_batch_size": 8}),
    "int64 range": ("input { dims: [9223372036854775807, -9223372036854775808] }", {"input": [{"dims": [2**63 - 1, -(2**63)]}]}),
    "uint64 range": ("dynamic_batching { max_queue_delay_microseconds: 18446744073709551615 }", {"dynamic_batching": {"max_queue_delay_microseconds": 2**64 - 1}}),
    "floats": ("sequence_batching { control_input { control { fp32_false_true: [0.5, 1e2, .25, 2.f, 3, -1.5E-1] } } }", {"sequence_batching": {"control_input": [{"control": [{"fp32_false_true": [0.5, 100.0, 0.25, 2.0, 3.0, -0.15]}]}]}}),
    "booleans": ("sequence_batching { control_input { control { bool_false_true: [false, true, False, True, f, t, 0, 1] } } }", {"sequence_batching": {"control_input": [{"control": [{"bool_false_true": [False, True] * 4}]}]}}),
    "bool field": ("model_transaction_policy { decoupled: True }", {"model_transaction_policy": {"decoupled": True}}),
    "enum by name": ("input { data_type: TYPE_FP32 }", {"input": [{"data_type": "TYPE_FP32"}]}),
    "enum by number": ("input { data_type: 11 }", {"input": [{"data_type": "TYPE_FP32"}]}),
    "map": ('parameters { key: "x" value: { string_value: "y" } }\nparameters { value { string_value: "w" } key: "z" }', {"parameters": {"x": {"string_value": "y"}, "z": {"string_value": "w"}}}),
    "map as a list, last key wins": ('parameters: [ { key: "x" value { string_value: "1" } }, { key: "x" value { string_value: "2" } } ]', {"parameters": {"x": {"string_value": "2"}}}),
    "map of strings": ('metric_tags { key: "team" value: "a" }', {"metric_tags": {"team": "a"}}),
    "map with integer keys": ("dynamic_batching { priority_queue_policy { key: 2 value { max_queue_size: 5 } } }", {"dynamic_batching": {"priority_queue_policy": {2: {"max_queue_size": 5}}}}),
    "empty message": ("dynamic_batching { }", {"dynamic_batching": {}}),
    "version policy all": ("version_policy: { all { }}", {"version_policy": {"all": {}}}),
    "no spaces": ('input{name:"a"dims:[1,2]}', {"input": [{"name": "a", "dims": [1, 2]}]}),
}
# fmt: on


@pytest.mark.parametrize("case", list(SYNTAX))
def test_syntax(case: str) -> None:
    text, expected = SYNTAX[case]
    assert same_as_protobuf(text) == expected


def test_inf_and_nan() -> None:
    raw = C.parse(
        "sequence_batching { control_input { control { fp32_false_true: [inf, -inf, nan, -Infinity] } } }",
        "c",
    )
    values = raw["sequence_batching"]["control_input"][0]["control"][0]["fp32_false_true"]
    assert values[:2] == [math.inf, -math.inf] and math.isnan(values[2]) and values[3] == -math.inf


def test_surrogate_pair() -> None:
    # A \u pair is one character (protobuf's C++ parser, which Triton uses, joins them).
    assert C.parse(r'name: "\ud83d\ude00"', "c") == {"name": "\U0001f600"}


def test_an_empty_file_is_an_empty_config() -> None:
    assert C.parse("", "c") == {} == C.parse("  # nothing\n\n", "c")


# --- real configs, as Triton's repositories write them ----------------------------------------

ADD_SUB = """
name: "add_sub"
backend: "python"

input [
  {
    name: "INPUT0"
    data_type: TYPE_FP32
    dims: [ 4 ]
  }
]
input [
  {
    name: "INPUT1"
    data_type: TYPE_FP32
    dims: [ 4 ]
  }
]
output [
  {
    name: "OUTPUT0"
    data_type: TYPE_FP32
    dims: [ 4 ]
  }
]
output [
  {
    name: "OUTPUT1"
    data_type: TYPE_FP32
    dims: [ 4 ]
  }
]

instance_group [{ kind: KIND_CPU }]
"""

REPEAT = """
name: "repeat_int32"
backend: "python"
max_batch_size: 0
model_transaction_policy {
  decoupled: True
}
input [
  { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
  { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }
]
output [
  { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }
]
instance_group [{ kind: KIND_CPU }]
"""

SQUARE = """
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [{ name: "IN" data_type: TYPE_INT32 dims: [ 1 ] }]
output [{ name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] }]
instance_group [{ count: 2 kind: KIND_CPU }]
"""

ENSEMBLE = """
name: "pipeline"
platform: "ensemble"
max_batch_size: 8
input [ { name: "RAW" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "SCORES" data_type: TYPE_FP32 dims: [ 10 ] } ]
ensemble_scheduling {
  step [
    {
      model_name: "preprocess"
      model_version: -1
      input_map { key: "TEXT" value: "RAW" }
      output_map { key: "IDS" value: "tokens" }
    },
    {
      model_name: "classifier"
      model_version: 2
      input_map { key: "input_ids" value: "tokens" }
      output_map { key: "logits" value: "SCORES" }
    }
  ]
}
"""

SEQUENCE = """
name: "accumulate"
backend: "python"
max_batch_size: 4
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  control_input [
    {
      name: "START"
      control [ { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] } ]
    },
    {
      name: "READY"
      control [ { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] } ]
    },
    {
      name: "END"
      control [ { kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ] } ]
    },
    {
      name: "CORRID"
      control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ]
    }
  ]
  oldest { max_candidate_sequences: 4 }
}
input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 1 ] } ]
instance_group [ { count: 2 } ]
"""

BATCHING = """
name: "batched"
backend: "python"
max_batch_size: 16
version_policy: { specific: { versions: [1, 3] } }
input [ { name: "x" data_type: TYPE_FP64 dims: [ -1 ] } ]
output [ { name: "y" data_type: TYPE_FP64 dims: [ -1 ] } ]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 2500
  default_queue_policy { max_queue_size: 64 }
}
parameters: { key: "EXECUTION_ENV_PATH" value: { string_value: "$$TRITON_MODEL_DIRECTORY/env.tar.gz" } }
parameters: { key: "threshold" value: { string_value: "0.5" } }
instance_group [ { count: 3 kind: KIND_CPU } ]
"""


@pytest.mark.parametrize("folder", sorted(VENDORED.iterdir()), ids=lambda p: p.name)
def test_vendored_python_backend_examples(folder: Path) -> None:
    text = (folder / "config.pbtxt").read_text()
    same_as_protobuf(text)
    config = C.read(folder)
    assert config.name == folder.name and config.backend == "python"
    assert config.default_model_filename == "model.py"
    assert config.instance_count == 1 and C.warnings(config) == []
    assert config.decoupled == bool(re.search(r"decoupled:\s*[Tt]rue", text))


@pytest.mark.parametrize("text", [ADD_SUB, REPEAT, SQUARE, ENSEMBLE, SEQUENCE, BATCHING])
def test_samples_read_as_protobuf_reads_them(text: str) -> None:
    same_as_protobuf(text)


def test_add_sub(tmp_path: Path) -> None:
    config = C.read(model(tmp_path, "add_sub", ADD_SUB))
    assert (config.name, config.backend, config.platform, config.max_batch_size) == (
        "add_sub",
        "python",
        "",
        0,
    )
    assert [(t.name, t.data_type, t.dims, t.reshape, t.optional) for t in config.inputs] == [
        ("INPUT0", "TYPE_FP32", [4], None, False),
        ("INPUT1", "TYPE_FP32", [4], None, False),
    ]
    assert [t.name for t in config.outputs] == ["OUTPUT0", "OUTPUT1"]
    assert config.version_policy == ("latest", [1]) and config.dynamic_batching is None
    assert C.serving(config) == {"max_batch_size": 1, "max_batch_delay": 0.0, "model_threads": 1}


def test_decoupled_repeat_and_square(tmp_path: Path) -> None:
    repeat = C.read(model(tmp_path, "repeat_int32", REPEAT))
    square = C.read(model(tmp_path, "square_int32", SQUARE))
    assert repeat.decoupled and square.decoupled
    assert [t.data_type for t in repeat.inputs] == ["TYPE_INT32", "TYPE_UINT32", "TYPE_UINT32"]
    assert square.name == "square_int32"  # from its folder
    assert square.instance_count == 2 and C.serving(square)["model_threads"] == 2


def test_ensemble(tmp_path: Path) -> None:
    config = C.read(model(tmp_path, "pipeline", ENSEMBLE, files=("1/",)))
    assert (config.platform, config.backend) == ("ensemble", "")
    assert [s["model_name"] for s in config.ensemble_steps] == ["preprocess", "classifier"]
    assert config.ensemble_steps[0]["input_map"] == {"TEXT": "RAW"}
    assert config.ensemble_steps[0]["model_version"] == -1
    assert "instance_group" not in config.raw and "optimization" not in config.raw
    out = C.to_json(config)
    assert out["ensemble_scheduling"]["step"][1]["model_version"] == 2  # a number, as Triton
    assert out["ensemble_scheduling"]["max_inflight_requests"] == 0


def test_onnx_model_without_config(tmp_path: Path) -> None:
    config = C.read(model(tmp_path, "densenet", None, files=("1/model.onnx",)))
    assert (config.name, config.platform, config.backend) == (
        "densenet",
        "onnxruntime_onnx",
        "onnxruntime",
    )
    assert config.default_model_filename == "model.onnx" and config.max_batch_size == 0
    # Triton's default for onnxruntime on the CPU is two instances, in one group named as the model.
    assert config.raw["instance_group"] == [{"name": "densenet", "kind": "KIND_CPU", "count": 2}]
    assert config.inputs == [] and config.instance_count == 2


def test_sequence_batching_with_control_inputs(tmp_path: Path) -> None:
    config = C.read(model(tmp_path, "accumulate", SEQUENCE))
    sequence = config.sequence_batching
    assert sequence is not None and config.dynamic_batching is None
    assert [c["name"] for c in sequence["control_input"]] == ["START", "READY", "END", "CORRID"]
    assert sequence["control_input"][2]["control"][0]["bool_false_true"] == [False, True]
    assert sequence["oldest"]["preferred_batch_size"] == [4]  # Triton: max_batch_size
    assert C.serving(config)["max_batch_size"] == 1  # inferwire batches sequences not at all
    assert C.warnings(config) == [
        "sequence_batching: oldest, max_sequence_idle_microseconds ignored"
    ]
    out = C.to_json(config)["sequence_batching"]
    assert out["max_sequence_idle_microseconds"] == 5000000 and "direct" not in out
    assert out["control_input"][0]["control"][0] == {
        "kind": "CONTROL_SEQUENCE_START", "int32_false_true": [], "fp32_false_true": [0.0, 1.0],
        "bool_false_true": [], "data_type": "TYPE_INVALID",
    }  # fmt: skip


def test_dynamic_batching_parameters_and_serving(tmp_path: Path) -> None:
    config = C.read(model(tmp_path, "batched", BATCHING, files=("1/model.py", "3/model.py")))
    assert config.preferred_batch_sizes == [4, 8] and config.max_queue_delay_us == 2500
    assert config.parameters == {
        "EXECUTION_ENV_PATH": "$$TRITON_MODEL_DIRECTORY/env.tar.gz",
        "threshold": "0.5",
    }
    settings = C.serving(config)
    assert settings == {
        "max_batch_size": 16,
        "max_batch_delay": 0.0025,
        "model_threads": 3,
        "max_queue": 64,
    }
    ModelServing(**settings)  # valid inferwire settings
    assert C.warnings(config) == [
        "parameters.EXECUTION_ENV_PATH: ignored; the server's Python runs the model"
    ]


# --- errors: the file, the line, the field ------------------------------------------------------

# fmt: off
ERRORS = {
    "unknown field": ('name: "m"\ninput {\n  name: "a"\n  dim: [1]\n}', r"^c\.pbtxt: line 4: input\[0\]\.dim: not a field of ModelInput .*did you mean 'dims'\?$"),
    "unknown top-level field": ('name: "m"\n\nbatch_size: 4', r"^c\.pbtxt: line 3: batch_size: not a field of ModelConfig"),
    "bad enum": ('input [\n { name: "a" },\n { name: "b"\n   data_type: TYPE_FLOAT } ]', r"^c\.pbtxt: line 4: input\[1\]\.data_type: 'TYPE_FLOAT' is not a data type \(TYPE_BOOL, TYPE_UINT8, .*TYPE_FP32, .*TYPE_BF16\)$"),
    "bad enum number": ("input { data_type: 99 }", r"line 1: input\[0\]\.data_type: 99 is not a data type"),
    "bad kind": ("instance_group { kind: KIND_TPU }", r"instance_group\[0\]\.kind: 'KIND_TPU' is not a ModelInstanceGroup\.Kind \(KIND_AUTO, KIND_GPU, KIND_CPU, KIND_MODEL\)"),
    "string for an int": ('max_batch_size: "8"', r"""line 1: max_batch_size: expected an integer, got '"8"'"""),
    "float for an int": ("input { dims: [1, 2.5] }", r"input\[0\]\.dims\[1\]: expected an integer, got '2\.5'"),
    "unquoted string": ("name: add_sub", "name: expected a quoted string, got 'add_sub'"),
    "bad bool": ("model_transaction_policy { decoupled: TRUE }", r"model_transaction_policy\.decoupled: expected true or false, got 'TRUE'"),
    "out of range": ("max_batch_size: 2147483648", "max_batch_size: 2147483648 is out of range for int32"),
    "far out of range": ("max_batch_size: 1" + "0" * 5000, r"max_batch_size: 10{23}\.\.\. is out of range \(too many digits\)"),
    "negative unsigned": ("dynamic_batching { max_queue_delay_microseconds: -1 }", "max_queue_delay_microseconds: -1 is out of range for uint64"),
    "bad octal": ("max_batch_size: 09", "'09' is not an octal number"),
    "missing colon": ("input { dims [1] }", r"input\[0\]\.dims: expected ':' after dims, got '\['"),
    "list for a single value": ("max_batch_size: [1]", "max_batch_size: takes one value, not a list"),
    "list for a single message": ("version_policy [ { all {} } ]", "version_policy: takes one message, not a list"),
    "scalar for a message": ("dynamic_batching: 5", r"dynamic_batching: expected '\{' to start the message, got '5'"),
    "given twice": ('name: "a"\nname: "b"', "line 2: name: given more than once"),
    "message given twice": ("dynamic_batching { }\ndynamic_batching { }", "line 2: dynamic_batching: given more than once"),
    "oneof": ("dynamic_batching { }\nsequence_batching { }", "line 2: sequence_batching: given with dynamic_batching; only one of dynamic_batching, sequence_batching, ensemble_scheduling"),
    "unterminated string": ('name: "m"\ninput { name: "INPUT0 }\n', r"^c\.pbtxt: line 2: input\[0\]\.name: a string is not closed on the line it starts$"),
    "unterminated at the end": ('name: "m', "line 1: name: a string is not closed"),
    "string across lines": ('name: "a\nb"', "line 1: name: a string is not closed"),
    "bad escape": (r'name: "a\qb"', r"name: the string has a bad escape: \\q is not an escape"),
    "bad utf-8 escape": (r'name: "\xff"', "name: the string is not valid UTF-8"),
    "unclosed message": ('input { name: "a"', r"line 1: input\[0\]: expected a field of ModelInput or '\}', got the end of the file"),
    "unclosed list": ("input { dims: [1, 2 }", r"input\[0\]\.dims: expected ',' or '\]' in the list, got '\}'"),
    "trailing comma": ("input { dims: [1, 2,] }", r"input\[0\]\.dims\[2\]: expected an integer, got '\]'"),
    "messages without a comma": ('input [ { name: "a" } { name: "b" } ]', r"input: expected ',' or '\]' in the list, got '\{'"),
    "stray closer": ('name: "m" }', r"line 1: expected a field of ModelConfig, got '\}'"),
    "garbage": ('name: "m"\n@@@', "line 2: cannot read '@@@'"),
    "number glued to a word": ("max_batch_size: 8x", "max_batch_size: cannot read '8x'"),
    "extension syntax": ("[foo.bar] { }", r"line 1: expected a field of ModelConfig, got '\['"),
}
# fmt: on


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors(case: str) -> None:
    text, message = ERRORS[case]
    with fails(message):
        C.parse(text, "c.pbtxt")


def test_protobuf_refuses_them_too() -> None:
    # The errors above are Triton's too, but for an unknown enum number (proto3 keeps 99;
    # inferwire refuses it at once) and a bad escape (protobuf's C++ tokenizer, which Triton
    # uses, refuses "Invalid escape sequence in string literal"; the Python one lets it by).
    for case, (text, _) in ERRORS.items():
        if case not in ("bad enum number", "bad escape"):
            with pytest.raises(text_format.ParseError):
                reference(text)


def test_error_through_read_names_the_file(tmp_path: Path) -> None:
    folder = model(
        tmp_path,
        "m",
        'name: "m"\nbackend: "python"\ninput [ { name: "x" data_type: TYPE_FLOAT dims: [1] } ]',
    )
    with fails(
        rf"^{re.escape(str(folder / 'config.pbtxt'))}: line 3: input\[0\]\.data_type: 'TYPE_FLOAT' is not a data type"
    ):
        C.read(folder)


def test_depth_bomb() -> None:
    for text in ("input {" * 10_000, "{" * 10_000, "input: [" * 10_000, "<" * 10_000):
        with fails(r"^c: line 1: "):
            C.parse(text, "c")


def test_depth_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # No ModelConfig is deeper than 7 messages; the limit guards the parser all the same.
    text = "optimization { cuda { graph_spec { graph_lower_bound { input { key: 'x' value { dim: 1 } } } } } }"
    assert C.parse(text, "c")["optimization"]["cuda"]["graph_spec"][0]["graph_lower_bound"]
    from inferwire.triton import config_schema

    monkeypatch.setattr(config_schema, "MAX_DEPTH", 3)
    with fails(
        r"^c: line 1: optimization\.cuda\.graph_spec\[0\]: messages nested deeper than 3 levels$"
    ):
        C.parse(text, "c")


def test_size_limit(tmp_path: Path) -> None:
    text = 'name: "m"\n' + "# padding\n" * (2 * 1024 * 1024 // 10)
    with fails(r"^c: \d+ bytes, more than a model configuration may have \(1048576\)$"):
        C.parse(text, "c")
    folder = model(tmp_path, "m", text)
    with fails(rf"^{re.escape(str(folder / 'config.pbtxt'))}: \d+ bytes"):
        C.read(folder)


def test_value_limit() -> None:
    text = "input { dims: [" + ",".join(["1"] * 200_000) + "] }"
    with fails(
        r"^c: line 1: input\[0\]\.dims\[\d+\]: more than 100000 values in one model configuration$"
    ):
        C.parse(text, "c")
    with fails(r"^c: line 2: input\[0\]\.dims\[99999\]: more than 100000 values"):
        C.parse("input {\n" + "dims: 1 " * 100_000 + "}", "c")
    assert (
        len(C.parse("input { dims: [" + ",".join(["1"] * 99_000) + "] }", "c")["input"][0]["dims"])
        == 99_000
    )


def test_not_utf8(tmp_path: Path) -> None:
    folder = model(tmp_path, "m", None)
    (folder / "config.pbtxt").write_bytes(b'name: "\xff"')
    with fails("config.pbtxt: not UTF-8 text"):
        C.read(folder)


# --- auto-complete, as Triton completes a partial config ---------------------------------------


# fmt: off
BACKENDS = [  # config, version folder's files -> platform, backend, default_model_filename
    ('platform: "onnxruntime_onnx"', (), "onnxruntime_onnx", "onnxruntime", "model.onnx"),
    ('backend: "onnxruntime"', (), "onnxruntime_onnx", "onnxruntime", "model.onnx"),
    ('platform: "pytorch_libtorch"', (), "pytorch_libtorch", "pytorch", ""),  # Triton names no file
    ('backend: "pytorch"', (), "pytorch_libtorch", "pytorch", "model.pt"),
    ('platform: "torch_aoti"', (), "torch_aoti", "pytorch", "model.pt2"),
    ('platform: "tensorflow_savedmodel"', (), "tensorflow_savedmodel", "tensorflow", "model.savedmodel"),
    ('platform: "tensorflow_graphdef"', (), "tensorflow_graphdef", "tensorflow", "model.graphdef"),
    ('platform: "tensorrt_plan"', (), "tensorrt_plan", "tensorrt", "model.plan"),
    ('backend: "python"', (), "", "python", "model.py"),
    ('default_model_filename: "model.py"', ("1/other.py",), "", "python", "model.py"),
    ('default_model_filename: "model.onnx"', (), "onnxruntime_onnx", "onnxruntime", "model.onnx"),
    ("", ("1/model.py",), "", "python", "model.py"),
    ("", ("1/model.onnx",), "onnxruntime_onnx", "onnxruntime", "model.onnx"),
    ("", ("1/model.onnx/",), "onnxruntime_onnx", "onnxruntime", "model.onnx"),  # a large model's folder
    ("", ("1/model.pt",), "pytorch_libtorch", "pytorch", ""),
    ("", ("1/model.savedmodel/",), "tensorflow_savedmodel", "tensorflow", "model.savedmodel"),
    ("", ("1/model.plan",), "tensorrt_plan", "tensorrt", "model.plan"),
    ("", ("1/model.py", "2/model.onnx"), "", "python", "model.py"),  # the first version folder
    ("", ("10/model.onnx", "9/model.py"), "onnxruntime_onnx", "onnxruntime", "model.onnx"),  # "10" < "9"
]
# fmt: on


@pytest.mark.parametrize(("text", "files", "platform", "backend", "filename"), BACKENDS)
def test_backend_platform_and_file(
    tmp_path: Path, text: str, files: tuple[str, ...], platform: str, backend: str, filename: str
) -> None:
    config = C.read(model(tmp_path, "m", text, files=files or ("1/",)))
    assert (config.platform, config.backend) == (platform, backend)
    assert config.raw.get("default_model_filename", "") == filename
    assert config.default_model_filename == (filename or "model.pt")


def test_no_backend_to_be_found(tmp_path: Path) -> None:
    with fails(r"config\.pbtxt: backend: not given, and no version folder holds a model file"):
        C.read(model(tmp_path, "m", 'name: "m"', files=("1/weights.bin",)))
    custom = C.read(model(tmp_path, "m.identity", None, files=("1/",)))
    assert (custom.backend, custom.default_model_filename) == ("identity", "model.identity")


def test_defaults(tmp_path: Path) -> None:
    raw = C.read(
        model(
            tmp_path,
            "m",
            'backend: "python"\ninstance_group [{ }, { count: 4 name: "big" }, { kind: KIND_MODEL }]',
        )
    ).raw
    assert raw["name"] == "m" and raw.get("max_batch_size", 0) == 0
    assert raw["version_policy"] == {"latest": {"num_versions": 1}}
    assert raw["optimization"] == {
        "input_pinned_memory": {"enable": True},
        "output_pinned_memory": {"enable": True},
    }
    assert raw["instance_group"] == [
        {"name": "m_0", "kind": "KIND_CPU", "count": 1},
        {"name": "big", "kind": "KIND_CPU", "count": 4},
        {"name": "m_2", "kind": "KIND_MODEL", "count": 1},
    ]
    assert C.read(model(tmp_path, "n", 'backend: "python"')).raw["instance_group"] == [
        {"name": "n", "kind": "KIND_CPU", "count": 1}
    ]


def test_preferred_batch_size_defaults_to_max_batch_size(tmp_path: Path) -> None:
    config = C.read(
        model(
            tmp_path,
            "m",
            'backend: "python"\nmax_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 100 }',
        )
    )
    assert config.preferred_batch_sizes == [8]
    assert C.serving(config) == {"max_batch_size": 8, "max_batch_delay": 0.0001, "model_threads": 1}


def test_name_must_be_the_folders(tmp_path: Path) -> None:
    with fails(
        r"config\.pbtxt: name: 'other' is not the name of its folder 'm'; Triton requires the two to be the same"
    ):
        C.read(model(tmp_path, "m", 'name: "other"\nbackend: "python"'))


def test_strict_needs_a_config(tmp_path: Path) -> None:
    folder = model(tmp_path, "m", None)
    assert C.read(folder).backend == "python"
    with fails(r"config\.pbtxt: no config\.pbtxt, and --strict-model-config is on$"):
        C.read(folder, strict=True)


def test_auto_complete_hook(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def auto(config: dict[str, Any]) -> dict[str, Any]:
        seen.append(json.loads(json.dumps(config)))  # the JSON form: every field present
        config = dict(config)
        config["max_batch_size"] = 4
        config["input"] = [
            {"name": "x", "data_type": "TYPE_FP32", "dims": ["-1"]}
        ]  # int64 as a string
        config["output"] = [{"name": "y", "data_type": 11, "dims": [1]}]
        config["dynamic_batching"] = {}
        config["model_transaction_policy"] = {"decoupled": True}
        config["name"] = "ignored"  # Triton takes back only what a backend may complete
        return config

    config = C.read(model(tmp_path, "m", 'backend: "python"'), auto=auto)
    assert seen[0]["name"] == "m" and seen[0]["input"] == [] and seen[0]["max_batch_size"] == 0
    assert seen[0]["instance_group"][0]["kind"] == "KIND_CPU"
    assert (config.name, config.max_batch_size, config.decoupled) == ("m", 4, True)
    assert [(t.name, t.data_type, t.dims) for t in config.inputs + config.outputs] == [
        ("x", "TYPE_FP32", [-1]),
        ("y", "TYPE_FP32", [1]),
    ]
    assert config.preferred_batch_sizes == [4]  # normalized again afterwards


def test_auto_complete_is_checked(tmp_path: Path) -> None:
    folder = model(tmp_path, "m", 'backend: "python"\ndynamic_batching { }')
    with fails(r"\(auto\): input\[0\]\.data_type: 'FP32' is not a enum value"):
        C.read(
            folder, auto=lambda c: {**c, "input": [{"name": "x", "data_type": "FP32", "dims": [1]}]}
        )
    with fails(r"config\.pbtxt: input\[0\]\.dims: input 'x' needs dims"):
        C.read(folder, auto=lambda c: {**c, "input": [{"name": "x", "data_type": "TYPE_FP32"}]})
    with fails(r"dynamic_batching: auto-complete cannot change the scheduler to sequence_batching"):
        C.read(
            folder,
            auto=lambda c: {
                **{k: v for k, v in c.items() if k != "dynamic_batching"},
                "sequence_batching": {},
            },
        )
    with fails(r"config\.pbtxt \(auto\): input\[0\]\.nme: not a field of ModelInput"):
        C.read(folder, auto=lambda c: {**c, "input": [{"nme": "x"}]})
    assert C.read(folder, strict=False, auto=lambda c: c).inputs == []
    called: list[Any] = []
    C.read(folder, strict=True, auto=called.append)  # strict: no backend auto-complete
    assert called == []


# --- what Triton checks at load --------------------------------------------------------------

# fmt: off
LOAD_ERRORS = {
    "input without data_type": ('input [{ name: "x" dims: [1] }]', r"input\[0\]\.data_type: input 'x' needs data_type"),
    "input without dims": ('input [{ name: "x" data_type: TYPE_FP32 }]', r"input\[0\]\.dims: input 'x' needs dims"),
    "output without name": ("output [{ data_type: TYPE_FP32 dims: [1] }]", r"output\[0\]\.name: output '' needs name"),
    "duplicate input": ('input [{ name: "x" data_type: TYPE_FP32 dims: [1] }, { name: "x" data_type: TYPE_FP32 dims: [2] }]', r"input\[1\]\.name: 'x' names two inputs"),
    "zero dim": ('input [{ name: "x" data_type: TYPE_FP32 dims: [2, 0] }]', r"input\[0\]\.dims: \[2, 0\]: each dimension is 1 or more, or -1"),
    "negative dim": ('output [{ name: "y" data_type: TYPE_FP32 dims: [-2] }]', r"output\[0\]\.dims: \[-2\]"),
    "reshape count": ('input [{ name: "x" data_type: TYPE_FP32 dims: [2, 3] reshape { shape: [5] } }]', r"input\[0\]\.reshape: \[5\] does not hold the elements of dims \[2, 3\]"),
    "reshape wildcards": ('input [{ name: "x" data_type: TYPE_FP32 dims: [2, -1] reshape { shape: [-1, 2] } }]', r"input\[0\]\.reshape: \[-1, 2\] does not hold"),
    "empty reshape without batching": ('input [{ name: "x" data_type: TYPE_FP32 dims: [1] reshape { } }]', r"input\[0\]\.reshape: an empty reshape \(a scalar\) needs max_batch_size > 0"),
    "format needs 3 dims": ('input [{ name: "x" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [3, 224] }]', r"input\[0\]\.format: FORMAT_NCHW needs 3 dims"),
    "shape tensor": ('input [{ name: "x" data_type: TYPE_INT32 dims: [1] is_shape_tensor: true }]', r"input\[0\]\.is_shape_tensor: is for TensorRT models only"),
    "negative max_batch_size": ("max_batch_size: -1", r"max_batch_size: must be 0 \(no batch dimension\) or more, got -1"),
    "preferred above max": ("max_batch_size: 4\ndynamic_batching { preferred_batch_size: [2, 8] }", r"dynamic_batching\.preferred_batch_size: 8 is not between 1 and max_batch_size 4; Triton refuses it"),
    "dynamic batching with preferred sizes and no batching": ("dynamic_batching { preferred_batch_size: [4] }", r"dynamic_batching\.preferred_batch_size: 4 is not between 1 and max_batch_size 0"),
    "priority levels": ("max_batch_size: 4\ndynamic_batching { priority_levels: 2 }", r"dynamic_batching\.default_priority_level: must be 1 to 2"),
    "priority queue key": ("max_batch_size: 4\ndynamic_batching { priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 3 value { } } }", r"dynamic_batching\.priority_queue_policy: priority levels are 1 to 2"),
    "preserve ordering": ("max_batch_size: 4\ndynamic_batching { preserve_ordering: true default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 10 } }", r"dynamic_batching\.preserve_ordering"),
    "control without a name": ("sequence_batching { control_input [{ control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }] }] }", r"sequence_batching\.control_input\[0\]\.name: a control tensor needs a name of its own, got ''"),
    "two START controls": ('sequence_batching { control_input [{ name: "a" control [{ int32_false_true: [0, 1] }] }, { name: "b" control [{ int32_false_true: [0, 1] }] }] }', r"sequence_batching\.control_input\[1\]\.control\[0\]\.kind: more than one CONTROL_SEQUENCE_START tensor"),
    "control with one value": ('sequence_batching { control_input [{ name: "a" control [{ kind: CONTROL_SEQUENCE_END fp32_false_true: [1] }] }] }', r"sequence_batching\.control_input\[0\]\.control\[0\]: a CONTROL_SEQUENCE_END control gives one of int32_false_true, fp32_false_true or bool_false_true, with 2 values"),
    "control with two kinds of values": ('sequence_batching { control_input [{ name: "a" control [{ int32_false_true: [0, 1] bool_false_true: [false, true] }] }] }', r"sequence_batching\.control_input\[0\]\.control\[0\]: a CONTROL_SEQUENCE_START control gives one of"),
    "CORRID type": ('sequence_batching { control_input [{ name: "c" control [{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32 }] }] }', r"sequence_batching\.control_input\[0\]\.control\[0\]: a CORRID control gives only data_type, one of TYPE_UINT64"),
    "slot utilization": ("sequence_batching { direct { minimum_slot_utilization: 1.5 } }", r"sequence_batching\.direct\.minimum_slot_utilization: must be 0 to 1"),
    "CPU group with GPUs": ("instance_group [{ kind: KIND_CPU gpus: [0] }]", r"instance_group\[0\]\.gpus: a KIND_CPU group lists no GPUs"),
    "profile": ('instance_group [{ profile: ["0"] }]', r"instance_group\[0\]\.profile: is for TensorRT models only"),
    "batch input": ('input [{ name: "x" data_type: TYPE_FP32 dims: [1] }]\nbatch_input [{ kind: BATCH_ELEMENT_COUNT target_name: "n" data_type: TYPE_INT32 source_input: "x" }]', "batch_input: inferwire does not compute batch inputs or outputs; remove it"),
    "repository agents": ('model_repository_agents { agents [{ name: "checksum" }] }', "model_repository_agents: inferwire runs no repository agents"),
    "cache with decoupled": ("model_transaction_policy { decoupled: true }\nresponse_cache { enable: true }", "response_cache: Triton's cache takes no sequence or decoupled models"),
    "platform and backend": ('backend: "onnxruntime"\nplatform: "pytorch_libtorch"', "platform: 'pytorch_libtorch' does not go with backend 'onnxruntime'"),
    "unknown platform": ('platform: "caffe2_netdef"', "platform: 'caffe2_netdef' names no backend Triton knows; set backend"),
}
# fmt: on


@pytest.mark.parametrize("case", list(LOAD_ERRORS))
def test_load_errors(tmp_path: Path, case: str) -> None:
    text, message = LOAD_ERRORS[case]
    prefix = "" if re.search("^(backend|platform):", text, re.M) else 'backend: "python"\n'
    folder = model(tmp_path, "m", prefix + text)
    with fails(rf"^{re.escape(str(folder / 'config.pbtxt'))}: {message}"):
        C.read(folder)


def test_backends_that_read_their_tensors_from_the_model(tmp_path: Path) -> None:
    text = 'platform: "onnxruntime_onnx"\ninput [{ name: "x" }]'
    assert C.read(model(tmp_path, "m", text, files=("1/model.onnx",))).inputs[0].dims == []
    with fails(r"input\[0\]\.data_type: input 'x' needs data_type"):
        C.read(tmp_path / "m", strict=True)


def test_reshape_that_holds(tmp_path: Path) -> None:
    text = """backend: "python"
max_batch_size: 2
input [{ name: "a" data_type: TYPE_FP32 dims: [2, 4, -1, 6] reshape { shape: [8, -1, 1, 6] } },
       { name: "b" data_type: TYPE_FP32 dims: [1] reshape { shape: [] } }]"""
    config = C.read(model(tmp_path, "m", text))
    assert [t.reshape for t in config.inputs] == [[8, -1, 1, 6], []]


# fmt: off
ENSEMBLE_ERRORS = {
    "no steps": ("ensemble_scheduling { }", r"ensemble_scheduling\.step: an ensemble needs at least one step"),
    "step without a model": ('ensemble_scheduling { step [{ input_map { key: "a" value: "IN" } output_map { key: "b" value: "OUT" } }] }', r"ensemble_scheduling\.step\[0\]\.model_name: every step needs one"),
    "step without an output map": ('ensemble_scheduling { step [{ model_name: "m" input_map { key: "a" value: "IN" } }] }', r"ensemble_scheduling\.step\[0\]\.output_map: every step needs one"),
    "tensor written twice": ('ensemble_scheduling { step [{ model_name: "m" input_map { key: "a" value: "IN" } output_map { key: "b" value: "OUT" } }, { model_name: "n" input_map { key: "a" value: "IN" } output_map { key: "b" value: "OUT" } }] }', r"ensemble_scheduling\.step\[1\]\.output_map: 'OUT' is written twice"),
    "tensor nothing writes": ('ensemble_scheduling { step [{ model_name: "m" input_map [{ key: "a" value: "IN" }, { key: "b" value: "lost" }] output_map { key: "b" value: "OUT" } }] }', r"ensemble_scheduling\.step\[0\]\.input_map: 'lost': written by no step that can run, and not an ensemble input"),
    "output nothing writes": ('ensemble_scheduling { step [{ model_name: "m" input_map { key: "a" value: "IN" } output_map { key: "b" value: "OTHER" } }] }', r"output\[0\]: ensemble output 'OUT' is written by no step"),
    "instance group": ('instance_group [{ count: 1 }]\nensemble_scheduling { step [{ model_name: "m" input_map { key: "a" value: "IN" } output_map { key: "b" value: "OUT" } }] }', "instance_group: an ensemble takes none"),
    "backend": ('backend: "python"\nensemble_scheduling { step [{ model_name: "m" input_map { key: "a" value: "IN" } output_map { key: "b" value: "OUT" } }] }', "backend: an ensemble has platform 'ensemble' and no backend, got 'python'"),
    "a cycle": ('ensemble_scheduling { step [{ model_name: "a" input_map [{ key: "i" value: "IN" }, { key: "j" value: "y" }] output_map { key: "o" value: "x" } }, { model_name: "b" input_map { key: "i" value: "x" } output_map [{ key: "o" value: "y" }, { key: "p" value: "OUT" }] }] }', r"ensemble_scheduling\.step\[0\]\.input_map: 'y': written by no step that can run"),
    "no scheduling": ("", "ensemble_scheduling: platform 'ensemble' needs ensemble_scheduling's steps"),
}
# fmt: on


@pytest.mark.parametrize("case", list(ENSEMBLE_ERRORS))
def test_ensemble_errors(tmp_path: Path, case: str) -> None:
    text, message = ENSEMBLE_ERRORS[case]
    io = 'input [{ name: "IN" data_type: TYPE_FP32 dims: [1] }]\noutput [{ name: "OUT" data_type: TYPE_FP32 dims: [1] }]\n'
    folder = model(tmp_path, "e", 'platform: "ensemble"\n' + io + text, files=("1/",))
    with fails(rf"^{re.escape(str(folder / 'config.pbtxt'))}: {message}"):
        C.read(folder)


def test_ensemble_steps_in_any_order(tmp_path: Path) -> None:
    steps = [("c", "b2", "OUT"), ("b", "a1", "b2"), ("a", "IN", "a1")]
    text = 'platform: "ensemble"\ninput [{ name: "IN" data_type: TYPE_FP32 dims: [1] }]\noutput [{ name: "OUT" data_type: TYPE_FP32 dims: [1] }]\n'
    text += (
        "ensemble_scheduling { step ["
        + ", ".join(
            f'{{ model_name: "{m}" input_map {{ key: "x" value: "{i}" }} output_map {{ key: "y" value: "{o}" }} }}'
            for m, i, o in steps
        )
        + "] }"
    )
    config = C.read(model(tmp_path, "e", text, files=("1/",)))
    assert [s["model_name"] for s in config.ensemble_steps] == ["c", "b", "a"]


def test_ensemble_scheduling_needs_the_platform(tmp_path: Path) -> None:
    with fails(r"ensemble_scheduling: is for platform 'ensemble' only"):
        C.read(
            model(
                tmp_path,
                "m",
                'backend: "python"\nensemble_scheduling { step [{ model_name: "x" }] }',
            )
        )


# --- instance groups and GPUs --------------------------------------------------------------------


def test_gpu_groups_run_on_the_cpu_with_a_warning(tmp_path: Path) -> None:
    text = 'backend: "python"\ninstance_group [{ kind: KIND_GPU count: 2 gpus: [0, 1] }, { count: 1 gpus: [2] host_policy: "numa0" }, { kind: KIND_CPU count: 3 passive: true }]'
    config = C.read(model(tmp_path, "m", text))
    assert [g["kind"] for g in config.raw["instance_group"]] == ["KIND_GPU", "KIND_GPU", "KIND_CPU"]
    assert (
        config.instance_count == 2 * 2 + 1
    )  # per listed GPU, as Triton counts them; passive ones serve nothing
    assert C.warnings(config) == [
        "instance_group[0]: KIND_GPU runs on the CPU here (Triton would refuse the model on a machine without GPUs; inferwire serves it on the CPU)",
        "instance_group[0]: gpus ignored",
        "instance_group[1]: KIND_GPU runs on the CPU here (Triton would refuse the model on a machine without GPUs; inferwire serves it on the CPU)",
        "instance_group[1]: gpus, host_policy ignored",
        "instance_group[2]: passive ignored",
    ]


def test_warnings(tmp_path: Path) -> None:
    text = """backend: "python"
runtime: "model.py"
max_batch_size: 0
output [{ name: "y" data_type: TYPE_FP32 dims: [1] label_filename: "labels.txt" }]
optimization { cuda { graphs: true } input_pinned_memory { enable: false } }
dynamic_batching { priority_levels: 2 default_priority_level: 1 default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 5 } }
metric_tags { key: "team" value: "x" }
model_warmup [{ name: "w" batch_size: 1 }]
model_operations { op_library_filename: "ops.so" }
response_cache { enable: true }
cc_model_filenames { key: "7.5" value: "model_75.py" }
model_metrics { metric_control [{ metric_identifier { family: "f" } }] }
"""
    assert C.warnings(C.read(model(tmp_path, "m", text))) == [
        "runtime: 'model.py' ignored; the backend chooses how it runs",
        "output[0].label_filename: ignored (no classification extension)",
        "optimization: cuda, input_pinned_memory ignored (GPU and TensorRT settings)",
        "dynamic_batching: priority_levels, default_priority_level, default_queue_policy.timeout_action, default_queue_policy.default_timeout_microseconds ignored",
        "dynamic_batching: no batches with max_batch_size 0",
        "cc_model_filenames: ignored (files by GPU compute capability)",
        "metric_tags: ignored (inferwire's metrics are its own)",
        "model_warmup: ignored (no warm-up requests are sent)",
        "model_operations: ignored (no custom operation libraries are loaded)",
        "response_cache: ignored (no responses cached)",
        "model_metrics: ignored (inferwire's metrics are its own)",
    ]


def test_fields_table_covers_model_config() -> None:
    assert list(C.FIELDS) == list(MESSAGES["ModelConfig"])
    for field, what in C.FIELDS.items():
        assert what.split(":")[0] in (
            "honoured",
            "accepted",
            "refused",
            "ignored with a warning",
        ), field


# --- version policies ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "available", "expected"),
    [
        ("", [1, 2, 3], [3]),
        ("version_policy { latest { num_versions: 2 } }", [3, 1, 10, 2], [10, 3]),
        ("version_policy { latest { num_versions: 5 } }", [1, 2], [2, 1]),
        ("version_policy { all { } }", [2, 7, 1], [7, 2, 1]),
        ("version_policy: { all: {} }", [], []),
        ("version_policy { specific { versions: [1, 3] } }", [1, 2, 3, 4], [3, 1]),
        ("version_policy { specific { versions: [5] } }", [1, 2], []),
    ],
)
def test_version_policy(
    tmp_path: Path, policy: str, available: list[int], expected: list[int]
) -> None:
    config = C.read(model(tmp_path, "m", 'backend: "python"\n' + policy))
    assert config.served_versions(available) == expected


def test_version_policy_tuple(tmp_path: Path) -> None:
    def read(name: str, text: str) -> tuple[str, list[int]]:
        return C.read(model(tmp_path, name, 'backend: "python"\n' + text)).version_policy

    assert read("a", "") == ("latest", [1])
    assert read("b", "version_policy { latest { num_versions: 3 } }") == ("latest", [3])
    assert read("c", "version_policy { all {} }") == ("all", [])
    assert read("d", "version_policy { specific { versions: [1, 3] } }") == ("specific", [1, 3])


# --- the JSON Triton answers ---------------------------------------------------------------------


def tritons_json(config: C.ModelConfig) -> dict[str, Any]:
    """protobuf's JSON of the same message (MessageToJsonString with the proto's names and
    every field without presence), with the 64-bit fix-ups core's ModelConfigToJson makes,
    written here as that function writes them."""
    message = as_message(json.loads(json.dumps(C.to_json(config))))
    out = json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )

    def ints(obj: dict[str, Any], key: str) -> None:
        if key in obj:
            obj[key] = [int(v) for v in obj[key]] if isinstance(obj[key], list) else int(obj[key])

    for io in out["input"] + out["output"]:
        ints(io, "dims")
        ints(io.get("reshape", {}), "shape")
    ints(out.get("version_policy", {}).get("specific", {}), "versions")
    db = out.get("dynamic_batching", {})
    for key in ("max_queue_delay_microseconds", "priority_levels", "default_priority_level"):
        ints(db, key)
    ints(db.get("default_queue_policy", {}), "default_timeout_microseconds")
    for policy in db.get("priority_queue_policy", {}).values():
        ints(policy, "default_timeout_microseconds")
    sb = out.get("sequence_batching", {})
    ints(sb, "max_sequence_idle_microseconds")
    ints(sb.get("oldest", {}), "max_queue_delay_microseconds")
    ints(sb.get("direct", {}), "max_queue_delay_microseconds")
    for state in sb.get("state", []):
        ints(state, "dims")  # initial_state's dims stay strings: Triton looks on sequence_batching
    for step in out.get("ensemble_scheduling", {}).get("step", []):
        ints(step, "model_version")
    for warmup in out.get("model_warmup", []):
        for value in warmup.get("inputs", {}).values():
            ints(value, "dims")
    return out


EVERYTHING = """
name: "everything"
backend: "python"
max_batch_size: 8
version_policy { specific { versions: [2, 5] } }
input [{ name: "x" data_type: TYPE_FP32 dims: [-1, 3] reshape { shape: [-1, 3] } optional: true }]
output [{ name: "y" data_type: TYPE_STRING dims: [1] }]
dynamic_batching {
  preferred_batch_size: [2, 4]
  max_queue_delay_microseconds: 300
  priority_levels: 3
  default_priority_level: 2
  default_queue_policy { default_timeout_microseconds: 77 max_queue_size: 9 }
  priority_queue_policy { key: 1 value { default_timeout_microseconds: 88 } }
}
instance_group [{ count: 2 kind: KIND_CPU secondary_devices [{ kind: KIND_NVDLA device_id: 3 }] rate_limiter { resources [{ name: "r" count: 2 }] priority: 1 } }]
optimization { priority: PRIORITY_MAX cuda { graph_spec [{ batch_size: 1 input { key: "x" value { dim: [4] } } graph_lower_bound { input { key: "x" value { dim: [2] } } } }] } }
parameters { key: "p" value { string_value: "v" } }
model_warmup [{ name: "w" batch_size: 1 inputs { key: "x" value { data_type: TYPE_FP32 dims: [4, 3] random_data: true } } }]
model_transaction_policy { decoupled: false }
response_cache { enable: true }
model_metrics { metric_control [{ metric_identifier { family: "f" } histogram_options { buckets: [0.5, 1] } }] }
"""

STATEFUL = """
name: "stateful"
backend: "python"
max_batch_size: 2
sequence_batching {
  direct { max_queue_delay_microseconds: 40 minimum_slot_utilization: 0.5 }
  state [{ input_name: "in" output_name: "out" data_type: TYPE_INT32 dims: [1] initial_state [{ data_type: TYPE_INT32 dims: [1] zero_data: true name: "z" }] }]
  control_input [{ name: "S" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }] }]
}
"""


@pytest.mark.parametrize("text", [EVERYTHING, STATEFUL, ADD_SUB, REPEAT, BATCHING, SEQUENCE])
def test_to_json_is_protobufs_json_with_tritons_fixups(tmp_path: Path, text: str) -> None:
    name = re.search(r'name: "(\w+)"', text)
    config = C.read(model(tmp_path, name.group(1) if name else "square_int32", text))
    out = C.to_json(config)
    assert out == tritons_json(config)
    order = [f.name for f in pb.ModelConfig.DESCRIPTOR.fields]
    assert list(out) == [name for name in order if name in out]  # the proto's order
    json.dumps(out, allow_nan=False)  # plain JSON


def test_to_json_shapes(tmp_path: Path) -> None:
    out = C.to_json(C.read(model(tmp_path, "everything", EVERYTHING)))
    assert out["version_policy"] == {"specific": {"versions": [2, 5]}}
    assert out["input"][0]["dims"] == [-1, 3] and out["input"][0]["reshape"] == {"shape": [-1, 3]}
    assert out["output"][0] == {"name": "y", "data_type": "TYPE_STRING", "dims": [1], "label_filename": "",
                                "is_shape_tensor": False, "is_non_linear_format_io": False}  # fmt: skip
    assert out["dynamic_batching"] == {
        "preferred_batch_size": [2, 4], "max_queue_delay_microseconds": 300, "preserve_ordering": False,
        "priority_levels": 3, "default_priority_level": 2,
        "default_queue_policy": {"timeout_action": "REJECT", "default_timeout_microseconds": 77,
                                 "allow_timeout_override": False, "max_queue_size": 9},
        "priority_queue_policy": {"1": {"timeout_action": "REJECT", "default_timeout_microseconds": 88,
                                        "allow_timeout_override": False, "max_queue_size": 0}},
    }  # fmt: skip
    assert out["instance_group"][0]["secondary_devices"] == [
        {"kind": "KIND_NVDLA", "device_id": "3"}
    ]  # left a string
    graph = out["optimization"]["cuda"]["graph_spec"][0]
    assert graph["input"] == {"x": {"dim": ["4"]}} and graph["graph_lower_bound"]["input"] == {
        "x": {"dim": ["2"]}
    }
    assert out["optimization"]["input_pinned_memory"] == {"enable": True}
    assert out["model_warmup"][0]["inputs"]["x"] == {
        "data_type": "TYPE_FP32",
        "dims": [4, 3],
        "random_data": True,
    }
    assert out["parameters"] == {"p": {"string_value": "v"}}
    assert out["model_transaction_policy"] == {"decoupled": False}
    assert out["model_metrics"]["metric_control"][0]["histogram_options"] == {"buckets": [0.5, 1.0]}
    assert (
        "sequence_batching" not in out
        and "ensemble_scheduling" not in out
        and "model_operations" not in out
    )


def test_to_json_sequence_state(tmp_path: Path) -> None:
    out = C.to_json(C.read(model(tmp_path, "stateful", STATEFUL)))["sequence_batching"]
    assert out["direct"] == {"max_queue_delay_microseconds": 40, "minimum_slot_utilization": 0.5}
    assert out["state"][0]["dims"] == [1]
    assert out["state"][0]["initial_state"] == [
        {"data_type": "TYPE_INT32", "dims": ["1"], "zero_data": True, "name": "z"}
    ]
    assert out["max_sequence_idle_microseconds"] == 1000000  # Triton's default


def test_to_json_of_nan() -> None:
    raw = C.parse(
        "sequence_batching { direct { minimum_slot_utilization: nan } control_input [{ control [{ fp32_false_true: [-inf, inf] }] }] }",
        "c",
    )
    config = C.ModelConfig.from_raw({"name": "m", **raw})
    out = C.to_json(config)["sequence_batching"]
    assert out["direct"]["minimum_slot_utilization"] == "NaN"
    assert out["control_input"][0]["control"][0]["fp32_false_true"] == ["-Infinity", "Infinity"]
    assert C.from_json(C.to_json(config), "c")["sequence_batching"]["control_input"][0]["control"][
        0
    ]["fp32_false_true"] == [-math.inf, math.inf]


def test_from_json_round_trip(tmp_path: Path) -> None:
    config = C.read(model(tmp_path, "everything", EVERYTHING))
    assert as_message(C.from_json(C.to_json(config), "c")) == as_message(config.raw)


# --- data types ------------------------------------------------------------------------------------


def test_v2_datatype() -> None:
    assert C.v2_datatype("TYPE_FP32") == "FP32"
    assert C.v2_datatype("TYPE_STRING") == "BYTES"
    assert C.v2_datatype("TYPE_BF16") == "BF16"
    assert [C.v2_datatype(t) for t in ENUMS["DataType"][1:]] == [
        "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16",
        "FP32", "FP64", "BYTES", "BF16",
    ]  # fmt: skip
    with fails(r"'TYPE_INVALID' is not a data type"):
        C.v2_datatype("TYPE_INVALID")
    assert issubclass(C.ConfigError, ValueError)
