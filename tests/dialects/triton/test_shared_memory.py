"""Triton's system shared-memory extension, driven as Triton users drive it: regions made
with tritonclient's own ``tritonclient.utils.shared_memory`` and registered, used and
unregistered with tritonclient's HTTP and gRPC clients; tensors asserted by content."""

from __future__ import annotations

import os
import secrets
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
import tritonclient.utils.shared_memory as shm
from conftest import Served
from tritonclient.utils import InferenceServerException

MODEL = "desc"


@pytest.fixture(scope="module")
def server(serve: Any) -> Served:
    return serve(
        "triton_models:Described",
        "--model-name", MODEL,
        "--system-shared-memory",
        "--shared-memory-max-regions", "4",
    )  # fmt: skip


@pytest.fixture(params=["http", "grpc"])
def proto(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def client(s: Served, proto: str) -> Any:
    if proto == "http":
        return httpclient.InferenceServerClient(url=f"127.0.0.1:{s.http_port}")
    return grpcclient.InferenceServerClient(url=s.grpc_target)


def lib(proto: str) -> Any:
    return httpclient if proto == "http" else grpcclient


class Regions:
    """Shared-memory objects made for one test, destroyed after it."""

    def __init__(self) -> None:
        self.handles: list[Any] = []
        self.tag = f"{os.getpid()}-{secrets.token_hex(4)}"

    def make(self, name: str, byte_size: int) -> tuple[Any, str]:
        key = f"/iw-test-{name}-{self.tag}"
        h = shm.create_shared_memory_region(name, key, byte_size)
        self.handles.append(h)
        return h, key

    def close(self) -> None:
        for h in self.handles:
            shm.destroy_shared_memory_region(h)


@pytest.fixture
def regions(server: Served) -> Iterator[Regions]:
    r = Regions()
    yield r
    httpx.post(f"{server.url}/v2/systemsharedmemory/unregister", timeout=10)
    r.close()


def infer_in_shm(
    c: Any, proto: str, in_region: str, out_region: str | None, byte_size: int = 16, **kw: Any
) -> Any:
    m = lib(proto)
    inp = m.InferInput("x", [1, 4], "FP32")
    inp.set_shared_memory(in_region, byte_size, offset=kw.pop("in_offset", 0))
    out = m.InferRequestedOutput("y")
    if out_region is not None:
        out.set_shared_memory(out_region, kw.pop("out_size", 16), offset=kw.pop("out_offset", 0))
    return c.infer(MODEL, [inp], outputs=[out], **kw)


def test_the_extension_is_listed(server: Served) -> None:
    meta = httpx.get(f"{server.url}/v2", timeout=10).json()
    assert "system_shared_memory" in meta["extensions"]


def test_register_status_infer_unregister(server: Served, regions: Regions, proto: str) -> None:
    c = client(server, proto)
    x = np.array([[1.5, 2.0, 3.25, 40.0]], dtype=np.float32)
    h_in, key_in = regions.make("in", 16)
    h_out, key_out = regions.make("out", 32)
    shm.set_shared_memory_region(h_in, [x])
    c.register_system_shared_memory("in", key_in, 16)
    # The output goes 8 bytes into a region that starts 8 bytes into its object.
    c.register_system_shared_memory("out", key_out, 24, offset=8)

    status = c.get_system_shared_memory_status()
    if proto == "http":
        by_name = {r["name"]: r for r in status}
        assert by_name["in"] == {"name": "in", "key": key_in, "offset": 0, "byte_size": 16}
        assert by_name["out"] == {"name": "out", "key": key_out, "offset": 8, "byte_size": 24}
    else:
        assert status.regions["in"].key == key_in and status.regions["in"].byte_size == 16
        assert status.regions["out"].offset == 8 and status.regions["out"].byte_size == 24
    one = c.get_system_shared_memory_status(region_name="out")
    assert (len(one) if proto == "http" else len(one.regions)) == 1

    result = infer_in_shm(c, proto, "in", "out", out_offset=8)
    y = shm.get_contents_as_numpy(h_out, np.float32, [1, 4], offset=16)
    assert y.tolist() == (x + 1).tolist()
    # The reply names the output and where it went, with no data.
    out = result.get_output("y")
    if proto == "http":
        assert out["datatype"] == "FP32" and out["shape"] == [1, 4]
        assert "data" not in out
        assert out["parameters"]["shared_memory_region"] == "out"
        assert out["parameters"]["shared_memory_byte_size"] == 16
    else:
        assert out.datatype == "FP32" and list(out.shape) == [1, 4]
        assert out.parameters["shared_memory_region"].string_param == "out"
        assert result.get_response().raw_output_contents in ([], [b""])

    # Input in shared memory, output in the reply as usual.
    plain = infer_in_shm(c, proto, "in", None)
    assert plain.as_numpy("y").tolist() == (x + 1).tolist()

    c.unregister_system_shared_memory("in")
    with pytest.raises(InferenceServerException, match="no system shared-memory region"):
        infer_in_shm(c, proto, "in", None)
    c.unregister_system_shared_memory()
    status = c.get_system_shared_memory_status()
    assert (len(status) if proto == "http" else len(status.regions)) == 0


def test_bad_registrations_name_the_field(server: Served, regions: Regions, proto: str) -> None:
    c = client(server, proto)
    _, key = regions.make("small", 16)
    cases = [
        ("/../etc/passwd", 0, 16, "not a POSIX shared-memory name"),
        ("/a/b", 0, 16, "not a POSIX shared-memory name"),
        ("relative/../x", 0, 16, "not a POSIX shared-memory name"),
        (f"/iw-none-{regions.tag}", 0, 16, "cannot open shared-memory object"),
        (key, 8, 16, "runs past the end"),
        (key, 0, 17, "runs past the end"),
    ]
    for bad_key, offset, size, message in cases:
        with pytest.raises(InferenceServerException, match=message):
            c.register_system_shared_memory("r", bad_key, size, offset=offset)
    # Only regular files in /dev/shm: a link out of it, or a FIFO, is refused.
    link, fifo = Path(f"/dev/shm/iw-link-{regions.tag}"), Path(f"/dev/shm/iw-fifo-{regions.tag}")
    link.symlink_to("/etc/passwd")
    os.mkfifo(fifo)
    try:
        with pytest.raises(InferenceServerException, match="cannot open shared-memory object"):
            c.register_system_shared_memory("r", f"/{link.name}", 16)
        with pytest.raises(InferenceServerException, match="is not a shared-memory object"):
            c.register_system_shared_memory("r", f"/{fifo.name}", 16)
    finally:
        link.unlink()
        fifo.unlink()
    c.register_system_shared_memory("r", key, 16)
    with pytest.raises(InferenceServerException, match="already registered"):
        c.register_system_shared_memory("r", key, 16)
    with pytest.raises(InferenceServerException, match="no system shared-memory region"):
        c.get_system_shared_memory_status(region_name="nope")


def test_raw_rest_errors_are_400_with_a_message(server: Served, regions: Regions) -> None:
    _, key = regions.make("raw", 16)
    url = f"{server.url}/v2/systemsharedmemory/region/raw/register"
    r = httpx.post(url, json={"key": key}, timeout=10)
    assert r.status_code == 400 and "byte_size" in r.json()["error"]
    r = httpx.post(url, json={"key": "/etc/passwd", "byte_size": 4}, timeout=10)
    assert r.status_code == 400 and "POSIX shared-memory name" in r.json()["error"]
    assert httpx.post(url, json={"key": key, "byte_size": 16}, timeout=10).status_code == 200
    body = {
        "inputs": [
            {
                "name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4],
                "parameters": {"shared_memory_region": "raw", "shared_memory_byte_size": 16},
            }
        ]
    }  # fmt: skip
    r = httpx.post(f"{server.url}/v2/models/{MODEL}/infer", json=body, timeout=10)
    assert r.status_code == 400 and "send one or the other" in r.json()["error"]
    del body["inputs"][0]["parameters"]["shared_memory_byte_size"]  # type: ignore[index]
    del body["inputs"][0]["data"]
    r = httpx.post(f"{server.url}/v2/models/{MODEL}/infer", json=body, timeout=10)
    assert r.status_code == 400 and "go together" in r.json()["error"]


def test_bad_references_name_the_field(server: Served, regions: Regions, proto: str) -> None:
    c = client(server, proto)
    h, key = regions.make("ref", 32)
    shm.set_shared_memory_region(h, [np.ones((1, 4), np.float32)])
    c.register_system_shared_memory("ref", key, 32)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"in_offset": 24}, "runs past the end of region"),
        ({"byte_size": 12}, "do not hold 4 FP32 elements"),
        ({"out_size": 8}, "the output needs 16 bytes"),
        ({"out_offset": 20}, "runs past the end of region"),
    ]
    for kw, message in cases:
        with pytest.raises(InferenceServerException, match=message):
            infer_in_shm(c, proto, "ref", "ref", **kw)
    with pytest.raises(InferenceServerException, match="no system shared-memory region"):
        infer_in_shm(c, proto, "nope", None)
    # The server is unharmed: a correct call still works.
    ok = infer_in_shm(c, proto, "ref", None)
    assert ok.as_numpy("y").tolist() == [[2.0] * 4]


def test_a_truncated_object_is_an_error_not_a_crash(
    server: Served, regions: Regions, proto: str
) -> None:
    c = client(server, proto)
    h, key = regions.make("cut", 16)
    shm.set_shared_memory_region(h, [np.zeros((1, 4), np.float32)])
    c.register_system_shared_memory("cut", key, 16)
    # The client shrinks its object behind the server's back.
    os.truncate(f"/dev/shm/{key.lstrip('/')}", 4)
    for _ in range(2):
        with pytest.raises(InferenceServerException, match="truncated"):
            infer_in_shm(c, proto, "cut", None)
        with pytest.raises(InferenceServerException, match="truncated"):
            m = lib(proto)
            inp = m.InferInput("x", [1, 4], "FP32")
            inp.set_data_from_numpy(np.zeros((1, 4), np.float32))
            out = m.InferRequestedOutput("y")
            out.set_shared_memory("cut", 16)
            c.infer(MODEL, [inp], outputs=[out])
    assert server.proc.poll() is None
    assert httpx.get(f"{server.url}/v2/health/ready", timeout=10).status_code == 200


def test_cuda_shared_memory_is_refused_clearly(server: Served, proto: str) -> None:
    c = client(server, proto)
    status = c.get_cuda_shared_memory_status()
    assert (len(status) if proto == "http" else len(status.regions)) == 0
    with pytest.raises(InferenceServerException, match="CUDA shared memory is not supported"):
        c.register_cuda_shared_memory("g", b"\0" * 64, 0, 16)
    c.unregister_cuda_shared_memory()


def test_off_by_default(serve: Any, proto: str) -> None:
    s = serve("triton_models:Described", "--model-name", MODEL)
    c = client(s, proto)
    r = Regions()
    try:
        _, key = r.make("off", 16)
        with pytest.raises(InferenceServerException, match="system shared memory is off"):
            c.register_system_shared_memory("off", key, 16)
        with pytest.raises(InferenceServerException, match="system shared memory is off"):
            infer_in_shm(c, proto, "off", None)
    finally:
        r.close()


def test_every_worker_sees_registrations(serve: Any) -> None:
    s = serve(
        "triton_models:AddPid", "--model-name", MODEL, "--workers", "2",
        "--system-shared-memory",
    )  # fmt: skip
    r = Regions()
    try:
        h, key = r.make("w", 4)
        shm.set_shared_memory_region(h, [np.array([[0.5]], np.float32)])
        grpcclient.InferenceServerClient(url=s.grpc_target).register_system_shared_memory(
            "w", key, 4
        )
        pids = set()
        for _ in range(400):
            # A new connection each time, so that both workers take some; paced, because
            # on a loaded machine one worker may take every connection for a while.
            time.sleep(0.02)
            c = httpclient.InferenceServerClient(url=f"127.0.0.1:{s.http_port}")
            inp = httpclient.InferInput("x", [1, 1], "FP32")
            inp.set_shared_memory("w", 4)
            y = c.infer(MODEL, [inp], outputs=[httpclient.InferRequestedOutput("y")]).as_numpy("y")
            c.close()
            assert y is not None and y[0, 0] % 1 == 0.5
            pids.add(int(y[0, 0]))
            if len(pids) == 2:
                break
        assert len(pids) == 2, pids
        httpx.post(f"{s.url}/v2/systemsharedmemory/region/w/unregister", timeout=10)
        for _ in range(10):
            c = httpclient.InferenceServerClient(url=f"127.0.0.1:{s.http_port}")
            inp = httpclient.InferInput("x", [1, 1], "FP32")
            inp.set_shared_memory("w", 4)
            with pytest.raises(InferenceServerException, match="no system shared-memory"):
                c.infer(MODEL, [inp])
            c.close()
    finally:
        r.close()


def auth_token(tokens: Path, name: str, scopes: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "inferwire", "auth", "token", name, "--scopes", scopes,
         "--file", str(tokens)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return out.stdout.strip()


def test_registering_needs_the_publish_scope_with_auth(serve: Any, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    bot = auth_token(tokens, "bot", "predict")
    ops = auth_token(tokens, "ops", "predict,publish")
    s = serve(
        "triton_models:Described", "--model-name", MODEL, "--system-shared-memory",
        "--auth-tokens", str(tokens),
    )  # fmt: skip
    r = Regions()
    try:
        h, key = r.make("a", 16)
        shm.set_shared_memory_region(h, [np.full((1, 4), 2.0, np.float32)])
        for proto in ("http", "grpc"):
            c = client(s, proto)
            with pytest.raises(InferenceServerException, match="authentication required"):
                c.register_system_shared_memory("a", key, 16)
            with pytest.raises(InferenceServerException, match="publish"):
                c.register_system_shared_memory(
                    "a", key, 16, headers={"authorization": f"Bearer {bot}"}
                )
        c = client(s, "http")
        c.register_system_shared_memory("a", key, 16, headers={"authorization": f"Bearer {ops}"})
        # Inference with the region needs only the predict scope.
        y = infer_in_shm(c, "http", "a", None, headers={"authorization": f"Bearer {bot}"})
        assert y.as_numpy("y").tolist() == [[3.0] * 4]
    finally:
        r.close()


def test_the_proto_matches_tritonclients(tmp_path: Path) -> None:
    """The shared-memory messages and methods of proto/grpc_service.proto have the field
    numbers and types of Triton's, as tritonclient compiled them."""
    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc
    from tritonclient.grpc import service_pb2

    root = Path(__file__).resolve().parents[3]
    out = tmp_path / "set.pb"
    args = ["protoc", f"-I{root / 'proto'}", f"--descriptor_set_out={out}", "grpc_service.proto"]
    assert protoc.main(args) == 0
    ours = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[0]
    theirs = descriptor_pb2.FileDescriptorProto()
    service_pb2.DESCRIPTOR.CopyToProto(theirs)

    def messages(f: Any) -> dict[str, list[tuple[Any, ...]]]:
        found: dict[str, list[tuple[Any, ...]]] = {}

        def walk(m: Any, prefix: str) -> None:
            found[prefix + m.name] = sorted(
                (x.name, x.number, x.type, x.label, x.type_name.rsplit(".", 1)[-1]) for x in m.field
            )
            for n in m.nested_type:
                walk(n, f"{prefix}{m.name}.")

        for m in f.message_type:
            walk(m, "")
        return found

    mine, triton = messages(ours), messages(theirs)
    names = [n for n in mine if "SharedMemory" in n]
    assert len(names) == 16
    assert {n: mine[n] for n in names} == {n: triton[n] for n in names}

    def methods(f: Any) -> dict[str, tuple[str, str]]:
        return {
            m.name: (m.input_type, m.output_type)
            for m in f.service[0].method
            if "SharedMemory" in m.name
        }

    assert len(methods(ours)) == 6 and methods(ours) == methods(theirs)
