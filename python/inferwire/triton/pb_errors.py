"""The two error types of ``triton_python_backend_utils``: ``TritonModelException``, which
the module raises (Triton's ``PythonBackendException`` as a model sees it), and
``TritonError``, which a model puts in a response. Re-exported by ``pb_utils``."""

from __future__ import annotations

import enum


class TritonModelException(Exception):
    """What every ``pb_utils`` call raises when it refuses; a model raises it too, from
    ``initialize``, ``execute`` or ``finalize``, to fail that call."""


class _ArgumentTypeError(TritonModelException, TypeError):
    """An argument of the wrong Python type. In Triton, pybind11 refuses these with a
    ``TypeError``; here the exception is both, so ``except TypeError`` written for
    Triton and ``except TritonModelException`` both catch it."""


class TritonErrorCode(enum.IntEnum):
    """``TRITONSERVER_Error_Code``: the values of ``TritonError.INTERNAL`` and the rest."""

    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7


class TritonError:
    """The error of one response: ``InferenceResponse(error=TritonError("msg"))``.
    ``code`` defaults to ``TritonError.INTERNAL``. Not an exception, as in Triton."""

    __slots__ = ("_code", "_message")

    UNKNOWN = TritonErrorCode.UNKNOWN
    INTERNAL = TritonErrorCode.INTERNAL
    NOT_FOUND = TritonErrorCode.NOT_FOUND
    INVALID_ARG = TritonErrorCode.INVALID_ARG
    UNAVAILABLE = TritonErrorCode.UNAVAILABLE
    UNSUPPORTED = TritonErrorCode.UNSUPPORTED
    ALREADY_EXISTS = TritonErrorCode.ALREADY_EXISTS
    CANCELLED = TritonErrorCode.CANCELLED

    def __init__(self, message: str, code: int = TritonErrorCode.INTERNAL) -> None:
        if not isinstance(message, str):
            raise _ArgumentTypeError(
                f"TritonError message must be a str, got {type(message).__name__}"
            )
        try:
            self._code = TritonErrorCode(code)
        except ValueError:
            raise _ArgumentTypeError(
                f"TritonError code must be one of TritonError.UNKNOWN ... TritonError.CANCELLED"
                f" (0-{max(TritonErrorCode)}), got {code!r}"
            ) from None
        self._message = message

    def message(self) -> str:
        return self._message

    def code(self) -> TritonErrorCode:
        return self._code

    def __repr__(self) -> str:
        return f"TritonError({self._message!r}, TritonError.{self._code.name})"


def _text(what: str, value: object) -> str:
    """A string argument as Triton's bindings take it: ``str``, or ``bytes`` (pybind11
    converts both to a C++ string; a BYTES tensor's element is bytes, and models pass
    one as a model name)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if not isinstance(value, str):
        raise _ArgumentTypeError(f"{what} must be a str, got {type(value).__name__}")
    return value
