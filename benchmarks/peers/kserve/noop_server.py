"""KServe's Python model server (``kserve.ModelServer``) serving a no-op model named
``noop``: the KServe peer. serve.py runs it; it can also be run on its own:

    .tools/peers/kserve/bin/python benchmarks/peers/kserve/noop_server.py \\
        --http_port 8080 --grpc_port 8081 [--workers 1] [--max_threads 4] \\
        [--enable_latency_logging false]

Every option is KServe's own (``kserve.model_server``'s argument parser reads the command
line when kserve is imported); nothing here changes their defaults.

``NoopModel.predict`` answers both protocols KServe serves:

- V1 (``POST /v1/models/noop:predict``, ``{"instances": [...]}``): ``{"predictions":
  [...]}`` with the instances unchanged.
- V2, the Open Inference Protocol (``POST /v2/models/noop/infer`` as JSON or with the
  binary tensor extension, and gRPC ``inference.GRPCInferenceService/ModelInfer``): the
  request's first input as one output named ``output-0``, same shape and datatype, data
  unchanged. Data that came as gRPC ``raw_input_contents`` goes back as bytes (a numpy
  view over the received buffer, no copy); data that KServe handed over as a list (JSON,
  and the REST binary extension, which KServe 0.21.0 decodes into a Python list on
  arrival) goes back as that list, which KServe encodes as JSON or, when the request's
  ``binary_data_output`` parameter asks for it, as bytes.

One change to KServe: it binds REST to ``0.0.0.0`` and gRPC to ``[::]`` with no option to
change either (kserve 0.21.0, ``protocol/rest/server.py`` and ``protocol/grpc/server.py``).
A benchmark peer has no business listening beyond this machine, so ``loopback_only``
rewrites those two addresses to 127.0.0.1 before the servers start; nothing else about
them changes.
"""

from __future__ import annotations

from typing import Any

import grpc.aio
import uvicorn


def loopback_only() -> None:
    """Makes KServe's uvicorn Config and gRPC ports bind 127.0.0.1 (see the docstring)."""
    config_init = uvicorn.Config.__init__

    def config(self: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("host") == "0.0.0.0":
            kwargs["host"] = "127.0.0.1"
        config_init(self, *args, **kwargs)

    uvicorn.Config.__init__ = config  # type: ignore[method-assign]

    server_class = type(grpc.aio.server())  # grpc.aio's Server, not exported by name
    add_port = server_class.add_insecure_port

    def insecure_port(self: Any, address: str) -> int:
        if address.startswith("[::]:"):
            address = "127.0.0.1:" + address.removeprefix("[::]:")
        return int(add_port(self, address))

    server_class.add_insecure_port = insecure_port


loopback_only()

import kserve  # noqa: E402  (after the patch: kserve reads its command line at import)
from kserve import InferOutput, InferRequest, InferResponse  # noqa: E402


class NoopModel(kserve.Model):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.ready = True

    async def predict(
        self,
        payload: dict[str, Any] | InferRequest,
        headers: dict[str, str] | None = None,
        response_headers: dict[str, str] | None = None,
    ) -> dict[str, Any] | InferResponse:
        if isinstance(payload, dict):  # V1
            return {"predictions": payload["instances"]}
        first = payload.inputs[0]
        out = InferOutput(name="output-0", shape=first.shape, datatype=first.datatype)
        if first._raw_data is not None:  # bytes in, bytes out
            out.set_data_from_numpy(first.as_numpy(), binary_data=True)
        else:
            out.data = first.data
        return InferResponse(
            response_id=payload.id or "",
            model_name=self.name,
            infer_outputs=[out],
            # gRPC: raw inputs were sent; REST: the request's binary_data_output.
            use_binary_outputs=payload.use_binary_outputs,
        )


if __name__ == "__main__":
    kserve.ModelServer().start([NoopModel("noop")])
