"""MLServer's gRPC endpoint checks (its tests/grpc/test_servicers.py, rewritten here)
made with MLServer's own stubs against an inferwire server of
mlserver_folders.build_endpoint_models; prints a JSON object of what came back. Run with
the virtualenv of scripts/mlserver-client-env.sh: python ... GRPC_PORT [HTTP_PORT FOLDER]
(with the last two, MLServer's model metadata assertions too: its
tests/rest/test_endpoints.py and tests/grpc/test_servicers.py test_model_metadata, on
the sum model's settings as its fixture reads them)."""

from __future__ import annotations

import json
import sys
from typing import Any

import grpc
from mlserver.grpc import dataplane_pb2 as pb
from mlserver.grpc import model_repository_pb2 as mr
from mlserver.grpc.converters import InferOutputTensorConverter
from mlserver.grpc.dataplane_pb2_grpc import GRPCInferenceServiceStub
from mlserver.grpc.model_repository_pb2_grpc import ModelRepositoryServiceStub
from mlserver.raw import unpack


def failure(call: Any) -> dict[str, Any]:
    try:
        call()
    except grpc.RpcError as e:
        return {"code": e.code().name, "details": e.details()}
    return {"code": "OK"}


def repository_calls(stub: Any, repo: Any, types: Any) -> dict[str, Any]:
    """Index, unload, load and a load of a model not there, through ``repo``."""
    out: dict[str, Any] = {}
    out["index"] = len(repo.RepositoryIndex(types.RepositoryIndexRequest()).models)
    repo.RepositoryModelUnload(types.RepositoryModelUnloadRequest(model_name="text-model"))
    out["after_unload"] = failure(
        lambda: stub.ModelMetadata(pb.ModelMetadataRequest(name="text-model"))
    )
    repo.RepositoryModelLoad(types.RepositoryModelLoadRequest(model_name="text-model"))
    out["after_load"] = stub.ModelMetadata(pb.ModelMetadataRequest(name="text-model")).name
    out["load_missing"] = failure(
        lambda: repo.RepositoryModelLoad(types.RepositoryModelLoadRequest(model_name="my-model"))
    )
    return out


def metadata_checks(stub: Any, http_port: str, folder: str) -> dict[str, Any]:
    """MLServer's test_model_metadata, REST and gRPC, each assertion's outcome by name."""
    import urllib.request
    from pathlib import Path

    from mlserver.settings import ModelSettings
    from mlserver.types import MetadataModelResponse

    sys.path.insert(0, folder)  # the settings' implementation, models.SumModel
    settings = ModelSettings.parse_file(str(Path(folder) / "sum-model" / "model-settings.json"))
    url = f"http://127.0.0.1:{http_port}/v2/models/{settings.name}"
    with urllib.request.urlopen(url) as r:
        rest = MetadataModelResponse.model_validate(json.loads(r.read()))
    grpc_meta = stub.ModelMetadata(
        pb.ModelMetadataRequest(name=settings.name, version=settings.parameters.version)
    )
    return {
        "rest_name": rest.name == settings.name,
        "rest_platform": rest.platform == settings.platform,
        "rest_versions": rest.versions == settings.versions,
        "rest_inputs": rest.inputs == settings.inputs,
        "grpc_name": grpc_meta.name == settings.name,
        "grpc_platform": grpc_meta.platform == settings.platform,
        "grpc_versions": grpc_meta.versions == settings.versions,
    }


def main() -> None:
    channel = grpc.insecure_channel(f"127.0.0.1:{sys.argv[1]}")
    stub = GRPCInferenceServiceStub(channel)
    out: dict[str, Any] = {}
    meta = stub.ServerMetadata(pb.ServerMetadataRequest())
    out["server"] = [meta.name, meta.version, list(meta.extensions)]
    out["live"] = stub.ServerLive(pb.ServerLiveRequest()).live
    out["model_ready"] = stub.ModelReady(
        pb.ModelReadyRequest(name="sum-model", version="v1.2.3")
    ).ready
    model = stub.ModelMetadata(pb.ModelMetadataRequest(name="sum-model", version="v1.2.3"))
    out["model"] = [model.name, model.platform, list(model.versions)]

    tensor = pb.ModelInferRequest.InferInputTensor(
        name="input-0",
        datatype="INT32",
        shape=[1, 3],
        contents=pb.InferTensorContents(int_contents=[1, 2, 3]),
    )
    for version in ("v1.2.3", ""):
        req = pb.ModelInferRequest(model_name="sum-model", model_version=version, inputs=[tensor])
        reply, call = stub.ModelInfer.with_call(req, metadata=(("x-foo", "bar"),))
        out[f"infer/{version}"] = {
            "contents": list(reply.outputs[0].contents.int64_contents),
            "id": reply.id,
            "trailing": dict(call.trailing_metadata() or ()),
        }
    raw = pb.ModelInferRequest(model_name="sum-model", inputs=[tensor])
    raw.raw_input_contents.append(bytes([1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]))
    raw.inputs[0].ClearField("contents")
    reply = stub.ModelInfer(raw)
    decoded = unpack(
        InferOutputTensorConverter.to_types(reply.outputs[0]), reply.raw_output_contents[0]
    )
    out["raw"] = list(decoded)

    missing = pb.ModelInferRequest(model_name="my-model", model_version="v1.2.3", inputs=[tensor])
    out["missing"] = failure(lambda: stub.ModelInfer(missing))
    bad = pb.ModelInferRequest(model_name="sum-model", inputs=[tensor])
    bad.inputs[0].datatype = "INT322"
    out["bad_datatype"] = failure(lambda: stub.ModelInfer(bad))

    prompt = pb.ModelInferRequest.InferInputTensor(
        name="prompt",
        datatype="BYTES",
        shape=[1],
        contents=pb.InferTensorContents(bytes_contents=[b"What is the capital of France?"]),
        parameters={"content_type": pb.InferParameter(string_param="str")},
    )
    for version in ("v1.2.3", ""):
        gen = pb.ModelInferRequest(
            model_name="text-stream-model", model_version=version, inputs=[prompt]
        )
        out[f"stream/{version}"] = [
            p.outputs[0].contents.bytes_contents[0].decode()
            for p in stub.ModelStreamInfer(iter([gen]))
        ]
    gen = pb.ModelInferRequest(model_name="my-model", model_version="v1.2.3", inputs=[prompt])
    out["stream/missing"] = failure(lambda: list(stub.ModelStreamInfer(iter([gen]))))

    # The repository methods, then MLServer's deprecated repository service's
    # (its tests/grpc/test_model_repository.py), whose messages are the same.
    for prefix, repo, types in (("", stub, pb), ("old/", ModelRepositoryServiceStub(channel), mr)):
        out.update({prefix + k: v for k, v in repository_calls(stub, repo, types).items()})
    if len(sys.argv) > 3:
        out["metadata_checks"] = metadata_checks(stub, sys.argv[2], sys.argv[3])
    print(json.dumps(out))


main()
