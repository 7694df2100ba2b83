"""Seldon's protobuf messages for a class's ``*_grpc`` methods (``predict_grpc``,
``route_grpc``, ...), which seldon-core calls with a ``prediction_pb2`` message. The
classes are made from the descriptors compiled into the native module, so neither protoc
nor seldon-core is needed; the ``protobuf`` package is imported only when a class
defines such a method."""

from __future__ import annotations

import base64
import functools
import json
from typing import Any

import numpy as np

from . import _core
from .errors import ModelLoadError

# The message each operation's request is, in package seldon.protos.
_REQUEST = {"aggregate": "SeldonMessageList", "send_feedback": "Feedback"}


@functools.cache
def message_class(name: str) -> Any:
    """The protobuf class of ``seldon.protos.<name>``."""
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # type: ignore[import-untyped,unused-ignore]
    except ImportError as e:  # pragma: no cover - protobuf ships with grpcio
        raise ModelLoadError(
            "a Seldon *_grpc method needs the protobuf package: pip install protobuf"
        ) from e
    files = descriptor_pb2.FileDescriptorSet.FromString(_core.seldon_descriptor_set())
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    descriptor = pool.FindMessageTypeByName(f"seldon.protos.{name}")
    # GetMessageClass came in protobuf 4.21; seldon-core pins protobuf<4 (3.20 has only
    # the factory's GetPrototype, which 5.x deprecates).
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


def to_message(op: str, request: dict[str, Any]) -> Any:
    """The request dict of ``op`` as the message Seldon hands ``<op>_grpc``."""
    from google.protobuf import json_format  # type: ignore[import-untyped,unused-ignore]

    cls = message_class(_REQUEST.get(op, "SeldonMessage"))
    return json_format.ParseDict(json.loads(as_json(request)), cls())


def as_json(request: dict[str, Any]) -> str:
    """A request dict (numpy arrays, bytes in it) as JSON text."""
    return json.dumps(request, default=_plain)


def to_dict(reply: Any) -> Any:
    """A ``*_grpc`` reply (a protobuf message) as the dict the core reads; other values
    (a dict, an array) as they are."""
    if hasattr(reply, "DESCRIPTOR") and hasattr(reply, "SerializeToString"):
        from google.protobuf import json_format  # type: ignore[import-untyped,unused-ignore]

        return json_format.MessageToDict(reply)
    return reply


def _plain(value: Any) -> Any:
    """numpy values and bytes in the request dict, as protobuf's JSON mapping spells them."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
