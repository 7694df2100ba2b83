"""The model contract the Rust core serves, at tensor level: named inputs in (numpy
arrays, with the request's and each input's parameters), named outputs back, pieces for a
streamed reply, metadata. The glue (``crates/inferwire-py/src/model.rs``) reads these
attributes and methods from every Python model it serves; each way a model is written
(Seldon's classes, MLServer's ``MLModel``, MLflow, the library runtimes) is an adapter
deriving from ``Adapter``, none of them from another.

The core also serves Seldon's protocol for every model. ``Adapter`` answers it as
Seldon's wrapper answers a class with ``predict`` alone: ``predict`` is the model's
result for the one array (``seldon_predict``), the transforms pass their input on, there
is no router or combiner, feedback is taken, and the model is healthy.
``seldon.SeldonAdapter`` gives Seldon's classes all of the protocol instead."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import content_types
from .error_log import errors
from .errors import error_reply


class Request(NamedTuple):
    """One V2 request as the core hands it to an adapter (``infer``, ``infer_stream``)."""

    # Its inputs by name: numpy arrays that borrow the request's buffers.
    inputs: dict[str, Any]
    parameters: dict[str, Any]
    # The outputs it asks for; empty: every one.
    requested: list[str]
    # Each input's own parameters, by input name (inputs without any are absent).
    input_parameters: dict[str, dict[str, Any]]
    # The request's id (empty: it gave none).
    id: str = ""


# What the core reads from a V2 request's outputs: (name, array) or (name, array,
# parameters), or {"outputs": [...], "parameters": {...}} with the response's own.
Outputs = list[tuple[Any, ...]]
# Seldon's reply: (output, output names or a column count, tags, metrics).
SeldonResult = tuple[Any, Any, Any, Any]


class Adapter:
    """A served model as the core calls it. Subclasses give ``infer`` (and, with
    ``streams``, ``infer_stream``); every other part has a default here."""

    # -- read once by the glue, when the model is taken --------------------------------
    # Seldon's predict_raw (and its other low-level methods, by operation): the request
    # as a dict, answered as the model writes it.
    has_predict_raw = False
    raw_ops: tuple[str, ...] | list[str] = ()
    raw_arrays_as_lists = False
    # Whether Seldon's predict takes the message's meta (else it gets None).
    wants_meta = False
    # Whether the model answers in pieces (``infer_stream``).
    streams = False
    # What the glue builds each V2 request as, before ``infer`` or ``infer_stream``.
    request_type = Request
    # Whether a dynamic batch arrives as a list of requests (``infer_many``), not as one
    # request holding every request's rows.
    infers_many = False
    # Whether BYTES inputs arrive as flat lists of bytes rather than numpy object arrays,
    # and an output given as a list of bytes is read as a BYTES tensor of that length:
    # no numpy for a model whose requests and replies are bytes (TorchServe's handlers).
    bytes_as_lists = False
    # Routes the model serves itself: (method, path), answered by ``custom``.
    custom_routes: tuple[tuple[str, str], ...] | list[tuple[str, str]] = ()

    def __init__(self, name: str) -> None:
        self.name = name
        self._metadata: dict[str, Any] | str = {
            "name": name,
            "versions": [],
            "platform": "inferwire",
            "inputs": [],
            "outputs": [],
        }
        # The content types a request that gives none is decoded with (``configure``).
        self._content_type = ""
        self._input_content_types: dict[str, str] = {}

    @staticmethod
    def error_reply(exc: BaseException) -> tuple[int, str, str | None] | None:
        """The HTTP status and body an exception raised by the model carries
        (``errors.error_reply``), or None: then it is a 500."""
        return error_reply(exc)

    # -- tensors -----------------------------------------------------------------------

    def infer(self, request: Request) -> Outputs | dict[str, Any]:
        """One V2 request: its outputs, or ``{"outputs", "parameters"}`` with the
        response's own parameters."""
        raise NotImplementedError(f"{type(self).__name__} answers no V2 requests")

    def infer_stream(self, request: Request) -> tuple[Any, Any]:
        """A streamed V2 request, as ``infer``: ``(pieces, None)`` with an iterator of
        each piece's outputs, or ``(None, start)`` that the core starts with
        ``start(sink, patience)`` (``streaming.start_async``)."""
        raise NotImplementedError(f"{type(self).__name__} answers no streamed requests")

    def infer_many(self, requests: list[Request]) -> list[Any]:
        """A batch of requests (with ``infers_many``): for each, what ``infer`` gives, or
        the exception it failed with."""
        raise NotImplementedError(f"{type(self).__name__} answers no lists of requests")

    def model_config(self) -> dict[str, Any] | None:
        """The model's own configuration as Triton's JSON answers it (a Triton
        repository's ``config.pbtxt``); None: the server describes it from the metadata."""
        return None

    def metadata(self) -> dict[str, Any]:
        assert isinstance(self._metadata, dict)
        return self._metadata

    def configure(self, ml: Any) -> None:
        """What an MLServer model-settings file (``mlserver.settings.MLServerModel``) says
        of the model: metadata over its own, and the content types a request that gives
        none is decoded with."""
        if ml.metadata and isinstance(self._metadata, dict):
            self._metadata = {**self._metadata, **ml.metadata}
        self._content_type = ml.content_type
        self._input_content_types = dict(ml.input_content_types)

    def with_defaults(
        self, parameters: dict[str, Any], input_parameters: dict[str, dict[str, Any]]
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """The request's content types, the settings' where it gives none."""
        if self._content_type and "content_type" not in parameters:
            parameters = {**parameters, "content_type": self._content_type}
        if self._input_content_types:
            input_parameters = dict(input_parameters)
            for name, kind in self._input_content_types.items():
                own = input_parameters.get(name, {})
                if "content_type" not in own:
                    input_parameters[name] = {**own, "content_type": kind}
        return parameters, input_parameters

    def decode(self, request: Request) -> tuple[Any, dict[str, Any]]:
        """A V2 request's ``X`` (``content_types.decode_request``) and its parameters, the
        settings' content types filling in what the request does not say."""
        parameters, input_parameters = self.with_defaults(
            request.parameters, request.input_parameters
        )
        X = content_types.decode_request(request.inputs, parameters, input_parameters)
        return X, parameters

    # -- Seldon's protocol on a tensor model ----------------------------------------------

    def seldon_predict(self, X: Any) -> Any:
        """The model's result for Seldon's one array: its one output, or a dict of them
        by name, for the array as input ``input-0``."""
        out = self.infer(Request({"input-0": np.asarray(X)}, {}, [], {}))
        if isinstance(out, dict):
            out = out["outputs"]
        return out[0][1] if len(out) == 1 else {o[0]: o[1] for o in out}

    def predict(self, X: Any, names: list[str], meta: dict[str, Any] | None) -> SeldonResult:
        try:
            out = self.seldon_predict(X)
        except Exception as e:
            errors.error(f"{self.name}.predict", e)
            raise
        return out, columns(out), None, None

    def transform_input(self, X: Any, names: list[str], meta: dict[str, Any]) -> SeldonResult:
        return X, columns(X), None, None

    def transform_output(self, X: Any, names: list[str], meta: dict[str, Any]) -> SeldonResult:
        return X, columns(X), None, None

    def route(self, X: Any, names: list[str], meta: dict[str, Any]) -> SeldonResult:
        from .seldon import SeldonError

        raise SeldonError("Route not defined")

    def aggregate(self, Xs: list[Any], names: list[list[str]]) -> SeldonResult:
        from .seldon import SeldonError

        raise SeldonError("Aggregate not defined")

    def send_feedback(
        self, features: Any, names: list[str], reward: float, truth: Any, routing: dict[str, int]
    ) -> SeldonResult:
        return None, None, None, None

    def health_status(self) -> SeldonResult:
        return {"status": "ok"}, None, None, None


def columns(out: Any) -> int | None:
    """A 2-D result's column count, which Seldon's reply names ``t:0`` .. (the core
    writes the names); None for anything else."""
    if not isinstance(out, (np.ndarray, list)):
        return None
    shape: tuple[int, ...] = np.shape(out) if isinstance(out, list) else out.shape
    return int(shape[1]) if len(shape) >= 2 else None
