"""Triton's PyTorch backend for TorchScript (platform ``pytorch_libtorch``): ``<v>/model.pt``
loaded with ``torch.jit.load`` on the CPU and called with its inputs in the order
Triton's naming rules give (triton-inference-server/pytorch_backend,
``src/pt/model_instance_state.cc``, ``GetNamingConvention``, ``ValidateInputs``,
``ValidateOutputs``):

- inputs: when every config input is named after an argument of ``forward``, by those
  names; else when every name is ``<anything>__<index>``, by the index (``INPUT__0``);
  else in the config's order. A ``forward`` taking one ``Dict[str, Tensor]`` gets the
  inputs by their config names.
- outputs: ``<anything>__<index>`` names the index in what ``forward`` returns (a tensor
  is index 0, a tuple's items in turn); else the config's order.

A config must list its inputs and outputs (the backend completes nothing). BYTES inputs
and outputs are ``List[str]`` of one dimension, as there."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..contract import Request
from ..errors import ModelLoadError
from .backends import INTERNAL, INVALID_ARG, TritonAdapter, TritonFailure
from .config import ModelConfig

PLATFORM = "pytorch_libtorch"
# Triton's data types the backend has a torch type for (TYPE_STRING: List[str]).
TORCH_TYPES = {
    "TYPE_BOOL": "bool",
    "TYPE_UINT8": "uint8",
    "TYPE_INT8": "int8",
    "TYPE_INT16": "int16",
    "TYPE_INT32": "int32",
    "TYPE_INT64": "int64",
    "TYPE_FP16": "float16",
    "TYPE_FP32": "float32",
    "TYPE_FP64": "float64",
}
# A request's arrays may be read-only: the model shares them (and must not write to them).
warnings.filterwarnings("ignore", "The given NumPy array is not writable", UserWarning)


def _index(name: str) -> int | None:
    """The index a ``<name>__<index>`` name gives (the backend: the text after the first
    ``__``, all digits), or None."""
    at = name.find("__")
    digits = name[at + 2 :]
    if at < 0 or not ((digits.isascii() and digits.isdigit()) or digits == ""):
        return None
    return int(digits) if digits else 0


def input_positions(config: ModelConfig, arguments: list[str]) -> dict[str, int]:
    """Each config input's position among ``forward``'s arguments."""
    names = [t.name for t in config.inputs]
    if all(n in arguments for n in names):
        return {n: arguments.index(n) for n in names}
    indexes = [_index(n) for n in names]
    if all(i is not None for i in indexes):
        return {n: i for n, i in zip(names, indexes, strict=True) if i is not None}
    return {n: i for i, n in enumerate(names)}


def output_positions(config: ModelConfig) -> dict[str, int]:
    """Each config output's index in what ``forward`` returns."""
    names = [t.name for t in config.outputs]
    indexes = [_index(n) for n in names]
    if all(i is not None for i in indexes):
        return {n: i for n, i in zip(names, indexes, strict=True) if i is not None}
    return {n: i for i, n in enumerate(names)}


def check(config: ModelConfig, module: Any) -> tuple[bool, list[str]]:
    """The config against ``forward``'s signature, as the backend checks it at load:
    (whether forward takes one dict, its arguments' names)."""
    name = config.name
    arguments = list(module.forward.schema.arguments)
    if arguments and arguments[0].type.kind() == "ClassType":
        arguments = arguments[1:]
    kinds = [a.type.kind() for a in arguments]
    as_dict = kinds == ["DictType"]
    if not as_dict:
        if "DictType" in kinds:
            raise ModelLoadError(
                "Multiple inputs of kind DictType were detected. Only a single input of type "
                "Dict(str, Tensor) is supported."
            )
        for a in arguments:
            if a.type.kind() not in ("TensorType", "ListType"):
                raise ModelLoadError(
                    f"An input of type '{a.type}' was detected in the model. Only a single input "
                    "of type Dict(str, Tensor) or input(s) of type Tensor are supported."
                )
        expected = sum(1 for t in config.inputs if not t.optional)
        if len(arguments) != expected:
            raise ModelLoadError(
                f"unable to load model '{name}', configuration expects {expected} inputs, "
                f"model provides {len(arguments)}"
            )
    for kind, tensors in (("input", config.inputs), ("output", config.outputs)):
        if not tensors:
            raise ModelLoadError(
                f"model configuration must contain at least one {kind}, none were specified."
            )
        for t in tensors:
            if t.data_type != "TYPE_STRING" and t.data_type not in TORCH_TYPES:
                raise ModelLoadError(
                    f"unsupported datatype {t.data_type} for {kind} '{t.name}' for model '{name}'"
                )
            dims = t.reshape if t.reshape is not None else t.dims
            if t.data_type == "TYPE_STRING" and len(dims) + (config.max_batch_size > 0) > 1:
                raise ModelLoadError(
                    f"Triton only supports 1 dimensional List of String as {kind} for "
                    f"'{t.name}' for model '{name}'"
                )
    return as_dict, [a.name for a in arguments]


class TorchAdapter(TritonAdapter):
    """A TorchScript module, called under ``torch.inference_mode`` with the request's
    arrays as tensors that share their memory."""

    def __init__(self, module: Any, config: ModelConfig, version: str) -> None:
        super().__init__(config, version, PLATFORM)
        import torch

        self._torch = torch
        self.module = module
        self._as_dict, arguments = check(config, module)
        self._inputs = input_positions(config, arguments)
        self._outputs = output_positions(config)
        self._types = {t.name: t.data_type for t in config.outputs}
        self._strings = {t.name for t in config.inputs if t.data_type == "TYPE_STRING"}

    def _tensor(self, name: str, array: Any) -> Any:
        if name in self._strings:
            return [x.decode() if isinstance(x, bytes) else str(x) for x in np.ravel(array)]
        return self._torch.from_numpy(np.asarray(array))

    def infer(self, request: Request) -> Any:
        given = {n: self._tensor(n, a) for n, a in request.inputs.items()}
        try:
            with self._torch.inference_mode():
                if self._as_dict:
                    result = self.module(given)
                else:
                    args: list[Any] = [None] * (max(self._inputs.values(), default=-1) + 1)
                    for n, value in given.items():
                        args[self._inputs[n]] = value
                    result = self.module(*[a for a in args if a is not None])
        except Exception as e:
            raise TritonFailure(
                f"PyTorch execute failure: {type(e).__name__}: {e}".strip(), INTERNAL
            ) from e
        results = list(result) if isinstance(result, tuple) else [result]
        for r in results:
            if not isinstance(r, (self._torch.Tensor, list)):
                raise TritonFailure(
                    "PyTorch execute failure: output must be of type Tensor, List[str] or Tuple "
                    "containing one of these two types. It should not be a List / Dictionary of "
                    "Tensors or a Scalar",
                    INTERNAL,
                )
        wanted = [n for n in self._outputs if n in request.requested] or list(self._outputs)
        out = []
        for name in wanted:
            at = self._outputs[name]
            if at >= len(results):
                raise TritonFailure(
                    f"The output {name} in the model configuration refers to an output index "
                    f"which doesn't exist. This model has {len(results)} outputs",
                    INVALID_ARG,
                )
            out.append((name, self.as_configured(name, self._numpy(name, results[at]))))
        return out

    def _numpy(self, name: str, value: Any) -> Any:
        if isinstance(value, list):
            return np.array([str(x).encode() for x in value], dtype=object)
        array = value.detach().cpu().contiguous().numpy()
        made = next((k for k, v in TORCH_TYPES.items() if v == array.dtype.name), None)
        if made != self._types[name]:
            shown = made or f"TYPE_{array.dtype.name.upper()}"
            raise TritonFailure(
                f"configuration expects datatype {self._types[name]} for output '{name}', "
                f"model provides {shown}",
                INVALID_ARG,
            )
        return array


def build(t: Any, path: Path) -> TorchAdapter:
    """The adapter of one version (``t``: ``triton.repository.TritonModel``)."""
    try:
        import torch
    except ImportError:
        raise ModelLoadError("torch is not installed") from None

    if not path.is_file():
        raise ModelLoadError(f"unable to find '{path}' for model instance '{t.config.name}'")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # torch.jit's deprecation notice
            jit: Any = torch.jit  # untyped where torch is installed
            module = jit.load(str(path), map_location="cpu")
    except Exception as e:
        raise ModelLoadError(
            f"failed to load model '{t.config.name}': {type(e).__name__}: {e}"
        ) from e
    module.eval()
    return TorchAdapter(module, t.config, t.version)
