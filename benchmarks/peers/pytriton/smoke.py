"""Smoke test of serve.py (PyTriton serving the decoupled ``tokens`` model and the unary
``noop``, ``images`` and ``fail`` models, metrics on), against 127.0.0.1 only.

Starts serve.py on free ports, then checks the streams, counting pieces and their content:

- gRPC ``ModelStreamInfer`` with tritonclient's stream API (``start_stream``,
  ``async_stream_infer(..., enable_empty_final_response=True)``): one request answered with
  256 pieces of ``0123456789abcdef`` and then one empty response flagged
  ``triton_final_response``; 8 requests in flight on one stream at once; the request's
  parameters (5 pieces of 4 bytes); a request whose parameter is out of range gets an error
  and the stream goes on serving;
- HTTP ``POST /v2/models/tokens/generate_stream`` (Triton's generate extension, flat JSON
  body) read as server-sent events with httpx: 256 ``{"text": ...}`` events;

and the unary models with tritonclient, every value compared:

- ``noop`` (V2 echo, batch dimension first): 1 and 100,000 INT64 (INT64's least and
  greatest values among them) over HTTP JSON, HTTP with the binary tensor extension, and
  gRPC (``raw_input_contents``);
- ``images`` (seed 001): the "basic" fields, a base64 image and a binary image over HTTP
  (JSON; binary extension) and gRPC (raw), each answered ``prediction1`` [0.1, 0.2, 0.3]
  and ``prediction2`` ``{"a": 1}``;
- bad input (httpx and gRPC: wrong datatype, no batch dimension, unknown model or input,
  malformed JSON, text that is not base64): the status and that the message names the
  fault; ``fail`` (a model that raises): HTTP 500 / gRPC INTERNAL with its message, and
  the server serves the next request;
- dynamic batching: 32 requests at once make fewer executions than requests (Triton's
  metrics), and ``/metrics`` counts each model's requests;

and last that Triton listens on loopback only, that serve.py's process tree holds
tritonserver and the Python backend's stubs (so ``--server-pid`` of serve.py measures them
all), and that nothing is left after SIGTERM.

    .tools/peers/pytriton/bin/python benchmarks/peers/pytriton/smoke.py \\
        [--instances 1] [--sync] [--server-log FILE]

Prints the time to the first piece and the median gap between pieces, and the median time
of a few unary calls (rough: the client is Python on the same machine).
"""

from __future__ import annotations

import argparse
import base64
import json
import queue
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from stream_check import (  # noqa: E402
    PIECE,
    PIECES,
    Peer,
    Stream,
    check_timing,
    free_port,
    left_running,
    loopback_only,
    read_sse,
)

MODEL = "tokens"


def text_input() -> grpcclient.InferInput:
    inp = grpcclient.InferInput("text_input", [1], "BYTES")
    inp.set_data_from_numpy(np.array([b"hi"], dtype=object))
    return inp


def is_final(result: Any) -> bool:
    final = result.get_response().parameters.get("triton_final_response")
    return bool(final is not None and final.bool_param)


def grpc_streams(peer: Peer) -> list[str]:
    replies: queue.Queue[tuple[float, Any, Any]] = queue.Queue()
    client = grpcclient.InferenceServerClient(peer.grpc)
    lines = []
    try:
        client.start_stream(
            callback=lambda result, error: replies.put((time.monotonic(), result, error))
        )

        def run(ids: list[str], parameters: dict[str, Any] | None = None) -> dict[str, Stream]:
            """Sends the requests at once; collects their pieces until each has its final
            (empty) response or an error."""
            streams = {i: Stream() for i in ids}
            started = time.monotonic()
            for i in ids:
                client.async_stream_infer(
                    MODEL,
                    [text_input()],
                    request_id=i,
                    parameters=parameters,
                    enable_empty_final_response=True,
                )
            open_ = set(ids)
            while open_:
                at, result, error = replies.get(timeout=60)
                if error is not None:
                    # Triton's error replies carry no id here: one request in flight.
                    assert len(open_) == 1, f"error with {len(open_)} requests open: {error}"
                    (i,) = open_
                    streams[i].error = str(error)
                    open_.clear()
                    continue
                i = result.get_response().id
                assert i in open_, f"a reply for {i!r}, which is not open"
                if is_final(result):
                    assert result.as_numpy("text") is None, "the final response has outputs"
                    open_.discard(i)
                    continue
                streams[i].pieces.append(result.as_numpy("text").tolist())
                streams[i].times.append(at - started)
            return streams

        (one,) = run(["g-1"]).values()
        assert all(p == [PIECE] for p in one.pieces), one.pieces[:3]
        lines.append(check_timing("gRPC stream, 1 request", one))
        many = run([f"m-{i}" for i in range(8)])
        for s in many.values():
            assert all(p == [PIECE] for p in s.pieces), s.pieces[:3]
            check_timing("gRPC stream, 8 requests", s)
        slowest = max(s.total_ms for s in many.values())
        lines.append(f"gRPC stream, 8 requests at once: all {8 * PIECES} in {slowest:.0f} ms")
        (few,) = run(["p-1"], {"pieces": 5, "piece_bytes": 4}).values()
        assert all(p == [PIECE[:4]] for p in few.pieces), few.pieces
        lines.append(check_timing("gRPC stream, pieces=5 piece_bytes=4", few, 5))
        (bad,) = run(["e-1"], {"pieces": -1}).values()
        assert bad.error and "pieces" in bad.error, bad.error
        lines.append(f"gRPC stream, pieces=-1: error {bad.error.splitlines()[-1][:100]!r}")
        (after,) = run(["a-1"]).values()
        lines.append(check_timing("gRPC stream after the error", after))
    finally:
        client.stop_stream()
        client.close()
    return lines


def rest(peer: Peer) -> list[str]:
    url = f"{peer.url}/v2/models/{MODEL}/generate_stream"
    lines = []
    with httpx.Client(timeout=60) as client:
        stream = read_sse(client, url, {"text_input": "hi"})
        for event in stream.pieces:
            got = (event["model_name"], event["text"])
            assert got == (MODEL, PIECE.decode()), event
        lines.append(check_timing("HTTP generate_stream", stream))
        few = read_sse(client, url, {"text_input": "hi", "parameters": {"pieces": 3}})
        lines.append(check_timing("HTTP generate_stream, pieces=3", few, 3))
        bad = read_sse(client, url, {"text_input": "hi", "parameters": {"pieces": -1}})
        message = bad.error or (bad.pieces and bad.pieces[-1].get("error"))
        assert message and "pieces" in str(message), (bad.error, bad.pieces)
        status = bad.error.split()[0] if bad.error else "200, an error event"
        lines.append(f"HTTP generate_stream, pieces=-1: {status}, the message names 'pieces'")
    return lines


# ---------------------------------------------------------------- unary models

N = 100_000
# kserve/smoke.py's values, with INT64's least and greatest at the ends.
BIG = (np.arange(N, dtype=np.int64) - N // 2) * np.int64(92_233_720_368_547)
BIG[0], BIG[-1] = np.iinfo(np.int64).min, np.iinfo(np.int64).max
# The model never decodes an image: bytes of a seed-001-sized JPEG's length will do.
IMAGE = b"\xff\xd8\xff\xe0" + np.random.default_rng(1).bytes(229_000) + b"\xff\xd9"
BASIC = {"field1": "a" * 100, "field2": "b" * 100, "field3": 42, "field4": {"x": 1, "y": 2}}
ANSWER = ([[0.1, 0.2, 0.3]], [[b'{"a": 1}']])

Client = Any  # tritonclient.http or tritonclient.grpc's InferenceServerClient


def tensor(mod: Any, name: str, value: np.ndarray, binary: bool = True) -> Any:
    """An input with the batch dimension first (serve.py batches by default)."""
    value = value[np.newaxis]
    inp = mod.InferInput(name, list(value.shape), "BYTES" if value.dtype == object else "INT64")
    if mod is httpclient:
        inp.set_data_from_numpy(value, binary_data=binary)
    else:
        inp.set_data_from_numpy(value)
    return inp


def outputs(mod: Any, names: list[str], binary: bool) -> list[Any] | None:
    if mod is httpclient:
        return [httpclient.InferRequestedOutput(n, binary_data=binary) for n in names]
    return None  # gRPC: raw_output_contents always


def timed(call: Callable[[], Any], times: int = 5) -> tuple[Any, float]:
    """The call's last result and its median time over ``times`` calls (ms)."""
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        result = call()
        spent.append((time.perf_counter() - started) * 1000)
    return result, statistics.median(spent)


@contextmanager
def clients(peer: Peer) -> Iterator[tuple[Any, Any]]:
    """tritonclient's HTTP and gRPC clients for the peer, closed afterwards."""
    http = httpclient.InferenceServerClient(peer.url.removeprefix("http://"))
    grpc = grpcclient.InferenceServerClient(peer.grpc)
    try:
        yield http, grpc
    finally:
        http.close()
        grpc.close()


def echo_checks(peer: Peer) -> list[str]:
    lines = []
    with clients(peer) as (http, grpc):
        forms: list[tuple[str, Client, Any, bool]] = [
            ("HTTP JSON", http, httpclient, False),
            ("HTTP binary extension", http, httpclient, True),
            ("gRPC raw", grpc, grpcclient, True),
        ]
        for label, client, mod, binary in forms:
            for values in (np.array([7], dtype=np.int64), BIG):

                def call(
                    c: Client = client, m: Any = mod, v: np.ndarray = values, b: bool = binary
                ) -> Any:
                    return c.infer(
                        "noop", [tensor(m, "input-0", v, b)], outputs=outputs(m, ["output-0"], b)
                    )

                result, ms = timed(call, 5 if len(values) > 1 else 20)
                got = result.as_numpy("output-0")
                assert got.dtype == np.int64 and got.shape == (1, len(values)), got.shape
                assert np.array_equal(got[0], values), f"{label}: the echo differs"
                lines.append(f"noop {label}, {len(values):,} INT64: echoed, {ms:.2f} ms")
    return lines


def images_checks(peer: Peer) -> list[str]:
    lines = []
    b64 = base64.b64encode(IMAGE)

    def basic(mod: Any, binary: bool) -> list[Any]:
        return [
            tensor(mod, "field1", np.array([BASIC["field1"].encode()], dtype=object), binary),
            tensor(mod, "field2", np.array([BASIC["field2"].encode()], dtype=object), binary),
            tensor(mod, "field3", np.array([BASIC["field3"]], dtype=np.int64), binary),
            tensor(mod, "field4", np.array([json.dumps(BASIC["field4"]).encode()], dtype=object)),
        ]

    with clients(peer) as (http, grpc):
        for transport, client, mod, binary in (
            ("HTTP", http, httpclient, False),
            ("gRPC", grpc, grpcclient, True),
        ):
            kinds = {
                "basic": basic(mod, binary),
                "base64": [tensor(mod, "image_b64", np.array([b64], dtype=object), binary)],
                # Binary: HTTP's binary tensor extension; gRPC's raw_input_contents.
                "binary": [tensor(mod, "image", np.array([IMAGE], dtype=object), True)],
            }
            for kind, inputs in kinds.items():

                def call(c: Client = client, m: Any = mod, i: list[Any] = inputs) -> Any:
                    return c.infer(
                        "images", i, outputs=outputs(m, ["prediction1", "prediction2"], False)
                    )

                result, ms = timed(call)
                # tritonclient gives a BYTES output sent as JSON as str, sent binary as bytes.
                texts = [[t if isinstance(t, bytes) else t.encode() for t in row] for row in
                         result.as_numpy("prediction2").tolist()]  # fmt: skip
                got = (result.as_numpy("prediction1").tolist(), texts)
                assert got == ANSWER, got
                lines.append(f"images {transport} {kind}: answered, {ms:.2f} ms")
    return lines


def bad_input(peer: Peer) -> list[str]:
    """What Triton answers to bad requests and to a model that raises, then that it still
    serves. Returns the status and the first line of each message."""
    lines = []
    infer = f"{peer.url}/v2/models/%s/infer"

    def v2(name: str, shape: list[int], datatype: str, data: list[Any]) -> dict[str, Any]:
        return {"inputs": [{"name": name, "shape": shape, "datatype": datatype, "data": data}]}

    # Triton 2.51's answers: 400 when the request is read but does not fit the model, 500
    # when its JSON cannot be read (malformed, a value past INT64, too few values).
    cases: list[tuple[str, str, Any, int, str]] = [
        ("wrong datatype", "noop", v2("input-0", [1, 1], "FP32", [1.5]), 400, "FP32"),
        ("no batch dimension", "noop", v2("input-0", [1], "INT64", [7]), 400, "batch dim"),
        ("batch over 64", "noop", v2("input-0", [65, 1], "INT64", [7] * 65), 400, "<= 64"),
        ("unknown input", "noop", v2("nope", [1, 1], "INT64", [7]), 400, "nope"),
        ("unknown model", "nope", v2("input-0", [1, 1], "INT64", [7]), 404, "nope"),
        ("past INT64", "noop", v2("input-0", [1, 1], "INT64", [2**63]), 500, "'data'"),
        ("shape and data disagree", "noop", v2("input-0", [1, 3], "INT64", [7]), 500, "shape"),
        ("malformed JSON", "noop", b'{"inputs": [', 500, "JSON"),
        ("not base64", "images", v2("image_b64", [1, 1], "BYTES", ["no!"]), 500, "base64"),
        ("a model that raises", "fail", v2("input-0", [1, 1], "INT64", [7]), 500, "on purpose"),
    ]
    with httpx.Client(timeout=30) as client:
        for label, model, body, status, needle in cases:
            content = body if isinstance(body, bytes) else json.dumps(body).encode()
            reply = client.post(infer % model, content=content)
            message = reply.json().get("error", "") if reply.content else ""
            first = message.splitlines()[0] if message else ""
            assert reply.status_code == status and needle in message, (
                label,
                reply.status_code,
                message[:500],
            )
            lines.append(f"bad input, HTTP, {label}: {reply.status_code} {first[:110]!r}")
        # PyTriton guards Triton's admin APIs with a token of its own by default.
        unload = client.post(f"{peer.url}/v2/repository/models/noop/unload")
        assert unload.status_code == 403 and "restricted" in unload.text, unload.text
        lines.append(f"unload without a token: 403 {unload.json()['error']!r}")
        again = client.post(infer % "noop", json=v2("input-0", [1, 1], "INT64", [7]))
        assert again.status_code == 200 and again.json()["outputs"][0]["data"] == [7], again.text
        lines.append("after them: noop answers 200 over HTTP")
    grpc = grpcclient.InferenceServerClient(peer.grpc)
    try:
        for label, model, name, value, needle in (
            ("wrong datatype", "noop", "input-0", np.array([1.5], dtype=np.float32), "FP32"),
            ("a model that raises", "fail", "input-0", np.array([7], dtype=np.int64), "purpose"),
        ):
            inp = grpcclient.InferInput(
                name, [1, 1], "FP32" if value.dtype != np.int64 else "INT64"
            )
            inp.set_data_from_numpy(value[np.newaxis])
            try:
                grpc.infer(model, [inp])
            except InferenceServerException as e:
                assert needle in str(e.message()), e.message()
                lines.append(f"bad input, gRPC, {label}: {e.status()} {e.message()[:90]!r}")
            else:
                raise AssertionError(f"gRPC {label} was answered")
        ok = grpc.infer("noop", [tensor(grpcclient, "input-0", np.array([7], dtype=np.int64))])
        assert ok.as_numpy("output-0").tolist() == [[7]]
        lines.append("after them: noop answers over gRPC")
    finally:
        grpc.close()
    return lines


def metric(text: str, name: str, model: str) -> float:
    for line in text.splitlines():
        if line.startswith(f"{name}{{") and f'model="{model}"' in line:
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} for {model} is not in /metrics")


def batching_and_metrics(peer: Peer, metrics_url: str) -> list[str]:
    """32 requests at once to ``noop``: Triton's counters must show fewer executions than
    requests (the dynamic batcher joined some)."""
    with httpx.Client(timeout=30) as client:
        before = client.get(metrics_url).text
        body = {"inputs": [{"name": "input-0", "shape": [1, 1], "datatype": "INT64", "data": [7]}]}
        url = f"{peer.url}/v2/models/noop/infer"
        statuses: list[int] = []
        barrier = threading.Barrier(32)

        def send() -> None:
            with httpx.Client(timeout=30) as own:
                barrier.wait()
                statuses.append(own.post(url, json=body).status_code)

        threads = [threading.Thread(target=send) for _ in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert statuses == [200] * 32, statuses
        after = client.get(metrics_url).text
    requests = metric(after, "nv_inference_count", "noop") - metric(
        before, "nv_inference_count", "noop"
    )
    executions = metric(after, "nv_inference_exec_count", "noop") - metric(
        before, "nv_inference_exec_count", "noop"
    )
    assert requests == 32, requests
    assert executions < requests, f"{executions} executions for {requests} requests"
    success = metric(after, "nv_inference_request_success", "images")
    failures = metric(after, "nv_inference_request_failure", "fail")
    assert success > 0 and failures > 0, (success, failures)
    return [
        f"dynamic batching: 32 requests at once ran as {executions:.0f} executions",
        f"/metrics: images {success:.0f} requests served, fail {failures:.0f} failed",
    ]


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie waiting for its reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--instances", type=int, default=1)
    p.add_argument("--sync", action="store_true", help="serve.py --sync (a plain generator)")
    p.add_argument(
        "--server-log",
        type=argparse.FileType("w"),
        default=subprocess.DEVNULL,
        help="file for PyTriton's and Triton's log (default: discarded)",
    )
    args = p.parse_args()
    metrics_port = free_port()
    argv = [sys.executable, str(HERE / "serve.py"), "--instances", str(args.instances)]
    argv += ["--models", "tokens,noop,images,fail", "--metrics"]
    argv += ["--metrics-port", str(metrics_port)]
    peer = Peer(argv + (["--sync"] if args.sync else []), args.server_log)
    markers: list[str] = []
    pids: set[int] = set()
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    try:
        listening = peer.listening()
        print(f"started in {peer.start_s:.1f} s, listening on {', '.join(listening)}")
        loopback_only(listening)
        tree = subprocess.run(
            ["ps", "-ww", "-o", "args=", "-p", ",".join(map(str, peer.tree()))],
            capture_output=True,
            text=True,
        ).stdout
        assert "bin/tritonserver" in tree, f"tritonserver is not below serve.py:\n{tree}"
        # This server's copy of tritonserver lives in its PyTriton workspace: other
        # PyTriton servers on the machine (another checkout's) are not this test's.
        workspace = re.search(r"\S*/workspace_[^/\s]+/", tree)
        assert workspace, f"no PyTriton workspace in:\n{tree}"
        markers.append(workspace.group(0))
        assert "triton_python_backend_stub" in tree, f"no backend stub below serve.py:\n{tree}"
        for check in (grpc_streams, rest, echo_checks, images_checks, bad_input):
            for line in check(peer):
                print(line, flush=True)
        for line in batching_and_metrics(peer, metrics_url):
            print(line, flush=True)
        # The processes to be gone after SIGTERM: this server's tree as it is now (serve.py's
        # helpers included) and anything naming its workspace. Not every process of this
        # virtualenv: another run of it may be going on beside this one.
        pids = peer.tree()
    finally:
        print(f"stopped in {peer.stop():.1f} s")
    left = [line for marker in markers for line in left_running(marker)]
    left += [f"pid {pid}" for pid in sorted(pids) if alive(pid)]
    if left:
        print(f"LEFT RUNNING: {left}")
        return 1
    print("no PyTriton or tritonserver process left; streaming checks passed; unary checks passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
