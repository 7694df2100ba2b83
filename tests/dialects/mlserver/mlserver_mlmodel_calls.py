"""Calls MLModel subclasses served by inferwire (mlserver_folders.build_mlmodels) with
MLServer's client types over REST and gRPC; prints a JSON object of what came back. Run
with the virtualenv of scripts/mlserver-client-env.sh: python ... HTTP_PORT GRPC_PORT"""

from __future__ import annotations

import json
import sys
from typing import Any

import mlserver_client_calls as base
import numpy as np
import pandas as pd
from mlserver.codecs import NumpyRequestCodec, PandasCodec, StringCodec
from mlserver.types import InferenceRequest, MetadataModelResponse, RequestInput
from mlserver_client_calls import grpc_infer, rest

base.HTTP, base.GRPC = sys.argv[1], sys.argv[2]


def main() -> None:
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    sums = NumpyRequestCodec.encode_request(x)
    sums.inputs[0].name = "x"
    text = InferenceRequest(inputs=[StringCodec.encode_input("text", ["a", "bcd"])])
    frame = PandasCodec.encode_request(pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}))
    bad = NumpyRequestCodec.encode_request(x)
    bad.inputs[0].name = "bad"
    boom = NumpyRequestCodec.encode_request(x)
    boom.inputs[0].name = "boom"
    calls: dict[str, Any] = {}
    for transport, call in (("rest", rest), ("grpc", grpc_infer)):
        calls[f"{transport}/sum"] = call("sum", sums)
        calls[f"{transport}/text"] = call("text", text)
        calls[f"{transport}/frame"] = call("frame", frame)
        calls[f"{transport}/bad"] = call("sum", bad)
        calls[f"{transport}/boom"] = call("sum", boom)
    calls["plain-bytes/text"] = rest(
        "text",
        InferenceRequest(
            inputs=[RequestInput(name="text", datatype="BYTES", shape=[1], data=["hello"])]
        ),
    )
    calls["metadata/sum"] = MetadataModelResponse.model_validate(
        base.get("/v2/models/sum")
    ).model_dump(exclude_none=True)
    print(json.dumps(calls))


main()
