"""TorchServe's gRPC management API (`org.pytorch.serve.grpc.management.ManagementAPIsService`)
on `inferwire torchserve`'s `grpc_management_port`, called through stubs generated from
proto/torchserve_management.proto as TorchServe's clients generate theirs, and through
TorchServe's own client script (`ts_scripts/torchserve_grpc_client.py`, vendored
unchanged): each method's answer, ListModels' pages, the management key, the model API's
switch (`enable_model_api`), TorchServe's codes for an unknown model or version, and
`--models` naming an archive by URL."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from torchserve_archives import ROOT, VENDOR, archive, archive_site
from torchserve_server import TorchServe

grpc = pytest.importorskip("grpc")

MODEL_NOT_FOUND = "org.pytorch.serve.archive.model.ModelNotFoundException"
VERSION_NOT_FOUND = "org.pytorch.serve.archive.model.ModelVersionNotFoundException"
TOKEN_FAILED = (
    "Token Authorization failed. Token either incorrect, expired, or not provided correctly"
)
# Archives the module's server loads at start (names sorted: ListModels' order).
STARTED = ("alpha", "beta", "echo", "gamma")


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with `management_pb2`/`management_pb2_grpc` and `inference_pb2`/
    `inference_pb2_grpc` (our protos under the names TorchServe's clients import them
    by), on sys.path."""
    import grpc_tools
    from grpc_tools import protoc

    out = tmp_path_factory.mktemp("ts_mgmt_pb")
    src = out / "proto"
    (src / "google" / "rpc").mkdir(parents=True)
    shutil.copy(ROOT / "proto" / "torchserve_management.proto", src / "management.proto")
    shutil.copy(ROOT / "proto" / "torchserve_inference.proto", src / "inference.proto")
    shutil.copy(ROOT / "proto" / "google" / "rpc" / "status.proto", src / "google/rpc")
    include = Path(grpc_tools.__file__).parent / "_proto"
    rc = protoc.main(
        ["protoc", f"-I{src}", f"-I{include}", f"--python_out={out}",
         f"--grpc_python_out={out}", "management.proto", "inference.proto",
         "google/rpc/status.proto"]
    )  # fmt: skip
    assert rc == 0, "protoc failed"
    sys.path.insert(0, str(out))
    for name in ("management_pb2", "management_pb2_grpc"):
        sys.modules.pop(name, None)  # another module's placeholder, if any
    return out


@pytest.fixture(scope="module")
def pb(stubs: Path) -> Any:
    import management_pb2
    import management_pb2_grpc

    class Modules:
        msgs = management_pb2
        grpc = management_pb2_grpc

    return Modules


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TorchServe]:
    """Token authorization and the model API on; four models, and `later.mar` in the
    store to register."""
    tmp = tmp_path_factory.mktemp("ts_grpc_mgmt")
    store = tmp / "store"
    store.mkdir()
    for name in STARTED:
        archive(store, name, VENDOR / "echo" / "handler.py")
    archive(store, "later", VENDOR / "echo" / "handler.py", version="3.0")
    archive(store, "echo2", VENDOR / "echo" / "handler.py")
    s = TorchServe(
        store, *(f"{n}.mar" for n in STARTED), extra="enable_model_api=true\n", tokens=True
    )
    yield s
    s.stop()


def keys(s: TorchServe) -> dict[str, Any]:
    path = Path(s.log).parent / "key_file.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def auth(s: TorchServe, which: str = "management") -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {keys(s)[which]['key']}"),)


def stub(pb: Any, port: int) -> Any:
    return pb.grpc.ManagementAPIsServiceStub(grpc.insecure_channel(f"127.0.0.1:{port}"))


def fails(call: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as e:
        call()
    return e.value


def test_list_models_pages_through_the_models(pb: Any, server: TorchServe) -> None:
    s, key = stub(pb, server.grpc_mgmt), auth(server)
    every = json.loads(s.ListModels(pb.msgs.ListModelsRequest(), metadata=key).msg)
    assert [m["modelName"] for m in every["models"]] == list(STARTED)
    assert every["models"][0] == {"modelName": "alpha", "modelUrl": "alpha.mar"}
    assert "nextPageToken" not in every
    first = s.ListModels(pb.msgs.ListModelsRequest(limit=3), metadata=key).msg
    # TorchServe's pretty-printed JSON.
    assert first.startswith('{\n  "models": [\n')
    page = json.loads(first)
    assert [m["modelName"] for m in page["models"]] == ["alpha", "beta", "echo"]
    assert page["nextPageToken"] == "3"
    rest = json.loads(
        s.ListModels(pb.msgs.ListModelsRequest(limit=3, next_page_token=3), metadata=key).msg
    )
    assert rest == {"models": [{"modelName": "gamma", "modelUrl": "gamma.mar"}]}
    # Out of TorchServe's range: its page of 100.
    big = json.loads(s.ListModels(pb.msgs.ListModelsRequest(limit=5000), metadata=key).msg)
    assert len(big["models"]) == len(STARTED)
    past = json.loads(s.ListModels(pb.msgs.ListModelsRequest(next_page_token=99), metadata=key).msg)
    assert past == {"models": []}


def test_describe_model_answers_the_rest_api_s_description(pb: Any, server: TorchServe) -> None:
    s, key = stub(pb, server.grpc_mgmt), auth(server)
    msg = s.DescribeModel(pb.msgs.DescribeModelRequest(model_name="echo"), metadata=key).msg
    described = json.loads(msg)
    assert described[0]["modelName"] == "echo"
    assert described[0]["modelVersion"] == "1.0"
    assert described[0]["modelUrl"] == "echo.mar"
    rest = httpx.get(
        f"http://127.0.0.1:{server.mgmt}/models/echo",
        headers={"Authorization": auth(server)[0][1]},
    )
    assert rest.json()[0]["modelUrl"] == described[0]["modelUrl"]
    assert set(rest.json()[0]) == set(described[0])
    every = s.DescribeModel(
        pb.msgs.DescribeModelRequest(model_name="echo", model_version="all"), metadata=key
    )
    assert json.loads(every.msg)[0]["modelVersion"] == "1.0"
    e = fails(
        lambda: s.DescribeModel(pb.msgs.DescribeModelRequest(model_name="nope"), metadata=key)
    )
    assert e.code() == grpc.StatusCode.NOT_FOUND
    assert e.details() == f"Model not found: nope\n{MODEL_NOT_FOUND}"
    e = fails(
        lambda: s.DescribeModel(
            pb.msgs.DescribeModelRequest(model_name="echo", model_version="9"), metadata=key
        )
    )
    assert e.code() == grpc.StatusCode.NOT_FOUND
    assert e.details() == f"Model version: 9 does not exist for model: echo\n{VERSION_NOT_FOUND}"
    e = fails(
        lambda: s.DescribeModel(
            pb.msgs.DescribeModelRequest(model_name="echo", customized=True), metadata=key
        )
    )
    assert e.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "describe_handle" in e.details()


def test_register_serves_an_archive_and_unregister_stops_it(pb: Any, server: TorchServe) -> None:
    s, key = stub(pb, server.grpc_mgmt), auth(server)
    predict = f"{server.url}/predictions/later"
    request = pb.msgs.RegisterModelRequest(url="later.mar", initial_workers=1, synchronous=True)
    r = s.RegisterModel(request, metadata=key)
    assert r.msg == 'Model "later" Version: 3.0 registered with 1 initial workers'
    assert httpx.post(predict, params={"data": "x"}, headers=server.headers).text == "x"
    again = fails(lambda: s.RegisterModel(request, metadata=key))
    assert again.code() == grpc.StatusCode.ABORTED
    assert again.details().startswith("Model later is already registered.\n")
    missing = pb.msgs.RegisterModelRequest(url="nothing.mar", model_name="n")
    e = fails(lambda: s.RegisterModel(missing, metadata=key))
    assert e.code() == grpc.StatusCode.NOT_FOUND
    assert "Model not found in model store: nothing.mar" in e.details()
    assert e.details().endswith(f"\n{MODEL_NOT_FOUND}")
    e = fails(lambda: s.RegisterModel(pb.msgs.RegisterModelRequest(), metadata=key))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.details().startswith("Parameter url is required.\n")
    outside = pb.msgs.RegisterModelRequest(url="../store/later.mar", model_name="o")
    e = fails(lambda: s.RegisterModel(outside, metadata=key))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "must be an archive's file name in the model store" in e.details()

    gone = s.UnregisterModel(pb.msgs.UnregisterModelRequest(model_name="later"), metadata=key)
    assert gone.msg == 'Model "later" unregistered'
    assert httpx.post(predict, params={"data": "x"}, headers=server.headers).status_code == 404
    e = fails(
        lambda: s.UnregisterModel(pb.msgs.UnregisterModelRequest(model_name="later"), metadata=key)
    )
    assert e.code() == grpc.StatusCode.NOT_FOUND
    assert e.details() == f"Model not found: later\n{MODEL_NOT_FOUND}"
    e = fails(lambda: s.UnregisterModel(pb.msgs.UnregisterModelRequest(), metadata=key))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_scale_worker_and_set_default_answer_as_rest_does(pb: Any, server: TorchServe) -> None:
    s, key = stub(pb, server.grpc_mgmt), auth(server)
    scaled = s.ScaleWorker(
        pb.msgs.ScaleWorkerRequest(model_name="echo", min_worker=3), metadata=key
    )
    assert scaled.msg == (
        'Workers of model "echo" are inferwire\'s processes, each serving every model: '
        "min_worker=3 changes nothing"
    )
    wrong = pb.msgs.ScaleWorkerRequest(model_name="echo", min_worker=3, max_worker=2)
    e = fails(lambda: s.ScaleWorker(wrong, metadata=key))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.details().startswith("max_worker cannot be less than min_worker.\n")
    e = fails(lambda: s.ScaleWorker(pb.msgs.ScaleWorkerRequest(model_name="nope"), metadata=key))
    assert e.code() == grpc.StatusCode.NOT_FOUND

    default = s.SetDefault(
        pb.msgs.SetDefaultRequest(model_name="echo", model_version="1.0"), metadata=key
    )
    assert default.msg == 'Default version successfully updated for model "echo" to "1.0"'
    e = fails(
        lambda: s.SetDefault(
            pb.msgs.SetDefaultRequest(model_name="echo", model_version="9.0"), metadata=key
        )
    )
    assert e.code() == grpc.StatusCode.NOT_FOUND
    assert e.details().endswith(VERSION_NOT_FOUND)


def test_every_call_needs_the_management_key(pb: Any, server: TorchServe) -> None:
    s = stub(pb, server.grpc_mgmt)
    calls = (
        lambda md: s.ListModels(pb.msgs.ListModelsRequest(), metadata=md),
        lambda md: s.DescribeModel(pb.msgs.DescribeModelRequest(model_name="echo"), metadata=md),
        lambda md: s.ScaleWorker(pb.msgs.ScaleWorkerRequest(model_name="echo"), metadata=md),
        lambda md: s.RegisterModel(pb.msgs.RegisterModelRequest(url="echo2.mar"), metadata=md),
        lambda md: s.UnregisterModel(
            pb.msgs.UnregisterModelRequest(model_name="echo"), metadata=md
        ),
    )
    wrong = (("authorization", "Bearer nope"),)
    for call in calls:
        for metadata in ((), wrong, auth(server, "inference")):
            e = fails(functools.partial(call, metadata))
            assert e.code() == grpc.StatusCode.PERMISSION_DENIED
            assert e.details() == TOKEN_FAILED
    assert json.loads(calls[0](auth(server)).msg)["models"]
    # Nothing changed.
    assert (
        httpx.post(
            f"{server.url}/predictions/echo", params={"data": "y"}, headers=server.headers
        ).text
        == "y"
    )


def test_the_service_is_only_on_its_own_port(pb: Any, server: TorchServe) -> None:
    e = fails(
        lambda: stub(pb, server.grpc).ListModels(pb.msgs.ListModelsRequest(), metadata=auth(server))
    )
    assert e.code() == grpc.StatusCode.UNIMPLEMENTED


def client(stubs: Path, s: TorchServe, *args: str) -> subprocess.CompletedProcess[str]:
    """TorchServe's gRPC client script, unchanged, run as its documentation shows; its
    `localhost:7071` is this server's gRPC management port."""
    script = VENDOR / "torchserve_grpc_client.py"
    run = (
        "import grpc, runpy, sys\n"
        "connect = grpc.insecure_channel\n"
        f"grpc.insecure_channel = lambda target, *a, **k: connect("
        f"target.replace('localhost:7071', '127.0.0.1:{s.grpc_mgmt}'), *a, **k)\n"
        f"sys.argv = [{str(script)!r}, *sys.argv[1:]]\n"
        f"runpy.run_path({str(script)!r}, run_name='__main__')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(stubs)}
    return subprocess.run(
        [sys.executable, "-c", run, *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_torchserve_s_own_client_registers_and_unregisters(stubs: Path, server: TorchServe) -> None:
    token = keys(server)["management"]["key"]
    r = client(stubs, server, "register", "echo2", "echo2.mar", "--auth-token", token)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Model echo2 registered successfully" in r.stdout
    assert (
        httpx.post(
            f"{server.url}/predictions/echo2", params={"data": "z"}, headers=server.headers
        ).text
        == "z"
    )
    r = client(stubs, server, "unregister", "echo2", "--auth-token", token)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Model echo2 unregistered successfully" in r.stdout
    # Without the key: the script's failure, with TorchServe's words.
    r = client(stubs, server, "unregister", "echo", "--auth-token", "nope")
    assert r.returncode == 1
    assert TOKEN_FAILED in r.stdout


def test_without_enable_model_api_nothing_registers(pb: Any, tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    archive(store, "echo", VENDOR / "echo" / "handler.py")
    s = TorchServe(store, "echo.mar")
    try:
        st = stub(pb, s.grpc_mgmt)
        for call in (
            lambda: st.RegisterModel(pb.msgs.RegisterModelRequest(url="echo.mar", model_name="a")),
            lambda: st.UnregisterModel(pb.msgs.UnregisterModelRequest(model_name="echo")),
        ):
            e = fails(call)
            assert e.code() == grpc.StatusCode.PERMISSION_DENIED
            assert e.details().startswith("Model API is disabled")
            assert e.details().endswith("\norg.pytorch.serve.archive.model.ModelException")
        # Reading goes on without a key (token authorization off), and the model too.
        listed = json.loads(st.ListModels(pb.msgs.ListModelsRequest()).msg)
        assert listed == {"models": [{"modelName": "echo", "modelUrl": "echo.mar"}]}
        assert httpx.post(f"{s.url}/predictions/echo", params={"data": "y"}).text == "y"
    finally:
        s.stop()


def test_models_at_start_may_be_urls_that_allowed_urls_allows(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    with archive_site(tmp_path / "site") as base:
        extra = f"allowed_urls={base}/good/.*\n"
        s = TorchServe(store, f"fetched={base}/good/echo.mar", extra=extra)
        try:
            r = httpx.post(f"{s.url}/predictions/fetched", params={"data": "from the web"})
            assert r.status_code == 200 and r.text == "from the web"
        finally:
            s.stop()
        for url, words in (
            (f"{base}/bad/echo.mar", "does not match any allowed URL(s)"),
            (f"{base}/good/none.mar", "Failed to download archive from"),
        ):
            with pytest.raises(RuntimeError) as refused:
                TorchServe(store, f"other={url}", extra=extra)
            assert f"--models {url}: " in str(refused.value)
            assert words in str(refused.value)
