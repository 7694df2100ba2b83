"""Triton's dialect (``--v2-dialect triton``) as tritonclient sees it: Triton's identity
in the server metadata, its error messages and statuses over HTTP and gRPC, gRPC replies
in ``raw_output_contents`` whatever the request sent, its ``nv_*`` metrics, and its trace
and logging extensions. The messages are Triton 2.51's (server ``http_server.cc``,
``grpc/grpc_server.cc``, core ``model_repository_manager.cc``, ``infer_request.cc``); a
request checked against a model's ``config.pbtxt`` is sent to ``inferwire tritonserver``
serving Triton's own ``add_sub`` example."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from conftest import Served
from google.protobuf import json_format
from triton_server import Tritonserver, repository
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

MODEL = "ident"
EXTENSIONS = ["classification", "statistics", "model_configuration", "trace", "logging"]
TRITON = [
    "--v2-dialect",
    "triton",
    "--server-name",
    "triton",
    "--server-version",
    "2.51.0",
    "--server-extensions",
    ",".join(EXTENSIONS),
]
TRACE_DEFAULTS = {
    "trace_level": ["OFF"],
    "trace_rate": "1000",
    "trace_count": "-1",
    "log_frequency": "0",
    "trace_file": "",
    "trace_mode": "triton",
}
LOG_DEFAULTS = {
    "log_file": "",
    "log_info": True,
    "log_warning": True,
    "log_error": True,
    "log_verbose_level": 0,
    "log_format": "default",
}


@pytest.fixture(scope="module")
def srv(serve: Any) -> Served:
    """Triton's dialect, settings changes allowed without auth (a trusted network)."""
    return serve(
        "tritonmodels:Identity",
        "--model-name",
        MODEL,
        "--allow-unauthenticated-repository",
        *TRITON,
    )


@pytest.fixture(scope="module")
def closed(serve: Any) -> Served:
    """Triton's dialect without auth and without the opt-in."""
    return serve("tritonmodels:Identity", "--model-name", MODEL, *TRITON)


@pytest.fixture(scope="module")
def add_sub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tritonserver]:
    """``inferwire tritonserver`` serving Triton's add_sub example (two FP32 inputs of 4,
    no batching)."""
    server = Tritonserver(repository(tmp_path_factory.mktemp("add_sub"), "add_sub"))
    yield server
    server.stop()


def http(s: Any) -> httpclient.InferenceServerClient:
    return httpclient.InferenceServerClient(url=f"127.0.0.1:{s.http_port}")


def grpcc(s: Any) -> grpcclient.InferenceServerClient:
    return grpcclient.InferenceServerClient(url=s.grpc_target)


def test_server_metadata_is_tritons(srv: Served) -> None:
    meta = http(srv).get_server_metadata()
    assert meta == {"name": "triton", "version": "2.51.0", "extensions": EXTENSIONS}
    g = grpcc(srv).get_server_metadata(as_json=True)
    assert (g["name"], g["version"], g["extensions"]) == ("triton", "2.51.0", EXTENSIONS)


def ident_input(mod: Any) -> Any:
    i = mod.InferInput("x", [1, 3], "FP32")
    i.set_data_from_numpy(np.array([[1, 2, 3]], np.float32))
    return i


def test_an_unknown_model_as_triton_answers(srv: Served) -> None:
    # 404 / NOT_FOUND, as tritonserver 2.51 answers over both transports.
    message = "Request for unknown model: 'nope' is not found"
    with pytest.raises(InferenceServerException) as e:
        http(srv).infer("nope", [ident_input(httpclient)])
    assert (e.value.status(), e.value.message()) == ("404", message)
    with pytest.raises(InferenceServerException) as e:
        grpcc(srv).infer("nope", [ident_input(grpcclient)])
    assert e.value.status() == "StatusCode.NOT_FOUND"
    assert e.value.message() == message
    with pytest.raises(InferenceServerException) as e:
        http(srv).infer(MODEL, [ident_input(httpclient)], model_version="2")
    assert e.value.status() == "404"
    assert e.value.message() == f"Request for unknown model: '{MODEL}' version 2 is not found"
    with pytest.raises(InferenceServerException) as e:
        http(srv).get_model_metadata("nope")
    assert e.value.message() == message


def test_malformed_json_as_triton_answers(srv: Served) -> None:
    # rapidjson reads the "n" of a null before it stops, as serde_json does: offset 1.
    r = httpx.post(f"{srv.url}/v2/models/{MODEL}/infer", content=b"not json")
    assert r.status_code == 500
    assert r.json() == {"error": "failed to parse the request JSON buffer: Invalid value. at 1"}
    r = httpx.post(f"{srv.url}/v2/models/{MODEL}/infer", content=b"")
    assert r.json() == {
        "error": "failed to parse the request JSON buffer: The document is empty. at 0"
    }


def test_grpc_replies_raw_to_a_typed_request(srv: Served) -> None:
    request = service_pb2.ModelInferRequest(model_name=MODEL)
    tensor = request.inputs.add(name="x", datatype="FP32", shape=[1, 3])
    tensor.contents.fp32_contents.extend([1.0, 2.0, 3.0])
    with grpc.insecure_channel(srv.grpc_target) as channel:
        reply = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request)
    assert len(reply.raw_output_contents) == 1
    assert not reply.outputs[0].HasField("contents")
    got = np.frombuffer(reply.raw_output_contents[0], np.float32)
    assert got.tolist() == [1.0, 2.0, 3.0]


def test_metrics_are_tritons_first(srv: Served) -> None:
    http(srv).infer(MODEL, [ident_input(httpclient)])
    bad = httpclient.InferInput("x", [1], "FP32")
    bad.set_data_from_numpy(np.array([-1], np.float32))
    with pytest.raises(InferenceServerException):
        http(srv).infer(MODEL, [bad])
    text = httpx.get(f"{srv.url}/metrics").text
    labels = f'model="{MODEL}",version="1"'
    assert "# TYPE nv_inference_request_success counter\n" in text
    success = next(
        line for line in text.splitlines() if line.startswith("nv_inference_request_success{")
    )
    assert success.startswith(f"nv_inference_request_success{{{labels}}} ")
    assert int(success.split()[-1]) >= 1
    backend = f'nv_inference_request_failure{{model="{MODEL}",reason="BACKEND",version="1"}} '
    assert backend in text
    for name in [
        "nv_inference_count",
        "nv_inference_exec_count",
        "nv_inference_request_duration_us",
        "nv_inference_queue_duration_us",
        "nv_inference_compute_input_duration_us",
        "nv_inference_compute_infer_duration_us",
        "nv_inference_compute_output_duration_us",
        "nv_inference_pending_request_count",
    ]:
        assert f"{name}{{{labels}}} " in text, name
    for gauge in ["nv_cpu_utilization", "nv_cpu_memory_total_bytes", "nv_cpu_memory_used_bytes"]:
        assert f"# TYPE {gauge} gauge\n{gauge} " in text, gauge
    assert text.index("nv_inference_request_success") < text.index("inferwire_requests_total")


def test_trace_settings_over_http(srv: Served) -> None:
    client = http(srv)
    assert client.get_trace_settings() == TRACE_DEFAULTS
    assert client.get_trace_settings(model_name=MODEL) == TRACE_DEFAULTS
    with pytest.raises(InferenceServerException, match="Request for unknown model : nope"):
        client.get_trace_settings(model_name="nope")
    try:
        model = client.update_trace_settings(
            model_name=MODEL, settings={"trace_rate": "12", "log_frequency": "34"}
        )
        assert model == {**TRACE_DEFAULTS, "trace_rate": "12", "log_frequency": "34"}
        assert client.get_trace_settings() == TRACE_DEFAULTS
        # A global change reaches the fields the model does not set itself.
        client.update_trace_settings(settings={"trace_count": "5", "trace_rate": "2"})
        assert client.get_trace_settings(model_name=MODEL)["trace_count"] == "5"
        assert client.get_trace_settings(model_name=MODEL)["trace_rate"] == "12"
        with pytest.raises(
            InferenceServerException,
            match="trace file location can not be updated through network protocol",
        ):
            client.update_trace_settings(settings={"trace_file": "x.log"})
        with pytest.raises(
            InferenceServerException,
            match="Attempting to set invalid trace setting :trace file name is not given",
        ):
            client.update_trace_settings(settings={"trace_level": ["TIMESTAMPS"]})
    finally:
        clear = {
            "trace_level": None,
            "trace_rate": None,
            "trace_count": None,
            "log_frequency": None,
        }
        client.update_trace_settings(model_name=MODEL, settings=clear)
        client.update_trace_settings(settings=clear)
    assert client.get_trace_settings(model_name=MODEL) == TRACE_DEFAULTS


def test_trace_settings_over_grpc(srv: Served) -> None:
    client = grpcc(srv)
    expected = service_pb2.TraceSettingResponse()
    json_format.Parse(
        json.dumps(
            {
                "settings": {
                    k: {"value": v if isinstance(v, list) else [v]}
                    for k, v in TRACE_DEFAULTS.items()
                }
            }
        ),
        expected,
    )
    assert client.get_trace_settings() == expected
    try:
        updated = client.update_trace_settings(model_name=MODEL, settings={"trace_rate": "7"})
        assert updated.settings["trace_rate"].value == ["7"]
        with pytest.raises(InferenceServerException) as e:
            client.update_trace_settings(settings={"trace_count": "-3"})
        assert e.value.message() == "Unable to parse 'trace_count'. Expecting value >= -1, got: -3"
    finally:
        client.update_trace_settings(model_name=MODEL, settings={"trace_rate": None})
    assert client.get_trace_settings(model_name=MODEL) == expected


def test_log_settings_over_both_transports(srv: Served) -> None:
    h, g = http(srv), grpcc(srv)
    assert h.get_log_settings() == LOG_DEFAULTS
    try:
        assert h.update_log_settings({"log_verbose_level": 1})["log_verbose_level"] == 1
        assert g.get_log_settings(as_json=True)["settings"]["log_verbose_level"] == {
            "uint32_param": 1
        }
        # tritonclient sends None as a value with no parameter set.
        with pytest.raises(InferenceServerException, match="expect boolean for 'log_info'"):
            g.update_log_settings({"log_info": None})
        with pytest.raises(InferenceServerException) as e:
            h.update_log_settings({"log_format": "json"})
        assert e.value.status() == "503"
    finally:
        h.update_log_settings({"log_verbose_level": 0})
    assert h.get_log_settings() == LOG_DEFAULTS


def test_changing_settings_needs_the_opt_in_or_a_token(closed: Served) -> None:
    assert http(closed).get_log_settings() == LOG_DEFAULTS
    assert http(closed).get_trace_settings() == TRACE_DEFAULTS
    with pytest.raises(InferenceServerException) as e:
        http(closed).update_log_settings({"log_info": False})
    assert e.value.status() == "403"
    assert "--allow-unauthenticated-repository" in e.value.message()
    with pytest.raises(InferenceServerException) as e:
        grpcc(closed).update_trace_settings(settings={"trace_rate": "2"})
    assert e.value.status() == "StatusCode.PERMISSION_DENIED"
    assert grpcc(closed).get_log_settings(as_json=True)["settings"]["log_info"] == {
        "bool_param": True
    }


def add_sub_inputs(
    mod: Any,
    shapes: tuple[list[int], list[int]] = ([4], [4]),
    types: tuple[str, str] = ("FP32", "FP32"),
    names: tuple[str, str] = ("INPUT0", "INPUT1"),
) -> list[Any]:
    out = []
    for name, shape, dt in zip(names, shapes, types, strict=True):
        i = mod.InferInput(name, shape, dt)
        i.set_data_from_numpy(np.ones(shape, np.float32 if dt == "FP32" else np.int32))
        out.append(i)
    return out


@pytest.mark.parametrize("mod", [httpclient, grpcclient], ids=["http", "grpc"])
def test_a_request_checked_against_config_pbtxt(add_sub: Tritonserver, mod: Any) -> None:
    client = (http if mod is httpclient else grpcc)(add_sub)
    ok = client.infer("add_sub", add_sub_inputs(mod))
    assert ok.as_numpy("OUTPUT0").tolist() == [2.0] * 4
    at = "[request id: <id_unknown>] "
    cases = [
        (
            add_sub_inputs(mod, shapes=([4], [3])),
            f"{at}unexpected shape for input 'INPUT1' for model 'add_sub'. Expected [4], got [3]. ",
        ),
        (
            add_sub_inputs(mod, types=("FP32", "INT32")),
            f"{at}inference input 'INPUT1' data-type is 'INT32', but model 'add_sub' expects 'FP32'",
        ),
        (
            add_sub_inputs(mod, names=("INPUT0", "INPUT9")),
            "unexpected inference input 'INPUT9' for model 'add_sub'",
        ),
        (
            add_sub_inputs(mod)[:1],
            f"{at}expected 2 inputs but got 1 inputs for model 'add_sub'. Got input(s) "
            "['INPUT0'], but missing required input(s) ['INPUT1']. Please provide all "
            "required input(s).",
        ),
    ]
    for inputs, message in cases:
        with pytest.raises(InferenceServerException) as e:
            client.infer("add_sub", inputs)
        assert e.value.message() == message
        assert e.value.status() in ("400", "StatusCode.INVALID_ARGUMENT")


def test_binary_data_of_the_wrong_size(add_sub: Tritonserver) -> None:
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "INPUT0",
                    "shape": [4],
                    "datatype": "FP32",
                    "parameters": {"binary_data_size": 12},
                },
                {
                    "name": "INPUT1",
                    "shape": [4],
                    "datatype": "FP32",
                    "parameters": {"binary_data_size": 16},
                },
            ]
        }
    ).encode()
    r = httpx.post(
        f"{add_sub.url}/v2/models/add_sub/infer",
        content=header + bytes(28),
        headers={"Inference-Header-Content-Length": str(len(header))},
    )
    assert r.status_code == 400
    assert r.json()["error"] == (
        "[request id: <id_unknown>] input byte size mismatch for input 'INPUT0' for model "
        "'add_sub'. Expected 16, got 12"
    )
    raw = service_pb2.ModelInferRequest(model_name="add_sub")
    for name in ("INPUT0", "INPUT1"):
        raw.inputs.add(name=name, datatype="FP32", shape=[4])
    raw.raw_input_contents.extend([bytes(16), bytes(8)])
    with grpc.insecure_channel(add_sub.grpc_target) as channel:
        with pytest.raises(grpc.RpcError) as e:
            service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(raw)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.details() == (
        "[request id: <id_unknown>] input byte size mismatch for input 'INPUT1' for model "
        "'add_sub'. Expected 16, got 8"
    )
