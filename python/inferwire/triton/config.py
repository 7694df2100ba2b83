"""A Triton model's configuration (``config.pbtxt``), read as Triton reads it: parsed
(``config_schema.parse``), completed where it is partial and checked as Triton completes
and checks it at load (``read``), described as Triton's ``GET /v2/models/M/config``
answers (``to_json``), and turned into inferwire's serving settings (``serving``), with a
line for each setting inferwire does not act on (``warnings``, ``FIELDS``).

What Triton does, and where it says so (triton-inference-server/core, ``src/``):
``model_config_utils.cc`` ``AutoCompleteBackendFields`` (backend, platform and model file
from each other and from the first version folder's files), ``NormalizeModelConfig`` (the
version policy, preferred batch sizes, the sequence idle time, pinned memory),
``NormalizeInstanceGroup`` and ``SetDefaultInstanceCount`` (groups, kinds, counts),
``ValidateModelConfig``, ``ValidateModelIOConfig``, ``ValidateInstanceGroup`` and
``ValidateEnsembleSchedulingConfig`` (the checks), ``ModelConfigToJson`` (the JSON answer);
``model_repository_manager.cc`` (the name must equal the folder's); ``backend_model.cc``
``UpdateModelConfig`` (what a backend's auto-complete may change).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from .config_schema import (
    ENUMS,
    MAX_BYTES,
    MESSAGES,
    ConfigError,
    default,
    from_json,
    parse,
)

__all__ = [
    "FIELDS",
    "ConfigError",
    "ModelConfig",
    "TensorConfig",
    "from_json",
    "parse",
    "read",
    "serving",
    "to_json",
    "v2_datatype",
    "warnings",
]

CONFIG_FILE = "config.pbtxt"
_SCHEDULERS = ("dynamic_batching", "sequence_batching", "ensemble_scheduling")
# Backends in the order Triton tries them: (backend, platform it implies, model file,
# platforms that name it, whether the file must be a folder: True, a file: False, or either).
_BACKENDS = (
    ("tensorrt", "tensorrt_plan", "model.plan", ("tensorrt_plan",), False),
    ("onnxruntime", "onnxruntime_onnx", "model.onnx", ("onnxruntime_onnx",), None),
    ("openvino", "", "model.xml", (), None),
    ("pytorch", "pytorch_libtorch", "model.pt", ("pytorch_libtorch", "libtorch"), False),
    ("pytorch", "torch_aoti", "model.pt2", ("torch_aoti",), False),
    ("python", "", "model.py", (), None),
)
_TENSORFLOW = {"tensorflow_savedmodel": "model.savedmodel", "tensorflow_graphdef": "model.graphdef"}
_PLATFORM_BACKEND = {
    "tensorrt_plan": "tensorrt",
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
    "torch_aoti": "pytorch",
    **dict.fromkeys(_TENSORFLOW, "tensorflow"),
}
# Backends that read their inputs and outputs from the model file when the config leaves
# them out (the Python backend's is the model's auto_complete_config: ``read``'s ``auto``).
_COMPLETES_IO = ("onnxruntime", "tensorflow", "tensorrt", "openvino")
_CORRID_TYPES = ("TYPE_UINT64", "TYPE_INT64", "TYPE_UINT32", "TYPE_INT32", "TYPE_STRING")
_PINNED = {"input_pinned_memory": {"enable": True}, "output_pinned_memory": {"enable": True}}
# The 64-bit fields Triton's JSON answer writes as numbers: protobuf's printer writes every
# 64-bit integer as a string, and ModelConfigToJson turns exactly these back into numbers.
# The others stay strings: sequence_batching.state.initial_state.dims (it looks for
# initial_state on sequence_batching, not on the state), optimization.cuda.graph_spec's
# dim, instance_group.secondary_devices.device_id, and priority_queue_policy's keys.
_NUMBERS = {
    ("input", "dims"),
    ("input", "reshape", "shape"),
    ("output", "dims"),
    ("output", "reshape", "shape"),
    ("version_policy", "specific", "versions"),
    ("dynamic_batching", "max_queue_delay_microseconds"),
    ("dynamic_batching", "priority_levels"),
    ("dynamic_batching", "default_priority_level"),
    ("dynamic_batching", "default_queue_policy", "default_timeout_microseconds"),
    ("dynamic_batching", "priority_queue_policy", "default_timeout_microseconds"),
    ("sequence_batching", "max_sequence_idle_microseconds"),
    ("sequence_batching", "oldest", "max_queue_delay_microseconds"),
    ("sequence_batching", "direct", "max_queue_delay_microseconds"),
    ("sequence_batching", "state", "dims"),
    ("ensemble_scheduling", "step", "model_version"),
    ("model_warmup", "inputs", "dims"),
}


@dataclass
class TensorConfig:
    """One input or output: ``dims`` without the batch dimension (-1: any size)."""

    name: str
    data_type: str
    dims: list[int]
    reshape: list[int] | None
    optional: bool
    is_shape_tensor: bool
    raw: dict[str, Any]

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> TensorConfig:
        reshape = raw.get("reshape")
        return cls(
            raw.get("name", ""),
            raw.get("data_type", "TYPE_INVALID"),
            list(raw.get("dims", [])),
            None if reshape is None else list(reshape.get("shape", [])),
            bool(raw.get("optional")),
            bool(raw.get("is_shape_tensor")),
            raw,
        )


@dataclass
class ModelConfig:
    """A completed, checked model configuration. ``raw`` is the message as ``parse`` gives
    it, completed as Triton completes it (what ``to_json`` prints); ``dynamic_batching``,
    ``sequence_batching`` and ``ensemble_steps`` are parts of it."""

    name: str
    platform: str
    backend: str
    max_batch_size: int
    inputs: list[TensorConfig]
    outputs: list[TensorConfig]
    dynamic_batching: dict[str, Any] | None
    preferred_batch_sizes: list[int]
    max_queue_delay_us: int
    instance_count: int  # model instances: each group's count (per listed GPU for KIND_GPU)
    sequence_batching: dict[str, Any] | None
    decoupled: bool  # model_transaction_policy.decoupled
    parameters: dict[str, str]  # ModelParameter.string_value by key
    version_policy: tuple[str, list[int]]  # ("latest", [n]), ("all", []), ("specific", [...])
    default_model_filename: str  # the file in a version folder (the backend's when unset)
    ensemble_steps: list[dict[str, Any]]
    raw: dict[str, Any]

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> ModelConfig:
        """The view of a completed ``raw`` message (``read`` completes and checks it)."""
        batching = raw.get("dynamic_batching")
        policy = raw.get("version_policy", {"latest": {}})
        kind = next(iter(policy), "latest")
        numbers = {"latest": [policy.get(kind, {}).get("num_versions", 1)], "all": []}
        groups = [g for g in raw.get("instance_group", []) if not g.get("passive")]
        count = sum(max(1, g.get("count", 1)) * (len(g.get("gpus", [])) or 1) for g in groups)
        backend, platform = raw.get("backend", ""), raw.get("platform", "")
        file = raw.get("default_model_filename") or next(
            (f for b, p, f, _, _ in _BACKENDS if b == backend and p in ("", platform)), ""
        )
        return cls(
            name=raw.get("name", ""),
            platform=platform,
            backend=backend,
            max_batch_size=raw.get("max_batch_size", 0),
            inputs=[TensorConfig.from_raw(t) for t in raw.get("input", [])],
            outputs=[TensorConfig.from_raw(t) for t in raw.get("output", [])],
            dynamic_batching=batching,
            preferred_batch_sizes=list((batching or {}).get("preferred_batch_size", [])),
            max_queue_delay_us=(batching or {}).get("max_queue_delay_microseconds", 0),
            instance_count=max(1, count),
            sequence_batching=raw.get("sequence_batching"),
            decoupled=bool(raw.get("model_transaction_policy", {}).get("decoupled")),
            parameters={k: v.get("string_value", "") for k, v in raw.get("parameters", {}).items()},
            version_policy=(kind, numbers.get(kind, policy.get(kind, {}).get("versions", []))),
            default_model_filename=_TENSORFLOW.get(platform, file),
            ensemble_steps=raw.get("ensemble_scheduling", {}).get("step", []),
            raw=raw,
        )

    def served_versions(self, available: list[int]) -> list[int]:
        """The version policy applied to the numbered folders present, newest first."""
        kind, numbers = self.version_policy
        newest = sorted(set(available), reverse=True)
        if kind == "latest":
            return newest[: numbers[0]]
        return newest if kind == "all" else [v for v in newest if v in numbers]


def read(
    folder: Path,
    *,
    strict: bool = False,
    auto: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    given: str | None = None,
) -> ModelConfig:
    """The configuration of the model in ``folder`` (``folder/config.pbtxt``; none: an empty
    one, unless ``strict``, Triton's ``--strict-model-config``), completed and checked as
    Triton does at load on a machine without GPUs. ``auto``, when not ``strict``, stands for
    the backend's auto-complete (a Python model's ``auto_complete_config``): it is called
    with the config in its JSON form (as ``to_json`` writes it, which is what Triton hands a
    backend) and returns it, changed; Triton takes back max_batch_size, input, output, the
    scheduler (when the config named none) and model_transaction_policy, and so does this.
    A config Triton would refuse raises ``ConfigError``. ``given``: a load call's
    ``config`` parameter (the config's JSON form), read instead of the file."""
    folder = Path(folder)
    path = folder / CONFIG_FILE
    where = str(path)
    if not folder.is_dir():
        raise ConfigError(f"{folder}: not a model folder")
    if given is not None:
        where = f"model {folder.name}: the load call's config"
        raw = _given(given, where)
    elif path.is_file():
        if path.stat().st_size > MAX_BYTES:
            raise ConfigError(
                f"{where}: {path.stat().st_size} bytes, more than a model "
                f"configuration may have ({MAX_BYTES})"
            )
        try:
            raw = parse(path.read_bytes().decode("utf-8"), where)
        except UnicodeDecodeError as e:
            raise ConfigError(f"{where}: not UTF-8 text ({e})") from None
    elif strict:
        raise ConfigError(f"{where}: no config.pbtxt, and --strict-model-config is on")
    else:
        raw = {}
    if not raw.get("name"):
        raw["name"] = folder.name
    elif raw["name"] != folder.name:
        raise ConfigError(
            f"{where}: name: {raw['name']!r} is not the name of its folder "
            f"{folder.name!r}; Triton requires the two to be the same"
        )
    versions = sorted(p.name for p in folder.iterdir() if p.is_dir() and _is_version(p.name))
    _complete_backend(raw, folder / versions[0] if versions else None, where)
    _normalize(raw)
    _check(raw, where)
    if strict:
        _check_tensors(raw, where, complete=True)
    _normalize_groups(raw)
    if auto is not None and not strict:
        _take_back(raw, from_json(auto(_json("ModelConfig", raw, ())), f"{where} (auto)"), where)
        _normalize(raw)
        _check(raw, where)
    _check_tensors(
        raw, where, complete=strict or auto is not None or raw.get("backend") not in _COMPLETES_IO
    )
    return ModelConfig.from_raw(raw)


def _given(text: str, where: str) -> dict[str, Any]:
    """A config in its JSON form, bounded as a config.pbtxt is."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise ConfigError(f"{where}: {size} bytes, more than a model configuration may have")
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ConfigError(f"{where}: not JSON ({e})") from None
    return from_json(obj, where)


def _is_version(name: str) -> bool:
    return name.isascii() and name.isdigit()


def _complete_backend(raw: dict[str, Any], version: Path | None, where: str) -> None:
    """Backend, platform and model file from each other, else from the version folder."""
    p, b, f = (raw.get(k, "") for k in ("platform", "backend", "default_model_filename"))

    def present(name: str, folder: bool | None) -> bool:
        entry = version / name if version is not None else None
        if entry is None or not entry.exists():
            return False
        return folder is None or entry.is_dir() == folder

    if not p and b in ("", "tensorflow"):  # TensorFlow: the platform says which format
        tf = [q for q, file in _TENSORFLOW.items() if f == file]
        if not f:
            tf = [q for q, file in _TENSORFLOW.items() if present(file, q.endswith("model"))]
        p = tf[-1] if tf else p
    if p in _TENSORFLOW:
        b, f = b or "tensorflow", f or _TENSORFLOW[p]
    else:
        for backend, platform, file, platforms, folder in _BACKENDS:
            if not b and (p in platforms or f == file):
                b = backend
            elif not b and not p and not f and present(file, folder):
                b, p = backend, platform
            if b == backend and (backend != "pytorch" or p in ("", platform)):
                if not (backend == "pytorch" and p == "pytorch_libtorch"):
                    f = f or file  # Triton names LibTorch's file only when it set the platform
                p = p or platform
                break
        if not (b or p or f):
            if "." not in raw["name"]:
                raise ConfigError(
                    f"{where}: backend: not given, and no version folder holds a "
                    "model file it could be told from (model.py, model.onnx, "
                    "model.pt, model.plan, model.savedmodel, model.graphdef, "
                    "model.xml); set backend"
                )
            b = raw["name"].split(".", 1)[1]  # a custom backend: model.<backend>
            f = f"model.{b}"
    raw.update(
        {k: v for k, v in (("platform", p), ("backend", b), ("default_model_filename", f)) if v}
    )


def _normalize(raw: dict[str, Any]) -> None:
    """NormalizeModelConfig: what Triton fills in whatever the backend."""
    raw.setdefault("version_policy", {"latest": {"num_versions": 1}})
    mbs = raw.get("max_batch_size", 0)
    for batcher in (raw.get("dynamic_batching"), raw.get("sequence_batching", {}).get("oldest")):
        if batcher is not None and not batcher.get("preferred_batch_size") and mbs > 0:
            batcher["preferred_batch_size"] = [mbs]
    if "sequence_batching" in raw and not raw["sequence_batching"].get(
        "max_sequence_idle_microseconds"
    ):
        raw["sequence_batching"]["max_sequence_idle_microseconds"] = 1_000_000
    if "ensemble_scheduling" not in raw:
        optimization = raw.setdefault("optimization", {})
        for key, value in _PINNED.items():
            optimization.setdefault(key, dict(value))


def _normalize_groups(raw: dict[str, Any]) -> None:
    """NormalizeInstanceGroup on a machine without GPUs: KIND_AUTO runs on the CPU (unless it
    lists GPUs: then it is KIND_GPU, which ``warnings`` says runs on the CPU here)."""
    if "ensemble_scheduling" in raw:
        return
    groups = raw.setdefault("instance_group", [])
    if not groups:
        groups.append({"name": raw["name"]})
    for i, group in enumerate(groups):
        group["name"] = group.get("name") or f"{raw['name']}_{i}"
        if group.get("kind", "KIND_AUTO") == "KIND_AUTO":
            group["kind"] = "KIND_GPU" if group.get("gpus") else "KIND_CPU"
        if group.get("count", 0) < 1:  # SetDefaultInstanceCount: 2 on the CPU for these two
            cpu = group["kind"] == "KIND_CPU"
            group["count"] = 2 if cpu and raw.get("backend") in ("tensorflow", "onnxruntime") else 1


def _take_back(raw: dict[str, Any], given: dict[str, Any], where: str) -> None:
    """UpdateModelConfig: what a backend's auto-complete may change."""
    for key in ("max_batch_size", "input", "output"):
        raw[key] = given.get(key, default(MESSAGES["ModelConfig"][key]))
    had = next((k for k in _SCHEDULERS if k in raw), None)
    now = next((k for k in _SCHEDULERS if k in given), None)
    if had is None and now is not None:
        raw[now] = given[now]
    elif had is not None and now != had:
        raise ConfigError(f"{where}: {had}: auto-complete cannot change the scheduler to {now}")
    if "model_transaction_policy" in given:
        decoupled = given["model_transaction_policy"].get("decoupled", False)
        raw["model_transaction_policy"] = {"decoupled": decoupled}


def _check(raw: dict[str, Any], where: str) -> None:
    """ValidateModelConfig, ValidateInstanceGroup and the fields inferwire refuses."""

    def fail(field: str, message: str) -> NoReturn:
        raise ConfigError(f"{where}: {field}: {message}")

    platform, backend = raw.get("platform", ""), raw.get("backend", "")
    if platform == "ensemble" and backend:
        fail("backend", f"an ensemble has platform 'ensemble' and no backend, got {backend!r}")
    if not backend and platform != "ensemble":
        fail("platform", f"{platform!r} names no backend Triton knows; set backend")
    known = {"tensorflow", "tensorrt", "onnxruntime", "pytorch"}
    if backend in known and _PLATFORM_BACKEND.get(platform) != backend:
        fail("platform", f"{platform!r} does not go with backend {backend!r}")
    mbs = raw.get("max_batch_size", 0)
    if mbs < 0:
        fail("max_batch_size", f"must be 0 (no batch dimension) or more, got {mbs}")
    policy = raw["version_policy"]
    if not policy:
        fail("version_policy", "gives none of latest, all, specific")
    if policy.get("latest", {"num_versions": 1}).get("num_versions", 0) < 1:
        fail("version_policy.latest.num_versions", "must be 1 or more")
    for key in ("batch_input", "batch_output"):
        if raw.get(key):
            fail(key, "inferwire does not compute batch inputs or outputs; remove it")
    if raw.get("model_repository_agents", {}).get("agents"):
        fail(
            "model_repository_agents",
            "inferwire runs no repository agents (checksum, "
            "decryption, ...); remove them and give the model files as they are",
        )
    if raw.get("response_cache", {}).get("enable") and (
        "sequence_batching" in raw or raw.get("model_transaction_policy", {}).get("decoupled")
    ):
        fail("response_cache", "Triton's cache takes no sequence or decoupled models")
    batching = raw.get("dynamic_batching")
    if batching is not None:
        for size in batching.get("preferred_batch_size", []):
            if not 0 < size <= mbs:
                fail(
                    "dynamic_batching.preferred_batch_size",
                    f"{size} is not between 1 and max_batch_size {mbs}; Triton refuses it",
                )
        levels = batching.get("priority_levels", 0)
        if levels and not 0 < batching.get("default_priority_level", 0) <= levels:
            fail("dynamic_batching.default_priority_level", f"must be 1 to {levels}")
        if levels and any(not 0 < k <= levels for k in batching.get("priority_queue_policy", {})):
            fail("dynamic_batching.priority_queue_policy", f"priority levels are 1 to {levels}")
        policies = [
            batching.get("default_queue_policy", {}),
            *batching.get("priority_queue_policy", {}).values(),
        ]
        delays = any(
            q.get("timeout_action") == "DELAY" and q.get("default_timeout_microseconds")
            for q in policies
        )
        if batching.get("preserve_ordering") and (levels > 1 or delays):
            fail(
                "dynamic_batching.preserve_ordering",
                "takes one priority level and no DELAY timeout action",
            )
    if "sequence_batching" in raw:
        _check_sequence(raw["sequence_batching"], mbs, fail)
    if "ensemble_scheduling" in raw or platform == "ensemble":
        _check_ensemble(raw, fail)
    for i, group in enumerate(raw.get("instance_group", [])):
        kind = group.get("kind", "KIND_AUTO")
        if kind in ("KIND_CPU", "KIND_MODEL") and group.get("gpus"):
            fail(f"instance_group[{i}].gpus", f"a {kind} group lists no GPUs")
        if group.get("profile") and platform != "tensorrt_plan":
            fail(f"instance_group[{i}].profile", "is for TensorRT models only")


def _check_sequence(
    sequence: dict[str, Any], mbs: int, fail: Callable[[str, str], NoReturn]
) -> None:
    seen: set[str] = set()
    kinds: set[str] = set()
    for i, control_input in enumerate(sequence.get("control_input", [])):
        at, name = f"sequence_batching.control_input[{i}]", control_input.get("name", "")
        if not name or name in seen:
            fail(at + ".name", f"a control tensor needs a name of its own, got {name!r}")
        seen.add(name)
        for j, control in enumerate(control_input.get("control", [])):
            kind = control.get("kind", "CONTROL_SEQUENCE_START")
            if kind in kinds:
                fail(f"{at}.control[{j}].kind", f"more than one {kind} tensor")
            kinds.add(kind)
            given = [
                k
                for k in ("int32_false_true", "fp32_false_true", "bool_false_true")
                if control.get(k)
            ]
            if kind == "CONTROL_SEQUENCE_CORRID":
                if given or control.get("data_type") not in _CORRID_TYPES:
                    fail(
                        f"{at}.control[{j}]",
                        "a CORRID control gives only data_type, one of " + ", ".join(_CORRID_TYPES),
                    )
            elif len(given) != 1 or len(control[given[0]]) != 2:
                fail(
                    f"{at}.control[{j}]",
                    f"a {kind} control gives one of int32_false_true, "
                    "fp32_false_true or bool_false_true, with 2 values: [false, true]",
                )
    for size in sequence.get("oldest", {}).get("preferred_batch_size", []):
        if not 0 < size <= mbs:
            fail("sequence_batching.oldest.preferred_batch_size", f"{size} is not 1 to {mbs}")
    utilization = sequence.get("direct", {}).get("minimum_slot_utilization", 0.0)
    if not 0.0 <= utilization <= 1.0:
        fail("sequence_batching.direct.minimum_slot_utilization", "must be 0 to 1")


def _check_ensemble(raw: dict[str, Any], fail: Callable[[str, str], NoReturn]) -> None:
    if raw.get("platform") != "ensemble":
        fail("ensemble_scheduling", "is for platform 'ensemble' only")
    if "ensemble_scheduling" not in raw:
        fail("ensemble_scheduling", "platform 'ensemble' needs ensemble_scheduling's steps")
    for key in ("instance_group", "optimization", "model_warmup"):
        if key in raw and (raw[key] or key == "optimization"):  # an empty optimization is set
            fail(key, "an ensemble takes none")
    steps = raw["ensemble_scheduling"].get("step", [])
    if not steps:
        fail("ensemble_scheduling.step", "an ensemble needs at least one step")
    written: set[str] = set()
    for i, step in enumerate(steps):
        for key in ("model_name", "input_map", "output_map"):
            if not step.get(key):
                fail(f"ensemble_scheduling.step[{i}].{key}", "every step needs one")
        for tensor in step["output_map"].values():
            if tensor in written:
                fail(f"ensemble_scheduling.step[{i}].output_map", f"{tensor!r} is written twice")
            written.add(tensor)
    # The data flow: from the ensemble's inputs, each step runs once all it reads is ready.
    ready = {t.get("name", "") for t in raw.get("input", [])}
    needs = [set(step["input_map"].values()) for step in steps]
    readers: dict[str, list[int]] = {}
    for i, tensors in enumerate(needs):
        for tensor in tensors:
            readers.setdefault(tensor, []).append(i)
    waiting, queue = [len(tensors) for tensors in needs], list(ready)
    while queue:
        for i in readers.get(queue.pop(), ()):
            waiting[i] -= 1
            new = set(steps[i]["output_map"].values()) - ready if waiting[i] == 0 else set()
            ready |= new
            queue.extend(new)
    for i, count in enumerate(waiting):
        if count:
            missing = ", ".join(map(repr, sorted(needs[i] - ready)))
            fail(
                f"ensemble_scheduling.step[{i}].input_map",
                f"{missing}: written by no step that can run, and not an ensemble input",
            )
    read_ = {t for tensors in needs for t in tensors}
    for i, tensor in enumerate(raw.get("input", [])):
        if tensor.get("name") not in read_:
            fail(f"input[{i}]", f"ensemble input {tensor.get('name')!r} is read by no step")
    for i, tensor in enumerate(raw.get("output", [])):
        if tensor.get("name") not in written:
            fail(f"output[{i}]", f"ensemble output {tensor.get('name')!r} is written by no step")
    outputs = {t.get("name", "") for t in raw.get("output", [])}
    for tensor in sorted(written - read_ - outputs):
        fail("ensemble_scheduling.step", f"{tensor!r} is written but read by no step")


def _check_tensors(raw: dict[str, Any], where: str, *, complete: bool) -> None:
    """ValidateModelIOConfig (``complete``: every tensor has name, data_type and dims), and
    names given once."""
    mbs, platform = raw.get("max_batch_size", 0), raw.get("platform", "")
    for kind in ("input", "output"):
        seen: set[str] = set()
        for i, tensor in enumerate(raw.get(kind, [])):
            at, name = f"{kind}[{i}]", tensor.get("name", "")

            def fail(field: str, message: str, at: str = at) -> NoReturn:
                raise ConfigError(f"{where}: {at}{field}: {message}")

            if name in seen:
                fail(".name", f"{name!r} names two {kind}s")
            seen.add(name)
            dims, reshape = tensor.get("dims", []), tensor.get("reshape")
            for key, missing in (
                ("name", not name),
                ("data_type", tensor.get("data_type", "TYPE_INVALID") == "TYPE_INVALID"),
                ("dims", not dims),
            ):
                if complete and missing:
                    fail(f".{key}", f"{kind} {name!r} needs {key}")
            for key, shape in (("dims", dims), ("reshape.shape", (reshape or {}).get("shape", []))):
                if any(d < 1 and d != -1 for d in shape):
                    fail(f".{key}", f"{shape}: each dimension is 1 or more, or -1 (any size)")
            if reshape is not None and dims:
                shape = reshape.get("shape", [])
                if not shape and mbs == 0:
                    fail(".reshape", "an empty reshape (a scalar) needs max_batch_size > 0")
                if _chunks(dims) != _chunks(shape) and not (not shape and _chunks(dims) == [1]):
                    fail(".reshape", f"{shape} does not hold the elements of dims {dims}")
            if tensor.get("format", "FORMAT_NONE") != "FORMAT_NONE" and len(dims) != 3:
                fail(".format", f"{tensor['format']} needs 3 dims, got {dims}")
            for key in ("is_shape_tensor", "is_non_linear_format_io"):
                if tensor.get(key) and platform != "tensorrt_plan":
                    fail(f".{key}", "is for TensorRT models only")


def _chunks(shape: list[int]) -> list[int]:
    """Element counts between the -1 dimensions (an empty shape counts 0, as Triton's)."""
    counts = [1]
    for d in shape:
        if d == -1:
            counts.append(1)
        else:
            counts[-1] *= d
    return counts if shape else [0]


def to_json(config: ModelConfig) -> dict[str, Any]:
    """What Triton's ``GET /v2/models/M/config`` answers for the model: protobuf's JSON of
    the completed ``ModelConfig`` with the proto's field names and every field without
    presence printed (``MessageToJsonString`` with ``preserve_proto_field_names`` and
    ``always_print_primitive_fields``; core ``ModelConfigToJson``), so scalars, enums,
    lists ([]) and maps ({}) always appear, while a message (version_policy's choice,
    dynamic_batching, model_transaction_policy, reshape, ...) appears only when set; the
    fields in the proto's order; 64-bit integers as strings, except those ModelConfigToJson
    turns back into numbers (``_NUMBERS``: dims, reshape, versions, the batchers'
    microseconds, ...). Seen in a real answer: NVIDIA Morpheus's developer guide ("Real
    world application: phishing detection", the ``/config`` of phishing-bert-onnx) shows
    ``"dims": [128]``, ``"max_queue_delay_microseconds": 50000``,
    ``"priority_queue_policy": {}``, ``"optimization": {"priority": "PRIORITY_DEFAULT",
    "input_pinned_memory": {"enable": true}, ...}``, ``"instance_group": [{"name": ...,
    "kind": "KIND_GPU", "count": 1, "gpus": [0], "secondary_devices": [], "profile": [],
    "passive": false, "host_policy": ""}]``, ``"cc_model_filenames": {}``,
    ``"metric_tags": {}``, ``"parameters": {}``, ``"model_warmup": []``."""
    return _json("ModelConfig", config.raw, ())


def _json(type_name: str, message: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in MESSAGES[type_name].values():
        has_presence = field.oneof or (field.kind == "message" and not field.repeated)
        if has_presence and field.name not in message:
            continue
        value, at = message.get(field.name, default(field)), (*path, field.name)
        if field.kind == "map":
            item = MESSAGES[field.entry]["value"]
            out[field.name] = {str(k): _json_value(item, v, at) for k, v in value.items()}
        elif field.repeated:
            out[field.name] = [_json_value(field, v, at) for v in value]
        else:
            out[field.name] = _json_value(field, value, at)
    return out


def _json_value(field: Any, value: Any, path: tuple[str, ...]) -> Any:
    if field.kind == "message":
        return _json(field.type, value, path)
    if field.type in ("int64", "uint64") and path not in _NUMBERS:
        return str(value)
    if field.type in ("float", "double") and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    return value


def v2_datatype(data_type: str) -> str:
    """A config's data type as the V2 protocol names it: TYPE_FP32 → FP32, TYPE_STRING →
    BYTES."""
    if data_type not in ENUMS["DataType"][1:]:
        raise ConfigError(f"{data_type!r} is not a data type ({', '.join(ENUMS['DataType'][1:])})")
    return "BYTES" if data_type == "TYPE_STRING" else data_type.removeprefix("TYPE_")


def serving(config: ModelConfig) -> dict[str, Any]:
    """inferwire's serving settings (``settings.ModelServing``) that follow from the config:
    batches of up to max_batch_size requests, waiting up to max_queue_delay_microseconds,
    only with dynamic_batching (inferwire's max_batch_size 1 is no batching); one model
    thread per instance; the dynamic batcher's queue size, when it sets one."""
    batching = config.dynamic_batching is not None and config.max_batch_size > 1
    out: dict[str, Any] = {
        "max_batch_size": config.max_batch_size if batching else 1,
        "max_batch_delay": config.max_queue_delay_us / 1e6 if batching else 0.0,
        "model_threads": config.instance_count,
    }
    queue = (config.dynamic_batching or {}).get("default_queue_policy", {})
    if queue.get("max_queue_size"):
        out["max_queue"] = queue["max_queue_size"]
    return out


FIELDS: dict[str, str] = {
    "name": "honoured: the model's name; defaults to its folder's, and must equal it",
    "platform": "honoured: with backend, says how the model is served (onnxruntime_onnx, "
    "pytorch_libtorch, tensorflow_savedmodel/graphdef, ensemble); completed from backend",
    "backend": "honoured: python runs model.py through the Python-backend adapter; completed "
    "from platform, or from the version folder's model file",
    "runtime": "ignored with a warning: the backend alone chooses how the model runs",
    "version_policy": "honoured: which numbered folders are served (latest, all, specific)",
    "max_batch_size": "honoured: above 0, every input and output has a batch dimension before "
    "dims; with dynamic_batching, the most requests joined into one batch",
    "input": "honoured: name, data_type, dims, reshape, optional; format and "
    "allow_ragged_batch accepted; is_shape_tensor and is_non_linear_format_io refused "
    "(TensorRT only, as Triton refuses them for other platforms)",
    "output": "honoured: name, data_type, dims, reshape; label_filename ignored with a "
    "warning (no classification extension); is_shape_tensor refused as for input",
    "batch_input": "refused: inferwire does not compute batch inputs",
    "batch_output": "refused: inferwire does not scatter batch outputs",
    "optimization": "ignored with a warning: GPU, TensorRT, CUDA graph and pinned memory "
    "settings; the defaults Triton fills in are still shown in the config's JSON",
    "dynamic_batching": "honoured: max_queue_delay_microseconds (max_batch_delay), "
    "default_queue_policy.max_queue_size (max_queue); preferred_batch_size accepted (batches "
    "grow to max_batch_size); priority levels, queue timeouts and ordering options ignored "
    "with a warning; with max_batch_size 0 it batches nothing, as in Triton",
    "sequence_batching": "accepted: checked as Triton checks it, and requests carry their "
    "sequence_id, sequence_start and sequence_end to the model; a Python model gets the "
    "control_input tensors as Triton adds them, and each sequence's requests run on the "
    "instance that ran its first (until its end, or max_sequence_idle_microseconds without "
    "a request); the direct/oldest strategy, the idle timeout's other effects and implicit "
    "state ignored with a warning",
    "ensemble_scheduling": "accepted: checked as Triton checks it (each step names a model "
    "and both maps; every tensor is written once and read); ensemble_steps gives the steps",
    "instance_group": "honoured: the instances' counts add up to model_threads; KIND_CPU, "
    "KIND_AUTO and KIND_MODEL run on the CPU; KIND_GPU accepted with a warning (it runs on "
    "the CPU, where Triton would refuse the model); rate_limiter, secondary_devices, "
    "passive and host_policy ignored with a warning; profile refused (TensorRT only)",
    "default_model_filename": "honoured: the model file in each version folder",
    "cc_model_filenames": "ignored with a warning: files by GPU compute capability",
    "metric_tags": "ignored with a warning",
    "parameters": "honoured: given to the model (the Python backend's model_config); "
    "EXECUTION_ENV_PATH ignored with a warning (the server's own Python runs the model)",
    "model_warmup": "ignored with a warning: no warm-up requests are sent",
    "model_operations": "ignored with a warning: no custom operation libraries are loaded",
    "model_transaction_policy": "honoured: decoupled models answer a request with a stream "
    "of responses",
    "model_repository_agents": "refused: inferwire runs no repository agents",
    "response_cache": "ignored with a warning: inferwire caches no responses",
    "model_metrics": "ignored with a warning: inferwire's metrics are its own",
}


def markdown_table() -> str:
    """Every ModelConfig field and what inferwire does with it: ``FIELDS`` as the
    migration guide's table (tests/docs/test_docs.py checks the guide holds it)."""
    rows = ["| config.pbtxt field | inferwire |", "|---|---|"]
    for field, how in FIELDS.items():
        status, _, what = how.partition(": ")
        rows.append(f"| `{field}` | **{status}**{': ' + what if what else ''} |")
    return "\n".join(rows) + "\n"


def warnings(config: ModelConfig) -> list[str]:
    """One line per setting in this config that inferwire does not act on."""
    raw, lines = config.raw, []
    if raw.get("runtime"):
        lines.append(f"runtime: {raw['runtime']!r} ignored; the backend chooses how it runs")
    for i, output in enumerate(raw.get("output", [])):
        if output.get("label_filename"):
            lines.append(f"output[{i}].label_filename: ignored (no classification extension)")
    optimization = raw.get("optimization", {})
    given = _set("ModelOptimizationPolicy", optimization, *MESSAGES["ModelOptimizationPolicy"])
    given = [k for k in given if optimization[k] != _PINNED.get(k)]  # not Triton's defaults
    if given:
        lines.append(f"optimization: {', '.join(given)} ignored (GPU and TensorRT settings)")
    batching = config.dynamic_batching or {}
    keys: tuple[str, ...] = ("priority_levels", "default_priority_level", "priority_queue_policy")
    given = _set("ModelDynamicBatching", batching, *keys, "preserve_ordering")
    keys = ("timeout_action", "default_timeout_microseconds", "allow_timeout_override")
    queue = batching.get("default_queue_policy", {})
    given += [f"default_queue_policy.{k}" for k in _set("ModelQueuePolicy", queue, *keys)]
    if given:
        lines.append(f"dynamic_batching: {', '.join(given)} ignored")
    if config.dynamic_batching is not None and config.max_batch_size < 2:
        lines.append(f"dynamic_batching: no batches with max_batch_size {config.max_batch_size}")
    sequence = config.sequence_batching or {}
    keys = ("direct", "oldest", "state", "iterative_sequence")
    given = _set("ModelSequenceBatching", sequence, *keys)
    if sequence.get("max_sequence_idle_microseconds", 1_000_000) != 1_000_000:
        given.append("max_sequence_idle_microseconds")
    if given:
        lines.append(f"sequence_batching: {', '.join(given)} ignored")
    for i, group in enumerate(raw.get("instance_group", [])):
        if group.get("kind") == "KIND_GPU":
            lines.append(
                f"instance_group[{i}]: KIND_GPU runs on the CPU here (Triton would refuse the "
                "model on a machine without GPUs; inferwire serves it on the CPU)"
            )
        keys = ("gpus", "rate_limiter", "secondary_devices", "passive", "host_policy")
        given = _set("ModelInstanceGroup", group, *keys)
        if given:
            lines.append(f"instance_group[{i}]: {', '.join(given)} ignored")
    if "EXECUTION_ENV_PATH" in config.parameters:
        lines.append("parameters.EXECUTION_ENV_PATH: ignored; the server's Python runs the model")
    ignored = {
        "cc_model_filenames": (raw.get("cc_model_filenames"), "files by GPU compute capability"),
        "metric_tags": (raw.get("metric_tags"), "inferwire's metrics are its own"),
        "model_warmup": (raw.get("model_warmup"), "no warm-up requests are sent"),
        "model_operations": (
            raw.get("model_operations", {}).get("op_library_filename"),
            "no custom operation libraries are loaded",
        ),
        "response_cache": (raw.get("response_cache", {}).get("enable"), "no responses cached"),
        "model_metrics": (
            raw.get("model_metrics", {}).get("metric_control"),
            "inferwire's metrics are its own",
        ),
    }
    lines += [f"{key}: ignored ({why})" for key, (value, why) in ignored.items() if value]
    return lines


def _set(type_name: str, message: dict[str, Any], *keys: str) -> list[str]:
    """Those of ``keys`` the message sets to something other than the default (an empty
    message counts as not set)."""
    fields = MESSAGES[type_name]
    return [k for k in keys if message.get(k) not in (None, {}, default(fields[k]))]
