"""Calls the example model over gRPC with Seldon's protocol, as any Seldon client would:
stubs are generated from the repository's proto/ files with grpcio-tools."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import grpc
import grpc_tools
from google.protobuf import json_format
from grpc_tools import protoc

ROOT = Path(__file__).resolve().parents[2]


def stubs(out: Path) -> None:
    protos = ROOT / "proto"
    files = ["prediction.proto"] + [
        str(p.relative_to(protos)) for p in (protos / "tensorflow").rglob("*.proto")
    ]
    include = Path(grpc_tools.__file__).parent / "_proto"
    args = [
        "protoc",
        f"-I{protos}",
        f"-I{include}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        *files,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    sys.path.insert(0, str(out))


def main(target: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stubs(Path(tmp))
        import prediction_pb2
        import prediction_pb2_grpc

        request = prediction_pb2.SeldonMessage()
        request.data.names.extend(["sepal_length", "sepal_width", "petal_length", "petal_width"])
        request.data.tensor.shape.extend([2, 4])
        request.data.tensor.values.extend([5.1, 3.5, 1.4, 0.2, 6.7, 3.0, 5.2, 2.3])
        with grpc.insecure_channel(target) as channel:
            reply = prediction_pb2_grpc.SeldonStub(channel).Predict(request, timeout=10)
        print(json_format.MessageToJson(reply, indent=None))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:5000")
