"""Calls an inferwire server the way MLServer users call MLServer: requests built with
mlserver.types and mlserver.codecs, sent as JSON over REST and through MLServer's own gRPC
stubs and converters, and with the `mlserver infer` command; prints a JSON object of what
MLServer's client types made of each reply. Run with the virtualenv of
scripts/mlserver-client-env.sh: python mlserver_client_calls.py HTTP_PORT GRPC_PORT"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pandas as pd
from mlserver.codecs import NumpyCodec, NumpyRequestCodec, PandasCodec, StringCodec
from mlserver.grpc import dataplane_pb2_grpc
from mlserver.grpc.converters import ModelInferRequestConverter, ModelInferResponseConverter
from mlserver.types import (
    InferenceRequest,
    InferenceResponse,
    MetadataModelResponse,
    RepositoryIndexResponse,
    RequestInput,
    RequestOutput,
)

# Set by the caller (this module is imported by mlserver_mlmodel_calls.py too).
HTTP, GRPC = [*sys.argv[1:3], "", ""][:2]
ROWS = np.array([[5.1, 3.5, 1.4, 0.2], [6.2, 3.4, 5.4, 2.3], [5.9, 3.0, 4.2, 1.5]])
COLUMNS = ["sepal_length", "sepal_width", "petal_length", "petal_width"]


def post(path: str, body: str) -> tuple[int, Any]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{HTTP}{path}",
        data=body.encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def get(path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{HTTP}{path}", timeout=30) as r:
        return json.loads(r.read())


def outputs(resp: InferenceResponse) -> list[dict[str, Any]]:
    out = []
    for o in resp.outputs:
        value = NumpyCodec.decode_output(o)
        out.append(
            {
                "name": o.name,
                "datatype": o.datatype,
                "shape": list(o.shape),
                "values": [
                    v.decode() if isinstance(v, bytes) else v for v in value.ravel().tolist()
                ],
                "content_type": o.parameters.content_type if o.parameters else None,
            }
        )
    return out


def rest(model: str, req: InferenceRequest) -> Any:
    status, body = post(f"/v2/models/{model}/infer", req.model_dump_json(exclude_none=True))
    if status != 200:
        return {"status": status, "body": body}
    resp = InferenceResponse.model_validate(body)
    assert resp.model_name == model, resp.model_name
    return {"status": 200, "version": resp.model_version, "outputs": outputs(resp)}


def grpc_infer(model: str, req: InferenceRequest) -> Any:
    with grpc.insecure_channel(f"127.0.0.1:{GRPC}") as channel:
        stub = dataplane_pb2_grpc.GRPCInferenceServiceStub(channel)
        try:
            pb = stub.ModelInfer(ModelInferRequestConverter.from_types(req, model_name=model))
        except grpc.RpcError as e:
            return {"status": e.code().name, "body": e.details()}
    resp = ModelInferResponseConverter.to_types(pb)
    return {"status": 200, "version": resp.model_version, "outputs": outputs(resp)}


def mlserver_infer(model: str, req: InferenceRequest) -> Any:
    """`mlserver infer`: a file of requests in, a file of replies out."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp, "in.txt"), Path(tmp, "out.txt")
        src.write_text(req.model_dump_json(exclude_none=True) + "\n")
        cli = Path(sys.executable).parent / "mlserver"
        r = subprocess.run(
            [
                str(cli),
                "infer",
                "-u",
                f"127.0.0.1:{HTTP}",
                "-m",
                model,
                "-i",
                str(src),
                "-o",
                str(dst),
                "-t",
                "rest",
                "-w",
                "1",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if r.returncode != 0:
            return {"status": r.returncode, "body": r.stderr[-2000:]}
        lines = [json.loads(line) for line in dst.read_text().splitlines() if line.strip()]
    resp = InferenceResponse.model_validate(lines[0])
    return {"status": 200, "version": resp.model_version, "outputs": outputs(resp)}


def main() -> None:
    np_req = NumpyRequestCodec.encode_request(ROWS)
    both = NumpyRequestCodec.encode_request(ROWS)
    both.outputs = [RequestOutput(name="predict_proba"), RequestOutput(name="predict")]
    frame = PandasCodec.encode_request(pd.DataFrame(ROWS, columns=COLUMNS))
    text = InferenceRequest(
        inputs=[RequestInput(name="text", datatype="BYTES", shape=[2], data=["ab", "cd"])]
    )
    text_typed = InferenceRequest(inputs=[StringCodec.encode_input("text", ["ef", "gh"])])
    calls: dict[str, Any] = {}
    for model in ("iris", "iris-lr", "xgb", "lgbm", "scaler", "negate"):
        calls[f"rest/{model}"] = rest(model, np_req)
        calls[f"grpc/{model}"] = grpc_infer(model, np_req)
        calls[f"metadata/{model}"] = MetadataModelResponse.model_validate(
            get(f"/v2/models/{model}")
        ).model_dump(exclude_none=True)
    for model in ("iris", "xgb", "iris-lr"):
        calls[f"rest-both/{model}"] = rest(model, both)
        calls[f"grpc-both/{model}"] = grpc_infer(model, both)
    calls["rest-pd/iris"] = rest("iris", frame)
    calls["grpc-pd/iris"] = grpc_infer("iris", frame)
    calls["rest-pd/iris-lr"] = rest("iris-lr", frame)
    calls["rest/upper"] = rest("upper", text)
    calls["rest-typed/upper"] = rest("upper", text_typed)
    calls["grpc/upper"] = grpc_infer("upper", text_typed)
    calls["cli/iris"] = mlserver_infer("iris", np_req)
    bad = NumpyRequestCodec.encode_request(ROWS)
    bad.outputs = [RequestOutput(name="transform")]
    calls["rest-bad-output/iris"] = rest("iris", bad)
    calls["rest/unknown"] = rest("no-such-model", np_req)
    calls["grpc/unknown"] = grpc_infer("no-such-model", np_req)
    status, body = post("/v2/repository/index", "{}")
    calls["index"] = {
        "status": status,
        "models": [m.model_dump() for m in RepositoryIndexResponse.model_validate(body).root]
        if status == 200
        else body,
    }
    print(json.dumps(calls))


if __name__ == "__main__":
    main()
