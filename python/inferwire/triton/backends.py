"""What the adapters of Triton's other platforms share (ONNX Runtime, LibTorch, ensembles):
the model's config as Triton answers it, its metadata, its errors with the status Triton's
code for them maps to, and the output reshape Triton's core applies to every backend's
outputs (the core here reshapes inputs, as Triton's does, but leaves outputs as the model
made them)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..contract import Adapter
from .config import ModelConfig, TensorConfig, to_json, v2_datatype

# Triton's error codes as HTTP statuses (Triton's http_server mapping; gRPC's code follows
# from the status).
INTERNAL, INVALID_ARG, NOT_FOUND, UNAVAILABLE = 500, 400, 404, 503


class TritonFailure(Exception):
    """A request failed as Triton fails it: its message, and the status of its code."""

    def __init__(self, message: str, status: int = INTERNAL) -> None:
        super().__init__(message)
        self.status = status


class TritonAdapter(Adapter):
    """A model of a Triton repository served from its completed config: ``model_config``
    is the config's JSON, the metadata Triton's (``platform``, the version, each tensor's
    V2 datatype and shape, ``-1`` first where ``max_batch_size`` is above 0)."""

    def __init__(self, config: ModelConfig, version: str, platform: str) -> None:
        super().__init__(config.name)
        self.config = config
        self.version = version
        self._json = to_json(config)
        batch = [-1] if config.max_batch_size > 0 else []
        self._metadata = {
            "name": config.name,
            "versions": [version],
            "platform": platform,
            "inputs": [_tensor(t, batch) for t in config.inputs],
            "outputs": [_tensor(t, batch) for t in config.outputs],
        }
        self._reshaped = {t.name: t for t in config.outputs if t.reshape is not None}

    def model_config(self) -> dict[str, Any]:
        return self._json

    def error_reply(self, exc: BaseException) -> tuple[int, str, str | None] | None:  # type: ignore[override]
        if isinstance(exc, TritonFailure):
            return exc.status, str(exc), json.dumps({"error": str(exc)})
        return super().error_reply(exc)

    def as_configured(self, name: str, array: Any) -> Any:
        """An output as Triton's core hands it on: with a ``reshape``, the model made the
        reshape's shape and the client gets ``dims`` (each -1 the model's size there)."""
        tensor = self._reshaped.get(name)
        if tensor is None or tensor.reshape is None:
            return array
        return reshape(array, tensor.reshape, tensor.dims, self.config.max_batch_size > 0)


def reshape(array: Any, source: list[int], target: list[int], batched: bool) -> Any:
    """``array``, shaped as ``source`` (after the batch dimension when ``batched``), as
    ``target``: each -1 of ``target`` takes the size at the next -1 of ``source`` (Triton's
    ``InferenceResponse::Output::Reshape`` and its inputs' counterpart). No copy."""
    array = np.asarray(array)
    offset = 1 if batched and array.ndim > 0 else 0
    free = iter(
        array.shape[i + offset] for i, d in enumerate(source) if d == -1 and i + offset < array.ndim
    )
    shape = [next(free, 1) if d == -1 else d for d in target]
    return array.reshape(list(array.shape[:offset]) + shape)


def _tensor(t: TensorConfig, batch: list[int]) -> dict[str, Any]:
    return {"name": t.name, "datatype": v2_datatype(t.data_type), "shape": batch + list(t.dims)}


def shape_text(shape: list[int] | tuple[int, ...]) -> str:
    """A shape as Triton's messages write it: ``[-1,3]``."""
    return "[" + ",".join(str(d) for d in shape) + "]"
