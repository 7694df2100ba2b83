"""V2 (Open Inference Protocol) request bodies the benchmarks write by hand: the REST
binary tensor extension, a raw BYTES element, and a gRPC ``ModelInferRequest`` whose BYTES
input travels in ``raw_input_contents`` (what ``inferwire bench attack --v2 raw`` cannot
build from JSON, since a JSON string cannot hold an image's bytes).
"""

from __future__ import annotations

import json
from typing import Any

from images_numpy import field, varint


def binary_extension(
    inputs: list[tuple[dict[str, Any], bytes]], binary_output: bool = False
) -> tuple[bytes, int]:
    """The body: a JSON header naming each input's byte count, then the bytes; and the
    header's length (``Inference-Header-Content-Length``). ``inputs``: (the input's
    name/shape/datatype, its raw bytes)."""
    header: dict[str, Any] = {
        "inputs": [dict(i, parameters={"binary_data_size": len(data)}) for i, data in inputs]
    }
    if binary_output:
        header["parameters"] = {"binary_data_output": True}
    head = json.dumps(header).encode()
    return head + b"".join(data for _, data in inputs), len(head)


def bytes_element(data: bytes) -> bytes:
    """One BYTES element as it travels raw: its length as 4 little-endian bytes first."""
    return len(data).to_bytes(4, "little") + data


def infer_request_pb(model: str, name: str, shape: list[int], raw: bytes) -> bytes:
    """inference.ModelInferRequest {model_name, inputs: [{name, datatype BYTES, shape}],
    raw_input_contents: [raw]} (fields 1, 5, 7; InferInputTensor's 1, 2, 3)."""
    tensor = field(1, name.encode()) + field(2, b"BYTES")
    tensor += field(3, b"".join(varint(d) for d in shape))
    return field(1, model.encode()) + field(5, tensor) + field(7, raw)
