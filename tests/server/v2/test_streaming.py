"""Streamed replies over REST: server-sent events on ``infer_stream`` and
``generate_stream`` read by httpx and curl as they come, ``generate``, generator and
async-generator models, errors before and after the first piece, cancellation (the model
sees it, the worker is free, the metrics count it), a slow reader (the model pauses,
memory stays flat), and the stream limits."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Served, proc_status_kib
from prometheus_client.parser import text_string_to_metric_families

MODELS = ["stream_models:Tokens", "stream_models:AsyncTokens"]


def v2_body(**parameters: Any) -> dict[str, Any]:
    return {
        "id": "req-1",
        "inputs": [{"name": "x", "datatype": "INT64", "shape": [1], "data": [1]}],
        "parameters": parameters,
    }


def sse_events(lines: Any) -> Any:
    """Yields each event's data (joined ``data:`` lines), parsed as JSON, as it arrives."""
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield json.loads("\n".join(data))
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
        # ``event:``, ``id:`` and ``:`` comments carry nothing here.
    if data:
        yield json.loads("\n".join(data))


def stream(url: str, body: Any, path: str = "infer_stream", model: str = "model") -> Any:
    with httpx.stream("POST", f"{url}/v2/models/{model}/{path}", json=body, timeout=30) as r:
        events = list(sse_events(r.iter_lines())) if r.status_code == 200 else r.read()
        return r, events


def metric(url: str, name: str, **labels: str) -> float:
    text = httpx.get(url + "/metrics").text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                total += s.value
    return total


@pytest.fixture(scope="module", params=MODELS, ids=["generator", "async-generator"])
def tokens(request: Any, serve: Any, tmp_path_factory: Any) -> tuple[Served, Path]:
    log = tmp_path_factory.mktemp("stream") / "events.log"
    server = serve(
        request.param,
        "--model-name",
        "model",
        "--model-version",
        "2",
        "--stream-idle-timeout",
        "3",
        env={"STREAM_LOG": str(log)},
    )
    return server, log


def test_pieces_arrive_one_event_each_as_they_are_yielded(tokens: Any) -> None:
    server, _ = tokens
    start = time.monotonic()
    arrivals = []
    with httpx.stream(
        "POST",
        server.url + "/v2/models/model/infer_stream",
        json=v2_body(n=4, delay=0.3),
        timeout=30,
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"] == "text/event-stream"
        events = []
        for event in sse_events(r.iter_lines()):
            arrivals.append(time.monotonic() - start)
            events.append(event)
    assert [e["outputs"][0]["data"] for e in events] == [[f"piece-{i}"] for i in range(4)]
    assert all(e["model_name"] == "model" and e["id"] == "req-1" for e in events)
    assert events[0]["model_version"] == "2"
    assert events[2]["outputs"][1] == {
        "name": "index",
        "datatype": "INT64",
        "shape": [1],
        "data": [2],
    }
    # Each event came when its piece was yielded, not all at the end.
    assert arrivals[0] < arrivals[-1] - 0.5


def test_requested_outputs_only(tokens: Any) -> None:
    server, _ = tokens
    body = {**v2_body(n=2), "outputs": [{"name": "index"}]}
    r, events = stream(server.url, body)
    assert [[o["name"] for o in e["outputs"]] for e in events] == [["index"], ["index"]]
    body = {**v2_body(n=2), "outputs": [{"name": "nope"}]}
    r, body_bytes = stream(server.url, body)
    assert r.status_code == 400
    assert 'no output named "nope"' in json.loads(body_bytes)["error"]


def test_curl_reads_the_events_unbuffered(tokens: Any) -> None:
    server, _ = tokens
    curl = shutil.which("curl")
    assert curl, "curl is needed"
    out = subprocess.run(
        [
            curl,
            "-sSN",
            "--fail-with-body",
            "-H",
            "Content-Type: application/json",
            "-d",
            json.dumps({"text_input": "hello", "parameters": {"n": 3}}),
            server.url + "/v2/models/model/generate_stream",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    events = list(sse_events(out.splitlines()))
    assert events == [
        {"model_name": "model", "model_version": "2", "text": f"piece-{i}", "index": i}
        for i in range(3)
    ]


def test_generate_answers_once_with_the_pieces_joined(tokens: Any) -> None:
    server, _ = tokens
    r = httpx.post(
        server.url + "/v2/models/model/generate",
        json={"text_input": "hello", "max_tokens": 3, "parameters": {"n": 3}},
    )
    assert r.status_code == 200, r.text
    assert r.json() == {
        "model_name": "model",
        "model_version": "2",
        "text": ["piece-0", "piece-1", "piece-2"],
        "index": [0, 1, 2],
    }
    # MLServer's form: generate takes a V2 request and answers a V2 response.
    r = httpx.post(server.url + "/v2/models/model/generate", json=v2_body(n=2))
    assert r.json()["outputs"][1]["data"] == [0, 1]
    # The versioned route and /infer give the same.
    r = httpx.post(server.url + "/v2/models/model/versions/2/infer", json=v2_body(n=2))
    assert r.json()["outputs"][0]["data"] == ["piece-0", "piece-1"]


def test_a_model_that_raises_mid_stream_ends_it_with_an_error_event(tokens: Any) -> None:
    server, _ = tokens
    r, events = stream(server.url, v2_body(n=5, fail_at=2))
    assert r.status_code == 200
    assert [e.get("outputs", [{}])[0].get("data") for e in events[:2]] == [
        ["piece-0"],
        ["piece-1"],
    ]
    assert events[2] == {"error": "ValueError: the model failed at piece 2"}
    assert len(events) == 3
    # Before the first piece, it is an ordinary error status.
    r, body = stream(server.url, v2_body(n=5, fail_at=0))
    assert r.status_code == 500
    assert json.loads(body) == {"error": "ValueError: the model failed at piece 0"}
    # The server keeps serving.
    r, events = stream(server.url, v2_body(n=2))
    assert len(events) == 2
    assert metric(server.url, "inferwire_streams_total", end="failed") >= 2


def test_bad_requests_are_4xx_naming_the_field(tokens: Any) -> None:
    server, _ = tokens
    cases = [
        ("infer_stream", b"{", 400, "invalid JSON"),
        ("infer_stream", b'{"inputs": [{"name": "x"}]}', 400, "inputs[0]"),
        ("generate_stream", b"[1, 2]", 400, "JSON object"),
        ("generate_stream", b'{"prompt": {"a": 1}}', 400, "prompt: must be"),
        ("generate", b'{"prompt": []}', 400, "prompt: an empty list"),
    ]
    for path, body, status, says in cases:
        r = httpx.post(server.url + f"/v2/models/model/{path}", content=body)
        assert r.status_code == status, (path, body, r.text)
        assert says in r.json()["error"], (path, r.text)
    r = httpx.post(server.url + "/v2/models/nope/infer_stream", json=v2_body())
    assert r.status_code == 404
    r = httpx.get(server.url + "/v2/models/model/infer_stream")
    assert r.status_code == 405


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def test_a_client_that_disconnects_stops_the_model(tokens: Any) -> None:
    server, log = tokens
    cancelled = metric(server.url, "inferwire_streams_total", end="cancelled")
    with httpx.stream(
        "POST",
        server.url + "/v2/models/model/infer_stream",
        json=v2_body(n=1000, delay=0.02),
        timeout=30,
    ) as r:
        lines = r.iter_lines()
        got = 0
        for _ in sse_events(lines):
            got += 1
            if got == 3:
                break
    # The connection is closed: the model sees GeneratorExit at its next piece.
    wait_for(lambda: any(line.startswith("closed") for line in log.read_text().splitlines()))
    closed = [line for line in log.read_text().splitlines() if line.startswith("closed")][-1]
    assert int(closed.split()[1]) < 100
    wait_for(lambda: metric(server.url, "inferwire_streams_total", end="cancelled") > cancelled)
    wait_for(lambda: metric(server.url, "inferwire_streams_open") == 0)
    # The worker is free: the next stream runs at once.
    r, events = stream(server.url, v2_body(n=2))
    assert len(events) == 2


def test_a_slow_reader_pauses_the_model_and_memory_stays_flat(tokens: Any) -> None:
    server, log = tokens
    # 64 KiB pieces, as many as the model can make: unbounded, 10,000 of them would be
    # 640 MiB buffered in the server.
    body = json.dumps(v2_body(n=10_000, size=65_536)).encode()
    before = proc_status_kib(server.proc.pid, "VmRSS")
    s = socket.create_connection(("127.0.0.1", server.http_port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    s.sendall(
        b"POST /v2/models/model/infer_stream HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: application/json\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )
    peak = before
    for _ in range(4):  # one event's worth a second
        s.recv(70_000)
        time.sleep(1)
        peak = max(peak, proc_status_kib(server.proc.pid, "VmRSS"))
    s.close()
    wait_for(lambda: "closed" in log.read_text().split("start 10000")[-1])
    closed = log.read_text().split("start 10000")[-1].split("closed")[1].split()[0]
    # Paused after what the stream's queue and the socket buffers hold, not 10,000.
    assert int(closed) < 400, closed
    assert peak - before < 64 * 1024, (before, peak)


def test_stream_limits(serve: Any) -> None:
    server = serve(
        "stream_models:AsyncTokens",
        "--model-name",
        "model",
        "--stream-max-pieces",
        "3",
        "--stream-max-bytes",
        "100000",
        "--stream-idle-timeout",
        "0.5",
        "--stream-max-open",
        "1",
    )
    r, events = stream(server.url, v2_body(n=10))
    assert len(events) == 4
    assert "limit of 3 pieces" in events[3]["error"]
    r, events = stream(server.url, v2_body(n=10, size=60_000))
    assert len(events) == 2 and "limit of 100000 bytes" in events[1]["error"]
    # A model that goes quiet: cut at the idle limit (before the first piece: 504).
    r, events = stream(server.url, v2_body(n=10, delay=2))
    assert r.status_code == 504
    assert "no piece for 0.5 s" in json.loads(events)["error"]
    # One stream open at once: a second is refused at once with Retry-After. (The quiet
    # model above holds its place until it wakes and sees its reader gone.)
    wait_for(lambda: stream(server.url, v2_body(n=1))[0].status_code == 200)
    with httpx.stream(
        "POST", server.url + "/v2/models/model/infer_stream", json=v2_body(n=30, delay=0.1)
    ) as first:
        assert first.status_code == 200
        second = httpx.post(server.url + "/v2/models/model/infer_stream", json=v2_body(n=1))
        assert second.status_code == 503
        assert second.headers["retry-after"] == "1"
        assert "--stream-max-open" in second.json()["error"]
    assert metric(server.url, "inferwire_streams_total", end="limited") >= 3


def test_a_model_that_does_not_stream_answers_one_piece(serve: Any) -> None:
    server = serve("stream_models:Echo", "--model-name", "model")
    _, events = stream(server.url, v2_body())
    assert [e["outputs"][0]["data"] for e in events] == [[1]]


def test_a_generator_predict_streams_and_joins(serve: Any) -> None:
    server = serve("stream_models:GeneratorPredict", "--model-name", "model")
    body = {"inputs": [{"name": "x", "datatype": "FP64", "shape": [2], "data": [1.5, 2]}]}
    r, events = stream(server.url, body)
    assert [e["outputs"][0]["data"] for e in events] == [[1.5, 2], [3, 4], [4.5, 6]]
    # Seldon's predict gets the pieces joined.
    r = httpx.post(server.url + "/api/v1.0/predictions", json={"data": {"ndarray": [1, 2]}})
    assert r.json()["data"]["ndarray"] == [1, 2, 2, 4, 3, 6]


def test_metrics_count_streams_pieces_and_the_first_piece(tokens: Any) -> None:
    server, _ = tokens
    pieces = metric(server.url, "inferwire_stream_pieces_total", protocol="rest")
    stream(server.url, v2_body(n=3))
    assert metric(server.url, "inferwire_stream_pieces_total", protocol="rest") == pieces + 3
    assert metric(server.url, "inferwire_stream_bytes_total", protocol="rest") > 0
    assert metric(server.url, "inferwire_stream_first_piece_seconds_count") > 0
    assert metric(server.url, "inferwire_streams_total", end="completed") > 0
    text = httpx.get(server.url + "/metrics").text
    assert 'route="infer-stream"' in text
