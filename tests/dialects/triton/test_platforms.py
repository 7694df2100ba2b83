"""Triton's other platforms in a repository the test writes: ONNX Runtime models (made with
the ``onnx`` package's helper, with and without a config.pbtxt), ensembles of Python-backend
and ONNX steps, and TorchScript models (with torch installed), served by `inferwire
tritonserver` and called with tritonclient over HTTP and gRPC."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from triton_server import Tritonserver, repository
from tritonclient.utils import InferenceServerException

# -- the repository ---------------------------------------------------------------------

PYTHON_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()
            if (x < 0).any():
                err = pb_utils.TritonError("negative input", pb_utils.TritonError.INVALID_ARG)
                out.append(pb_utils.InferenceResponse(output_tensors=[], error=err))
                continue
            y = ((x + {add}) * {mul}).astype(np.float32)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", y)]))
        return out
"""

PYTHON_CONFIG = """
backend: "python"
max_batch_size: 4
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 3 ] } ]
"""

# Two Python steps: OUT = (IN + 1) * 10.
PY_CHAIN = """
platform: "ensemble"
max_batch_size: 4
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 3 ] } ]
ensemble_scheduling {
  step [
    { model_name: "add_one" model_version: -1
      input_map { key: "IN" value: "IN" } output_map { key: "OUT" value: "plus_one" } },
    { model_name: "times_ten" model_version: -1
      input_map { key: "IN" value: "plus_one" } output_map { key: "OUT" value: "OUT" } }
  ]
}
"""

# A Python step and an ONNX one, listed in the wrong order (each runs once its input is
# ready): Y = (IN + 1) * 2, and the step's intermediate tensor as a second output.
PY_ONNX = """
platform: "ensemble"
max_batch_size: 4
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [
  { name: "Y" data_type: TYPE_FP32 dims: [ 3 ] },
  { name: "PLUS" data_type: TYPE_FP32 dims: [ 3 ] }
]
ensemble_scheduling {
  step [
    { model_name: "double" input_map { key: "X" value: "PLUS" } output_map { key: "Y" value: "Y" } },
    { model_name: "add_one" input_map { key: "IN" value: "IN" }
      output_map { key: "OUT" value: "PLUS" } }
  ]
}
"""

# An ensemble of an ensemble (its name sorts before the one it names): ((IN + 1) * 10) * 2.
NESTED = """
platform: "ensemble"
max_batch_size: 4
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 3 ] } ]
ensemble_scheduling {
  step [
    { model_name: "py_chain" input_map { key: "IN" value: "IN" }
      output_map { key: "OUT" value: "t" } },
    { model_name: "double" input_map { key: "X" value: "t" } output_map { key: "Y" value: "OUT" } }
  ]
}
"""

MISSING_STEP = """
platform: "ensemble"
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 3 ] } ]
ensemble_scheduling {
  step [ { model_name: "nope" input_map { key: "IN" value: "IN" }
           output_map { key: "OUT" value: "OUT" } } ]
}
"""

# The graph's own tensors without a batch dimension: X [-1, 3] -> Y = X * 2.
ONNX_CONFIGURED = """
platform: "onnxruntime_onnx"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1, 3 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1, 3 ] } ]
"""

ONNX_WRONG_TYPE = """
platform: "onnxruntime_onnx"
max_batch_size: 4
input [ { name: "X" data_type: TYPE_INT32 dims: [ 3 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 3 ] } ]
"""


# The graph's S [batch] of strings is a scalar per row: dims [1] and an empty reshape; Y
# [batch, 3] is shown as [3, 1] (Triton reshapes outputs too). The file is a folder holding
# model.onnx, as large models are laid out.
ONNX_TEXT = """
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  { name: "X" data_type: TYPE_FP32 dims: [ 3 ] },
  { name: "S" data_type: TYPE_STRING dims: [ 1 ] reshape { shape: [ ] } }
]
output [
  { name: "Y" data_type: TYPE_FP32 dims: [ 3, 1 ] reshape { shape: [ 3 ] } },
  { name: "SO" data_type: TYPE_STRING dims: [ 1 ] reshape { shape: [ ] } }
]
dynamic_batching { max_queue_delay_microseconds: 20000 }
"""

DECOUPLED_MODEL = """
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            sender = r.get_response_sender()
            sender.send(pb_utils.InferenceResponse([pb_utils.get_input_tensor_by_name(r, "IN")]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
"""

DECOUPLED_CONFIG = PYTHON_CONFIG + "model_transaction_policy { decoupled: true }\n"

DECOUPLED_STEP = MISSING_STEP.replace('"nope"', '"echo_stream"')


def onnx_text(path: Path) -> None:
    """A graph SO = S (strings, [batch]) and Y = relu(X) ([batch, 3]), saved as
    ``path/model.onnx``."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["b", 3])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["b", 3])
    s = helper.make_tensor_value_info("S", TensorProto.STRING, ["b"])
    so = helper.make_tensor_value_info("SO", TensorProto.STRING, ["b"])
    nodes = [helper.make_node("Relu", ["X"], ["Y"]), helper.make_node("Identity", ["S"], ["SO"])]
    graph = helper.make_graph(nodes, "text", [x, s], [y, so])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.mkdir(parents=True)
    onnx.save(model, str(path / "model.onnx"))


def onnx_double(path: Path) -> None:
    """A graph Y = X * 2, X and Y float [batch, 3] (the first dimension named, open)."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 3])
    two = helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])
    graph = helper.make_graph([helper.make_node("Mul", ["X", "two"], ["Y"])], "double", [x], [y])
    graph.initializer.append(two)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def model_folder(src: Path, name: str, config: str | None, files: dict[str, Any]) -> Path:
    """A model folder: its config.pbtxt (None: none) and version 1's files (text, or a
    function that writes the file at the path it is given)."""
    folder = src / name
    (folder / "1").mkdir(parents=True)
    if config is not None:
        (folder / "config.pbtxt").write_text(config)
    for file, body in files.items():
        if callable(body):
            body(folder / "1" / file)
        else:
            (folder / "1" / file).write_text(body)
    return folder


def python_model(src: Path, name: str, add: float, mul: float) -> Path:
    body = PYTHON_MODEL.format(add=add, mul=mul)
    return model_folder(src, name, PYTHON_CONFIG, {"model.py": body})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tritonserver]:
    tmp = tmp_path_factory.mktemp("platforms")
    src = tmp / "src"
    models = {
        "add_one": python_model(src, "add_one", 1, 1),
        "times_ten": python_model(src, "times_ten", 0, 10),
        "double": model_folder(src, "double", None, {"model.onnx": onnx_double}),
        "double_configured": model_folder(
            src, "double_configured", ONNX_CONFIGURED, {"model.onnx": onnx_double}
        ),
        "wrong_type": model_folder(src, "wrong_type", ONNX_WRONG_TYPE, {"model.onnx": onnx_double}),
        "py_chain": model_folder(src, "py_chain", PY_CHAIN, {}),
        "py_onnx": model_folder(src, "py_onnx", PY_ONNX, {}),
        "nested": model_folder(src, "nested", NESTED, {}),
        "missing_step": model_folder(src, "missing_step", MISSING_STEP, {}),
        "text": model_folder(src, "text", ONNX_TEXT, {"model.onnx": onnx_text}),
        "echo_stream": model_folder(
            src, "echo_stream", DECOUPLED_CONFIG, {"model.py": DECOUPLED_MODEL}
        ),
        "decoupled_step": model_folder(src, "decoupled_step", DECOUPLED_STEP, {}),
    }
    # Explicit mode opens the repository index (where the reasons are) to the test.
    s = Tritonserver(
        repository(tmp, extra=models),
        "--exit-on-error=false",
        "--model-control-mode=explicit",
        "--load-model=*",
    )
    yield s
    s.stop()


# -- calling it over both protocols ----------------------------------------------------------


@pytest.fixture(params=["http", "grpc"])
def infer(request: pytest.FixtureRequest, server: Tritonserver) -> Any:
    """``infer(model, {input: array}, outputs=None) -> {output: array}`` over one protocol."""
    lib: Any = httpclient if request.param == "http" else grpcclient
    url = f"127.0.0.1:{server.http_port}" if request.param == "http" else server.grpc_target
    client = lib.InferenceServerClient(url)

    def call(model: str, inputs: dict[str, np.ndarray], outputs: list[str] | None = None) -> Any:
        given = []
        for name, array in inputs.items():
            i = lib.InferInput(
                name, list(array.shape), "BYTES" if array.dtype == object else "FP32"
            )
            i.set_data_from_numpy(array)
            given.append(i)
        asked = [lib.InferRequestedOutput(n) for n in outputs] if outputs else None
        result = client.infer(model, given, outputs=asked)
        names = (
            [o["name"] for o in result.get_response(as_json=True)["outputs"]]
            if (request.param == "grpc")
            else [o["name"] for o in result.get_response()["outputs"]]
        )
        return {n: result.as_numpy(n) for n in names}

    return call


X = np.array([[1, 2, 3], [4, 5, 6]], np.float32)


def test_an_onnx_model_without_a_config_answers(infer: Any) -> None:
    out = infer("double", {"X": X})
    np.testing.assert_array_equal(out["Y"], X * 2)


def test_an_onnx_model_with_a_config_answers(infer: Any) -> None:
    out = infer("double_configured", {"X": X})
    np.testing.assert_array_equal(out["Y"], X * 2)


def test_onnx_strings_reshapes_and_a_model_folder(infer: Any) -> None:
    text = np.array([["a"], ["bé"]], dtype=object)
    out = infer("text", {"X": X - 3, "S": text})
    np.testing.assert_array_equal(out["Y"], np.maximum(X - 3, 0).reshape(2, 3, 1))
    assert out["SO"].tolist() == [[b"a"], ["bé".encode()]]


def test_an_ensemble_of_two_python_models(infer: Any) -> None:
    out = infer("py_chain", {"IN": X})
    np.testing.assert_array_equal(out["OUT"], (X + 1) * 10)


def test_an_ensemble_of_python_and_onnx_steps(infer: Any) -> None:
    out = infer("py_onnx", {"IN": X})
    np.testing.assert_array_equal(out["Y"], (X + 1) * 2)
    np.testing.assert_array_equal(out["PLUS"], X + 1)
    only = infer("py_onnx", {"IN": X}, outputs=["PLUS"])
    assert list(only) == ["PLUS"]
    np.testing.assert_array_equal(only["PLUS"], X + 1)


def test_an_ensemble_of_an_ensemble(infer: Any) -> None:
    out = infer("nested", {"IN": X})
    np.testing.assert_array_equal(out["OUT"], (X + 1) * 10 * 2)


def test_a_failing_step_fails_the_request_with_its_error(server: Tritonserver) -> None:
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    i = httpclient.InferInput("IN", [1, 3], "FP32")
    i.set_data_from_numpy(-np.ones((1, 3), np.float32))
    with pytest.raises(InferenceServerException) as e:
        client.infer("py_chain", [i])
    assert "in ensemble 'py_chain', negative input" in str(e.value)
    assert e.value.status() == "400"
    grpc = grpcclient.InferenceServerClient(server.grpc_target)
    g = grpcclient.InferInput("IN", [1, 3], "FP32")
    g.set_data_from_numpy(-np.ones((1, 3), np.float32))
    with pytest.raises(InferenceServerException) as e:
        grpc.infer("py_chain", [g])
    assert "in ensemble 'py_chain', negative input" in str(e.value)


def test_the_onnx_config_is_answered_as_completed(server: Tritonserver) -> None:
    config = httpx.get(f"{server.url}/v2/models/double/config").json()
    assert config["platform"] == "onnxruntime_onnx"
    assert config["backend"] == "onnxruntime"
    # Every tensor's first dimension is open: Triton's default max_batch_size, batching on.
    assert config["max_batch_size"] == 4
    assert config["dynamic_batching"]["preferred_batch_size"] == [4]
    assert config["input"] == [
        {**config["input"][0], "name": "X", "data_type": "TYPE_FP32", "dims": [3]}
    ]
    assert [(o["name"], o["data_type"], o["dims"]) for o in config["output"]] == [
        ("Y", "TYPE_FP32", [3])
    ]
    assert config["instance_group"][0]["kind"] == "KIND_CPU"
    assert config["instance_group"][0]["count"] == 2
    grpc = grpcclient.InferenceServerClient(server.grpc_target)
    assert grpc.get_model_config("double", as_json=True)["config"]["max_batch_size"] == 4
    meta = httpx.get(f"{server.url}/v2/models/double").json()
    assert meta["platform"] == "onnxruntime_onnx"
    assert meta["inputs"] == [{"name": "X", "datatype": "FP32", "shape": [-1, 3]}]


def test_a_configured_onnx_model_keeps_its_config(server: Tritonserver) -> None:
    config = httpx.get(f"{server.url}/v2/models/double_configured/config").json()
    assert config["max_batch_size"] == 0
    assert "dynamic_batching" not in config
    assert config["input"][0]["dims"] == [-1, 3]


def test_the_ensemble_config_and_metadata(server: Tritonserver) -> None:
    config = httpx.get(f"{server.url}/v2/models/py_onnx/config").json()
    assert config["platform"] == "ensemble"
    steps = config["ensemble_scheduling"]["step"]
    assert [s["model_name"] for s in steps] == ["double", "add_one"]
    meta = httpx.get(f"{server.url}/v2/models/py_onnx").json()
    assert meta["platform"] == "ensemble"
    assert [o["name"] for o in meta["outputs"]] == ["Y", "PLUS"]


def test_models_that_cannot_load_are_unavailable_with_tritons_reason(
    server: Tritonserver,
) -> None:
    index = {m["name"]: m for m in httpx.post(f"{server.url}/v2/repository/index").json()}
    assert index["double"]["state"] == "READY"
    assert index["nested"]["state"] == "READY"
    assert index["missing_step"]["state"] == "UNAVAILABLE"
    assert index["missing_step"]["reason"] == (
        "ensemble missing_step contains models that are not available or ambiguous: nope"
    )
    assert index["decoupled_step"]["state"] == "UNAVAILABLE"
    assert "step model 'echo_stream' is decoupled" in index["decoupled_step"]["reason"]
    assert index["wrong_type"]["state"] == "UNAVAILABLE"
    assert index["wrong_type"]["reason"] == (
        "unable to load model 'wrong_type', configuration expects datatype TYPE_INT32 for "
        "input 'X', model provides TYPE_FP32"
    )


# -- an ensemble whose step model is gone --------------------------------------------------


def test_an_ensemble_whose_step_is_unloaded_fails_with_tritons_words(tmp_path: Path) -> None:
    src = tmp_path / "src"
    models = {
        "add_one": python_model(src, "add_one", 1, 1),
        "times_ten": python_model(src, "times_ten", 0, 10),
        "py_chain": model_folder(src, "py_chain", PY_CHAIN, {}),
    }
    # Explicit mode, asked for the ensemble alone: its models load with it, before it.
    s = Tritonserver(
        repository(tmp_path, extra=models), "--model-control-mode=explicit", "--load-model=py_chain"
    )
    try:
        client = httpclient.InferenceServerClient(f"127.0.0.1:{s.http_port}")
        assert client.is_model_ready("add_one") and client.is_model_ready("py_chain")
        client.unload_model("times_ten")
        i = httpclient.InferInput("IN", [1, 3], "FP32")
        i.set_data_from_numpy(np.ones((1, 3), np.float32))
        # The model is gone once Python has freed it (BLS and ensembles find models by
        # weak reference), which may take a moment after the unload.
        deadline = time.monotonic() + 10
        while True:
            try:
                client.infer("py_chain", [i])
            except InferenceServerException as e:
                message = str(e.message())
                break
            assert time.monotonic() < deadline, "the unloaded step model still answers"
            time.sleep(0.1)
        assert message == (
            "in ensemble 'py_chain', Request for unknown model: 'times_ten' has no available "
            "versions"
        )
    finally:
        s.stop()


# -- TorchScript ----------------------------------------------------------------------------

TORCH_INDEXED = """
platform: "pytorch_libtorch"
max_batch_size: 4
input [
  { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 3 ] },
  { name: "INPUT__1" data_type: TYPE_FP32 dims: [ 3 ] }
]
output [
  { name: "OUTPUT__1" data_type: TYPE_FP32 dims: [ 3 ] },
  { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 3 ] }
]
"""

# By forward's argument names, in another order than forward's.
TORCH_NAMED = """
platform: "pytorch_libtorch"
max_batch_size: 4
input [
  { name: "b" data_type: TYPE_FP32 dims: [ 3 ] },
  { name: "a" data_type: TYPE_FP32 dims: [ 3 ] }
]
output [
  { name: "SUM" data_type: TYPE_FP32 dims: [ 3 ] },
  { name: "DIFF" data_type: TYPE_FP32 dims: [ 3 ] }
]
"""

TORCH_ENSEMBLE = """
platform: "ensemble"
max_batch_size: 4
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 3 ] } ]
ensemble_scheduling {
  step [
    { model_name: "add_one" input_map { key: "IN" value: "IN" }
      output_map { key: "OUT" value: "p" } },
    { model_name: "sum_diff" input_map [ { key: "INPUT__0" value: "p" },
                                        { key: "INPUT__1" value: "IN" } ]
      output_map { key: "OUTPUT__0" value: "OUT" } }
  ]
}
"""


def torchscript(path: Path) -> None:
    """A module whose forward(a, b) returns (a + b, a - b), saved as TorchScript."""
    import torch

    class SumDiff(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return a + b, a - b

    scripted: Any = torch.jit.script(SumDiff())
    scripted.save(str(path))


@pytest.fixture(scope="module")
def torch_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tritonserver]:
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("torch")
    src = tmp / "src"
    models = {
        "add_one": python_model(src, "add_one", 1, 1),
        "sum_diff": model_folder(src, "sum_diff", TORCH_INDEXED, {"model.pt": torchscript}),
        "named": model_folder(src, "named", TORCH_NAMED, {"model.pt": torchscript}),
        "torch_chain": model_folder(src, "torch_chain", TORCH_ENSEMBLE, {}),
    }
    s = Tritonserver(repository(tmp, extra=models))
    yield s
    s.stop()


@pytest.mark.optin
@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_torchscript_by_index_and_by_argument_name(
    torch_server: Tritonserver, protocol: str
) -> None:
    lib: Any = httpclient if protocol == "http" else grpcclient
    url = f"127.0.0.1:{torch_server.http_port}" if protocol == "http" else torch_server.grpc_target
    client = lib.InferenceServerClient(url)
    a, b = X, np.full((2, 3), 10, np.float32)

    def call(model: str, names: tuple[str, str], outputs: tuple[str, str]) -> list[np.ndarray]:
        given = [lib.InferInput(n, [2, 3], "FP32") for n in names]
        given[0].set_data_from_numpy(a)
        given[1].set_data_from_numpy(b)
        result = client.infer(model, given)
        return [result.as_numpy(o) for o in outputs]

    total, diff = call("sum_diff", ("INPUT__0", "INPUT__1"), ("OUTPUT__0", "OUTPUT__1"))
    np.testing.assert_array_equal(total, a + b)
    np.testing.assert_array_equal(diff, a - b)
    # "b" is given a, "a" is given b: forward(a=b, b=a) by name, whatever the config's order.
    total, diff = call("named", ("b", "a"), ("SUM", "DIFF"))
    np.testing.assert_array_equal(total, a + b)
    np.testing.assert_array_equal(diff, b - a)


@pytest.mark.optin
def test_an_ensemble_with_a_torchscript_step(torch_server: Tritonserver) -> None:
    client = httpclient.InferenceServerClient(f"127.0.0.1:{torch_server.http_port}")
    i = httpclient.InferInput("IN", [2, 3], "FP32")
    i.set_data_from_numpy(X)
    out = client.infer("torch_chain", [i]).as_numpy("OUT")
    np.testing.assert_array_equal(out, (X + 1) + X)
    meta = httpx.get(f"{torch_server.url}/v2/models/sum_diff").json()
    assert meta["platform"] == "pytorch_libtorch"


def test_without_torch_a_torchscript_model_is_unavailable_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Built in this process with ``import torch`` failing: the model is listed with the
    reason, and the others are served."""
    from inferwire.triton.repository import Options, TritonRepository

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    folder = model_folder(tmp_path / "models", "sum_diff", TORCH_INDEXED, {})
    (folder / "1" / "model.pt").write_bytes(b"not read")
    model_folder(tmp_path / "models", "double", None, {"model.onnx": onnx_double})
    repo = TritonRepository(tmp_path / "models", options=Options(exit_on_error=False))
    built = {n: repo.build_versions(n) for n in repo.startup_names()}
    assert built["sum_diff"] == []
    assert repo.failures() == {"sum_diff": "torch is not installed"}
    adapter, _ = built["double"][0]
    assert adapter.config.max_batch_size == 4
