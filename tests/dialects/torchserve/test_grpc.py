"""TorchServe's gRPC inference API (`org.pytorch.serve.grpc.inference.InferenceAPIsService`)
on `inferwire torchserve`'s gRPC port, called through stubs generated from
proto/torchserve_inference.proto as TorchServe's clients generate theirs, and through
TorchServe's own client script (`ts_scripts/torchserve_grpc_client.py`, vendored
unchanged): Ping, Predictions with named inputs, StreamPredictions' pieces,
StreamPredictions2, and TorchServe's codes and messages for an unknown model or version,
a failing handler and a refused token."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchserve_archives import (
    ROOT,
    VENDOR,
    archive,
    handler_file,
    needs_ts,
    streaming_handler_source,
)
from torchserve_server import TorchServe

grpc = pytest.importorskip("grpc")

# Answers the names and values of the inputs it got, and its request headers' sequence.
INPUTS = """
import json


def handle(data, context):
    if data is None:
        return None
    out = []
    for i, row in enumerate(data):
        out.append(json.dumps({
            "inputs": {k: bytes(v).decode() for k, v in sorted(row.items())},
            "sequence": context.get_request_header(i, "ts_request_sequence_id"),
        }))
    return out
"""

FAILING = """
def handle(data, context):
    if data is None:
        return None
    raise ValueError("the handler failed")
"""

MODEL_NOT_FOUND = "org.pytorch.serve.archive.model.ModelNotFoundException"
VERSION_NOT_FOUND = "org.pytorch.serve.archive.model.ModelVersionNotFoundException"
HANDLER_FAILED = "org.pytorch.serve.http.InternalServerException"
TOKEN_FAILED = (
    "Token Authorization failed. Token either incorrect, expired, or not provided correctly"
)


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with `inference_pb2`/`inference_pb2_grpc` (our proto under the name
    TorchServe's clients import it by) and `google.rpc.status_pb2`, on sys.path; empty
    `management_pb2`/`management_pb2_grpc` for the client script's imports (its inference
    calls do not use them)."""
    import grpc_tools
    from grpc_tools import protoc

    out = tmp_path_factory.mktemp("ts_pb")
    src = out / "proto"
    (src / "google" / "rpc").mkdir(parents=True)
    shutil.copy(ROOT / "proto" / "torchserve_inference.proto", src / "inference.proto")
    shutil.copy(ROOT / "proto" / "google" / "rpc" / "status.proto", src / "google/rpc")
    include = Path(grpc_tools.__file__).parent / "_proto"
    rc = protoc.main(
        ["protoc", f"-I{src}", f"-I{include}", f"--python_out={out}",
         f"--grpc_python_out={out}", "inference.proto", "google/rpc/status.proto"]
    )  # fmt: skip
    assert rc == 0, "protoc failed"
    for name in ("management_pb2", "management_pb2_grpc"):
        (out / f"{name}.py").write_text("# not served by these tests\n")
    sys.path.insert(0, str(out))
    return out


@pytest.fixture(scope="module")
def pb(stubs: Path) -> Any:
    import inference_pb2
    import inference_pb2_grpc

    class Modules:
        msgs = inference_pb2
        grpc = inference_pb2_grpc

    return Modules


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TorchServe]:
    tmp = tmp_path_factory.mktemp("ts_grpc")
    store = tmp / "store"
    store.mkdir()
    archive(store, "echo", VENDOR / "echo" / "handler.py")
    archive(store, "inputs", handler_file(tmp, "inputs.py", INPUTS), version="2.0")
    archive(store, "failing", handler_file(tmp, "failing.py", FAILING))
    archive(store, "custom", VENDOR / "pred_custom_return_code" / "service.py")
    s = TorchServe(store, "echo.mar", "inputs.mar", "failing.mar", "custom.mar")
    yield s
    s.stop()


def stub(pb: Any, s: TorchServe) -> Any:
    return pb.grpc.InferenceAPIsServiceStub(grpc.insecure_channel(f"127.0.0.1:{s.grpc}"))


def fails(call: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as e:
        call()
    return e.value


def test_ping_answers_torchserve_s_health(pb: Any, server: TorchServe) -> None:
    from google.protobuf import empty_pb2

    r = stub(pb, server).Ping(empty_pb2.Empty())
    assert json.loads(r.health) == {"status": "Healthy"}
    assert r.health == '{\n  "status": "Healthy"\n}'


def test_torchserve_s_echo_handler_reads_data(pb: Any, server: TorchServe) -> None:
    r = stub(pb, server).Predictions(
        pb.msgs.PredictionsRequest(model_name="echo", input={"data": b"\x00hello\xff"})
    )
    assert r.prediction == b"\x00hello\xff"


def test_a_handler_gets_every_named_input(pb: Any, server: TorchServe) -> None:
    inputs = {"data": b"one", "extra": b"two", "body": b"three"}
    r = stub(pb, server).Predictions(
        pb.msgs.PredictionsRequest(model_name="inputs", model_version="2.0", input=inputs)
    )
    got = json.loads(r.prediction)
    assert got == {"inputs": {"body": "three", "data": "one", "extra": "two"}, "sequence": None}


def test_unknown_models_and_versions_are_torchserve_s_errors(pb: Any, server: TorchServe) -> None:
    s = stub(pb, server)
    e = fails(lambda: s.Predictions(pb.msgs.PredictionsRequest(model_name="nope")))
    assert e.code() == grpc.StatusCode.INTERNAL
    assert e.details() == f"Model not found: nope\n{MODEL_NOT_FOUND}"
    e = fails(
        lambda: s.Predictions(pb.msgs.PredictionsRequest(model_name="inputs", model_version="9"))
    )
    assert e.code() == grpc.StatusCode.INTERNAL
    assert e.details() == f"Model version: 9 does not exist for model: inputs\n{VERSION_NOT_FOUND}"
    e = fails(lambda: s.Predictions(pb.msgs.PredictionsRequest(model_name="")))
    assert e.code() == grpc.StatusCode.INTERNAL
    assert e.details() == "Parameter model_name is required.\nBadRequestException.()"
    e = fails(lambda: list(s.StreamPredictions(pb.msgs.PredictionsRequest(model_name="nope"))))
    assert e.details() == f"Model not found: nope\n{MODEL_NOT_FOUND}"


def test_a_failing_handler_is_answered_with_torchserve_s_code(pb: Any, server: TorchServe) -> None:
    s = stub(pb, server)
    request = pb.msgs.PredictionsRequest(model_name="failing", input={"data": b"x"})
    e = fails(lambda: s.Predictions(request))
    assert e.code() == grpc.StatusCode.UNAVAILABLE  # TorchServe's 503
    assert e.details() == f"Prediction failed\n{HANDLER_FAILED}"
    # PredictionException("Some Prediction Error", 599): a 5xx is INTERNAL.
    custom = pb.msgs.PredictionsRequest(model_name="custom", input={"data": b"x"})
    e = fails(lambda: s.Predictions(custom))
    assert e.code() == grpc.StatusCode.INTERNAL
    assert e.details() == f"Some Prediction Error\n{HANDLER_FAILED}"
    # The model goes on serving.
    assert s.Predictions(pb.msgs.PredictionsRequest(model_name="echo", input={"data": b"ok"}))


def test_stream_predictions_answers_the_reply(pb: Any, server: TorchServe) -> None:
    replies = list(
        stub(pb, server).StreamPredictions(
            pb.msgs.PredictionsRequest(model_name="echo", input={"data": b"abc"})
        )
    )
    assert [r.prediction for r in replies] == [b"abc"]


def test_stream_predictions2_answers_each_request_in_turn(pb: Any, server: TorchServe) -> None:
    def requests() -> Iterator[Any]:
        for word in (b"a", b"b"):
            yield pb.msgs.PredictionsRequest(
                model_name="inputs", sequence_id="seq-1", input={"data": word}
            )
        # No sequence id and no start: TorchServe's error, and the stream goes on.
        yield pb.msgs.PredictionsRequest(model_name="inputs", input={"data": b"c"})
        yield pb.msgs.PredictionsRequest(model_name="nope", sequence_id="s", input={})
        yield pb.msgs.PredictionsRequest(
            model_name="inputs", input={"data": b"d", "ts_request_sequence_start": b"true"}
        )

    replies = list(stub(pb, server).StreamPredictions2(requests()))
    assert len(replies) == 5
    first, second = (json.loads(r.prediction) for r in replies[:2])
    assert first == {"inputs": {"data": "a"}, "sequence": "seq-1"}
    assert second["inputs"] == {"data": "b"}
    assert replies[2].status.code == grpc.StatusCode.INTERNAL.value[0]
    assert replies[2].status.message == "Parameter sequenceId is required."
    assert replies[3].status.message == "Model not found: nope"
    started = json.loads(replies[4].prediction)
    assert started["sequence"].startswith("ts-seq-")


@needs_ts
def test_stream_predictions_sends_each_intermediate_response(pb: Any, tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    handler = handler_file(tmp_path / "src", "stream_handler.py", streaming_handler_source())
    archive(store, "tp_model", handler)
    s = TorchServe(store, "tp_model.mar")
    try:
        replies = list(
            stub(pb, s).StreamPredictions(
                pb.msgs.PredictionsRequest(model_name="tp_model", input={"data": b"x"})
            )
        )
        assert [r.prediction for r in replies] == [b"hello"] * 3 + [b"hello world "]
        # Predictions answers the reply with its pieces before it, as REST does.
        one = stub(pb, s).Predictions(
            pb.msgs.PredictionsRequest(model_name="tp_model", input={"data": b"x"})
        )
        assert one.prediction == b"hello" * 3 + b"hello world "
    finally:
        s.stop()


def test_without_the_inference_key_calls_are_refused(pb: Any, tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    archive(store, "echo", VENDOR / "echo" / "handler.py")
    s = TorchServe(store, "echo.mar", tokens=True)
    try:
        from google.protobuf import empty_pb2

        st = stub(pb, s)
        request = pb.msgs.PredictionsRequest(model_name="echo", input={"data": b"hi"})
        for call in (lambda: st.Predictions(request), lambda: st.Ping(empty_pb2.Empty())):
            e = fails(call)
            assert e.code() == grpc.StatusCode.PERMISSION_DENIED
            assert e.details() == TOKEN_FAILED
        wrong = (("authorization", "Bearer nope"),)
        assert fails(lambda: st.Predictions(request, metadata=wrong)).details() == TOKEN_FAILED
        good = (("authorization", s.headers["Authorization"]),)
        assert st.Predictions(request, metadata=good).prediction == b"hi"
    finally:
        s.stop()


def client(stubs: Path, s: TorchServe, *args: str) -> subprocess.CompletedProcess[str]:
    """TorchServe's gRPC client script, unchanged, run as its documentation shows; its
    `localhost:7070` is this server's gRPC port."""
    script = VENDOR / "torchserve_grpc_client.py"
    run = (
        "import grpc, runpy, sys\n"
        "connect = grpc.insecure_channel\n"
        f"grpc.insecure_channel = lambda target, *a, **k: connect("
        f"target.replace('localhost:7070', '127.0.0.1:{s.grpc}'), *a, **k)\n"
        f"sys.argv = [{str(script)!r}, *sys.argv[1:]]\n"
        f"runpy.run_path({str(script)!r}, run_name='__main__')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(stubs)}
    return subprocess.run(
        [sys.executable, "-c", run, *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_torchserve_s_own_grpc_client(stubs: Path, server: TorchServe, tmp_path: Path) -> None:
    data = tmp_path / "input.txt"
    data.write_text("hello from the client")
    r = client(stubs, server, "infer", "echo", str(data))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "hello from the client\n"
    r = client(stubs, server, "infer_stream", "echo", str(data))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "hello from the client\n"
    # A failed call: the script's exit(1) (it reads the error as RpcError).
    r = client(stubs, server, "infer", "nope", str(data))
    assert r.returncode != 0
    assert "Model not found: nope" in r.stderr
