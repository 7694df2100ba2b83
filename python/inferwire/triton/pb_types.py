"""Triton's data types as ``triton_python_backend_utils`` names them: the numeric codes of
``TRITONSERVER_DataType`` that ``Tensor.triton_dtype()`` returns, the numpy types they
map to, the ``TYPE_*`` strings of ``config.pbtxt``, and the BYTES wire encoding (each
element a 4-byte little-endian length, then its bytes). Re-exported by ``pb_utils``."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from inferwire.triton.pb_errors import TritonModelException

# One row per TRITONSERVER_DataType a model can hold: (code, name, numpy dtype). The
# name is the V2 protocol's datatype; BF16 has no numpy dtype.
DTYPES: tuple[tuple[int, str, np.dtype[Any] | None], ...] = (
    (1, "BOOL", np.dtype(np.bool_)),
    (2, "UINT8", np.dtype(np.uint8)),
    (3, "UINT16", np.dtype(np.uint16)),
    (4, "UINT32", np.dtype(np.uint32)),
    (5, "UINT64", np.dtype(np.uint64)),
    (6, "INT8", np.dtype(np.int8)),
    (7, "INT16", np.dtype(np.int16)),
    (8, "INT32", np.dtype(np.int32)),
    (9, "INT64", np.dtype(np.int64)),
    (10, "FP16", np.dtype(np.float16)),
    (11, "FP32", np.dtype(np.float32)),
    (12, "FP64", np.dtype(np.float64)),
    (13, "BYTES", np.dtype(np.object_)),
    (14, "BF16", None),
)
BYTES = 13
NAMES: dict[int, str] = {code: name for code, name, _ in DTYPES}
_TO_NUMPY: dict[int, type[Any]] = {code: dt.type for code, _, dt in DTYPES if dt is not None}
_FROM_NUMPY: dict[np.dtype[Any], int] = {dt: code for code, _, dt in DTYPES if dt is not None}

# config.pbtxt's names; Triton's table gives Python's bool for TYPE_BOOL and calls BYTES
# TYPE_STRING, and has no TYPE_BF16.
TRITON_STRING_TO_NUMPY: dict[str, type[Any]] = {
    "TYPE_STRING" if name == "BYTES" else f"TYPE_{name}": bool if name == "BOOL" else dt.type
    for _, name, dt in DTYPES
    if dt is not None
}


def triton_code(dtype: np.dtype[Any]) -> int | None:
    """The TRITONSERVER_DataType of a numpy dtype; numpy's fixed-width bytes (``S``)
    count as BYTES, as object arrays do. None for a dtype Triton has no type for."""
    if dtype.kind == "S":
        return BYTES
    return _FROM_NUMPY.get(dtype)


def triton_to_numpy_type(data_type: int) -> type[Any] | None:
    """The numpy type of a TRITONSERVER_DataType code (``np.object_`` for BYTES); None
    for a code numpy cannot hold (BF16) or that does not exist."""
    return _TO_NUMPY.get(data_type)


def numpy_to_triton_type(data_type: Any) -> int | None:
    """The TRITONSERVER_DataType code of a numpy type or dtype; None if there is none."""
    if data_type is None:  # np.dtype(None) would be float64
        return None
    try:
        dtype = np.dtype(data_type)
    except TypeError:
        return None
    return triton_code(dtype)


def triton_string_to_numpy(triton_type_string: str) -> type[Any]:
    """The numpy type of a ``config.pbtxt`` type: ``"TYPE_FP32"`` gives ``np.float32``.
    An unknown name raises ``KeyError``, as in Triton."""
    return TRITON_STRING_TO_NUMPY[triton_type_string]


def _element_bytes(item: Any) -> bytes:
    if isinstance(item, (bytes, bytearray, memoryview)):
        return bytes(item)
    return str(item).encode("utf-8")


def serialize_byte_tensor(input_tensor: npt.NDArray[Any]) -> bytes | None:
    """The BYTES wire encoding of an object or ``np.bytes_`` array, its elements in C
    order: bytes-like elements as they are, anything else as ``str(x)`` in UTF-8. None
    for an array of another dtype; ``b""`` for an empty one."""
    if input_tensor.size == 0:
        return b""
    if input_tensor.dtype != np.object_ and input_tensor.dtype.kind != "S":
        return None
    parts: list[bytes] = []
    for item in input_tensor.flat:  # .flat walks C order whatever the layout
        data = _element_bytes(item)
        parts.append(len(data).to_bytes(4, "little"))
        parts.append(data)
    return b"".join(parts)


def deserialize_bytes_tensor(encoded_tensor: Any) -> npt.NDArray[np.object_]:
    """The 1-D object array of ``bytes`` that a BYTES wire encoding holds (any
    contiguous bytes-like object: ``bytes``, a uint8 array)."""
    data = memoryview(encoded_tensor).cast("B")
    items: list[bytes] = []
    offset, end = 0, len(data)
    while offset < end:
        if end - offset < 4:
            raise TritonModelException(
                f"BYTES tensor is truncated: {end - offset} byte(s) left at offset {offset},"
                " too few for a 4-byte length"
            )
        length = int.from_bytes(data[offset : offset + 4], "little")
        offset += 4
        if length > end - offset:
            raise TritonModelException(
                f"BYTES tensor is truncated: the element at offset {offset - 4} declares"
                f" {length} bytes but {end - offset} remain"
            )
        items.append(bytes(data[offset : offset + length]))
        offset += length
    result = np.empty(len(items), dtype=np.object_)
    result[:] = items
    return result
