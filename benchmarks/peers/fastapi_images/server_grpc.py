"""The gRPC server of seed 001's image benchmark: grpcio, synchronous, a thread pool.

    .tools/peers/fastapi-images/bin/python benchmarks/peers/fastapi_images/server_grpc.py \\
        [--port 50051] [--workers 10]

Serves ``images.ImageService`` (``images.proto``) on 127.0.0.1 (port from ``--port``, else
the ``GRPC_PORT`` environment variable, else 50051) with a ``ThreadPoolExecutor`` of 10
threads, as grpcio's own examples and a plain Python gRPC server have it, and message
limits raised from 4 MiB to 64 MiB each way. Every method answers the same
``BasicResponse`` as the REST server (``prediction1=[0.1, 0.2, 0.3]``,
``prediction2={"a": 1}``):

- ``Basic(BasicRequest)``: nothing to do.
- ``Base64(ImageBase64Request)``: decodes the base64 to bytes (``INVALID_ARGUMENT`` when
  it is not base64), as the REST server does.
- ``Binary(ImageBinaryRequest)``: the bytes arrive as they are (``INVALID_ARGUMENT`` when
  empty).

The generated modules (``images_pb2``, ``images_pb2_grpc``) are in the virtualenv's
``gen/`` folder, where ``install.sh`` puts them (``--gen`` names another). SIGTERM or
SIGINT stops the server, giving calls in flight one second.
"""

from __future__ import annotations

import base64
import binascii
import sys
from pathlib import Path
from typing import Any

import grpc

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import pair  # noqa: E402


class ImageService:
    """The three methods; grpcio calls them from its thread pool."""

    def __init__(self, pb2: Any) -> None:
        self.answer = pb2.BasicResponse(prediction1=[0.1, 0.2, 0.3], prediction2={"a": 1})

    def Basic(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self.answer

    def Base64(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            image = base64.b64decode(request.image, validate=True)
        except binascii.Error as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"image is not base64: {e}")
        if not image:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "empty image")
        return self.answer

    def Binary(self, request: Any, context: grpc.ServicerContext) -> Any:
        if not request.image:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "empty image")
        return self.answer


def main() -> None:
    pair.grpc_main(
        __doc__ or "",
        "images",
        lambda pb2, pb2_grpc, server: pb2_grpc.add_ImageServiceServicer_to_server(
            ImageService(pb2), server
        ),
    )


if __name__ == "__main__":
    main()
