"""A no-op (echo) MLServer runtime: the peer model for the V2 benchmarks.

``predict`` answers the request's first input as one output named ``output-0``, with the
same shape and datatype and the input's data unchanged. The data is the list that
MLServer's REST or gRPC layer has already decoded (gRPC ``raw_input_contents`` included);
it is handed back as it is, not converted to numpy and back.
"""

from __future__ import annotations

from mlserver import MLModel
from mlserver.types import InferenceRequest, InferenceResponse, ResponseOutput


class NoopRuntime(MLModel):
    async def load(self) -> bool:
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        first = payload.inputs[0]
        return InferenceResponse(
            model_name=self.name,
            model_version=self.version,
            id=payload.id,
            outputs=[
                ResponseOutput(
                    name="output-0",
                    shape=first.shape,
                    datatype=first.datatype,
                    data=first.data,
                )
            ],
        )
