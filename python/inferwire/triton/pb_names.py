"""Every public name of ``pb_utils`` (the ``triton_python_backend_utils`` module Triton
Python-backend models import) and what inferwire does with it: ``NAMES``, rendered by
``markdown_table()`` as the migration guide's table (tests/docs/test_docs.py checks that
every public name of ``pb_utils`` is here and that the guide holds the table).

Each entry starts with how it compares with Triton's:

* **as in Triton**: the same calls, arguments, results and refusals; the model runs in
  the server's process and every tensor is in CPU memory;
* **differs**: it works, with the difference said;
* **accepted**: taken, and changes nothing here;
* **refused**: it raises ``TritonModelException`` saying why;
* **inferwire's**: not in Triton's module: what the server itself uses.

A dotted name (``InferenceRequest.exec``) is a method whose behaviour a migration should
know of beyond its class's line."""

from __future__ import annotations

STATUSES = ("as in Triton", "differs", "accepted", "refused", "inferwire's")

NAMES: dict[str, str] = {
    # -- requests and responses -------------------------------------------------------
    "InferenceRequest": "as in Triton: handed to execute (inputs, request_id, "
    "correlation_id, flags, parameters as JSON, requested_output_names: every output of "
    "the config when the client asked for none), or built by the model for a BLS call "
    "with Triton's arguments; timeout() is 0 for a client's request",
    "InferenceRequest.exec": "as in Triton: runs the named model and waits, here as a "
    "direct call of that model in this process, its inputs passed as the arrays they are "
    "(no copy, no second process); a model this process does not serve is an error "
    "response, NOT_FOUND; decoupled=True gives a ResponseIterator",
    "InferenceRequest.async_exec": "as in Triton: exec on a thread of the running event "
    "loop's executor, awaited from an async def execute (asyncio.gather runs calls side "
    "by side)",
    "InferenceRequest.set_release_flags": "differs: TRITONSERVER_REQUEST_RELEASE_ALL "
    "only; TRITONSERVER_REQUEST_RELEASE_RESCHEDULE raises TritonModelException (there is "
    "no iterative sequence batching to run the request again)",
    "InferenceResponse": "differs: output_tensors and error as in Triton (an error "
    "response fails that request alone, its TritonError's code giving the status); "
    "parameters are checked and kept (parameters()) but not sent to the client",
    "InferenceResponseSender": "as in Triton: get_response_sender().send(response, flags) "
    "with Triton's rules (a model that is not decoupled sends one response, then the "
    "final flag; nothing follows the final flag), outputs the request did not ask for "
    "left out; a decoupled model's responses go out as the stream's replies, each send "
    "waiting while the client is slow to read; is_cancelled() once a send has found the "
    "client gone",
    "ResponseIterator": "as in Triton: the responses of exec(decoupled=True), the last "
    "one empty; iterating again replays them; cancel() asks the called model to stop; "
    "async for is inferwire's addition",
    "InferenceTrace": "accepted: request.trace().get_context() is None (requests are not "
    "traced into models)",
    "PreferredMemory": "accepted: every output is in CPU memory here",
    "MemoryType": "accepted: PreferredMemory's memory types (GPU 0, CPU 1, as in "
    "Triton's Python backend)",
    "TRITONSERVER_MEMORY_CPU": "accepted: see PreferredMemory",
    "TRITONSERVER_MEMORY_GPU": "accepted: see PreferredMemory",
    # -- tensors and data types -------------------------------------------------------
    "Tensor": "as in Triton: Tensor(name, array), in CPU memory, holds the numpy array "
    "without a copy (as_numpy() returns that very array; one not C-contiguous is copied "
    "once); an input is the array the server decoded the request into; BYTES is an "
    "object array of bytes; is_cpu() is always true",
    "Tensor.from_dlpack": "differs: a CPU tensor (torch, JAX, numpy) is taken without a "
    "copy, as in Triton; a CUDA tensor is refused with what to do (.cpu() first), and "
    "BF16, which numpy cannot hold, is refused",
    "Tensor.to_dlpack": "as in Triton: torch.utils.dlpack.from_dlpack takes it, sharing "
    "memory, except that a read-only array is copied first, as DLPack cannot mark "
    "memory read-only; BYTES is refused, as in Triton",
    "triton_to_numpy_type": "as in Triton: a TRITONSERVER_DataType code's numpy type "
    "(None for BF16)",
    "numpy_to_triton_type": "as in Triton",
    "triton_string_to_numpy": "as in Triton: TYPE_FP32 gives numpy.float32",
    "TRITON_STRING_TO_NUMPY": "as in Triton",
    "serialize_byte_tensor": "as in Triton: the BYTES wire encoding (4-byte length, then "
    "the bytes, per element)",
    "deserialize_bytes_tensor": "as in Triton",
    "get_input_tensor_by_name": "as in Triton",
    "get_output_tensor_by_name": "as in Triton",
    # -- the model's configuration ----------------------------------------------------
    "ModelConfig": "as in Triton: what auto_complete_config receives and returns "
    "(set_max_batch_size, set_dynamic_batching, add_input, add_output, "
    "set_model_transaction_policy, as_dict), with Triton's refusals as ValueError; run "
    "when the model loads, unless --strict-model-config",
    "get_input_config_by_name": "as in Triton",
    "get_output_config_by_name": "as in Triton",
    "using_decoupled_model_transaction_policy": "as in Triton",
    # -- flags ------------------------------------------------------------------------
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_START": "as in Triton: in flags() of a request "
    "whose client sent sequence_start",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_END": "as in Triton: in flags() of a request whose "
    "client sent sequence_end",
    "TRITONSERVER_RESPONSE_COMPLETE_FINAL": "as in Triton",
    "TRITONSERVER_REQUEST_RELEASE_ALL": "as in Triton",
    "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE": "refused: see InferenceRequest.set_release_flags",
    # -- errors -----------------------------------------------------------------------
    "TritonError": "as in Triton: the error of one response, a message and a code "
    "(TritonError.INVALID_ARG, ...; INTERNAL by default), not an exception",
    "TritonErrorCode": "inferwire's: the enum of TritonError's codes (Triton keeps it "
    "inside TritonError)",
    "TritonModelException": "as in Triton: what pb_utils raises when it refuses (a wrong "
    "argument type is also a TypeError); raised from execute, it fails every request of "
    "that call with its message",
    # -- models of the repository -----------------------------------------------------
    "is_model_ready": "as in Triton: whether this process serves the model (that version)",
    "load_model": "refused: models are loaded through the repository API in explicit "
    "mode (POST /v2/repository/models/NAME/load), not from a model's code",
    "unload_model": "refused: as load_model (POST /v2/repository/models/NAME/unload)",
    # -- logging and metrics ----------------------------------------------------------
    "Logger": "as in Triton: log_info, log_warn, log_error, log_verbose and "
    "log(message, level), to the server's log (Python's logger inferwire.triton; "
    "VERBOSE as debug), each line prefixed with the model's name",
    "LogLevel": "as in Triton: INFO, WARNING, ERROR, VERBOSE",
    "MetricFamily": "as in Triton: a counter, gauge or histogram family registered by "
    "name, on the metrics page after the server's own metrics; at most 1,000 families "
    "and 10,000 metrics, past which creating one raises TritonModelException",
    "Metric": "as in Triton: increment, set, observe, value, by kind; a metric goes from "
    "the page when its last object is collected, and keeps working after its "
    "MetricFamily object is gone",
    "MetricKind": "as in Triton: COUNTER, GAUGE, HISTOGRAM",
    "COUNTER": "as in Triton: MetricKind.COUNTER",
    "GAUGE": "as in Triton: MetricKind.GAUGE",
    "HISTOGRAM": "as in Triton: MetricKind.HISTOGRAM",
    # -- the server's side ------------------------------------------------------------
    "BlsHook": "inferwire's: what the server's BLS executor provides (exec, "
    "is_model_ready, load_model, unload_model); not for models",
    "metrics_text": "inferwire's: the models' metrics in Prometheus' text format, for the "
    "metrics page; not for models",
}


def markdown_table() -> str:
    """``NAMES`` as the migration guide's table."""
    rows = ["| `pb_utils` name | inferwire |", "|---|---|"]
    for name, how in NAMES.items():
        status, _, what = how.partition(": ")
        rows.append(f"| `{name}` | **{status}**{': ' + what if what else ''} |")
    return "\n".join(rows) + "\n"
