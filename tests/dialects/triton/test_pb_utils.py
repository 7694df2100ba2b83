"""inferwire's ``triton_python_backend_utils`` (inferwire.triton.pb_utils), in-process, no
server: every class and function a Triton Python-backend model calls, each refusal in
Triton's words, the response sender's rules, BLS through a stand-in executor, and the
custom metrics' text and bounds."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import re
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from inferwire.triton import pb_metrics, pb_utils
from inferwire.triton.pb_types import DTYPES

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def raises(message: str) -> Any:
    """pytest.raises(TritonModelException) whose message is exactly ``message``."""
    return pytest.raises(pb_utils.TritonModelException, match=f"^{re.escape(message)}$")


def fp32(name: str, *values: float) -> pb_utils.Tensor:
    return pb_utils.Tensor(name, np.array(values, dtype=np.float32))


# --- constants -------------------------------------------------------------------------


def test_constants_have_tritons_values() -> None:
    assert pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START == 1
    assert pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END == 2
    assert pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL == 1
    assert pb_utils.TRITONSERVER_REQUEST_RELEASE_ALL == 1
    assert pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE == 2
    assert pb_utils.TRITONSERVER_MEMORY_GPU == 0
    assert pb_utils.TRITONSERVER_MEMORY_CPU == 1
    assert (pb_utils.COUNTER, pb_utils.GAUGE, pb_utils.HISTOGRAM) == (0, 1, 2)
    assert pb_utils.MetricFamily.HISTOGRAM is pb_utils.HISTOGRAM
    E = pb_utils.TritonError
    codes = [E.UNKNOWN, E.INTERNAL, E.NOT_FOUND, E.INVALID_ARG, E.UNAVAILABLE]
    codes += [E.UNSUPPORTED, E.ALREADY_EXISTS, E.CANCELLED]
    assert codes == list(range(8))
    L = pb_utils.Logger
    assert [L.INFO, L.WARNING, L.ERROR, L.VERBOSE] == [0, 1, 2, 3]


def test_every_name_in_all_exists() -> None:
    for name in pb_utils.__all__:
        assert hasattr(pb_utils, name), name


# --- Tensor ----------------------------------------------------------------------------


@pytest.mark.parametrize(("code", "name", "dtype"), [row for row in DTYPES if row[2] is not None])
def test_tensor_holds_the_array_itself(code: int, name: str, dtype: np.dtype[Any]) -> None:
    if dtype == np.object_:
        array = np.array([[b"a", b"bc"], [b"", b"d"]], dtype=object)
    else:
        array = np.zeros((2, 2), dtype=dtype)
    tensor = pb_utils.Tensor("T", array)
    assert tensor.as_numpy() is array
    assert tensor.name() == "T"
    assert tensor.shape() == [2, 2]
    assert tensor.triton_dtype() == code
    assert tensor.is_cpu() is True
    assert name in repr(tensor)


def test_tensor_of_numpy_bytes_is_bytes() -> None:
    array = np.array([b"ab", b"c"], dtype=np.bytes_)
    tensor = pb_utils.Tensor("S", array)
    assert tensor.triton_dtype() == 13
    assert tensor.as_numpy() is array


def test_tensor_copies_a_non_contiguous_array_to_c_order() -> None:
    array = np.arange(6, dtype=np.int32).reshape(2, 3).T
    tensor = pb_utils.Tensor("T", array)
    assert tensor.as_numpy().flags.c_contiguous
    assert tensor.shape() == [3, 2]
    np.testing.assert_array_equal(tensor.as_numpy(), array)


def test_tensor_refuses_what_triton_refuses() -> None:
    with raises("Tensor name cannot be an empty string."):
        pb_utils.Tensor("", np.zeros(1))
    # Not an array: TritonModelException, and TypeError as pybind11 raises in Triton.
    for value in ([1, 2], 3.0, None):
        with pytest.raises(pb_utils.TritonModelException, match=r"takes a numpy.ndarray"):
            pb_utils.Tensor("T", value)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"numpy\.asarray"):
            pb_utils.Tensor("T", value)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Tensor name must be a str"):
        pb_utils.Tensor(1, np.zeros(1))  # type: ignore[arg-type]
    for array in (np.array(["unicode"]), np.zeros(1, np.complex64)):
        with pytest.raises(pb_utils.TritonModelException, match=r"^NumPy dtype is not supported\."):
            pb_utils.Tensor("T", array)


# --- DLPack ----------------------------------------------------------------------------


def test_dlpack_round_trip_shares_memory() -> None:
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    capsule = pb_utils.Tensor("A", array).to_dlpack()
    assert type(capsule).__name__ == "PyCapsule"
    back = pb_utils.Tensor.from_dlpack("B", capsule)
    assert back.name() == "B"
    assert back.shape() == [2, 3]
    assert back.triton_dtype() == 11
    assert np.shares_memory(back.as_numpy(), array)
    # A capsule is consumed once.
    with pytest.raises(pb_utils.TritonModelException, match="read once only"):
        pb_utils.Tensor.from_dlpack("C", capsule)


def test_dlpack_from_objects_with_the_protocol() -> None:
    array = np.array([True, False, True])
    tensor = pb_utils.Tensor.from_dlpack("B", array)
    assert tensor.triton_dtype() == 1
    assert np.shares_memory(tensor.as_numpy(), array)
    # A pb_utils.Tensor has the protocol too.
    again = pb_utils.Tensor.from_dlpack("C", tensor)
    assert np.shares_memory(again.as_numpy(), array)
    assert tensor.__dlpack_device__() == (1, 0)


def test_dlpack_of_a_read_only_array() -> None:
    array = np.frombuffer(np.arange(4, dtype=np.int64).tobytes(), dtype=np.int64)
    assert not array.flags.writeable
    tensor = pb_utils.Tensor("R", array)
    back = pb_utils.Tensor.from_dlpack("S", tensor.to_dlpack())
    np.testing.assert_array_equal(back.as_numpy(), [0, 1, 2, 3])


def test_dlpack_refusals() -> None:
    with raises("DLPack does not have support for string tensors."):
        pb_utils.Tensor("S", np.array([b"x"], dtype=object)).to_dlpack()
    with raises(
        "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored in"
        " C-Order are supported."
    ):
        pb_utils.Tensor.from_dlpack("T", np.zeros((2, 3), np.float32).T)
    with raises(
        "Provided tensor is not supported. Tensor must be a DLPack capsule or have"
        " `__dlpack__` and `__dlpack_device__` attributes"
    ):
        pb_utils.Tensor.from_dlpack("T", [1, 2])
    with raises("Tensor name cannot be an empty string."):
        pb_utils.Tensor.from_dlpack("", np.zeros(1))

    class OnDevice:
        def __init__(self, device: int) -> None:
            self.device = device

        def __dlpack__(self, **_: Any) -> Any:
            raise AssertionError("not reached")

        def __dlpack_device__(self) -> tuple[int, int]:
            return (self.device, 1)

    with pytest.raises(
        pb_utils.TritonModelException,
        match=r"^DLPack capsule passed pointer to memory allocated on GPU device, when GPU is not available .*\.cpu\(\)",
    ):
        pb_utils.Tensor.from_dlpack("G", OnDevice(2))
    with raises("DLDevice type 4 is not support by Python backend."):
        pb_utils.Tensor.from_dlpack("O", OnDevice(4))


@pytest.mark.optin
def test_dlpack_with_torch() -> None:
    torch = pytest.importorskip("torch")
    source = torch.arange(4, dtype=torch.float32)
    tensor = pb_utils.Tensor.from_dlpack("T", source)
    assert tensor.triton_dtype() == 11
    source[0] = 7
    assert tensor.as_numpy()[0] == 7  # the same memory
    back = torch.utils.dlpack.from_dlpack(tensor.to_dlpack())
    assert back.tolist() == [7, 1, 2, 3]


# --- data types and the BYTES encoding -------------------------------------------------


def test_type_tables() -> None:
    assert pb_utils.triton_string_to_numpy("TYPE_FP32") is np.float32
    assert pb_utils.triton_string_to_numpy("TYPE_STRING") is np.object_
    assert pb_utils.triton_string_to_numpy("TYPE_BOOL") is bool
    assert "TYPE_BF16" not in pb_utils.TRITON_STRING_TO_NUMPY
    with pytest.raises(KeyError):
        pb_utils.triton_string_to_numpy("TYPE_NOPE")
    for code, _, dtype in DTYPES:
        if dtype is None:
            assert pb_utils.triton_to_numpy_type(code) is None
            continue
        assert pb_utils.triton_to_numpy_type(code) is dtype.type
        assert pb_utils.numpy_to_triton_type(dtype.type) == code
        assert pb_utils.numpy_to_triton_type(dtype) == code
    assert pb_utils.numpy_to_triton_type(np.bytes_) == 13
    assert pb_utils.numpy_to_triton_type(np.complex64) is None
    assert pb_utils.numpy_to_triton_type(None) is None
    assert pb_utils.triton_to_numpy_type(99) is None


def test_bytes_encoding_round_trip() -> None:
    array = np.array([[b"ab", "é"], [b"", 7]], dtype=object)
    encoded = pb_utils.serialize_byte_tensor(array)
    assert encoded == (
        b"\x02\x00\x00\x00ab\x02\x00\x00\x00\xc3\xa9\x00\x00\x00\x00\x01\x00\x00\x007"
    )
    decoded = pb_utils.deserialize_bytes_tensor(encoded)
    assert decoded.dtype == np.object_
    assert decoded.tolist() == [b"ab", "é".encode(), b"", b"7"]
    # From a uint8 array too, as the wire hands it.
    assert (
        pb_utils.deserialize_bytes_tensor(np.frombuffer(encoded, np.uint8)).tolist()
        == decoded.tolist()
    )
    assert (
        pb_utils.serialize_byte_tensor(np.array([b"xy"], dtype=np.bytes_)) == b"\x02\x00\x00\x00xy"
    )
    assert pb_utils.serialize_byte_tensor(np.zeros(0, dtype=object)) == b""
    assert pb_utils.serialize_byte_tensor(np.zeros(2, np.float32)) is None
    assert pb_utils.deserialize_bytes_tensor(b"").tolist() == []


def test_bytes_encoding_refuses_truncated_input() -> None:
    with pytest.raises(pb_utils.TritonModelException, match="too few for a 4-byte length"):
        pb_utils.deserialize_bytes_tensor(b"\x01\x00")
    with pytest.raises(pb_utils.TritonModelException, match="declares 5 bytes but 2 remain"):
        pb_utils.deserialize_bytes_tensor(b"\x05\x00\x00\x00ab")


# --- TritonError and InferenceResponse -------------------------------------------------


def test_triton_error() -> None:
    error = pb_utils.TritonError("boom")
    assert error.message() == "boom"
    assert error.code() == pb_utils.TritonError.INTERNAL
    error = pb_utils.TritonError("gone", pb_utils.TritonError.NOT_FOUND)
    assert error.code() == 2
    assert error.code().name == "NOT_FOUND"
    assert "NOT_FOUND" in repr(error)
    assert not isinstance(error, BaseException)
    with pytest.raises(TypeError, match="TritonError code must be one of"):
        pb_utils.TritonError("x", 42)
    with pytest.raises(TypeError, match="message must be a str"):
        pb_utils.TritonError(None)  # type: ignore[arg-type]


def test_inference_response() -> None:
    out = fp32("OUT", 1, 2)
    response = pb_utils.InferenceResponse([out], parameters={"a": 1, "b": "x", "c": True})
    assert response.output_tensors() == [out]
    assert not response.has_error()
    assert response.error() is None
    assert json.loads(response.parameters()) == {"a": 1, "b": "x", "c": True}
    assert pb_utils.get_output_tensor_by_name(response, "OUT") is out
    assert pb_utils.get_output_tensor_by_name(response, "NOPE") is None

    empty = pb_utils.InferenceResponse()
    assert empty.output_tensors() == []
    assert empty.parameters() == "{}"

    failed = pb_utils.InferenceResponse(
        error=pb_utils.TritonError("bad", pb_utils.TritonError.INVALID_ARG)
    )
    assert failed.has_error()
    assert failed.error().message() == "bad"  # type: ignore[union-attr]
    assert "bad" in repr(failed)

    # parameters may come as the JSON string too
    assert json.loads(pb_utils.InferenceResponse(parameters='{"k": "v"}').parameters()) == {
        "k": "v"
    }


def test_inference_response_refusals() -> None:
    with raises("Output tensor for inference response should not be empty."):
        pb_utils.InferenceResponse([None])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"output_tensors must hold pb_utils.Tensor"):
        pb_utils.InferenceResponse([np.zeros(1)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"error must be a pb_utils.TritonError"):
        pb_utils.InferenceResponse(error="boom")  # type: ignore[arg-type]
    with raises("Expect parameters values to have type bool/int/str, found type <class 'float'>"):
        pb_utils.InferenceResponse(parameters={"x": 1.5})
    with raises("Expect parameters keys to have type str, found type <class 'int'>"):
        pb_utils.InferenceResponse(parameters={1: "x"})  # type: ignore[dict-item]
    with raises("Expect dict, got <class 'list'>"):
        pb_utils.InferenceResponse(parameters=[1])  # type: ignore[arg-type]
    with pytest.raises(pb_utils.TritonModelException, match="got a str that is not JSON"):
        pb_utils.InferenceResponse(parameters="{nope")


# --- InferenceRequest built by a model (BLS) -------------------------------------------


def test_request_for_bls() -> None:
    x = fp32("X", 1)
    request = pb_utils.InferenceRequest(
        model_name="other",
        inputs=[x],
        requested_output_names=["B", "A", "B"],
        request_id="r1",
        correlation_id="seq-4",
        model_version=2,
        flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
        timeout=5,
        preferred_memory=pb_utils.PreferredMemory(pb_utils.TRITONSERVER_MEMORY_CPU, 0),
        parameters={"p": 1},
    )
    assert request.inputs() == [x]
    assert request.requested_output_names() == {"A", "B"}
    assert request.request_id() == "r1"
    assert request.correlation_id() == "seq-4"
    assert request.flags() == 1
    assert request.timeout() == 5
    assert request.model_name() == "other"
    assert request.model_version() == 2
    assert json.loads(request.parameters()) == {"p": 1}
    assert request.trace().get_context() is None
    assert request.is_cancelled() is False
    assert pb_utils.get_input_tensor_by_name(request, "X") is x
    assert pb_utils.get_input_tensor_by_name(request, "Y") is None
    request.set_flags(pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END)
    assert request.flags() == 2


def test_request_defaults_and_tritons_argument_order() -> None:
    # Triton's positional order: request_id, correlation_id, inputs, requested_output_names,
    # model_name, model_version, flags, timeout, ...
    request = pb_utils.InferenceRequest("id", 7, [fp32("X", 1)], ["Y"], "m", 3, 0, 9)
    assert (request.request_id(), request.correlation_id(), request.model_name()) == ("id", 7, "m")
    assert (request.model_version(), request.timeout()) == (3, 9)
    plain = pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[])
    assert (plain.request_id(), plain.correlation_id(), plain.flags(), plain.timeout()) == (
        "",
        0,
        0,
        0,
    )
    assert plain.model_version() == -1
    assert plain.parameters() == "{}"
    assert json.loads(
        pb_utils.InferenceRequest(
            model_name="m", inputs=[], requested_output_names=[], parameters='{"a": true}'
        ).parameters()
    ) == {"a": True}


def test_request_refusals() -> None:
    with pytest.raises(TypeError, match="missing required argument 'model_name'"):
        pb_utils.InferenceRequest(inputs=[], requested_output_names=[])
    with pytest.raises(TypeError, match="missing required argument 'inputs'"):
        pb_utils.InferenceRequest(model_name="m", requested_output_names=[])
    with raises("Correlation ID must be integer or string"):
        pb_utils.InferenceRequest(
            model_name="m",
            inputs=[],
            requested_output_names=[],
            correlation_id=1.5,  # type: ignore[arg-type]
        )
    with raises("Input tensor for request with id 'r' and model name 'm' should not be empty."):
        pb_utils.InferenceRequest(
            request_id="r",
            model_name="m",
            inputs=[None],  # type: ignore[list-item]
            requested_output_names=[],
        )
    with raises(
        "Requested output name for request with id 'r' and model name 'm' should not be empty."
    ):
        pb_utils.InferenceRequest(
            request_id="r", model_name="m", inputs=[], requested_output_names=[""]
        )
    with pytest.raises(TypeError, match=r"write \['OUT'\]"):
        pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names="OUT")
    with raises("Expect parameters values to have type bool/int/str, found type <class 'list'>"):
        pb_utils.InferenceRequest(
            model_name="m", inputs=[], requested_output_names=[], parameters={"a": []}
        )
    with pytest.raises(pb_utils.TritonModelException, match="timeout must be in"):
        pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[], timeout=-1)
    with pytest.raises(TypeError, match="preferred_memory_type must be"):
        pb_utils.PreferredMemory(5)


def test_release_flags() -> None:
    request = pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[])
    request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_ALL)
    with pytest.raises(
        pb_utils.TritonModelException,
        match=r"^TRITONSERVER_REQUEST_RELEASE_RESCHEDULE is not supported",
    ):
        request.set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
    with pytest.raises(pb_utils.TritonModelException, match="Unsupported release flags 4"):
        request.set_release_flags(4)


# --- requests the server hands to execute, and their sender ----------------------------


class Sink:
    """The adapter's side of a sender: what reached it."""

    def __init__(self) -> None:
        self.sent: list[tuple[pb_utils.InferenceResponse | None, bool]] = []
        self.cancelled = False

    def __call__(self, response: pb_utils.InferenceResponse | None, final: bool) -> None:
        self.sent.append((response, final))

    def is_cancelled(self) -> bool:
        return self.cancelled


def incoming(
    sink: Sink, *, decoupled: bool = True, requested: list[str] | None = None
) -> pb_utils.InferenceRequest:
    names = requested if requested is not None else ["OUT"]
    sender = pb_utils.InferenceResponseSender(
        sink, sink.is_cancelled, decoupled=decoupled, requested_output_names=names
    )
    return pb_utils.InferenceRequest._incoming(
        inputs=[fp32("IN", 1, 2)],
        requested_output_names=names,
        request_id="abc",
        correlation_id=12,
        flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
        parameters={"temperature": 0.5},
        model_name="me",
        model_version=1,
        timeout=0,
        sender=sender,
        cancelled=sink.is_cancelled,
    )


def test_incoming_request() -> None:
    sink = Sink()
    request = incoming(sink)
    assert request.request_id() == "abc"
    assert request.correlation_id() == 12
    assert request.flags() == 1
    assert json.loads(request.parameters()) == {"temperature": 0.5}
    assert request.requested_output_names() == {"OUT"}
    assert request.model_name() == "me"
    assert pb_utils.get_input_tensor_by_name(request, "IN").shape() == [2]  # type: ignore[union-attr]
    assert request.is_cancelled() is False
    sender = request.get_response_sender()
    assert sender is request.get_response_sender()
    assert sender.is_cancelled() is False
    sink.cancelled = True
    assert request.is_cancelled() is True
    assert sender.is_cancelled() is True


def test_exec_of_an_incoming_request_is_refused(bls: Executor) -> None:
    with pytest.raises(pb_utils.TritonModelException, match="this one was handed to execute"):
        incoming(Sink()).exec()
    assert bls.calls == []


def test_decoupled_sender_rules() -> None:
    sink = Sink()
    sender = incoming(sink).get_response_sender()
    first, second = (
        pb_utils.InferenceResponse([fp32("OUT", 1)]),
        pb_utils.InferenceResponse([fp32("OUT", 2)]),
    )
    sender.send(first)
    sender.send(second)
    with raises(
        "Inference Response object must be provided when the response flags is set to zero."
    ):
        sender.send()
    with raises("Unable to send response. Unsupported flag provided."):
        sender.send(first, flags=2)
    sender.send(flags=FINAL)
    assert sink.sent == [(first, False), (second, False), (None, True)]
    with raises("Unable to send response. Response sender has been closed."):
        sender.send(first)
    with raises("Unable to send response. Response sender has been closed."):
        sender.send(flags=FINAL)
    with pytest.raises(TypeError, match=r"send\(\) takes a pb_utils.InferenceResponse"):
        sender.send("nope")  # type: ignore[arg-type]


def test_decoupled_sender_may_send_nothing_but_the_final_flag() -> None:
    sink = Sink()
    incoming(sink).get_response_sender().send(flags=FINAL)
    assert sink.sent == [(None, True)]


def test_non_decoupled_sender_rules() -> None:
    sink = Sink()
    sender = incoming(sink, decoupled=False).get_response_sender()
    with raises(
        "Unable to send response. Non-decoupled model cannot send complete final before sending a response."
    ):
        sender.send(flags=FINAL)
    response = pb_utils.InferenceResponse([fp32("OUT", 1)])
    sender.send(response)
    with raises("Unable to send response. Non-decoupled model cannot send more than one response."):
        sender.send(response)
    sender.send(flags=FINAL)
    assert sink.sent == [(response, False), (None, True)]

    once = Sink()
    incoming(once, decoupled=False).get_response_sender().send(response, FINAL)
    assert once.sent == [(response, True)]


def test_sender_prunes_unrequested_outputs() -> None:
    sink = Sink()
    sender = incoming(sink, requested=["A"]).get_response_sender()
    a, b = fp32("A", 1), fp32("B", 2)
    sender.send(pb_utils.InferenceResponse([a, b]), FINAL)
    response = sink.sent[0][0]
    assert response is not None and response.output_tensors() == [a]


def test_sender_wraps_the_sinks_failure() -> None:
    def failing(response: Any, final: bool) -> None:
        raise RuntimeError("client gone")

    sender = pb_utils.InferenceResponseSender(failing, lambda: False)
    with raises("client gone"):
        sender.send(pb_utils.InferenceResponse(), FINAL)


def test_sender_of_a_bls_request_cannot_send() -> None:
    request = pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[])
    with raises(
        "Unable to send response. Response sender has no reference to the decoupled state of the model."
    ):
        request.get_response_sender().send(pb_utils.InferenceResponse())


def test_sender_keeps_order_across_threads() -> None:
    sink = Sink()
    sender = incoming(sink).get_response_sender()

    def send_many() -> None:
        for _ in range(200):
            sender.send(pb_utils.InferenceResponse([fp32("OUT", 1)]))

    threads = [threading.Thread(target=send_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sender.send(flags=FINAL)
    assert len(sink.sent) == 801
    assert [final for _, final in sink.sent].count(True) == 1
    assert sink.sent[-1] == (None, True)


# --- BLS -------------------------------------------------------------------------------


class Stream:
    """A decoupled call's responses, cancellable."""

    def __init__(
        self, responses: list[pb_utils.InferenceResponse], fail_after: int | None = None
    ) -> None:
        self.responses = responses
        self.fail_after = fail_after
        self.cancelled = False

    def __iter__(self) -> Iterator[pb_utils.InferenceResponse]:
        for i, response in enumerate(self.responses):
            if self.fail_after == i:
                raise RuntimeError("stream broke")
            yield response

    def cancel(self) -> None:
        self.cancelled = True


class Executor:
    """A stand-in for the adapter's BLS hook: "double" doubles X, "stream" counts down,
    anything else is unknown."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.ready = {"double": True}
        self.stream: Stream | None = None

    def exec(self, request: pb_utils.InferenceRequest, decoupled: bool) -> Any:
        self.calls.append(("exec", (request.model_name(), decoupled)))
        if request.model_name() == "double":
            x = pb_utils.get_input_tensor_by_name(request, "X")
            assert x is not None
            return pb_utils.InferenceResponse([pb_utils.Tensor("Y", x.as_numpy() * 2)])
        if request.model_name() == "stream":
            self.stream = Stream(
                [pb_utils.InferenceResponse([fp32("N", n)]) for n in (2, 1, 0)]
                + [pb_utils.InferenceResponse()]
            )
            return self.stream
        if request.model_name() == "broken":
            self.stream = Stream([pb_utils.InferenceResponse([fp32("N", 1)])] * 3, fail_after=1)
            return self.stream
        raise LookupError(f"Request for unknown model: '{request.model_name()}' is not found")

    def is_model_ready(self, model_name: str, model_version: int) -> bool:
        self.calls.append(("ready", (model_name, model_version)))
        return self.ready.get(model_name, False)

    def load_model(self, model_name: str, config: str, files: dict[str, bytes]) -> None:
        self.calls.append(("load", (model_name, config, files)))
        if model_name == "bad":
            raise ValueError("no such model in the repository")
        self.ready[model_name] = True

    def unload_model(self, model_name: str, unload_dependents: bool) -> None:
        self.calls.append(("unload", (model_name, unload_dependents)))
        if model_name not in self.ready:
            raise ValueError(f"'{model_name}' is not loaded")
        del self.ready[model_name]


@pytest.fixture
def bls(monkeypatch: pytest.MonkeyPatch) -> Executor:
    executor = Executor()
    monkeypatch.setattr(pb_utils, "_bls", executor)
    return executor


def bls_request(model: str) -> pb_utils.InferenceRequest:
    return pb_utils.InferenceRequest(
        model_name=model, inputs=[fp32("X", 1, 2)], requested_output_names=["Y"]
    )


def test_without_bls_every_call_is_refused() -> None:
    assert pb_utils._bls is None
    message = "^BLS is not available: "
    with pytest.raises(pb_utils.TritonModelException, match=message):
        bls_request("double").exec()
    with pytest.raises(pb_utils.TritonModelException, match=message):
        pb_utils.is_model_ready("double")
    with pytest.raises(pb_utils.TritonModelException, match=message):
        pb_utils.load_model("double")
    with pytest.raises(pb_utils.TritonModelException, match=message):
        pb_utils.unload_model("double")


def test_exec(bls: Executor) -> None:
    response = bls_request("double").exec()
    assert not response.has_error()
    y = pb_utils.get_output_tensor_by_name(response, "Y")
    assert y is not None and y.as_numpy().tolist() == [2, 4]
    assert bls.calls == [("exec", ("double", False))]


def test_exec_failure_is_an_error_response(bls: Executor) -> None:
    response = bls_request("nope").exec()
    assert response.has_error()
    error = response.error()
    assert error is not None and error.message() == "Request for unknown model: 'nope' is not found"
    assert error.code() == pb_utils.TritonError.INTERNAL
    # decoupled: an iterator of that one error response
    responses = list(bls_request("nope").exec(decoupled=True))
    assert len(responses) == 1 and responses[0].has_error()


def test_exec_decoupled(bls: Executor) -> None:
    iterator = bls_request("stream").exec(decoupled=True)
    assert isinstance(iterator, pb_utils.ResponseIterator)
    responses = list(iterator)
    assert [len(r.output_tensors()) for r in responses] == [1, 1, 1, 0]  # the last one empty
    assert responses[0].output_tensors()[0].as_numpy().tolist() == [2]
    # Iterating again replays them, as Triton's iterator does.
    assert list(iterator) == responses
    iterator.cancel()  # finished: nothing to cancel
    assert bls.stream is not None and not bls.stream.cancelled


def test_exec_decoupled_cancel_and_midway_failure(bls: Executor) -> None:
    iterator = bls_request("stream").exec(decoupled=True)
    next(iterator)
    iterator.cancel()
    assert bls.stream is not None and bls.stream.cancelled
    broken = list(bls_request("broken").exec(decoupled=True))
    assert [r.has_error() for r in broken] == [False, True]
    assert broken[1].error().message() == "stream broke"  # type: ignore[union-attr]


def test_async_exec(bls: Executor) -> None:
    async def execute() -> list[pb_utils.InferenceResponse]:
        loop_thread = threading.get_ident()
        threads: list[int] = []
        original = bls.exec

        def recording(request: Any, decoupled: bool) -> Any:
            threads.append(threading.get_ident())
            return original(request, decoupled)

        bls.exec = recording  # type: ignore[method-assign]
        awaitables = [bls_request("double").async_exec() for _ in range(4)]
        responses = await asyncio.gather(*awaitables)
        assert loop_thread not in threads  # the loop was never blocked by a call
        return responses

    responses = asyncio.run(execute())
    outputs = [pb_utils.get_output_tensor_by_name(r, "Y") for r in responses]
    assert [y.as_numpy().tolist() for y in outputs if y is not None] == [[2, 4]] * 4


def test_async_exec_decoupled(bls: Executor) -> None:
    async def execute() -> tuple[list[int], list[int]]:
        iterator = await bls_request("stream").async_exec(decoupled=True)
        first = [len(r.output_tensors()) async for r in iterator]
        second = [len(r.output_tensors()) for r in iterator]  # a plain for, as in Triton
        return first, second

    assert asyncio.run(execute()) == ([1, 1, 1, 0], [1, 1, 1, 0])


def test_async_exec_needs_a_running_loop(bls: Executor) -> None:
    with pytest.raises(RuntimeError, match="no running event loop"):
        bls_request("double").async_exec()


def test_model_management(bls: Executor) -> None:
    assert pb_utils.is_model_ready("double") is True
    assert pb_utils.is_model_ready("double", "3") is True
    assert pb_utils.is_model_ready("other") is False
    pb_utils.load_model("other", config='{"backend": "python"}', files={"file:1/model.py": b"x"})
    pb_utils.load_model("third")
    pb_utils.unload_model("other", unload_dependents=True)
    assert bls.calls == [
        ("ready", ("double", -1)),
        ("ready", ("double", 3)),
        ("ready", ("other", -1)),
        ("load", ("other", '{"backend": "python"}', {"file:1/model.py": b"x"})),
        ("load", ("third", "", {})),
        ("unload", ("other", True)),
    ]


def test_model_management_refusals(bls: Executor) -> None:
    with raises("Failed to load model: no such model in the repository"):
        pb_utils.load_model("bad")
    with raises("Failed to unload model: 'ghost' is not loaded"):
        pb_utils.unload_model("ghost")
    with raises(
        "failed to load model 'm', files should be a dictionary of file paths and file contents"
    ):
        pb_utils.load_model("m", config="{}", files=["file:1/model.py"])  # type: ignore[arg-type]
    with raises(
        "failed to load model 'm', files should be a dictionary of file paths and file contents"
    ):
        pb_utils.load_model("m", config="{}", files={"file:1/model.py": "text"})  # type: ignore[dict-item]
    for version in ("-1", "one"):
        with raises(
            "Failed to check model readiness: failed to get model version from specified"
            f" version string '{version}', version should be an integral value > 0"
        ):
            pb_utils.is_model_ready("double", version)
    with pytest.raises(TypeError, match="model_name must be a str"):
        pb_utils.is_model_ready(None)  # type: ignore[arg-type]


# --- ModelConfig and the configuration's lookups ---------------------------------------

CONFIG = {
    "name": "add_sub",
    "max_batch_size": 8,
    "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]}],
    "output": [{"name": "OUTPUT0", "data_type": "TYPE_INVALID", "dims": []}],
}


def test_config_lookups() -> None:
    assert pb_utils.get_input_config_by_name(CONFIG, "INPUT0") == CONFIG["input"][0]  # type: ignore[index]
    assert pb_utils.get_input_config_by_name(CONFIG, "NOPE") is None
    assert pb_utils.get_output_config_by_name(CONFIG, "OUTPUT0") == CONFIG["output"][0]  # type: ignore[index]
    assert pb_utils.get_output_config_by_name({}, "OUTPUT0") is None
    assert pb_utils.using_decoupled_model_transaction_policy(CONFIG) is False
    assert (
        pb_utils.using_decoupled_model_transaction_policy(
            {"model_transaction_policy": {"decoupled": True}}
        )
        is True
    )


def test_model_config_from_json_and_from_dict() -> None:
    config = pb_utils.ModelConfig(json.dumps(CONFIG))
    assert config.as_dict() == CONFIG
    from_dict = pb_utils.ModelConfig(CONFIG)
    from_dict.set_max_batch_size(16)
    assert CONFIG["max_batch_size"] == 8  # the dict was copied
    minimal = pb_utils.ModelConfig('{"name": "m"}').as_dict()
    assert minimal == {"name": "m", "max_batch_size": 0, "input": [], "output": []}
    with pytest.raises(TypeError, match="JSON object"):
        pb_utils.ModelConfig("[1]")


def test_model_config_setters() -> None:
    config = pb_utils.ModelConfig(CONFIG)
    config.set_max_batch_size(8)
    with pytest.raises(
        ValueError,
        match=r"^configuration specified max_batch_size 8, but in auto-complete-config function for model 'add_sub' specified max_batch_size 4$",
    ):
        config.set_max_batch_size(4)
    config.set_dynamic_batching()
    config.set_dynamic_batching()
    assert config.as_dict()["dynamic_batching"] == {}
    sequence = pb_utils.ModelConfig({**CONFIG, "sequence_batching": {}})
    with pytest.raises(
        ValueError,
        match=r"^Configuration specified scheduling_choice as 'sequence_batching', but auto-complete-config function for model 'add_sub' tries to set scheduling_choice as 'dynamic_batching'$",
    ):
        sequence.set_dynamic_batching()
    config.set_model_transaction_policy({"decoupled": True})
    config.set_model_transaction_policy({"decoupled": True})
    assert pb_utils.using_decoupled_model_transaction_policy(config.as_dict())
    with pytest.raises(
        ValueError,
        match=r"^trying to change decoupled property in auto-complete-config for model 'add_sub', which is already set to 'True'\.$",
    ):
        config.set_model_transaction_policy({"decoupled": False})
    with pytest.raises(
        ValueError,
        match=r"^model transaction property in auto-complete-config function for model 'add_sub' contains property other than 'decoupled'\.$",
    ):
        config.set_model_transaction_policy({"other": 1})


def test_model_config_add_input_and_output() -> None:
    config = pb_utils.ModelConfig(CONFIG)
    config.add_input({"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4], "optional": True})
    config.add_input({"name": "INPUT1", "data_type": "TYPE_INT32", "dims": [-1]})
    config.add_output({"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]})
    config.add_output({"name": "OUTPUT1", "data_type": "TYPE_STRING", "dims": [1]})
    as_dict = config.as_dict()
    assert as_dict["input"] == [
        {"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4], "optional": True},
        {"name": "INPUT1", "data_type": "TYPE_INT32", "dims": [-1]},
    ]
    assert as_dict["output"] == [
        {"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4]},
        {"name": "OUTPUT1", "data_type": "TYPE_STRING", "dims": [1]},
    ]
    where = "in auto-complete-config function for model 'add_sub'"
    cases = [
        (
            config.add_input,
            {"name": "INPUT0", "data_type": "TYPE_INT8", "dims": [4]},
            "unable to load model 'add_sub', configuration expects datatype TYPE_FP32 for input 'INPUT0', model provides TYPE_INT8",
        ),
        (
            config.add_input,
            {"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [5]},
            "model 'add_sub', tensor 'INPUT0': the model expects dims [5] but the model configuration specifies dims [4]",
        ),
        (
            config.add_input,
            {"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4], "optional": False},
            "model 'add_sub', tensor 'INPUT0': the model expects optional False but the model configuration specifies optional True",
        ),
        (
            config.add_input,
            {"name": "X", "data_type": "TYPE_FP32", "dims": [4], "format": 1},
            f"input 'X' {where} contains property other than 'name', 'data_type', 'dims' and 'optional'.",
        ),
        (
            config.add_input,
            {"data_type": "TYPE_FP32", "dims": [4]},
            f"input {where} is missing 'name' property.",
        ),
        (
            config.add_input,
            {"name": "X", "dims": [4]},
            f"input 'X' {where} is missing 'data_type' property.",
        ),
        (
            config.add_input,
            {"name": "X", "data_type": "TYPE_FP32"},
            f"input 'X' {where} is missing 'dims' property.",
        ),
        (
            config.add_output,
            {"name": "Y", "data_type": "TYPE_FP32", "dims": [4], "optional": True},
            f"output 'Y' {where} contains property other than 'name', 'data_type' and 'dims'.",
        ),
        (
            config.add_output,
            {"name": "OUTPUT1", "data_type": "TYPE_FP32", "dims": [1]},
            "unable to load model 'add_sub', configuration expects datatype TYPE_STRING for output 'OUTPUT1', model provides TYPE_FP32",
        ),
    ]
    for add, spec, message in cases:
        assert callable(add) and isinstance(spec, dict) and isinstance(message, str)
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            add(spec)


# --- Logger ----------------------------------------------------------------------------


def test_logger(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="inferwire.triton")
    logger = pb_utils.Logger
    logger.log_info("info")
    logger.log_warn("warn")
    logger.log_error("error")
    logger.log_verbose("verbose")
    logger.log("explicit", logger.ERROR)
    logger.log("default")
    with pb_utils._model_scope("add_sub"):
        logger.log_info("scoped")
    records = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert records == [
        ("inferwire.triton", logging.INFO, "info"),
        ("inferwire.triton", logging.WARNING, "warn"),
        ("inferwire.triton", logging.ERROR, "error"),
        ("inferwire.triton", logging.DEBUG, "verbose"),
        ("inferwire.triton", logging.ERROR, "explicit"),
        ("inferwire.triton", logging.INFO, "default"),
        ("inferwire.triton", logging.INFO, "add_sub: scoped"),
    ]
    assert {r.filename for r in caplog.records} == {"test_pb_utils.py"}  # the caller's line
    with pytest.raises(TypeError, match="log level must be"):
        logger.log("x", 9)


# --- custom metrics --------------------------------------------------------------------


@pytest.fixture
def metrics() -> Iterator[None]:
    pb_metrics._clear()
    yield
    pb_metrics._clear()


def test_counter_and_gauge(metrics: None) -> None:
    family = pb_utils.MetricFamily(
        name="requests_total", description="Requests seen", kind=pb_utils.MetricFamily.COUNTER
    )
    counter = family.Metric(labels={"model": "m", "version": "1"})
    counter.increment(2)
    counter.increment(0.5)
    assert counter.value() == 2.5
    with raises(
        "Failed to increment metric value: TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by non-negative values."
    ):
        counter.increment(-1)
    with raises(
        "Failed to set metric value: TRITONSERVER_METRIC_KIND_COUNTER does not support Set"
    ):
        counter.set(3)
    with raises(
        "Failed to observe metric value: TRITONSERVER_METRIC_KIND_COUNTER does not support Observe"
    ):
        counter.observe(3)
    with pytest.raises(TypeError, match="must be a number"):
        counter.increment("1")  # type: ignore[arg-type]

    gauge = pb_utils.MetricFamily("queue_depth", "Queued", pb_utils.MetricFamily.GAUGE).Metric()
    gauge.set(5)
    gauge.increment(-2)
    assert gauge.value() == 3
    with raises(
        "Failed to observe metric value: TRITONSERVER_METRIC_KIND_GAUGE does not support Observe"
    ):
        gauge.observe(1)


def test_histogram(metrics: None) -> None:
    family = pb_utils.MetricFamily("latency_seconds", "Latency", pb_utils.MetricFamily.HISTOGRAM)
    histogram = family.Metric(labels={"model": "m"}, buckets=[0.1, 1, 10])
    for value in (0.05, 0.5, 0.7, 20):
        histogram.observe(value)
    with raises(
        "Failed to get metric value: TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Value"
    ):
        histogram.value()
    with raises(
        "Failed to increment metric value: TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Increment"
    ):
        histogram.increment(1)
    with raises(
        "Failed to set metric value: TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Set"
    ):
        histogram.set(1)
    assert pb_utils.metrics_text() == (
        "# HELP latency_seconds Latency\n"
        "# TYPE latency_seconds histogram\n"
        'latency_seconds_bucket{model="m",le="0.1"} 1\n'
        'latency_seconds_bucket{model="m",le="1"} 3\n'
        'latency_seconds_bucket{model="m",le="10"} 3\n'
        'latency_seconds_bucket{model="m",le="+Inf"} 4\n'
        'latency_seconds_sum{model="m"} 21.25\n'
        'latency_seconds_count{model="m"} 4\n'
    )


def test_metric_creation_refusals(metrics: None) -> None:
    counter = pb_utils.MetricFamily("c", "c", pb_utils.MetricFamily.COUNTER)
    histogram = pb_utils.MetricFamily("h", "h", pb_utils.MetricFamily.HISTOGRAM)
    with raises("Failed to create metric. Labels must be a dictionary."):
        counter.Metric(labels=[("a", "b")])  # type: ignore[arg-type]
    with raises("Failed to create metric. Buckets must be a list."):
        histogram.Metric(buckets=(1, 2))  # type: ignore[arg-type]
    with raises("Failed to create metric. Unexpected buckets found."):
        counter.Metric(buckets=[1])
    with raises("Failed to create metric. Missing required buckets."):
        histogram.Metric()
    with pytest.raises(pb_utils.TritonModelException, match="strictly increasing"):
        histogram.Metric(buckets=[2, 1])
    with raises(
        "Error when creating Metric: Parameter [a] must have a type of TRITONSERVER_PARAMETER_STRING to be added as a label."
    ):
        counter.Metric(labels={"a": 1})  # type: ignore[dict-item]
    with pytest.raises(pb_utils.TritonModelException, match="invalid label name 'bad-name'"):
        counter.Metric(labels={"bad-name": "x"})
    with pytest.raises(
        pb_utils.TritonModelException,
        match=r"^Error when creating MetricFamily: invalid metric name '1abc'",
    ):
        pb_utils.MetricFamily("1abc", "x", pb_utils.MetricFamily.COUNTER)
    with pytest.raises(TypeError, match="MetricFamily kind must be"):
        pb_utils.MetricFamily("k", "x", 7)
    with pytest.raises(pb_utils.TritonModelException, match="is registered as a COUNTER"):
        pb_utils.MetricFamily("c", "c", pb_utils.MetricFamily.GAUGE)
    with pytest.raises(pb_utils.TritonModelException, match="is registered as a COUNTER"):
        pb_utils.MetricFamily("c", "other description", pb_utils.MetricFamily.COUNTER)


def test_same_name_and_labels_share_a_series(metrics: None) -> None:
    first = pb_utils.MetricFamily("shared_total", "Shared", pb_utils.MetricFamily.COUNTER)
    second = pb_utils.MetricFamily("shared_total", "Shared", pb_utils.MetricFamily.COUNTER)
    a = first.Metric(labels={"x": "1"})
    b = second.Metric(labels={"x": "1"})
    c = first.Metric(labels={"x": "2"})
    a.increment(1)
    b.increment(2)
    c.increment(5)
    assert (a.value(), b.value(), c.value()) == (3, 3, 5)
    assert pb_utils.metrics_text() == (
        "# HELP shared_total Shared\n"
        "# TYPE shared_total counter\n"
        'shared_total{x="1"} 3\n'
        'shared_total{x="2"} 5\n'
    )


def test_metrics_text_escapes_and_orders_labels(metrics: None) -> None:
    family = pb_utils.MetricFamily(
        "odd_gauge", "Help with \\ and\nnewline", pb_utils.MetricFamily.GAUGE
    )
    gauge = family.Metric(labels={"z": 'quote " here', "a": "back\\slash\nline"})
    gauge.set(0.25)
    unlabelled = pb_utils.MetricFamily("plain", "Plain", pb_utils.MetricFamily.GAUGE).Metric()
    unlabelled.set(float("inf"))
    assert pb_utils.metrics_text() == (
        "# HELP odd_gauge Help with \\\\ and\\nnewline\n"
        "# TYPE odd_gauge gauge\n"
        'odd_gauge{a="back\\\\slash\\nline",z="quote \\" here"} 0.25\n'
        "# HELP plain Plain\n"
        "# TYPE plain gauge\n"
        "plain +Inf\n"
    )


def test_a_series_goes_with_its_last_metric(metrics: None) -> None:
    family = pb_utils.MetricFamily("temp_total", "Temporary", pb_utils.MetricFamily.COUNTER)
    kept = family.Metric(labels={"k": "kept"})
    dropped = family.Metric(labels={"k": "dropped"})
    kept.increment(1)
    dropped.increment(1)
    assert 'k="dropped"' in pb_utils.metrics_text()
    del dropped
    gc.collect()
    assert 'k="dropped"' not in pb_utils.metrics_text()
    assert 'temp_total{k="kept"} 1' in pb_utils.metrics_text()
    del kept
    gc.collect()
    assert pb_utils.metrics_text() == ""


def test_a_metric_outlives_its_family_object(metrics: None) -> None:
    # Triton refuses this (its C++ family clears its metrics); nothing needs that here.
    metric = pb_utils.MetricFamily("orphan_total", "Orphan", pb_utils.MetricFamily.COUNTER).Metric()
    gc.collect()
    metric.increment(1)
    assert "orphan_total 1" in pb_utils.metrics_text()


def test_registry_bounds(metrics: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pb_metrics, "MAX_FAMILIES", 2)
    monkeypatch.setattr(pb_metrics, "MAX_METRICS", 3)
    family = pb_utils.MetricFamily("one", "1", pb_utils.MetricFamily.COUNTER)
    pb_utils.MetricFamily("two", "2", pb_utils.MetricFamily.COUNTER)
    pb_utils.MetricFamily("one", "1", pb_utils.MetricFamily.COUNTER)  # registered: no new one
    with pytest.raises(
        pb_utils.TritonModelException,
        match=r"^Error when creating MetricFamily: 2 metric families are registered",
    ):
        pb_utils.MetricFamily("three", "3", pb_utils.MetricFamily.COUNTER)
    kept = [family.Metric(labels={"id": str(i)}) for i in range(3)]
    kept.append(family.Metric(labels={"id": "0"}))  # an existing series: no new one
    with pytest.raises(
        pb_utils.TritonModelException,
        match=r"^Error when creating Metric: 3 metrics are registered",
    ):
        family.Metric(labels={"id": "3"})
    del kept[-2:]
    gc.collect()
    family.Metric(labels={"id": "3"})  # room again once a series is gone


def test_real_bounds() -> None:
    assert (pb_metrics.MAX_FAMILIES, pb_metrics.MAX_METRICS) == (1_000, 10_000)


# --- a model.py as written for Triton --------------------------------------------------

MODEL = """
import json
import threading

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        out = pb_utils.get_output_config_by_name(config, "OUT")
        self.dtype = pb_utils.triton_string_to_numpy(out["data_type"])
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)

    def execute(self, requests):
        for request in requests:
            n = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy()[0])
            sender = request.get_response_sender()
            threading.Thread(target=self.count, args=(n, sender)).start()
        return None

    def count(self, n, sender):
        for i in range(n):
            out = pb_utils.Tensor("OUT", np.array([i], dtype=self.dtype))
            sender.send(pb_utils.InferenceResponse([out]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
"""


def test_a_triton_model_runs_unchanged(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", pb_utils)
    namespace: dict[str, Any] = {}
    exec(compile(MODEL, str(tmp_path / "model.py"), "exec"), namespace)
    model = namespace["TritonPythonModel"]()
    config = {
        "name": "counter",
        "output": [{"name": "OUT", "data_type": "TYPE_INT32", "dims": [1]}],
        "model_transaction_policy": {"decoupled": True},
    }
    model.initialize({"model_config": json.dumps(config)})
    done = threading.Event()
    sent: list[Any] = []

    def sink(response: Any, final: bool) -> None:
        sent.append(response)
        if final:
            done.set()

    sender = pb_utils.InferenceResponseSender(
        sink, lambda: False, decoupled=True, requested_output_names=["OUT"]
    )
    request = pb_utils.InferenceRequest._incoming(
        inputs=[pb_utils.Tensor("N", np.array([3], dtype=np.int32))],
        requested_output_names=["OUT"],
        request_id="",
        correlation_id=0,
        flags=0,
        parameters={},
        model_name="counter",
        model_version=1,
        timeout=0,
        sender=sender,
        cancelled=lambda: False,
    )
    assert model.execute([request]) is None
    assert done.wait(5)
    values = [r.output_tensors()[0].as_numpy().tolist() for r in sent[:-1]]
    assert values == [[0], [1], [2]]
    assert sent[0].output_tensors()[0].as_numpy().dtype == np.int32
    assert sent[-1] is None
