"""Calls MLflow models served by inferwire (mlflow_models.py) as MLServer's MLflow
runtime's users do: mlserver.types requests from PandasCodec (a column-based signature)
and NumpyRequestCodec (a tensor-based one), over REST and gRPC; prints the replies as
MLServer's client types read them. Run with the virtualenv of
scripts/mlserver-client-env.sh: python ... HTTP_PORT GRPC_PORT"""

from __future__ import annotations

import json
import sys
from typing import Any

import mlserver_client_calls as base
import numpy as np
import pandas as pd
from mlserver.codecs import NumpyRequestCodec, PandasCodec
from mlserver.types import MetadataModelResponse
from mlserver_client_calls import grpc_infer, rest

base.HTTP, base.GRPC = sys.argv[1], sys.argv[2]
COLUMNS = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
ROWS = [[5.1, 3.5, 1.4, 0.2], [6.2, 3.4, 5.4, 2.3], [5.9, 3.0, 4.2, 1.5]]


def main() -> None:
    frame = PandasCodec.encode_request(pd.DataFrame(ROWS, columns=COLUMNS))
    tensor = NumpyRequestCodec.encode_request(np.array(ROWS))
    calls: dict[str, Any] = {}
    for transport, call in (("rest", rest), ("grpc", grpc_infer)):
        calls[f"{transport}/mlflow-columns"] = call("mlflow-columns", frame)
        calls[f"{transport}/mlflow-tensor"] = call("mlflow-tensor", tensor)
    for name in ("mlflow-columns", "mlflow-tensor"):
        calls[f"metadata/{name}"] = MetadataModelResponse.model_validate(
            base.get(f"/v2/models/{name}")
        ).model_dump(exclude_none=True)
    print(json.dumps(calls))


main()
