"""``pb_utils.Tensor``: a named numpy array, held without a copy, as Triton Python-backend
models see their inputs and build their outputs. Every tensor is in CPU memory here;
DLPack goes through numpy's (``np.from_dlpack``, ``ndarray.__dlpack__``), so any
producer numpy reads (a CPU torch tensor among them) converts without a copy. Re-exported
by ``pb_utils``."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from inferwire.triton import pb_types
from inferwire.triton.pb_errors import TritonModelException, _ArgumentTypeError, _text

# DLDeviceType values (dlpack.h).
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST = 1, 2, 3


def _check_name(name: object) -> str:
    name = _text("Tensor name", name)
    if not name:
        raise TritonModelException("Tensor name cannot be an empty string.")
    return name


class _Capsule:
    """A bare DLPack capsule dressed as a producer, for ``np.from_dlpack``. Its device is
    read from the capsule by numpy itself, which refuses memory it cannot address."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, **_: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_DL_CPU, 0)


class Tensor:
    """``Tensor(name, array)``: ``array`` a numpy array of a Triton data type (an object
    or ``np.bytes_`` array for BYTES). A C-contiguous array is held as it is, so
    ``as_numpy()`` returns that very array; any other is copied to C order once, as
    Triton does."""

    __slots__ = ("_array", "_dtype", "_name")

    def __init__(self, name: str, array: npt.NDArray[Any]) -> None:
        self._name = _check_name(name)
        if not isinstance(array, np.ndarray):
            raise _ArgumentTypeError(
                f"Tensor '{name}' takes a numpy.ndarray, got {type(array).__name__}; wrap"
                " the data with numpy.asarray(...), or use Tensor.from_dlpack(name, t) for a"
                " framework's tensor"
            )
        dtype = pb_types.triton_code(array.dtype)
        if dtype is None:
            raise TritonModelException(
                f"NumPy dtype is not supported. (Tensor '{name}' has dtype {array.dtype};"
                " use a bool, integer, float16/32/64, object or bytes_ array)"
            )
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        self._array = array
        self._dtype = dtype

    @classmethod
    def _trusted(cls, name: str, array: npt.NDArray[Any], dtype: int) -> Tensor:
        """A tensor of the server's own making (a request's input: a C-contiguous array
        of a known type, ``dtype`` its code), made without the checks."""
        tensor = cls.__new__(cls)
        tensor._name = name
        tensor._array = array
        tensor._dtype = dtype
        return tensor

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> npt.NDArray[Any]:
        """The array itself, not a copy."""
        return self._array

    def triton_dtype(self) -> int:
        """The TRITONSERVER_DataType code: 11 for FP32, 13 for BYTES (``pb_types.DTYPES``)."""
        return self._dtype

    def shape(self) -> list[int]:
        return list(self._array.shape)

    def is_cpu(self) -> bool:
        return True

    def to_dlpack(self) -> Any:
        """A DLPack capsule of the tensor (``torch.utils.dlpack.from_dlpack`` takes it).
        It shares the array's memory, except for a read-only array (an input borrowed
        from the request), which legacy DLPack cannot mark read-only: that one is copied."""
        return self.__dlpack__()

    def __dlpack__(self, **kwargs: Any) -> Any:
        if self._dtype == pb_types.BYTES:
            raise TritonModelException("DLPack does not have support for string tensors.")
        try:
            return self._array.__dlpack__(**kwargs)
        except BufferError:
            if self._array.flags.writeable:
                raise
            return self._array.copy().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_DL_CPU, 0)

    @staticmethod
    def from_dlpack(name: str, tensor: Any) -> Tensor:
        """A tensor over the memory of a DLPack capsule, or of an object with
        ``__dlpack__`` and ``__dlpack_device__`` (a torch or JAX CPU tensor, a numpy
        array), without a copy. It must be on the CPU and contiguous in C order."""
        _check_name(name)
        if type(tensor).__name__ == "PyCapsule":
            producer: Any = _Capsule(tensor)
        elif hasattr(tensor, "__dlpack__") and hasattr(tensor, "__dlpack_device__"):
            device_type, device_id = tensor.__dlpack_device__()
            if device_type == _DL_CUDA:
                raise TritonModelException(
                    f"DLPack capsule passed pointer to memory allocated on GPU device, when"
                    f" GPU is not available (tensor '{name}' is on cuda:{device_id}; this"
                    " server holds tensors in CPU memory: move it with .cpu() first)"
                )
            if device_type not in (_DL_CPU, _DL_CUDA_HOST):
                raise TritonModelException(
                    f"DLDevice type {device_type} is not support by Python backend."
                )
            producer = tensor
        else:
            raise TritonModelException(
                "Provided tensor is not supported. Tensor must be a DLPack capsule or have"
                " `__dlpack__` and `__dlpack_device__` attributes"
            )
        try:
            array = np.from_dlpack(producer)
        except (BufferError, RuntimeError, TypeError, ValueError) as exc:
            hint = ""
            if isinstance(producer, _Capsule):
                hint = " (a capsule can be read once only: call to_dlpack() again)"
            elif "dtype" in str(exc).lower():
                hint = " (BF16 has no numpy type: convert the tensor to float32 first)"
            raise TritonModelException(
                f"Tensor '{name}' cannot be read through DLPack: {exc}{hint}"
            ) from exc
        if not array.flags.c_contiguous:
            raise TritonModelException(
                "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are"
                " stored in C-Order are supported."
            )
        return Tensor(name, array)

    def __repr__(self) -> str:
        return f"Tensor({self._name!r}, {pb_types.NAMES[self._dtype]}, shape={self.shape()})"
