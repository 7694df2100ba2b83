"""Triton's ONNX Runtime backend (platform ``onnxruntime_onnx``): ``<model>/<v>/model.onnx``
(or the config's ``default_model_filename``; a folder holding ``model.onnx``) run by
onnxruntime on the CPU, its inputs and outputs by the graph's names.

At load, as the backend does (triton-inference-server/onnxruntime_backend,
``src/onnxruntime.cc``): a config that leaves out the inputs or the outputs is completed
from the graph (``AutoCompleteConfig``: ``max_batch_size`` 4, Triton's default, and
``dynamic_batching`` when every tensor's first dimension is dynamic; each tensor's name,
data type and dims, a scalar as ``dims: [1]``), then the config is checked against the
graph (``ValidateInputs``, ``ValidateOutputs``: the count, the names, the data types, the
dims, the first one the batch when ``max_batch_size`` is above 0). ``parameters``
``intra_op_thread_count``, ``inter_op_thread_count`` and ``execution_mode`` set the
session's options as they do there."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from ..contract import Request
from ..errors import ModelLoadError
from . import config as triton_config
from .backends import INTERNAL, INVALID_ARG, TritonAdapter, TritonFailure, shape_text
from .config import ModelConfig

PLATFORM = "onnxruntime_onnx"
# Triton's --backend-config default-max-batch-size: what auto-complete gives a model that
# can batch and whose config says no max_batch_size.
DEFAULT_MAX_BATCH_SIZE = 4
# onnxruntime's element types (NodeArg.type) as Triton's data types.
DATA_TYPES = {
    "tensor(bool)": "TYPE_BOOL",
    "tensor(uint8)": "TYPE_UINT8",
    "tensor(uint16)": "TYPE_UINT16",
    "tensor(uint32)": "TYPE_UINT32",
    "tensor(uint64)": "TYPE_UINT64",
    "tensor(int8)": "TYPE_INT8",
    "tensor(int16)": "TYPE_INT16",
    "tensor(int32)": "TYPE_INT32",
    "tensor(int64)": "TYPE_INT64",
    "tensor(bfloat16)": "TYPE_BF16",
    "tensor(float16)": "TYPE_FP16",
    "tensor(float)": "TYPE_FP32",
    "tensor(double)": "TYPE_FP64",
    "tensor(string)": "TYPE_STRING",
}
_ORT_ERROR = re.compile(r"\[ONNXRuntimeError\] : (\d+) : \w+ : (.*)", re.S)


class GraphTensor:
    """An input or output of the graph: its name, Triton data type and shape (-1: a
    dimension the graph leaves open, named or not)."""

    def __init__(self, arg: Any) -> None:
        self.name: str = arg.name
        if not str(arg.type).startswith("tensor("):
            kind = str(arg.type).split("(", 1)[0].upper()
            raise ModelLoadError(
                f"Unsupported ONNX Type 'ONNX_TYPE_{kind}' for I/O '{arg.name}', expected "
                "'ONNX_TYPE_TENSOR'."
            )
        self.data_type = DATA_TYPES.get(arg.type, "TYPE_INVALID")
        self.dims = [d if isinstance(d, int) and d >= 0 else -1 for d in arg.shape]


def session(path: Path, config: ModelConfig) -> Any:
    """An onnxruntime session of ``path`` on the CPU, with the config's session options."""
    try:
        import onnxruntime
    except ImportError:
        raise ModelLoadError("onnxruntime is not installed: pip install onnxruntime") from None
    if path.is_dir():
        path = path / "model.onnx"
    if not path.is_file():
        raise ModelLoadError(f"unable to find '{path}' for model instance '{config.name}'")
    options = onnxruntime.SessionOptions()
    mode = _int_parameter(config, "execution_mode")
    if mode not in (0, 1):
        raise ModelLoadError(
            "Invalid configuration value provided. Expected values for  execution_mode are 0 "
            f"or 1 but got {mode} ."
        )
    options.execution_mode = (
        onnxruntime.ExecutionMode.ORT_PARALLEL if mode else onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    )
    if (intra := _int_parameter(config, "intra_op_thread_count")) > 0:
        options.intra_op_num_threads = intra
    if (inter := _int_parameter(config, "inter_op_thread_count")) > 0:
        options.inter_op_num_threads = inter
    try:
        return onnxruntime.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as e:
        raise ModelLoadError(f"{path}: {ort_message(e)}") from e


def _int_parameter(config: ModelConfig, key: str) -> int:
    value = config.parameters.get(key, "")
    try:
        return int(value) if value else 0
    except ValueError:
        raise ModelLoadError(
            f"failed to convert '{key}' value '{value}' to an integer for model '{config.name}'"
        ) from None


def complete(raw: dict[str, Any], inputs: list[GraphTensor], outputs: list[GraphTensor]) -> Any:
    """Triton's auto-complete for ONNX on the config's JSON form: nothing when it lists
    inputs and outputs; else max_batch_size (and dynamic batching) from whether every
    tensor's first dimension is open, and the tensors it leaves out from the graph."""
    if raw.get("input") and raw.get("output"):
        return raw
    name = raw.get("name", "")
    batches = all(t.dims and t.dims[0] == -1 for t in [*inputs, *outputs])
    mbs = int(raw.get("max_batch_size", 0))
    if batches:
        if mbs == 0:
            mbs = raw["max_batch_size"] = DEFAULT_MAX_BATCH_SIZE
        if mbs > 1 and "sequence_batching" not in raw and "dynamic_batching" not in raw:
            raw["dynamic_batching"] = {}
    elif mbs != 0:
        raise ModelLoadError(
            f"autofill failed for model '{name}': model does not support batching while "
            "non-zero max_batch_size is specified"
        )
    for key, tensors in (("input", inputs), ("output", outputs)):
        if raw.get(key):
            continue
        raw[key] = []
        for t in tensors:
            entry: dict[str, Any] = {"name": t.name, "data_type": t.data_type}
            dims = t.dims[1:] if mbs > 0 else list(t.dims)
            if not dims:
                dims = [1]
                if mbs > 0:
                    entry["reshape"] = {"shape": []}
            entry["dims"] = dims
            raw[key].append(entry)
    return raw


def check(config: ModelConfig, session: Any) -> None:
    """The config against the graph, as the backend checks it when an instance loads."""
    name, mbs = config.name, config.max_batch_size
    graph_inputs = {a.name: GraphTensor(a) for a in session.get_inputs()}
    overridable = {a.name: GraphTensor(a) for a in session.get_overridable_initializers()}
    graph_outputs = {a.name: GraphTensor(a) for a in session.get_outputs()}
    sequence = config.sequence_batching or {}
    if sequence.get("control_input") or sequence.get("state"):
        raise ModelLoadError(
            f"model '{name}': sequence_batching's control inputs and state are not fed to ONNX "
            "models here; remove them, or serve the sequence logic as a Python-backend model"
        )
    expected = sum(1 for t in config.inputs if not t.optional)
    if len(graph_inputs) != expected:
        raise ModelLoadError(
            f"unable to load model '{name}', configuration expects {expected} inputs, model "
            f"provides {len(graph_inputs)}"
        )
    allowed = {**graph_inputs, **overridable}
    for t in config.inputs:
        if t.optional and mbs != 0:
            raise ModelLoadError(
                f"unable to load model '{name}', optional input '{t.name}' is not supported for "
                "models that support batching"
            )
        _check_tensor(config, "input", t, allowed, exact=False)
    for t in config.outputs:
        _check_tensor(config, "output", t, graph_outputs, exact=True)


def _check_tensor(
    config: ModelConfig,
    kind: str,
    t: triton_config.TensorConfig,
    graph: dict[str, GraphTensor],
    *,
    exact: bool,
) -> None:
    name = config.name
    found = graph.get(t.name)
    if found is None:
        raise ModelLoadError(
            f"unexpected inference {kind} '{t.name}', allowed {kind}s are: "
            + ", ".join(sorted(graph))
        )
    if found.data_type != t.data_type:
        raise ModelLoadError(
            f"unable to load model '{name}', configuration expects datatype {t.data_type} for "
            f"{kind} '{t.name}', model provides {found.data_type}"
        )
    dims = t.reshape if t.reshape is not None else t.dims
    if not found.dims:  # a scalar: the config says 1 for each of its dims
        if any(d != 1 for d in dims):
            raise ModelLoadError(
                f"unable to load model '{name}', scalar tensor '{t.name}', should only provide 1 "
                "in the model configuration when the model doesn't support batching. Model "
                f"configuration provided: {shape_text(dims)}."
            )
        return
    _compare_dims(name, t.name, found.dims, dims, config.max_batch_size, exact)


def _compare_dims(
    model: str, tensor: str, graph: list[int], dims: list[int], mbs: int, exact: bool
) -> None:
    """CompareDimsSupported: the graph's shape against the config's (``exact``: an open
    dimension of the graph must be open in the config too)."""
    full = [-1, *dims] if mbs > 0 else list(dims)
    if mbs > 0 and graph[0] != -1:
        raise ModelLoadError(
            f"model '{model}', tensor '{tensor}': for the model to support batching the shape "
            "should have at least 1 dimension and the first dimension must be -1; but shape "
            f"expected by the model is {shape_text(graph)}"
        )
    fits = len(graph) == len(full) and all(
        g == d for g, d in zip(graph, full, strict=True) if exact or g != -1
    )
    if fits:
        return
    if mbs > 0:
        said = (
            f"{len(full)} dimensions (an initial batch dimension because max_batch_size > 0 "
            f"followed by the explicit tensor shape, making complete shape {shape_text(full)})"
        )
    else:
        said = f"{len(dims)} dimensions (shape {shape_text(dims)})"
    raise ModelLoadError(
        f"model '{model}', tensor '{tensor}': the model expects {len(graph)} dimensions "
        f"(shape {shape_text(graph)}) but the model configuration specifies {said}"
    )


class OnnxAdapter(TritonAdapter):
    """One onnxruntime session (its ``run`` is thread-safe and releases the GIL: the
    config's instances are that many calls at once on it)."""

    def __init__(self, session: Any, config: ModelConfig, version: str) -> None:
        super().__init__(config, version, PLATFORM)
        self.session = session
        self._outputs = [t.name for t in config.outputs]
        graph = {a.name: a for a in session.get_outputs()}
        # Scalars the graph makes, shaped as the config's dims (the backend's scalar_outputs_).
        self._scalars = {
            t.name: t.dims for t in config.outputs if t.name in graph and not graph[t.name].shape
        }
        self._strings = {t.name for t in config.inputs if t.data_type == "TYPE_STRING"}

    def infer(self, request: Request) -> Any:
        feeds = {
            name: _strings(array) if name in self._strings else array
            for name, array in request.inputs.items()
        }
        names = [n for n in self._outputs if n in request.requested] or self._outputs
        try:
            results = self.session.run(names, feeds)
        except Exception as e:
            raise TritonFailure(ort_message(e), INTERNAL) from e
        out = []
        for name, array in zip(names, results, strict=True):
            if name in self._scalars:
                array = np.reshape(array, self._scalars[name])
            out.append((name, self.as_configured(name, array)))
        return out


def _strings(array: Any) -> Any:
    """BYTES as onnxruntime takes strings: an object array of ``str`` (UTF-8)."""
    array = np.asarray(array)
    try:
        return np.array(
            [x.decode() if isinstance(x, bytes) else str(x) for x in array.reshape(-1)],
            dtype=object,
        ).reshape(array.shape)
    except UnicodeDecodeError as e:
        raise TritonFailure(
            f"a BYTES input is not UTF-8 text ({e}); onnxruntime's string tensors hold text",
            INVALID_ARG,
        ) from None


def ort_message(e: BaseException) -> str:
    """onnxruntime's error as Triton words it: ``onnx runtime error CODE: message``."""
    found = _ORT_ERROR.match(str(e))
    if found is None:
        return f"onnx runtime error: {e}"
    return f"onnx runtime error {found.group(1)}: {found.group(2)}"


def build(t: Any, path: Path) -> OnnxAdapter:
    """The adapter of one version (``t``: ``triton.repository.TritonModel``): the session,
    the config completed from the graph where it leaves tensors out, checked against it."""
    config: ModelConfig = t.config
    s = session(path, config)
    if not (config.inputs and config.outputs):
        inputs = [GraphTensor(a) for a in s.get_inputs()]
        outputs = [GraphTensor(a) for a in s.get_outputs()]
        config = triton_config.read(t.folder, auto=lambda raw: complete(raw, inputs, outputs))
    check(config, s)
    return OnnxAdapter(s, config, t.version)
