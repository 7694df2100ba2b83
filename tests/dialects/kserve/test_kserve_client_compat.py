"""KServe's own Python clients against inferwire: kserve 0.15.2's InferenceRESTClient and
InferenceGRPCClient (asynchronous; kserve has no sync client) run in a Python 3.11
virtualenv that scripts/kserve-client-env.sh makes (once; cached after), since kserve's
pins (pandas<3, psutil<6) conflict with the test virtualenv. kserve_client_calls.py calls
a real server over REST and gRPC (health, metadata, inference with every datatype the
client can send, binary and JSON, requested outputs, parameters, concurrent calls,
errors) and prints what the client made of each reply; these tests assert on that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from client_venv import client_venv, run_client
from kserve_arrays import ARRAYS, FP16

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
MODEL = "ident"
TRANSPORTS = ("rest", "grpc")


@pytest.fixture(scope="module")
def client_python() -> str:
    return client_venv("kserve-client-env.sh")


@pytest.fixture(scope="module")
def calls(client_python: str, serve: Any) -> dict[str, Any]:
    server = serve("kserve_models:Mirror", "--model-name", MODEL, "--model-version", "1")
    port = server.grpc_target.rsplit(":", 1)[1]
    script = HERE / "kserve_client_calls.py"
    return run_client(client_python, script, str(server.http_port), port, MODEL)


def ok(calls: dict[str, Any], name: str) -> Any:
    got = calls[name]
    assert got["ok"], f"{name}: {got['error']}"
    return got["value"]


def failed(calls: dict[str, Any], name: str) -> dict[str, Any]:
    got = calls[name]
    assert not got["ok"], f"{name} should have failed: {got['value']}"
    err: dict[str, Any] = got["error"]
    return err


def values(a: np.ndarray) -> list[Any]:
    """As kserve_client_calls.py prints them: BYTES decoded as UTF-8."""
    return [v.decode() if isinstance(v, bytes) else v for v in a.ravel().tolist()]


def check_output(out: dict[str, Any], dt: str, want: np.ndarray, transport: str) -> None:
    assert out["datatype"] == dt
    assert out["shape"] == list(want.shape) and out["numpy_shape"] == list(want.shape)
    assert out["values"] == values(want), (dt, out["values"])
    assert out["numpy_dtype"] == str(want.dtype)
    if dt == "BYTES":
        # kserve hands gRPC BYTES back as bytes; over REST its reader decodes them to str
        # (binary replies too: InferResponse.from_bytes re-encodes outputs as JSON lists).
        assert out["element_types"] == (["bytes"] if transport == "grpc" else ["str"])


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_health_and_model_ready(calls: dict[str, Any], transport: str) -> None:
    assert ok(calls, f"{transport}-live") is True
    assert ok(calls, f"{transport}-ready") is True
    assert ok(calls, f"{transport}-model-ready") is True
    # REST: any non-2xx is "not ready" to kserve; gRPC: ModelReady answers ready=false.
    assert ok(calls, f"{transport}-model-ready-unknown") is False


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_server_metadata(calls: dict[str, Any], transport: str) -> None:
    meta = ok(calls, f"{transport}-server-metadata")
    assert meta["name"] == "inferwire" and meta["version"]
    assert "binary_tensor_data" in meta["extensions"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_model_metadata(calls: dict[str, Any], transport: str) -> None:
    # REST: validated by kserve's ModelMetadataResponse; gRPC: kserve's own stub.
    meta = ok(calls, f"{transport}-model-metadata")
    assert meta["name"] == MODEL and meta["versions"] == ["1"]
    assert meta["platform"] == "inferwire-test"
    for key, name in (("inputs", "x_FP32"), ("outputs", "x_FP32_out")):
        (t,) = meta[key]
        # int64 shapes are strings in protobuf's JSON mapping.
        assert (t["name"], t["datatype"], [int(d) for d in t["shape"]]) == (name, "FP32", [1, 3])


@pytest.mark.parametrize(
    "name",
    [
        "rest-infer-binary",
        "rest-infer-binary-in-json-out",
        "rest-infer-json",
        "grpc-infer-raw",
        "grpc-infer-typed",
    ],
)
def test_every_datatype(calls: dict[str, Any], name: str) -> None:
    r = ok(calls, name)
    transport = name.split("-")[0]
    assert r["model_name"] == MODEL
    binary = "binary" in name or "raw" in name
    want = {**ARRAYS, **({"FP16": FP16} if binary else {})}
    # The inputs' order; grpc-infer-typed also sends the parameter the model answers as `tag`.
    tag = ["tag"] if name == "grpc-infer-typed" else []
    assert list(r["outputs"]) == [f"x_{dt}_out" for dt in want] + tag
    for dt, a in want.items():
        check_output(r["outputs"][f"x_{dt}_out"], dt, a, transport)


def test_rest_binary_extension_both_ways(calls: dict[str, Any]) -> None:
    # binary_data_output asked: the reply is JSON then raw data, with the header giving
    # the JSON's length, as the binary tensor extension says.
    r = ok(calls, "rest-infer-binary")
    assert r["content_type"] == "application/octet-stream"
    assert int(r["header_length"]) > 0
    assert r["id"] == "r-bin"
    # Binary inputs alone do not make the reply binary.
    for name in ("rest-infer-binary-in-json-out", "rest-infer-json"):
        r = ok(calls, name)
        assert r["content_type"] == "application/json" and r["header_length"] is None
    assert ok(calls, "rest-infer-json")["id"] == "r-json"


def test_grpc_raw_request_answered_raw_typed_answered_typed(calls: dict[str, Any]) -> None:
    raw = ok(calls, "grpc-infer-raw")
    assert all(o["raw"] for o in raw["outputs"].values()), raw["outputs"]
    assert raw["id"] == "g-raw" and raw["model_version"] == "1"
    typed = ok(calls, "grpc-infer-typed")
    assert not any(o["raw"] for o in typed["outputs"].values()), typed["outputs"]
    assert typed["id"] == "g-typed"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_plain_list_data(calls: dict[str, Any], transport: str) -> None:
    r = ok(calls, f"{transport}-infer-lists")
    outs = r["outputs"]
    assert outs["x_FP32_out"]["values"] == [1.5, 2.5]
    assert outs["x_INT64_out"]["values"] == [7, 2**62]
    assert outs["x_BOOL_out"]["values"] == [True]
    assert outs["x_BYTES_out"]["values"] == ["hi", "there"]
    assert [o["shape"] for o in outs.values()][:4] == [[2], [2], [1], [2]]


@pytest.mark.parametrize(
    ("name", "tag"), [("rest-infer-lists", "from-rest"), ("grpc-infer-typed", "g")]
)
def test_request_parameters_reach_the_model(calls: dict[str, Any], name: str, tag: str) -> None:
    # InferRequest(parameters={"tag": ...}): a string parameter, passed to the model.
    assert ok(calls, name)["outputs"]["tag"]["values"] == [tag]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_requested_outputs(calls: dict[str, Any], transport: str) -> None:
    r = ok(calls, f"{transport}-infer-requested-outputs")
    if transport == "rest":
        assert list(r["outputs"]) == ["x_INT64_out", "x_BYTES_out"]
        check_output(r["outputs"]["x_INT64_out"], "INT64", ARRAYS["INT64"], transport)
        check_output(r["outputs"]["x_BYTES_out"], "BYTES", ARRAYS["BYTES"], transport)
        # One output asked binary: the reply uses the binary extension.
        assert r["content_type"] == "application/octet-stream"
    else:
        assert list(r["outputs"]) == ["x_BOOL_out", "x_FP32_out"]
        check_output(r["outputs"]["x_BOOL_out"], "BOOL", ARRAYS["BOOL"], transport)
        check_output(r["outputs"]["x_FP32_out"], "FP32", ARRAYS["FP32"], transport)


def test_mixed_raw_and_list_inputs(calls: dict[str, Any]) -> None:
    # REST: the binary tensor extension lets each input be raw or JSON.
    outs = ok(calls, "rest-infer-mixed")["outputs"]
    assert outs["x_FP16_out"]["values"] == [0.5, 2.0]
    assert outs["x_INT64_out"]["values"] == [3, 4]
    # gRPC: kserve sends the FP16 input in raw_input_contents and the list in typed
    # `contents`, which grpc_predict_v2.proto forbids ("If this field is specified then
    # InferInputTensor::contents must not be specified for any input tensor"): the client
    # is at fault, and the refusal says what is wrong.
    e = failed(calls, "grpc-infer-mixed")
    assert e["status"] == "INVALID_ARGUMENT"
    assert e["message"] == (
        "inputs[1]: has typed contents while the request has raw_input_contents; send every "
        "input one way"
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_unknown_model(calls: dict[str, Any], transport: str) -> None:
    e = failed(calls, f"{transport}-infer-unknown-model")
    if transport == "rest":
        assert e["type"] == "HTTPStatusError" and e["status"] == 404
        # kserve puts the server's {"error": ...} in its exception when the reply is JSON.
        assert e["content_type"] == "application/json"
        assert e["message"].startswith('no model named "nope" (serving: ident)'), e["message"]
        assert "404 Not Found" in e["message"]
    else:
        assert e["status"] == "NOT_FOUND"
        assert e["message"] == 'no model named "nope" (serving: ident)'


def test_grpc_unknown_version(calls: dict[str, Any]) -> None:
    e = failed(calls, "grpc-infer-unknown-version")
    assert e["status"] == "NOT_FOUND"
    assert 'has no version "9"' in e["message"], e["message"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_model_error(calls: dict[str, Any], transport: str) -> None:
    e = failed(calls, f"{transport}-infer-model-error")
    assert "ValueError: negative values are refused by this model" in e["message"]
    assert e["status"] == (500 if transport == "rest" else "INTERNAL")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_concurrent_calls_on_one_client(calls: dict[str, Any], transport: str) -> None:
    # 16 infers in flight at once through asyncio.gather: each gets its own answer.
    assert ok(calls, f"{transport}-infer-concurrent") == [[k] for k in range(16)]
