"""`inferwire torchserve` with the kservev2 envelope (KServe's protocol grpc-v2) answering
KServe's V2 gRPC on the KServe wrapper's gRPC port, as TorchServe's KServe image does:
Triton's own gRPC client (tritonclient.grpc, a V2 client as KServe's is) and its
generated stubs call ModelInfer, which hands the request's tensors to a handler written
for TorchServe (the vendored echo handler, no torch) as V2's JSON through the envelope."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from conftest import free_port
from torchserve_archives import VENDOR, archive
from torchserve_server import TorchServe
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException


def _serve(tmp: Path, monkeypatch: pytest.MonkeyPatch, tokens: bool = False) -> TorchServe:
    store = tmp / "model-store"
    store.mkdir()
    archive(store, "echo", VENDOR / "echo" / "handler.py")
    port = free_port()
    monkeypatch.setenv("INFERWIRE_KSERVE_PORT", str(free_port()))
    monkeypatch.setenv("INFERWIRE_KSERVE_GRPC_PORT", str(port))
    monkeypatch.setenv("TS_SERVICE_ENVELOPE", "kservev2")
    server = TorchServe(store, "echo.mar", extra="enable_envvars_config=true\n", tokens=tokens)
    server.kserve_grpc = f"127.0.0.1:{port}"  # type: ignore[attr-defined]
    return server


@pytest.fixture(scope="module")
def v2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TorchServe]:
    with pytest.MonkeyPatch.context() as mp:
        s = _serve(tmp_path_factory.mktemp("kserve-grpc"), mp)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def client(v2: TorchServe) -> Iterator[grpcclient.InferenceServerClient]:
    c = grpcclient.InferenceServerClient(v2.kserve_grpc)  # type: ignore[attr-defined]
    yield c
    c.close()


def test_health_readiness_and_metadata(client: grpcclient.InferenceServerClient) -> None:
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("echo")
    assert not client.is_model_ready("nope")
    meta = client.get_model_metadata("echo", as_json=True)
    assert meta["name"] == "echo"
    assert client.get_server_metadata(as_json=True)["name"] == "torchserve"


def test_model_infer_goes_through_the_envelope_to_the_handler(
    client: grpcclient.InferenceServerClient,
) -> None:
    f = grpcclient.InferInput("f", [2, 2], "FP32")
    f.set_data_from_numpy(np.array([[0.5, 1.5], [2.5, -3.0]], dtype=np.float32))
    i = grpcclient.InferInput("i", [3], "INT64")
    i.set_data_from_numpy(np.array([1, -2, 2**40], dtype=np.int64))
    s = grpcclient.InferInput("s", [1], "BYTES")
    s.set_data_from_numpy(np.array([b"\xffhello"], dtype=np.object_))
    r = client.infer("echo", [f, i, s], request_id="req-7")
    reply = r.get_response()
    assert reply.id == "req-7"
    assert (reply.model_name, reply.model_version) == ("echo", "1.0")
    # The echo handler returns each input's reshaped data; the envelope flattens it and
    # types it from its values (floats: FP64), named after the input.
    assert [(o.name, o.datatype, list(o.shape)) for o in reply.outputs] == [
        ("f", "FP64", [4]),
        ("i", "INT64", [3]),
        ("s", "BYTES", [1]),
    ]
    assert r.as_numpy("f").tolist() == [0.5, 1.5, 2.5, -3.0]
    assert r.as_numpy("i").tolist() == [1, -2, 2**40]
    # A BYTES element reaches the handler base64-encoded, as TorchServe's wrapper sends it.
    assert r.as_numpy("s").tolist() == [base64.b64encode(b"\xffhello")]


def test_typed_contents_are_answered_typed_by_the_stubs(v2: TorchServe) -> None:
    with grpc.insecure_channel(v2.kserve_grpc) as channel:  # type: ignore[attr-defined]
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        req = service_pb2.ModelInferRequest(model_name="echo", id="typed")
        tensor = req.inputs.add(name="x", datatype="INT64", shape=[2, 2])
        tensor.contents.int64_contents.extend([4, 3, 2, 1])
        reply = stub.ModelInfer(req, timeout=30)
    assert reply.id == "typed" and not reply.raw_output_contents
    (out,) = reply.outputs
    assert (out.name, out.datatype, list(out.shape)) == ("x", "INT64", [4])
    assert list(out.contents.int64_contents) == [4, 3, 2, 1]


def test_bad_requests_get_a_status_naming_the_field(
    v2: TorchServe, client: grpcclient.InferenceServerClient
) -> None:
    with grpc.insecure_channel(v2.kserve_grpc) as channel:  # type: ignore[attr-defined]
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)

        def refused(req: service_pb2.ModelInferRequest) -> grpc.RpcError:
            with pytest.raises(grpc.RpcError) as e:
                stub.ModelInfer(req, timeout=30)
            return e.value

        # Raw contents that do not fill the shape: the codec names the input.
        short = service_pb2.ModelInferRequest(model_name="echo")
        short.inputs.add(name="x", datatype="INT64", shape=[3])
        short.raw_input_contents.append(np.array([1, 2], dtype=np.int64).tobytes())
        e = refused(short)
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e.details()
        assert e.details().startswith("inputs[0]: 16 bytes"), e.details()
        # No inputs: the envelope refuses the body, naming "inputs".
        e = refused(service_pb2.ModelInferRequest(model_name="echo"))
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e.details()
        assert e.details().startswith('"inputs"'), e.details()
        e = refused(service_pb2.ModelInferRequest())
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and "model_name" in e.details()
        # Not the wrapper's method.
        with pytest.raises(grpc.RpcError) as stats:
            stub.ModelStatistics(service_pb2.ModelStatisticsRequest(), timeout=30)
        assert stats.value.code() == grpc.StatusCode.UNIMPLEMENTED
    x = grpcclient.InferInput("x", [1], "INT64")
    x.set_data_from_numpy(np.array([1], dtype=np.int64))
    with pytest.raises(InferenceServerException) as missing:
        client.infer("nope", [x])
    assert missing.value.status() == "StatusCode.NOT_FOUND", missing.value


def test_the_inference_key_is_needed_with_tokens_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = _serve(tmp_path, monkeypatch, tokens=True)
    try:
        c = grpcclient.InferenceServerClient(server.kserve_grpc)  # type: ignore[attr-defined]
        x = grpcclient.InferInput("x", [2], "INT64")
        x.set_data_from_numpy(np.array([5, 6], dtype=np.int64))
        with pytest.raises(InferenceServerException) as refused:
            c.infer("echo", [x])
        assert refused.value.status() == "StatusCode.PERMISSION_DENIED"
        headers = {"authorization": server.headers["Authorization"]}
        assert c.infer("echo", [x], headers=headers).as_numpy("x").tolist() == [5, 6]
        c.close()
    finally:
        server.stop()
