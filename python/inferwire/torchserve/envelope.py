"""KServe's service envelopes, as TorchServe's ``ts.torch_handler.request_envelope``
``kserve`` and ``kservev2`` apply them (``service_envelope`` / ``TS_SERVICE_ENVELOPE``,
which KServe's ``kserve-torchserve`` runtime sets from the protocol version): they wrap a
handler's ``handle(data, context)``, so that the handler sees what KServe's request
holds and KServe's client gets KServe's reply.

- ``kserve`` (v1): the handler gets the request's ``instances`` list; its output goes
  back as ``{"predictions": output}`` (``{"explanations": ...}`` for ``:explain``).
- ``kservev2``: the handler gets the request's ``inputs``, each with its ``data``
  reshaped to its ``shape`` (a BYTES input: its first element); output ``i`` goes back
  as a V2 output named after input ``i``, flattened, its datatype from its values, with
  the request's ``id`` (else the request's own) and the archive's model name and
  version.

TorchServe's envelopes read only the first request of a batch; these hand the handler
the instances (inputs) of every request of the batch in one list, and split its output
back by each request's count. A body that is not KServe's request fails the batch with
400, naming what is wrong, as KServe's model server refuses it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

# The envelopes served here; TorchServe's others (json, body) come from its package.
ENVELOPES = ("kserve", "kservev2")

_NUMPY = {
    "BOOL": "bool",
    "UINT8": "uint8",
    "UINT16": "uint16",
    "UINT32": "uint32",
    "UINT64": "uint64",
    "INT8": "int8",
    "INT16": "int16",
    "INT32": "int32",
    "INT64": "int64",
    "FP16": "float16",
    "FP32": "float32",
    "FP64": "float64",
}
_DATATYPE = {v: k for k, v in _NUMPY.items()}


class PredictionException(Exception):
    """A refused request: its status and message, as ``ts.utils.util``'s (the handler
    model reads ``error_code`` and ``message`` of an exception of this name)."""

    def __init__(self, message: str, error_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code


Handle = Callable[[Any, Any], Any]


def wrap(envelope: str, handle: Handle) -> Handle:
    """``handle`` inside KServe's envelope ``envelope`` (one of ``ENVELOPES``)."""
    cls = {"kserve": KServeEnvelope, "kservev2": KServeV2Envelope}[envelope]
    return cls(handle).handle


class _Envelope:
    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def handle(self, data: Any, context: Any) -> Any:
        if not data:
            return self._handle(data, context)  # initialization, as TorchServe's
        bodies = [_body(row, i) for i, row in enumerate(data)]
        items, counts = self.parse(bodies)
        outputs = self._handle(items, context)
        if not outputs:
            return outputs
        outputs = list(outputs)
        if len(bodies) > 1 and len(outputs) != sum(counts):
            raise PredictionException(
                f"the handler returned {len(outputs)} outputs for {sum(counts)} "
                f"{self.items} of {len(bodies)} batched requests",
                500,
            )
        replies, at = [], 0
        for i, n in enumerate(counts):
            # One request: all the handler's outputs are its own, as TorchServe's.
            part = outputs if len(bodies) == 1 else outputs[at : at + n]
            at += n
            replies.append(self.reply(i, bodies[i], part, context))
        return replies

    items = "instances"

    def parse(self, bodies: list[dict[str, Any]]) -> tuple[list[Any], list[int]]:
        raise NotImplementedError

    def reply(self, i: int, body: dict[str, Any], outputs: list[Any], context: Any) -> Any:
        raise NotImplementedError


class KServeEnvelope(_Envelope):
    """KServe's v1 protocol: ``{"instances": [...]}`` in, ``{"predictions": [...]}`` out."""

    def parse(self, bodies: list[dict[str, Any]]) -> tuple[list[Any], list[int]]:
        items: list[Any] = []
        counts = []
        for body in bodies:
            instances = body.get("instances")
            if not isinstance(instances, list):
                raise PredictionException(
                    '"instances": expected a list (KServe\'s v1 protocol: {"instances": [...]})'
                )
            items.extend(instances)
            counts.append(len(instances))
        return items, counts

    def reply(self, i: int, body: dict[str, Any], outputs: list[Any], context: Any) -> Any:
        explain = context is not None and context.get_request_header(i, "explain") == "True"
        return {"explanations" if explain else "predictions": outputs}


class KServeV2Envelope(_Envelope):
    """KServe's V2 protocol: ``{"inputs": [...]}`` in, ``{"id", "model_name",
    "model_version", "outputs"}`` out."""

    items = "inputs"

    def parse(self, bodies: list[dict[str, Any]]) -> tuple[list[Any], list[int]]:
        items: list[Any] = []
        counts = []
        self._names: list[list[str]] = []
        for body in bodies:
            inputs = body.get("inputs")
            if not isinstance(inputs, list) or not inputs:
                raise PredictionException(
                    '"inputs": expected a list of tensors (the V2 protocol: {"inputs": '
                    '[{"name", "shape", "datatype", "data"}]})'
                )
            names = []
            for j, tensor in enumerate(inputs):
                items.append(_input(tensor, j))
                names.append(tensor["name"])
            self._names.append(names)
            counts.append(len(inputs))
        return items, counts

    def reply(self, i: int, body: dict[str, Any], outputs: list[Any], context: Any) -> Any:
        names = self._names[i]
        request_id = body.get("id")
        if not (isinstance(request_id, str) and request_id.strip()):
            request_id = context.get_request_id(i) if context is not None else None
        model = (getattr(context, "manifest", None) or {}).get("model", {})
        return {
            "id": request_id,
            "model_name": model.get("modelName"),
            "model_version": model.get("modelVersion"),
            "outputs": [
                _output(item, names[j] if j < len(names) else f"output-{j}")
                for j, item in enumerate(outputs)
            ],
        }


def _body(row: Any, i: int) -> dict[str, Any]:
    """A request's body as TorchServe's frontend hands it over (``data`` or ``body``:
    decoded JSON, or its bytes), as an object."""
    value = row.get("data") or row.get("body") if isinstance(row, dict) else None
    if isinstance(value, (bytes, bytearray)):
        try:
            value = json.loads(bytes(value).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise PredictionException(f"the request body is not JSON: {e}") from None
    if not isinstance(value, dict):
        raise PredictionException("the request body must be a JSON object")
    return value


def _input(tensor: Any, j: int) -> dict[str, Any]:
    """A V2 input as the kservev2 envelope hands it to the handler."""
    if not isinstance(tensor, dict):
        raise PredictionException(f"inputs[{j}]: expected an object")
    name, datatype = tensor.get("name"), tensor.get("datatype")
    shape, data = tensor.get("shape"), tensor.get("data")
    where = f"inputs[{j}] ({name!r})"
    if not isinstance(name, str):
        raise PredictionException(f"inputs[{j}].name: expected a string")
    if datatype != "BYTES" and datatype not in _NUMPY:
        raise PredictionException(f"{where}.datatype: {datatype!r} is not a V2 datatype")
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise PredictionException(f"{where}.shape: expected a list of sizes")
    if not isinstance(data, list):
        raise PredictionException(f"{where}.data: expected a list")
    out = dict(tensor)
    if datatype == "BYTES":
        if not data:
            raise PredictionException(f"{where}.data: a BYTES input needs an element")
        out["data"] = data[0]
        return out
    try:
        # As TorchServe's: the values as JSON gave them, only reshaped.
        array = np.array(data)
        out["data"] = array.reshape(tuple(shape)).tolist()
    except (ValueError, TypeError, OverflowError) as e:
        raise PredictionException(f"{where}.data: does not fit shape {shape}: {e}") from None
    return out


def _output(item: Any, name: str) -> dict[str, Any]:
    """A handler's output as the kservev2 envelope replies it: flattened, its datatype
    from its values (text and objects: BYTES)."""
    try:
        array = np.array(item).flatten()
    except ValueError:  # ragged
        array = np.array(item, dtype=object).flatten()
    datatype = _DATATYPE.get(str(array.dtype), "BYTES")
    data = array.tolist()
    if datatype == "BYTES":
        data = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in data]
    return {"name": name, "datatype": datatype, "data": data, "shape": list(array.shape)}
