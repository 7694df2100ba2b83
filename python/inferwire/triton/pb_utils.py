"""``triton_python_backend_utils``, written for inferwire: the module a Triton Python-backend
``model.py`` imports (``import triton_python_backend_utils as pb_utils``), with the API of
Triton's python_backend README. In Triton it comes from a stub process and tensors cross
shared memory; here the model runs in the server's process and a tensor is the numpy
array itself.

The adapter that runs the models (``python_model.py``) registers this module as
``sys.modules["triton_python_backend_utils"]`` and talks to it through four things only:

* ``InferenceRequest._incoming(...)`` builds each request handed to ``execute``;
* ``InferenceResponseSender(sink, cancelled, decoupled=..., requested_output_names=...)``
  is each request's sender: ``sink(response_or_None, final)`` receives what the model
  sends, after the sender has enforced Triton's rules and pruned unrequested outputs;
* ``_bls``, an object with ``exec``/``is_model_ready``/``load_model``/``unload_model``
  (``BlsHook``), runs BLS calls and model management; None means there is no BLS;
* ``_model_scope(name)`` around a model's calls names the model in its log records.

The parts live in sibling modules, re-exported here: tensors (``pb_tensor``), data types
and the BYTES encoding (``pb_types``), errors (``pb_errors``), the model configuration
(``pb_config``), custom metrics (``pb_metrics``: ``metrics_text()`` renders them)."""

from __future__ import annotations

import asyncio
import contextvars
import enum
import json
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, Protocol, overload

from inferwire.triton.pb_config import (
    ModelConfig,
    get_input_config_by_name,
    get_output_config_by_name,
    using_decoupled_model_transaction_policy,
)
from inferwire.triton.pb_errors import (
    TritonError,
    TritonErrorCode,
    TritonModelException,
    _ArgumentTypeError,
    _text,
)
from inferwire.triton.pb_metrics import Metric, MetricFamily, MetricKind, metrics_text
from inferwire.triton.pb_tensor import Tensor
from inferwire.triton.pb_types import (
    TRITON_STRING_TO_NUMPY,
    deserialize_bytes_tensor,
    numpy_to_triton_type,
    serialize_byte_tensor,
    triton_string_to_numpy,
    triton_to_numpy_type,
)

__all__ = [
    "COUNTER",
    "GAUGE",
    "HISTOGRAM",
    "TRITONSERVER_MEMORY_CPU",
    "TRITONSERVER_MEMORY_GPU",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_END",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_START",
    "TRITONSERVER_REQUEST_RELEASE_ALL",
    "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE",
    "TRITONSERVER_RESPONSE_COMPLETE_FINAL",
    "TRITON_STRING_TO_NUMPY",
    "BlsHook",
    "InferenceRequest",
    "InferenceResponse",
    "InferenceResponseSender",
    "InferenceTrace",
    "LogLevel",
    "Logger",
    "MemoryType",
    "Metric",
    "MetricFamily",
    "MetricKind",
    "ModelConfig",
    "PreferredMemory",
    "ResponseIterator",
    "Tensor",
    "TritonError",
    "TritonErrorCode",
    "TritonModelException",
    "deserialize_bytes_tensor",
    "get_input_config_by_name",
    "get_input_tensor_by_name",
    "get_output_config_by_name",
    "get_output_tensor_by_name",
    "is_model_ready",
    "load_model",
    "metrics_text",
    "numpy_to_triton_type",
    "serialize_byte_tensor",
    "triton_string_to_numpy",
    "triton_to_numpy_type",
    "unload_model",
    "using_decoupled_model_transaction_policy",
]

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2

# Triton exports MetricKind's members at module level too.
COUNTER = MetricKind.COUNTER
GAUGE = MetricKind.GAUGE
HISTOGRAM = MetricKind.HISTOGRAM


class MemoryType(enum.IntEnum):
    """Where a BLS caller prefers its outputs (``PreferredMemory``). These are the Python
    backend's values (GPU 0, CPU 1), not ``TRITONSERVER_MemoryType``'s."""

    TRITONSERVER_MEMORY_GPU = 0
    TRITONSERVER_MEMORY_CPU = 1


TRITONSERVER_MEMORY_GPU = MemoryType.TRITONSERVER_MEMORY_GPU
TRITONSERVER_MEMORY_CPU = MemoryType.TRITONSERVER_MEMORY_CPU


class PreferredMemory:
    """``PreferredMemory(TRITONSERVER_MEMORY_CPU, 0)`` for a BLS request. Every output is
    in CPU memory here, so it is accepted and kept, and changes nothing."""

    __slots__ = ("preferred_device_id", "preferred_memory_type")

    def __init__(self, preferred_memory_type: int, preferred_device_id: int = 0) -> None:
        try:
            self.preferred_memory_type = MemoryType(preferred_memory_type)
        except ValueError:
            raise _ArgumentTypeError(
                "preferred_memory_type must be TRITONSERVER_MEMORY_GPU or"
                f" TRITONSERVER_MEMORY_CPU, got {preferred_memory_type!r}"
            ) from None
        self.preferred_device_id = _integer("preferred_device_id", preferred_device_id)


class InferenceTrace:
    """The trace a request belongs to; ``get_context()`` is its context, None if none."""

    __slots__ = ("_context",)

    def __init__(self, context: str = "") -> None:
        self._context = context

    def get_context(self) -> str | None:
        return self._context or None


def _integer(what: str, value: Any, *, minimum: int = 0, maximum: int = 2**64 - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _ArgumentTypeError(f"{what} must be an int, got {type(value).__name__}")
    if not minimum <= value <= maximum:
        raise TritonModelException(f"{what} must be in [{minimum}, {maximum}], got {value}")
    return value


def _parameters_json(parameters: Any) -> str:
    """The JSON object a request's or response's ``parameters`` argument gives: a dict of
    str keys and bool/int/str values (as Triton), or that dict as a JSON string."""
    if parameters is None:
        return "{}"
    if isinstance(parameters, str):
        try:
            parsed = json.loads(parameters)
        except ValueError as exc:
            raise TritonModelException(
                f"parameters must be a dict or a JSON object, got a str that is not JSON: {exc}"
            ) from None
        parameters = parsed
    if not isinstance(parameters, dict):
        raise TritonModelException(f"Expect dict, got {type(parameters)}")
    for key, value in parameters.items():
        if not isinstance(key, str):
            raise TritonModelException(
                f"Expect parameters keys to have type str, found type {type(key)}"
            )
        if not isinstance(value, (bool, int, str)):
            raise TritonModelException(
                f"Expect parameters values to have type bool/int/str, found type {type(value)}"
            )
    return json.dumps(parameters)


class InferenceResponse:
    """``InferenceResponse(output_tensors=[...], error=None, parameters=None)``: a
    response, or (with ``error``) an error response; ``parameters`` a dict of str keys
    and bool/int/str values."""

    __slots__ = ("_error", "_outputs", "_parameters")

    def __init__(
        self,
        output_tensors: Sequence[Tensor] | None = None,
        error: TritonError | None = None,
        parameters: dict[str, Any] | str | None = None,
    ) -> None:
        outputs = list(output_tensors) if output_tensors is not None else []
        for tensor in outputs:
            if tensor is None:
                raise TritonModelException(
                    "Output tensor for inference response should not be empty."
                )
            if not isinstance(tensor, Tensor):
                raise _ArgumentTypeError(
                    f"output_tensors must hold pb_utils.Tensor objects, got {type(tensor).__name__}"
                )
        if error is not None and not isinstance(error, TritonError):
            raise _ArgumentTypeError(
                f"error must be a pb_utils.TritonError, got {type(error).__name__}"
            )
        self._outputs = outputs
        self._error = error
        self._parameters = _parameters_json(parameters)

    def output_tensors(self) -> list[Tensor]:
        return self._outputs

    def has_error(self) -> bool:
        return self._error is not None

    def error(self) -> TritonError | None:
        return self._error

    def parameters(self) -> str:
        """The parameters as a JSON string (``json.loads`` it)."""
        if not isinstance(self._parameters, str):
            self._parameters = json.dumps(self._parameters)
        return self._parameters

    def __repr__(self) -> str:
        if self._error is not None:
            return f"InferenceResponse(error={self._error!r})"
        return f"InferenceResponse({self._outputs!r})"


def _error_response(message: str) -> InferenceResponse:
    return InferenceResponse(error=TritonError(message))


Sink = Callable[[InferenceResponse | None, bool], None]


class InferenceResponseSender:
    """What ``request.get_response_sender()`` gives: ``send(response, flags)`` as Triton
    allows it. Built by the adapter: ``sink(response, final)`` receives each response
    (None with ``final`` for a flag-only send) in order, once Triton's rules are checked;
    ``cancelled()`` says whether the client went away. ``decoupled`` is the model's
    transaction policy (otherwise one response, then the final flag);
    ``requested_output_names``, if given, prunes outputs the request did not ask for."""

    __slots__ = ("_cancelled", "_closed", "_decoupled", "_lock", "_requested", "_sent", "_sink")

    def __init__(
        self,
        sink: Sink | None,
        cancelled: Callable[[], bool],
        *,
        decoupled: bool = True,
        requested_output_names: Iterable[str] | None = None,
    ) -> None:
        self._sink = sink
        self._cancelled = cancelled
        self._decoupled = decoupled
        self._requested = frozenset(requested_output_names) if requested_output_names else None
        self._lock = threading.Lock()
        self._closed = False
        self._sent = 0

    def send(self, response: InferenceResponse | None = None, flags: int = 0) -> None:
        if response is not None and not isinstance(response, InferenceResponse):
            raise _ArgumentTypeError(
                f"send() takes a pb_utils.InferenceResponse or None, got {type(response).__name__}"
            )
        if flags not in (0, TRITONSERVER_RESPONSE_COMPLETE_FINAL):
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if flags == 0 and response is None:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set to zero."
            )
        if self._sink is None:
            raise TritonModelException(
                "Unable to send response. Response sender has no reference to the decoupled"
                " state of the model."
            )
        final = flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL
        # Held while the sink runs, so responses reach it in the order they were sent and
        # nothing follows the final one.
        with self._lock:
            if not self._decoupled:
                if response is not None and self._sent > 0:
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot send more than"
                        " one response."
                    )
                if response is None and final and self._sent == 0:
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot send complete"
                        " final before sending a response."
                    )
            if self._closed:
                raise TritonModelException(
                    "Unable to send response. Response sender has been closed."
                )
            self._closed = final
            self._sent += 1
            if response is not None and self._requested is not None:
                response._outputs = [t for t in response._outputs if t.name() in self._requested]
            try:
                self._sink(response, final)
            except TritonModelException:
                raise
            except Exception as exc:
                raise TritonModelException(str(exc)) from exc

    def is_cancelled(self) -> bool:
        return bool(self._cancelled())


def _never_cancelled() -> bool:
    return False


class ResponseIterator:
    """The responses of a decoupled BLS call (``exec(decoupled=True)``), the last one
    possibly empty. Iterating again once it is exhausted replays them, as in Triton;
    ``cancel()`` asks the called model to stop. ``async for`` waits without blocking
    the event loop (an inferwire addition)."""

    def __init__(self, source: Iterable[InferenceResponse]) -> None:
        self._source = iter(source)
        self._on_cancel: Callable[[], Any] | None = getattr(source, "cancel", None)
        self._seen: list[InferenceResponse] = []
        self._index = 0
        self._finished = False

    def __iter__(self) -> ResponseIterator:
        if self._finished and self._index >= len(self._seen):
            self._index = 0
        return self

    def __next__(self) -> InferenceResponse:
        response = self._advance()
        if response is None:
            raise StopIteration
        return response

    def __aiter__(self) -> ResponseIterator:
        return self.__iter__()

    async def __anext__(self) -> InferenceResponse:
        if self._finished:
            response = self._advance()
        else:
            response = await asyncio.to_thread(self._advance)
        if response is None:
            raise StopAsyncIteration
        return response

    def _advance(self) -> InferenceResponse | None:
        if self._finished:
            if self._index < len(self._seen):
                self._index += 1
                return self._seen[self._index - 1]
            return None
        try:
            response = next(self._source)
        except StopIteration:
            self._finished = True
            self._index = len(self._seen)
            return None
        except Exception as exc:  # the call failed midway: an error response ends it
            response = _error_response(str(exc))
            self._finished = True
        self._seen.append(response)
        self._index = len(self._seen)
        return response

    def cancel(self) -> None:
        if not self._finished and self._on_cancel is not None:
            self._on_cancel()


class BlsHook(Protocol):
    """What the adapter sets ``pb_utils._bls`` to. ``exec`` returns one response, or for
    ``decoupled`` an iterable of them (with ``cancel()`` if it can be cancelled); an
    error reaches the model as an error response, so the hook may raise or return one.
    ``model_version`` -1 means the version the server's policy picks."""

    def exec(
        self, request: InferenceRequest, decoupled: bool
    ) -> InferenceResponse | Iterable[InferenceResponse]: ...

    def is_model_ready(self, model_name: str, model_version: int) -> bool: ...

    def load_model(self, model_name: str, config: str, files: dict[str, bytes]) -> None: ...

    def unload_model(self, model_name: str, unload_dependents: bool) -> None: ...


_bls: Any = None


def _hook(call: str) -> BlsHook:
    if _bls is None:
        raise TritonModelException(
            f"BLS is not available: {call} needs the server to run other models, and this"
            " model is not running under `inferwire tritonserver`"
        )
    hook: BlsHook = _bls
    return hook


class InferenceRequest:
    """A request: handed to ``execute``, or built by the model for a BLS call.

    ``InferenceRequest(request_id="", correlation_id=0, inputs, requested_output_names,
    model_name, model_version=-1, flags=0, timeout=0, preferred_memory=None, trace=None,
    parameters=None)``: Triton's argument order; ``inputs``, ``requested_output_names``
    and ``model_name`` are required. ``timeout`` is in microseconds (0: none);
    ``parameters`` a dict of str keys and bool/int/str values (or that dict as JSON).

    ``model_name()`` and ``model_version()`` are inferwire's additions, which the
    adapter reads; Triton keeps them inside."""

    __slots__ = (
        "_cancelled",
        "_correlation_id",
        "_flags",
        "_incoming_request",
        "_inputs",
        "_model_name",
        "_model_version",
        "_parameters",
        "_request_id",
        "_requested",
        "_sender",
        "_timeout",
        "_trace",
    )

    def __init__(
        self,
        request_id: str = "",
        correlation_id: int | str = 0,
        inputs: Sequence[Tensor] | None = None,
        requested_output_names: Iterable[str] | None = None,
        model_name: str | None = None,
        model_version: int = -1,
        flags: int = 0,
        timeout: int = 0,
        preferred_memory: PreferredMemory | None = None,
        trace: InferenceTrace | None = None,
        parameters: dict[str, Any] | str | None = None,
    ) -> None:
        for arg, value in (
            ("inputs", inputs),
            ("requested_output_names", requested_output_names),
            ("model_name", model_name),
        ):
            if value is None:
                raise TypeError(f"InferenceRequest() missing required argument '{arg}'")
        model_name = _text("model_name", model_name)
        request_id = _text("request_id", request_id)
        if isinstance(correlation_id, int) and not isinstance(correlation_id, bool):
            _integer("correlation_id", correlation_id)
        elif not isinstance(correlation_id, str):
            raise TritonModelException("Correlation ID must be integer or string")
        if isinstance(requested_output_names, str):
            raise _ArgumentTypeError(
                f"requested_output_names must be a list of names, got the str"
                f" {requested_output_names!r}; write [{requested_output_names!r}]"
            )
        assert inputs is not None and requested_output_names is not None
        tensors = list(inputs)
        for tensor in tensors:
            if tensor is None:
                raise TritonModelException(
                    f"Input tensor for request with id '{request_id}' and model name"
                    f" '{model_name}' should not be empty."
                )
            if not isinstance(tensor, Tensor):
                raise _ArgumentTypeError(
                    f"inputs must hold pb_utils.Tensor objects, got {type(tensor).__name__}"
                )
        requested: dict[str, None] = {}
        for name in requested_output_names:
            if not isinstance(name, str):
                raise _ArgumentTypeError(
                    f"requested_output_names must hold str, got {type(name).__name__}"
                )
            if not name:
                raise TritonModelException(
                    f"Requested output name for request with id '{request_id}' and model name"
                    f" '{model_name}' should not be empty."
                )
            requested[name] = None
        if preferred_memory is not None and not isinstance(preferred_memory, PreferredMemory):
            raise _ArgumentTypeError(
                f"preferred_memory must be a pb_utils.PreferredMemory, got"
                f" {type(preferred_memory).__name__}"
            )
        if trace is not None and not isinstance(trace, InferenceTrace):
            raise _ArgumentTypeError(
                f"trace must be a pb_utils.InferenceTrace, got {type(trace).__name__}"
            )
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._inputs = tensors
        self._requested = tuple(requested)
        self._model_name = model_name
        self._model_version = _integer("model_version", model_version, minimum=-1)
        self._flags = _integer("flags", flags, maximum=2**32 - 1)
        self._timeout = _integer("timeout", timeout)
        self._trace = trace if trace is not None else InferenceTrace()
        # JSON text, or (a request the server made) the mapping, written when asked.
        self._parameters: str | dict[str, Any] = _parameters_json(parameters)
        self._sender: InferenceResponseSender | Callable[[], InferenceResponseSender] | None = None
        self._cancelled: Callable[[], bool] = _never_cancelled
        self._incoming_request = False

    @classmethod
    def _incoming(
        cls,
        *,
        inputs: list[Tensor],
        requested_output_names: list[str],
        request_id: str,
        correlation_id: int | str,
        flags: int,
        parameters: dict[str, Any],
        model_name: str,
        model_version: int,
        timeout: int,
        sender: InferenceResponseSender | Callable[[], InferenceResponseSender] | None,
        cancelled: Callable[[], bool],
    ) -> InferenceRequest:
        """A request the server hands to ``execute`` (trusted: not checked again).
        ``requested_output_names`` is what the client asked for, or every output of the
        configuration when it asked for none, as Triton's core fills it in;
        ``parameters`` are JSON-serialisable values."""
        request = cls.__new__(cls)
        request._request_id = request_id
        request._correlation_id = correlation_id
        request._inputs = inputs
        request._requested = tuple(requested_output_names)
        request._model_name = model_name
        request._model_version = model_version
        request._flags = flags
        request._timeout = timeout
        request._trace = InferenceTrace()
        # Written as JSON when the model asks (most never do).
        request._parameters = parameters if parameters else "{}"
        request._sender = sender
        request._cancelled = cancelled
        request._incoming_request = True
        return request

    def inputs(self) -> list[Tensor]:
        return self._inputs

    def request_id(self) -> str:
        return self._request_id

    def correlation_id(self) -> int | str:
        return self._correlation_id

    def flags(self) -> int:
        return self._flags

    def set_flags(self, flags: int) -> None:
        self._flags = _integer("flags", flags, maximum=2**32 - 1)

    def timeout(self) -> int:
        """Microseconds; 0 for none."""
        return self._timeout

    def parameters(self) -> str:
        """The parameters as a JSON string (``json.loads`` it)."""
        if not isinstance(self._parameters, str):
            self._parameters = json.dumps(self._parameters)
        return self._parameters

    def trace(self) -> InferenceTrace:
        return self._trace

    def requested_output_names(self) -> set[str]:
        """A set, as in Triton."""
        return set(self._requested)

    def model_name(self) -> str:
        return self._model_name

    def model_version(self) -> int:
        """-1 for the version the server's policy picks."""
        return self._model_version

    def get_response_sender(self) -> InferenceResponseSender:
        """The request's sender. A request the model built has none that can send: its
        ``send`` refuses, as Triton's does. The server may give a maker of the sender
        instead (made when asked: most models in the default mode never ask)."""
        sender = self._sender
        if sender is None:
            sender = self._sender = InferenceResponseSender(None, self._cancelled)
        elif not isinstance(sender, InferenceResponseSender):
            sender = self._sender = sender()
        return sender

    def is_cancelled(self) -> bool:
        return bool(self._cancelled())

    def set_release_flags(self, flags: int) -> None:
        if flags == TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
            raise TritonModelException(
                "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE is not supported: inferwire"
                " tritonserver has no iterative sequence batching to run a request again;"
                " send the remaining responses from this execute (or from a thread holding"
                " the response sender) instead"
            )
        if flags != TRITONSERVER_REQUEST_RELEASE_ALL:
            raise TritonModelException(
                f"Unsupported release flags {flags!r}: use"
                " pb_utils.TRITONSERVER_REQUEST_RELEASE_ALL"
            )

    @overload
    def exec(self, decoupled: Literal[False] = ...) -> InferenceResponse: ...
    @overload
    def exec(self, decoupled: Literal[True]) -> ResponseIterator: ...
    @overload
    def exec(self, decoupled: bool) -> InferenceResponse | ResponseIterator: ...

    def exec(self, decoupled: bool = False) -> InferenceResponse | ResponseIterator:
        """Runs this request on ``model_name`` and waits: one response, or with
        ``decoupled=True`` a ``ResponseIterator``. A failure (an unknown model, say)
        comes back as an error response, as in Triton."""
        if self._incoming_request:
            raise TritonModelException(
                "exec() runs a request the model built: this one was handed to execute();"
                " build a new pb_utils.InferenceRequest for the BLS call"
            )
        hook = _hook("InferenceRequest.exec")
        try:
            result = hook.exec(self, bool(decoupled))
        except Exception as exc:
            result = _error_response(str(exc))
        if decoupled:
            if isinstance(result, InferenceResponse):
                return ResponseIterator([result])
            return ResponseIterator(result)
        if not isinstance(result, InferenceResponse):
            return _error_response(
                f"the BLS executor returned {type(result).__name__}, not an InferenceResponse"
            )
        return result

    @overload
    def async_exec(self, decoupled: Literal[False] = ...) -> asyncio.Future[InferenceResponse]: ...
    @overload
    def async_exec(self, decoupled: Literal[True]) -> asyncio.Future[ResponseIterator]: ...
    @overload
    def async_exec(
        self, decoupled: bool
    ) -> asyncio.Future[InferenceResponse | ResponseIterator]: ...

    def async_exec(self, decoupled: bool = False) -> asyncio.Future[Any]:
        """``exec`` on a thread of the running loop's default executor, as Triton does:
        the call starts now and the returned future is awaited (``asyncio.gather`` them
        for calls in flight together). It needs a running event loop (``async def
        execute``)."""
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        return loop.run_in_executor(None, lambda: context.run(self.exec, decoupled))

    def __repr__(self) -> str:
        return (
            f"InferenceRequest(request_id={self._request_id!r}, model_name={self._model_name!r},"
            f" inputs={self._inputs!r})"
        )


def get_input_tensor_by_name(inference_request: InferenceRequest, name: str) -> Tensor | None:
    """The request's input named ``name``, or None."""
    return next((t for t in inference_request.inputs() if t.name() == name), None)


def get_output_tensor_by_name(inference_response: InferenceResponse, name: str) -> Tensor | None:
    """The response's output named ``name``, or None."""
    return next((t for t in inference_response.output_tensors() if t.name() == name), None)


def _model_version_number(model_version: Any) -> int:
    if isinstance(model_version, int) and not isinstance(model_version, bool):
        text = str(model_version)
    elif isinstance(model_version, str):
        text = model_version
    else:
        raise _ArgumentTypeError(f"model_version must be a str, got {type(model_version).__name__}")
    if not text:
        return -1
    try:
        version = int(text)
    except ValueError:
        version = -1
    if version < 0:
        raise TritonModelException(
            "Failed to check model readiness: failed to get model version from specified"
            f" version string '{text}', version should be an integral value > 0"
        )
    return version


def _model_name_arg(model_name: Any) -> str:
    return _text("model_name", model_name)


def is_model_ready(model_name: str, model_version: str = "") -> bool:
    """Whether the model (that version; "" for the server's choice) is ready."""
    name = _model_name_arg(model_name)
    version = _model_version_number(model_version)
    hook = _hook("is_model_ready")
    try:
        return bool(hook.is_model_ready(name, version))
    except Exception as exc:
        raise TritonModelException(f"Failed to check model readiness: {exc}") from exc


def load_model(model_name: str, config: str = "", files: dict[str, bytes] | None = None) -> None:
    """Loads (or reloads) a model of the repository; ``config``, a JSON model
    configuration, overrides its own; ``files`` (``{"file:1/model.onnx": b"..."}``, with
    ``config``) give its directory's contents."""
    name = _model_name_arg(model_name)
    if not isinstance(config, str):
        raise _ArgumentTypeError(f"config must be a JSON str, got {type(config).__name__}")
    contents: dict[str, bytes] = {}
    if files is not None:
        bad = not isinstance(files, dict) or any(
            not isinstance(path, str) or not isinstance(data, (bytes, bytearray, memoryview))
            for path, data in files.items()
        )
        if bad:
            raise TritonModelException(
                f"failed to load model '{name}', files should be a dictionary of file paths"
                " and file contents"
            )
        contents = {path: bytes(data) for path, data in files.items()}
    hook = _hook("load_model")
    try:
        hook.load_model(name, config, contents)
    except Exception as exc:
        raise TritonModelException(f"Failed to load model: {exc}") from exc


def unload_model(model_name: str, unload_dependents: bool = False) -> None:
    """Unloads a model (and, with ``unload_dependents``, the models that depend on it)."""
    name = _model_name_arg(model_name)
    hook = _hook("unload_model")
    try:
        hook.unload_model(name, bool(unload_dependents))
    except Exception as exc:
        raise TritonModelException(f"Failed to unload model: {exc}") from exc


class LogLevel(enum.IntEnum):
    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3


_LOGGING_LEVELS = {
    LogLevel.INFO: logging.INFO,
    LogLevel.WARNING: logging.WARNING,
    LogLevel.ERROR: logging.ERROR,
    LogLevel.VERBOSE: logging.DEBUG,
}
_logger = logging.getLogger("inferwire.triton")
_current_model: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "inferwire_triton_model", default=None
)


class _model_scope:
    """Names ``model_name`` in the log records of what runs inside (threads the model
    starts itself do not inherit it). A class, not a generator: it wraps every
    ``execute``, and costs less so."""

    __slots__ = ("_name", "_token")

    def __init__(self, model_name: str) -> None:
        self._name = model_name

    def __enter__(self) -> None:
        self._token = _current_model.set(self._name)

    def __exit__(self, *exc: object) -> None:
        _current_model.reset(self._token)


def _emit(message: Any, level: Any) -> None:
    try:
        log_level = LogLevel(level)
    except ValueError:
        raise _ArgumentTypeError(
            f"log level must be a Logger.LogLevel (Logger.INFO ... Logger.VERBOSE), got {level!r}"
        ) from None
    model = _current_model.get()
    # stacklevel 3: the record names the model's line, not this module's.
    if model is None:
        _logger.log(_LOGGING_LEVELS[log_level], "%s", message, stacklevel=3)
    else:
        _logger.log(_LOGGING_LEVELS[log_level], "%s: %s", model, message, stacklevel=3)


class Logger:
    """``pb_utils.Logger.log_info(msg)`` and the rest, to Python's ``logging`` logger
    ``inferwire.triton`` (VERBOSE as DEBUG), the message prefixed with the model's name."""

    LogLevel = LogLevel
    INFO = LogLevel.INFO
    WARNING = LogLevel.WARNING
    ERROR = LogLevel.ERROR
    VERBOSE = LogLevel.VERBOSE

    @staticmethod
    def log(message: str, level: int = LogLevel.INFO) -> None:
        _emit(message, level)

    @staticmethod
    def log_info(message: str) -> None:
        _emit(message, LogLevel.INFO)

    @staticmethod
    def log_warn(message: str) -> None:
        _emit(message, LogLevel.WARNING)

    @staticmethod
    def log_error(message: str) -> None:
        _emit(message, LogLevel.ERROR)

    @staticmethod
    def log_verbose(message: str) -> None:
        _emit(message, LogLevel.VERBOSE)
