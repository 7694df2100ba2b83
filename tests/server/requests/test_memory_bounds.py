"""The memory a request can make the server hold is bounded by a small constant times its
body size, for every protocol and encoding: each case is the worst shape of input found
for its decoder (many tiny inputs, empty strings, empty objects, one-byte numbers), sent
to a fresh server running the no-op model with default settings, and the server's peak
RSS growth (VmHWM) is measured. A V2 request of 3,000 one-number inputs (176 KB) used to
take 600 MB: each input reserved room for the rest of the body."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from conftest import _children, proc_status_kib, reset_peak_rss

# Peak RSS growth allowed per byte of body, measured as the slope between two sizes of
# the same input (so fixed costs such as allocator arenas cancel out). Python objects
# made from the tightest JSON cost tens of bytes per byte (`{},` is 3 bytes and becomes
# a 64-byte dict and its pointer, with the parsed JSON value beside it while it is
# converted); what was found before was thousands, and grew with the number of inputs.
PER_BYTE = 80
N = 50_000


def v2_many_inputs(n: int) -> bytes:
    inputs = [
        {"name": f"i{i}", "shape": [1], "datatype": "FP32", "data": [1]} for i in range(n // 5)
    ]
    return json.dumps({"inputs": inputs}).encode()


def v2_empty_strings(n: int) -> bytes:
    data = [""] * (3 * n)
    return json.dumps({"inputs": [{"name": "b", "shape": [len(data)], "datatype": "BYTES",
                                   "data": data}]}).encode()  # fmt: skip


def generate_many_keys(n: int) -> bytes:
    # `inputs` too: the body is parsed once more to tell it from a V2 request.
    keys = {"inputs": 1, **{f"k{i}": 1 for i in range(n // 2)}}
    return json.dumps(keys, separators=(",", ":")).encode()


def generate(value: Callable[[int], Any]) -> Callable[[int], bytes]:
    return lambda n: json.dumps({"x": value(n)}, separators=(",", ":")).encode()


def seldon(doc: Callable[[int], Any]) -> Callable[[int], bytes]:
    return lambda n: json.dumps(doc(n), separators=(",", ":")).encode()


REST = {
    "v2 json: many one-number inputs": ("/v2/models/Noop/infer", v2_many_inputs),
    "v2 json: BYTES of empty strings": ("/v2/models/Noop/infer", v2_empty_strings),
    "generate: one-digit ints": ("/v2/models/Noop/generate", generate(lambda n: [1] * (4 * n))),
    "generate: empty strings": ("/v2/models/Noop/generate", generate(lambda n: [""] * (3 * n))),
    "seldon json: ndarray of one-digit ints": (
        "/api/v1.0/predictions", seldon(lambda n: {"data": {"ndarray": [1] * (4 * n)}})),
    "seldon json: ndarray of one-letter strings": (
        "/api/v1.0/predictions", seldon(lambda n: {"data": {"ndarray": ["a"] * (3 * n)}})),
    "seldon json: names": ("/api/v1.0/predictions",
        seldon(lambda n: {"data": {"names": [""] * (3 * n), "ndarray": [1]}})),
    "seldon json: jsonData of zeros": (
        "/api/v1.0/predictions", seldon(lambda n: {"jsonData": [0] * (4 * n)})),
    "seldon json: jsonData of empty objects": (
        "/api/v1.0/predictions", seldon(lambda n: {"jsonData": [{}] * (3 * n)})),
    "seldon json: ndarray of empty rows": (
        "/api/v1.0/predictions", seldon(lambda n: {"data": {"ndarray": [[]] * (3 * n)}})),
}  # fmt: skip


def peak_kib(pid: int) -> int:
    return proc_status_kib(pid, "VmHWM")


def slope(
    serve: Any,
    send: Callable[[Any, Any], int],
    make: Callable[[int], Any],
    size: Callable[[Any], int],
    status: int = 200,
) -> float:
    """Peak RSS growth per byte of body between inputs of N and 4N units."""
    small, large = make(N), make(4 * N)
    grown_small = measure(serve, lambda s: send(s, small), size(small), status)
    grown_large = measure(serve, lambda s: send(s, large), size(large), status)
    per_byte = (grown_large - grown_small) * 1024 / (size(large) - size(small))
    print(f"slope: {per_byte:.1f} bytes per byte of body")
    return per_byte


def measure(serve: Any, send: Callable[[Any], int], size: int, status: int = 200) -> int:
    """Peak RSS growth in KiB of one request (answered `status`) on a fresh, warmed-up
    server."""
    server = serve("noop")
    # Warm up: the first request initialises what every request shares.
    assert (
        httpx.post(
            server.url + "/api/v1.0/predictions", json={"data": {"ndarray": [1]}}
        ).status_code
        == 200
    )
    # The worker, not the supervisor that forked it, holds the request.
    (worker,) = _children(server.proc.pid) or {server.proc.pid}
    reset_peak_rss(worker)
    before = peak_kib(worker)
    assert send(server) == status
    grown = peak_kib(worker) - before
    server.stop()
    print(f"{size:>9} bytes: +{grown} KiB, {grown * 1024 / size:.1f} per byte")
    return grown


@pytest.mark.parametrize("case", sorted(REST))
def test_rest_memory_is_bounded_by_the_body(serve: Any, case: str) -> None:
    path, make = REST[case]

    def send(server: Any, body: bytes) -> int:
        r = httpx.post(server.url + path, content=body,
                       headers={"Content-Type": "application/json"}, timeout=60)  # fmt: skip
        return r.status_code

    assert slope(serve, send, make, len) <= PER_BYTE, case


def test_generate_bodies_name_a_bounded_number_of_inputs(serve: Any) -> None:
    """Each key of a flat generate body is an input of its own, about a kilobyte from as
    little as `"k1":1,`: 101 bytes of peak RSS per byte of body before the count was
    bounded. Up to 1,024 inputs are taken; a body of more is refused with a 400 naming the
    limit as it is parsed, at both sizes, before the rest of its keys are held."""
    url = "/v2/models/Noop/generate"
    server = serve("noop")
    at_limit = json.dumps({f"k{i}": 1 for i in range(1024)}).encode()
    assert httpx.post(server.url + url, content=at_limit).status_code == 200
    server.stop()

    def send(server: Any, body: bytes) -> int:
        r = httpx.post(server.url + url, content=body,
                       headers={"Content-Type": "application/json"}, timeout=60)  # fmt: skip
        assert "the body names more than 1024 inputs" in r.json()["error"], r.text
        return r.status_code

    assert slope(serve, send, generate_many_keys, len, status=400) <= PER_BYTE


def test_grpc_v2_memory_is_bounded_by_the_body(serve: Any) -> None:
    from tritonclient.grpc import service_pb2 as v2
    from tritonclient.grpc import service_pb2_grpc

    def many_inputs(n: int) -> Any:
        req = v2.ModelInferRequest(model_name="Noop")
        for i in range(n // 5):
            req.inputs.add(name=f"i{i}", datatype="INT32", shape=[1],
                           contents=v2.InferTensorContents(int_contents=[1]))  # fmt: skip
        return req

    def empty_strings(n: int) -> Any:
        req = v2.ModelInferRequest(model_name="Noop")
        req.inputs.add(name="b", datatype="BYTES", shape=[3 * n],
                       contents=v2.InferTensorContents(bytes_contents=[b""] * (3 * n)))  # fmt: skip
        return req

    def send(server: Any, message: Any) -> int:
        with server.channel() as ch:
            service_pb2_grpc.GRPCInferenceServiceStub(ch).ModelInfer(message, timeout=60)
        return 200

    for make in (many_inputs, empty_strings):
        assert slope(serve, send, make, lambda m: m.ByteSize()) <= PER_BYTE, make.__name__


def test_grpc_seldon_memory_is_bounded_by_the_body(serve: Any, pb: Any) -> None:
    from google.protobuf import json_format

    def send(server: Any, message: Any) -> int:
        with server.channel() as ch:
            pb.grpc.SeldonStub(ch).Predict(message, timeout=60)
        return 200

    for doc in (lambda n: {"data": {"ndarray": [1] * (2 * n)}}, lambda n: {"jsonData": [{}] * n}):

        def make(n: int, doc: Callable[[int], Any] = doc) -> Any:
            return json_format.ParseDict(doc(n), pb.msgs.SeldonMessage())

        assert slope(serve, send, make, lambda m: m.ByteSize()) <= PER_BYTE
