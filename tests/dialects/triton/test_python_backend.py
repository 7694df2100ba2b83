"""Triton's own Python-backend examples (tests/vendor/triton_python_backend), served from
their folders unchanged by `inferwire tritonserver` and called by their own client
scripts, which dial Triton's default ports (localhost:8000 and 8001): the server here
listens on those ports, so this module needs them free."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
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
from triton_server import VENDOR, Tritonserver, port_is_free, repository
from tritonclient.utils import InferenceServerException

MODELS = (
    "add_sub",
    "repeat_int32",
    "square_int32",
    "bls_sync",
    "bls_decoupled_sync",
    "bls_decoupled_async",
)
# The PyTorch example (and the BLS examples that call it) need torch, which the test
# environment has with requirements-torch.txt (CI's INFERWIRE_TEST_TORCH=1).
HAS_TORCH = importlib.util.find_spec("torch") is not None
TORCH_MODELS = ("pytorch", "bls_async") if HAS_TORCH else ()
TRITON_PORTS = (8000, 8001, 8002)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tritonserver]:
    busy = [p for p in TRITON_PORTS if not port_is_free(p)]
    if busy:
        pytest.fail(f"Triton's ports {busy} are taken: the examples' clients dial them")
    root = repository(tmp_path_factory.mktemp("triton"), *MODELS, *TORCH_MODELS)
    s = Tritonserver(root, ports=TRITON_PORTS)
    yield s
    s.stop()


def run_client(path: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(VENDOR / "examples" / path)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    ("client", "passed"),
    [
        ("add_sub/client.py", "PASS: add_sub"),
        ("decoupled/repeat_client.py", "PASS: repeat_int32"),
        ("decoupled/square_client.py", "PASS: square_int32"),
        ("bls_decoupled/sync_client.py", "PASS: BLS Decoupled Sync"),
        ("bls_decoupled/async_client.py", "PASS: BLS Decoupled Async"),
    ],
)
def test_the_examples_own_clients_pass(server: Tritonserver, client: str, passed: str) -> None:
    out = run_client(client)
    assert out.returncode == 0, out.stdout + out.stderr + server.log()[-3000:]
    assert passed in out.stdout


@pytest.mark.parametrize(
    ("client", "passed"),
    [
        ("pytorch/client.py", "PASS: pytorch"),
        ("bls/sync_client.py", "PASS: BLS Sync"),
        ("bls/async_client.py", "PASS: BLS Async"),
    ],
)
def test_the_torch_examples_own_clients_pass(
    server: Tritonserver, client: str, passed: str
) -> None:
    """The PyTorch example, and the BLS examples' clients, which call it through BLS."""
    if not HAS_TORCH:
        pytest.skip("the pytorch example model imports torch (requirements-torch.txt)")
    out = run_client(client)
    assert out.returncode == 0, out.stdout + out.stderr + server.log()[-3000:]
    assert passed in out.stdout


def test_bls_to_add_sub_answers_its_sum_and_difference(server: Tritonserver) -> None:
    """The BLS example model, asked to forward to add_sub (the part of its client that
    needs no torch): the step is add_sub's own answer."""
    a = np.random.rand(4).astype(np.float32)
    b = np.random.rand(4).astype(np.float32)
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    inputs = [
        httpclient.InferInput("INPUT0", [4], "FP32"),
        httpclient.InferInput("INPUT1", [4], "FP32"),
        httpclient.InferInput("MODEL_NAME", [1], "BYTES"),
    ]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    inputs[2].set_data_from_numpy(np.array(["add_sub"], dtype=object))
    result = client.infer("bls_sync", inputs)
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), a + b, rtol=1e-6)
    np.testing.assert_allclose(result.as_numpy("OUTPUT1"), a - b, rtol=1e-6)


def test_bls_to_an_unknown_model_is_the_models_error(server: Tritonserver) -> None:
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    inputs = [
        httpclient.InferInput("INPUT0", [4], "FP32"),
        httpclient.InferInput("INPUT1", [4], "FP32"),
        httpclient.InferInput("MODEL_NAME", [1], "BYTES"),
    ]
    inputs[0].set_data_from_numpy(np.ones(4, np.float32))
    inputs[1].set_data_from_numpy(np.ones(4, np.float32))
    inputs[2].set_data_from_numpy(np.array(["nope"], dtype=object))
    with pytest.raises(InferenceServerException) as e:
        client.infer("bls_sync", inputs)
    assert "nope" in str(e.value)
    # The server goes on.
    assert client.is_model_ready("add_sub")


def test_model_config_is_the_config_as_read(server: Tritonserver) -> None:
    config = httpx.get(f"{server.url}/v2/models/add_sub/config").json()
    assert config["name"] == "add_sub"
    assert config["backend"] == "python"
    assert [i["name"] for i in config["input"]] == ["INPUT0", "INPUT1"]
    assert config["input"][0]["data_type"] == "TYPE_FP32"
    grpc = grpcclient.InferenceServerClient(server.grpc_target)
    got = grpc.get_model_config("add_sub", as_json=True)["config"]
    assert got["name"] == "add_sub"
    assert [o["name"] for o in got["output"]] == ["OUTPUT0", "OUTPUT1"]
    decoupled = httpx.get(f"{server.url}/v2/models/repeat_int32/config").json()
    assert decoupled["model_transaction_policy"]["decoupled"] is True


def test_metadata_is_tritons(server: Tritonserver) -> None:
    meta = httpx.get(f"{server.url}/v2/models/add_sub").json()
    assert meta["versions"] == ["1"]
    assert meta["platform"] == "python"
    assert meta["inputs"][0] == {"name": "INPUT0", "datatype": "FP32", "shape": [4]}
    server_meta = httpx.get(f"{server.url}/v2").json()
    assert server_meta["name"] == "triton"
    assert "model_repository" in server_meta["extensions"]


def test_a_decoupled_model_refuses_unary_inference(server: Tritonserver) -> None:
    client = grpcclient.InferenceServerClient(server.grpc_target)
    inp = grpcclient.InferInput("IN", [1], "INT32")
    inp.set_data_from_numpy(np.array([2], np.int32))
    with pytest.raises(InferenceServerException) as e:
        client.infer("square_int32", [inp])
    assert "decoupled" in str(e.value)


def test_the_repository_api_is_closed_without_auth_in_none_mode(server: Tritonserver) -> None:
    """Triton's default mode serves no loads; inferwire's repository API needs auth or
    an opt-in (explicit mode is one), so without either it is closed altogether."""
    for path in ("/v2/repository/index", "/v2/repository/models/add_sub/load"):
        r = httpx.post(f"{server.url}{path}", json={})
        assert r.status_code in (401, 403), r.text
        assert "allow-unauthenticated-repository" in r.text or "auth" in r.text.lower()


def _model(tmp: Path, name: str, body: str, config: str) -> Path:
    folder = tmp / name
    (folder / "1").mkdir(parents=True)
    (folder / "1" / "model.py").write_text(body)
    (folder / "config.pbtxt").write_text(config)
    return folder


BATCHED = """
import json
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        self.config = json.loads(args["model_config"])
        self.instance = args["model_instance_name"]

    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            if (x < 0).any():
                err = pb_utils.TritonError("negative input", pb_utils.TritonError.INVALID_ARG)
                out.append(pb_utils.InferenceResponse(output_tensors=[], error=err))
                continue
            n = np.full((x.shape[0], 1), len(requests), np.int64)
            out.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("Y", (x * 2).astype(np.float32)),
                pb_utils.Tensor("N", n),
            ]))
        return out
"""

BATCHED_CONFIG = """
backend: "python"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [
  { name: "Y" data_type: TYPE_FP32 dims: [ 2 ] },
  { name: "N" data_type: TYPE_INT64 dims: [ 1 ] }
]
dynamic_batching { max_queue_delay_microseconds: 50000 }
instance_group [ { count: 1 kind: KIND_CPU } ]
"""


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tritonserver]:
    tmp = tmp_path_factory.mktemp("own")
    batched = _model(tmp / "src", "batched", BATCHED, BATCHED_CONFIG)
    broken = _model(tmp / "src", "broken", "raise ImportError('no')\n", 'backend: "python"\n')
    onnx = tmp / "src" / "onnx_model"
    (onnx / "1").mkdir(parents=True)
    (onnx / "1" / "model.onnx").write_bytes(b"")
    (onnx / "config.pbtxt").write_text('platform: "tensorrt_plan"\n')
    root = repository(tmp, extra={"batched": batched, "broken": broken, "trt": onnx})
    s = Tritonserver(
        root, "--exit-on-error=false", "--model-control-mode=explicit", "--load-model=*"
    )
    yield s
    s.stop()


def test_a_dynamic_batch_reaches_execute_as_a_list(own: Tritonserver) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def call(i: int) -> tuple[np.ndarray, np.ndarray]:
        c = httpclient.InferenceServerClient(f"127.0.0.1:{own.http_port}")
        x = httpclient.InferInput("X", [1, 2], "FP32")
        x.set_data_from_numpy(np.full((1, 2), i, np.float32))
        r = c.infer("batched", [x])
        return r.as_numpy("Y"), r.as_numpy("N")

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(call, range(8)))
    for i, (y, _) in enumerate(results):
        np.testing.assert_array_equal(y, np.full((1, 2), 2 * i, np.float32))
    # Some requests waited for others and came to execute together.
    assert max(int(n[0][0]) for _, n in results) > 1


def test_an_error_response_fails_its_request_only(own: Tritonserver) -> None:
    c = httpclient.InferenceServerClient(f"127.0.0.1:{own.http_port}")
    x = httpclient.InferInput("X", [1, 2], "FP32")
    x.set_data_from_numpy(np.full((1, 2), -1, np.float32))
    with pytest.raises(InferenceServerException) as e:
        c.infer("batched", [x])
    assert "negative input" in str(e.value)
    assert e.value.status() == "400"
    x.set_data_from_numpy(np.ones((1, 2), np.float32))
    np.testing.assert_array_equal(c.infer("batched", [x]).as_numpy("Y"), [[2, 2]])


def test_models_that_cannot_load_are_unavailable_with_the_reason(own: Tritonserver) -> None:
    r = httpx.post(f"{own.url}/v2/repository/index", json={})
    index = {m["name"]: m for m in r.json()}
    assert index["batched"]["state"] == "READY"
    assert index["broken"]["state"] == "UNAVAILABLE"
    assert "ImportError" in index["broken"]["reason"]
    assert index["trt"]["state"] == "UNAVAILABLE"
    assert "tensorrt" in index["trt"]["reason"]


def test_explicit_mode_loads_and_unloads_through_the_api(own: Tritonserver) -> None:
    c = httpclient.InferenceServerClient(f"127.0.0.1:{own.http_port}")
    c.unload_model("batched")
    assert not c.is_model_ready("batched")
    c.load_model("batched")
    assert c.is_model_ready("batched")


def test_a_failing_model_stops_the_server_by_default(tmp_path: Path) -> None:
    broken = _model(tmp_path / "src", "broken", "raise ImportError('no')\n", 'backend: "python"\n')
    root = repository(tmp_path, extra={"broken": broken})
    s = Tritonserver(root, wait=False)
    assert s.wait_exit() != 0
    log = s.log_path.read_text()
    assert "failed to load all models" in log and "ImportError" in log


def test_unknown_options_are_refused(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "inferwire",
            "tritonserver",
            f"--model-repository={tmp_path}",
            "--nope=1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "--nope: not an option of tritonserver" in out.stderr


def test_metrics_port_answers_tritons_names(server: Tritonserver) -> None:
    text = httpx.get(f"http://127.0.0.1:{server.metrics_port}/metrics").text
    assert "nv_inference_request_success" in text, text[:2000]


def test_finalize_runs_at_shutdown(tmp_path: Path) -> None:
    """Triton calls each instance's finalize() when the server stops: add_sub's prints
    "Cleaning up..."."""
    s = Tritonserver(repository(tmp_path, "add_sub"))
    assert s.stop() == 0
    assert "Cleaning up..." in s.log_path.read_text()


def _wait_for(check: Any, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


def test_poll_mode_loads_changes_and_removals(tmp_path: Path) -> None:
    """--model-control-mode=poll: a model added to the repository is loaded, one whose
    files change is reloaded, one removed is unloaded, each within a few polls; the API
    stays closed to loads, as Triton's poll mode has it."""
    root = repository(tmp_path, "add_sub")
    s = Tritonserver(root, "--model-control-mode=poll", "--repository-poll-secs=1")
    try:
        c = httpclient.InferenceServerClient(f"127.0.0.1:{s.http_port}")
        assert c.is_model_ready("add_sub")
        assert not c.is_model_ready("batched")
        _model(root, "batched", BATCHED, BATCHED_CONFIG)
        assert _wait_for(lambda: c.is_model_ready("batched")), s.log()[-2000:]
        x = httpclient.InferInput("X", [1, 2], "FP32")
        x.set_data_from_numpy(np.ones((1, 2), np.float32))
        np.testing.assert_array_equal(c.infer("batched", [x]).as_numpy("Y"), [[2, 2]])
        # Its code changes: the new code serves.
        code = root / "batched" / "1" / "model.py"
        code.write_text(code.read_text().replace("(x * 2)", "(x * 3)"))
        assert _wait_for(lambda: c.infer("batched", [x]).as_numpy("Y").tolist() == [[3, 3]]), (
            s.log()[-2000:]
        )
        shutil.rmtree(root / "add_sub")
        assert _wait_for(lambda: not c.is_model_ready("add_sub")), s.log()[-2000:]
        r = httpx.post(f"{s.url}/v2/repository/models/add_sub/load", json={})
        assert r.status_code in (401, 403), r.text
    finally:
        s.stop()
