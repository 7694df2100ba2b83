"""Dynamic batching: concurrent requests are joined into one model call and each caller
gets exactly its own rows back, in its own protocol and encoding; a bad request fails
alone; a model that cannot be batched gets a clear error."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np
import pytest
from seldon_client import grpc_call, rest, tftensor, to_numpy

BATCHING = ("--max-batch-size", "8", "--max-batch-delay", "0.05", "--io-threads", "2")


def _body(encoding: str, rows: np.ndarray) -> dict[str, Any]:
    if encoding == "ndarray":
        return {"data": {"ndarray": rows.tolist()}}
    if encoding == "tensor":
        return {"data": {"tensor": {"shape": list(rows.shape), "values": rows.ravel().tolist()}}}
    return {"data": {"tftensor": tftensor(rows)}}


def _batch_sizes(url: str) -> dict[str, int]:
    text = httpx.get(url + "/metrics").text
    return dict(
        re.findall(r'^inferwire_batch_size_bucket\{model="[^"]*",le="([^"]+)"\} (\d+)$', text, re.M)
    )  # type: ignore[arg-type]


def test_concurrent_callers_each_get_their_own_rows(serve: Any, pb: Any) -> None:
    server = serve("models.py:Doubler", *BATCHING)
    cases = [
        (protocol, encoding, i)
        for i in range(4)
        for protocol in ("rest", "grpc")
        for encoding in ("ndarray", "tensor", "tftensor")
    ]
    barrier = threading.Barrier(len(cases))
    channel = server.channel()

    def call(case: tuple[str, str, int]) -> tuple[dict[str, Any], np.ndarray]:
        protocol, encoding, i = case
        # Distinct rows per caller (and a distinct row count), all float64 of width 2.
        rows = np.arange(2 * (i + 1), dtype=np.float64).reshape(i + 1, 2) + 100 * i
        rows += 10 * len(protocol) + {"ndarray": 0, "tensor": 1000, "tftensor": 2000}[encoding]
        barrier.wait()
        if protocol == "rest":
            r = rest(server.url, _body(encoding, rows))
            assert r.status_code == 200, r.text
            return r.json(), rows
        return grpc_call(channel, pb, _body(encoding, rows)), rows

    with ThreadPoolExecutor(len(cases)) as ex:
        results = list(ex.map(call, cases))
    channel.close()
    for (_protocol, encoding, _i), (reply, rows) in zip(cases, results, strict=True):
        assert encoding in reply["data"], reply
        np.testing.assert_array_equal(to_numpy(reply["data"]), rows * 2)
    largest = max(r["meta"]["tags"]["largest_batch"] for r, _ in results)
    assert largest > 4, f"the model never saw more than {largest} rows at once"
    sizes = _batch_sizes(server.url)
    count = int(sizes["+Inf"])
    assert count < len(cases), f"{count} model calls for {len(cases)} requests: no batching"
    assert int(sizes["1"]) < count, sizes  # some calls served several requests


def test_a_bad_request_fails_alone(serve: Any) -> None:
    server = serve("models.py:NoNegatives", "--max-batch-size", "4", "--max-batch-delay", "0.3")
    values = [1.0, -1.0, 2.0, 3.0]
    barrier = threading.Barrier(len(values))

    def call(v: float) -> httpx.Response:
        barrier.wait()
        return rest(server.url, {"data": {"ndarray": [[v]]}})

    with ThreadPoolExecutor(len(values)) as ex:
        replies = list(ex.map(call, values))
    for v, r in zip(values, replies, strict=True):
        if v < 0:
            assert r.status_code == 500
            assert "negative values are not allowed" in r.json()["status"]["info"]
        else:
            assert r.status_code == 200, r.text
            assert r.json()["data"]["ndarray"] == [[v + 1]]
    # All four were gathered into one call, which failed; then each ran alone.
    sizes = _batch_sizes(server.url)
    assert int(sizes["+Inf"]) == 5 and int(sizes["4"]) - int(sizes["2"]) == 1, sizes


def test_a_model_that_does_not_return_rows_gets_a_clear_error(serve: Any) -> None:
    server = serve("models.py:Total", "--max-batch-size", "2", "--max-batch-delay", "0.3")
    barrier = threading.Barrier(2)

    def call(v: float) -> httpx.Response:
        barrier.wait()
        return rest(server.url, {"data": {"ndarray": [[v, v]]}})

    with ThreadPoolExecutor(2) as ex:
        replies = list(ex.map(call, [1.0, 2.0]))
    for r in replies:
        assert r.status_code == 500
        info = r.json()["status"]["info"]
        assert "one row per input row" in info and "2 requests" in info, info
    # Alone, the same model is fine, and the server keeps serving.
    r = rest(server.url, {"data": {"ndarray": [[1.0, 2.0]]}})
    assert r.status_code == 200 and r.json()["data"]["ndarray"] == [3.0]


def test_requests_that_cannot_be_joined_still_work(serve: Any) -> None:
    server = serve("models.py:Echo", "--max-batch-size", "4", "--max-batch-delay", "0.05")
    bodies = [
        {"data": {"ndarray": [[1, 2]]}},
        {"data": {"ndarray": [[1, 2, 3]]}},  # another width: another group
        {"data": {"ndarray": [["a", "b"]]}},  # strings: alone
        {"strData": "hello"},
        {"jsonData": {"k": [1]}},
    ]
    barrier = threading.Barrier(len(bodies))

    def call(body: dict[str, Any]) -> httpx.Response:
        barrier.wait()
        return rest(server.url, body)

    with ThreadPoolExecutor(len(bodies)) as ex:
        replies = list(ex.map(call, bodies))
    assert [r.status_code for r in replies] == [200] * len(bodies), [r.text for r in replies]
    assert replies[0].json()["data"]["ndarray"] == [[1, 2]]
    assert replies[1].json()["data"]["ndarray"] == [[1, 2, 3]]
    assert replies[2].json()["data"]["ndarray"] == [["a", "b"]]
    assert replies[3].json()["strData"] == "hello"
    assert replies[4].json()["jsonData"] == {"k": [1]}


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--max-batch-delay", "0.01"], "max_batch_delay is set but max_batch_size is 1"),
        (["--max-batch-size", "8", "--max-concurrency", "2"], "batches could never fill"),
        (["--max-batch-size", "0"], "max_batch_size: must be at least 1"),
    ],
)
def test_batching_settings_are_checked(args: list[str], text: str) -> None:
    import subprocess
    import sys

    from conftest import TESTS

    p = subprocess.run(
        [sys.executable, "-m", "inferwire", "serve", "models.py:Echo", *args],
        cwd=TESTS,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 2 and text in p.stderr, p.stderr


def test_predict_raw_cannot_be_batched() -> None:
    import subprocess
    import sys

    from conftest import TESTS

    p = subprocess.run(
        [sys.executable, "-m", "inferwire", "serve", "models.py:EchoRaw", "--max-batch-size", "4"],
        cwd=TESTS,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 1 and "defines predict_raw" in p.stderr, p.stderr


def test_v2_requests_are_batched_too(serve: Any) -> None:
    import tritonclient.grpc as grpcclient
    import tritonclient.http as httpclient

    server = serve("models.py:Doubler", "--model-name", "d", *BATCHING)
    cases = [(transport, i) for i in range(4) for transport in ("json", "binary", "grpc")]
    barrier = threading.Barrier(len(cases))

    def call(case: tuple[str, int]) -> tuple[np.ndarray, np.ndarray]:
        transport, i = case
        rows = np.arange(3 * (i + 1), dtype=np.float64).reshape(i + 1, 3) + 100 * i
        if transport == "grpc":
            client: Any = grpcclient.InferenceServerClient(url=server.grpc_target)
            inp: Any = grpcclient.InferInput("x", list(rows.shape), "FP64")
            inp.set_data_from_numpy(rows)
            barrier.wait()
            return client.infer("d", [inp]).as_numpy("output-0"), rows
        client = httpclient.InferenceServerClient(url=f"127.0.0.1:{server.http_port}")
        inp = httpclient.InferInput("x", list(rows.shape), "FP64")
        inp.set_data_from_numpy(rows, binary_data=transport == "binary")
        barrier.wait()
        return client.infer("d", [inp]).as_numpy("output-0"), rows

    with ThreadPoolExecutor(len(cases)) as ex:
        results = list(ex.map(call, cases))
    for got, rows in results:
        np.testing.assert_array_equal(got, rows * 2)
    sizes = _batch_sizes(server.url)
    assert int(sizes["+Inf"]) < len(cases) and int(sizes["1"]) < int(sizes["+Inf"]), sizes
