"""Stand-in classes for every Seldon graph component type (seldon-core 1.x's
TRANSFORMER, OUTPUT_TRANSFORMER, ROUTER, COMBINER and MODEL), with the methods and the
low-level forms (``*_raw``, ``*_rest``, ``*_grpc``) seldon-core's ``seldon_methods.py``
looks for, each written as a user of Seldon's wrapper writes it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import numpy as np
from seldon_components import SeldonComponent


class Transformer:
    """A TRANSFORMER: doubles its input, and shows the meta it was given in its tags."""

    def __init__(self) -> None:
        self.seen: dict[str, Any] = {}

    def transform_input(self, X: Any, names: list[str], meta: dict[str, Any]) -> Any:
        self.seen = {"names": list(names), "puid": meta.get("puid", ""), **meta.get("tags", {})}
        return np.asarray(X) * 2

    def tags(self) -> dict[str, Any]:
        return {"transformer_saw": self.seen}

    def metrics(self) -> list[dict[str, Any]]:
        return [{"type": "COUNTER", "key": "transformed", "value": 1}]


class OutputTransformer:
    """An OUTPUT_TRANSFORMER without meta in its signature (Seldon calls it with two)."""

    def transform_output(self, X: Any, names: list[str]) -> Any:
        return np.asarray(X) + 1

    def class_names(self) -> list[str]:
        return ["first", "second"]


class Router:
    """A ROUTER: routes to the child the first feature names (``-1``: every child), and
    answers feedback with the routing decision it was given for this unit."""

    def route(self, X: Any, names: list[str]) -> int:
        return int(np.asarray(X).ravel()[0])

    def send_feedback(
        self, features: Any, names: list[str], reward: float, truth: Any, routing: Any = None
    ) -> Any:
        return np.array([[-99 if routing is None else routing, reward]])


class AsyncRouter:
    """An ``async def route``."""

    async def route(self, X: Any, names: list[str]) -> int:
        await asyncio.sleep(0)
        return 2


class BadRouter:
    """Answers no child index, or raises, as the first feature asks."""

    def route(self, X: Any, names: list[str]) -> Any:
        first = float(np.asarray(X).ravel()[0])
        if first < 0:
            raise RuntimeError("router broke")
        return "left"


class Combiner:
    """A COMBINER: the mean of its children's arrays; their names must agree."""

    def aggregate(self, Xs: list[Any], names: list[list[str]]) -> Any:
        if any(n != names[0] for n in names):
            raise ValueError(f"children disagree on names: {names}")
        return np.mean([np.asarray(x, dtype=float) for x in Xs], axis=0)

    def tags(self) -> dict[str, Any]:
        return {"combined": True}


class ModelOnly:
    """A MODEL: nothing of the other types, so Seldon's fallbacks answer for them."""

    def predict(self, X: Any, names: list[str]) -> Any:
        return np.asarray(X) * 10


class StubRouter(SeldonComponent):
    """A ``SeldonComponent`` subclass defining only ``route``: every other method is the
    base's stub (predict answers ``[]``, transform_input the input, as in Seldon)."""

    def route(self, features: Any, feature_names: list[str]) -> int:
        return 0


class RawComponent:
    """Every graph operation by its ``*_raw`` form: the request as a dict, the reply as
    the class builds it."""

    def transform_input_raw(self, msg: dict[str, Any]) -> dict[str, Any]:
        return {"jsonData": {"op": "transform_input", "keys": sorted(msg)}}

    def transform_output_raw(self, msg: dict[str, Any]) -> dict[str, Any]:
        return {"strData": "output:" + msg.get("strData", "")}

    def route_raw(self, msg: dict[str, Any]) -> dict[str, Any]:
        return {"data": {"ndarray": [[3]]}, "meta": {"tags": {"raw": True}}}

    def aggregate_raw(self, msgs: dict[str, Any]) -> dict[str, Any]:
        return {"jsonData": {"children": len(msgs["seldonMessages"])}}

    def send_feedback_raw(self, feedback: dict[str, Any]) -> dict[str, Any]:
        return {"jsonData": {"reward": feedback["reward"], "keys": sorted(feedback)}}

    def health_status_raw(self) -> dict[str, Any]:
        return {"strData": "raw health"}


class RestComponent:
    """The deprecated ``*_rest`` forms, which take the REST request dict."""

    def predict_rest(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"jsonData": {"rest": sorted(request)}}

    def transform_output_rest(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"jsonData": {"rest_output": request.get("jsonData")}}

    def send_feedback_rest(self, request: str) -> dict[str, Any]:
        # Seldon gives send_feedback_rest the Feedback as JSON text.
        return {"jsonData": {"reward": json.loads(request)["reward"]}}


class GrpcComponent:
    """The deprecated ``*_grpc`` forms, which take and return protobuf messages."""

    def predict_grpc(self, request: Any) -> Any:
        reply = type(request)()
        reply.strData = f"grpc:{type(request).__name__}:{request.WhichOneof('data_oneof')}"
        return reply

    def route_grpc(self, request: Any) -> Any:
        reply = type(request)()
        reply.data.ndarray.values.add().list_value.values.add().number_value = 1
        return reply

    def aggregate_grpc(self, request: Any) -> Any:
        reply = type(request.seldonMessages[0])()
        reply.strData = f"{type(request).__name__}:{len(request.seldonMessages)}"
        return reply


class DecliningRaw(SeldonComponent):
    """``*_raw`` methods that defer to the base (which raises SeldonNotImplementedError):
    as in Seldon, the ordinary method answers instead."""

    def transform_input_raw(self, msg: Any) -> Any:
        return super().transform_input_raw(msg)

    def transform_input(self, X: Any, names: list[str]) -> Any:
        return np.asarray(X) * 3

    def route_raw(self, msg: Any) -> Any:
        return super().route_raw(msg)

    def route(self, X: Any, names: list[str]) -> int:
        return 1

    def aggregate_raw(self, msgs: Any) -> Any:
        return super().aggregate_raw(msgs)

    def aggregate(self, Xs: list[Any], names: list[list[str]]) -> Any:
        return np.sum([np.asarray(x) for x in Xs], axis=0)

    def send_feedback_raw(self, feedback: Any) -> Any:
        return super().send_feedback_raw(feedback)

    def send_feedback(
        self, features: Any, names: list[str], reward: float, truth: Any, routing: Any = None
    ) -> Any:
        return np.array([[reward]])

    def health_status_raw(self) -> Any:
        return super().health_status_raw()

    def health_status(self) -> Any:
        return {"fallback": True}
