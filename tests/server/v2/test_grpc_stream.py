"""gRPC ``ModelStreamInfer`` (Triton's streaming) as tritonclient's stream API and raw
grpcio use it: several requests on one call answered in order with their ids, the
``triton_final_response`` flag, errors as ``error_message`` replies that leave the call
open, the call-ending refusals (malformed or oversize messages, auth), cancellation, and
the metrics."""

from __future__ import annotations

import queue
import subprocess
import sys
import time
from typing import Any

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from conftest import Served
from tritonclient.grpc import service_pb2

MODEL = "ident"
LIMIT = 64 * 1024  # --max-body-bytes
METHOD = "/inference.GRPCInferenceService/ModelStreamInfer"


@pytest.fixture(scope="module")
def srv(serve: Any) -> Served:
    return serve(
        "tritonmodels:Identity",
        "--model-name",
        MODEL,
        "--max-body-bytes",
        str(LIMIT),
    )


@pytest.fixture(scope="module")
def slow(serve: Any) -> Served:
    return serve("grpc_stream_models:SleepEcho", "--model-name", "slow")


def stream_call(ch: grpc.Channel, raw_requests: bool = False) -> Any:
    """The bidirectional method, from tritonclient's own message descriptors."""
    return ch.stream_stream(
        METHOD,
        request_serializer=(
            (lambda b: b) if raw_requests else service_pb2.ModelInferRequest.SerializeToString
        ),
        response_deserializer=service_pb2.ModelStreamInferResponse.FromString,
    )


def request(
    values: list[float], rid: str = "", model: str = MODEL, **params: Any
) -> service_pb2.ModelInferRequest:
    req = service_pb2.ModelInferRequest(model_name=model, id=rid)
    req.inputs.add(name="x", datatype="FP32", shape=[1, len(values)])
    req.raw_input_contents.append(np.asarray(values, np.float32).tobytes())
    for k, v in params.items():
        req.parameters[k].bool_param = v
    return req


def final(reply: service_pb2.ModelStreamInferResponse) -> bool:
    p = reply.infer_response.parameters["triton_final_response"]
    assert p.WhichOneof("parameter_choice") == "bool_param", reply
    return p.bool_param


def values(reply: service_pb2.ModelStreamInferResponse) -> list[float]:
    r = reply.infer_response
    assert not reply.error_message, reply.error_message
    assert [o.name for o in r.outputs] == ["x_out"], r
    return np.frombuffer(r.raw_output_contents[0], np.float32).tolist()


def test_tritonclient_stream_several_requests(srv: Served) -> None:
    """tritonclient's stream API: replies in order, matched by id, each final (the model
    does not stream: Triton's non-decoupled models answer once, marked final)."""
    got: queue.Queue[Any] = queue.Queue()
    c = grpcclient.InferenceServerClient(url=srv.grpc_target)
    c.start_stream(callback=lambda result, error: got.put((result, error)))
    try:
        for n in range(5):
            i = grpcclient.InferInput("x", [1, 2], "FP32")
            i.set_data_from_numpy(np.array([[n, n + 0.5]], np.float32))
            # Asking for the empty final reply changes nothing for such a model.
            c.async_stream_infer(
                MODEL, [i], request_id=f"r{n}", enable_empty_final_response=n % 2 == 0
            )
        replies = [got.get(timeout=10) for _ in range(5)]
    finally:
        c.stop_stream()
    for n, (result, error) in enumerate(replies):
        assert error is None, error
        r = result.get_response()
        assert (r.id, r.model_name) == (f"r{n}", MODEL)
        assert r.parameters["triton_final_response"].bool_param is True
        assert result.as_numpy("x_out").tolist() == [[n, n + 0.5]]
    assert got.empty(), "no reply beyond one per request"


def test_raw_grpcio_ids_flags_and_contents(srv: Served) -> None:
    """Raw grpcio on the method: raw contents answered raw, typed answered typed, the
    model's name and the request's id echoed."""
    typed = service_pb2.ModelInferRequest(model_name=MODEL, id="typed")
    t = typed.inputs.add(name="x", datatype="INT32", shape=[3])
    t.contents.int_contents.extend([1, -0, 7])
    reqs = [request([1.5, 2.5], "raw", triton_enable_empty_final_response=True), typed]
    with srv.channel() as ch:
        replies = list(stream_call(ch)(iter(reqs), timeout=10))
    assert len(replies) == 2, replies
    assert values(replies[0]) == [1.5, 2.5] and final(replies[0])
    r = replies[1].infer_response
    assert (r.model_name, r.id, final(replies[1])) == (MODEL, "typed", True)
    assert not r.raw_output_contents
    assert list(r.outputs[0].contents.int_contents) == [1, 0, 7]


def test_errors_are_replies_and_the_call_goes_on(srv: Served) -> None:
    """A request that fails gets a reply with error_message (naming the field, the model
    or the model's own message, as ModelInfer's status would), then the next request on
    the same call is answered."""
    bad_shape = request([1.0], "shape")
    bad_shape.inputs[0].shape[:] = [1, 3]
    reqs = [
        request([-1.0], "raises"),
        request([1.0], "unknown", model="nope"),
        bad_shape,
        request([3.0], "good"),
    ]
    with srv.channel() as ch:
        replies = list(stream_call(ch)(iter(reqs), timeout=10))
    assert len(replies) == 4, replies
    raises, unknown, shape, good = replies
    assert "negative values are refused" in raises.error_message
    assert raises.infer_response.id == "raises"
    assert "nope" in unknown.error_message and unknown.infer_response.id == "unknown"
    assert "inputs[0]" in shape.error_message, shape.error_message
    assert values(good) == [3.0] and good.infer_response.id == "good"
    # The same with ModelInfer: the same message as a status.
    with srv.channel() as ch:
        with pytest.raises(grpc.RpcError) as e:
            ch.unary_unary(
                "/inference.GRPCInferenceService/ModelInfer",
                request_serializer=service_pb2.ModelInferRequest.SerializeToString,
                response_deserializer=service_pb2.ModelInferResponse.FromString,
            )(bad_shape, timeout=10)
    assert e.value.details() == shape.error_message


def test_tritonclient_sees_an_error_then_a_result(srv: Served) -> None:
    got: queue.Queue[Any] = queue.Queue()
    c = grpcclient.InferenceServerClient(url=srv.grpc_target)
    c.start_stream(callback=lambda result, error: got.put((result, error)))
    try:
        for n in (-1, 2):
            i = grpcclient.InferInput("x", [1], "FP32")
            i.set_data_from_numpy(np.array([n], np.float32))
            c.async_stream_infer(MODEL, [i], request_id=f"r{n}")
        (r1, e1), (r2, e2) = got.get(timeout=10), got.get(timeout=10)
    finally:
        c.stop_stream()
    assert r1 is None and "negative values are refused" in e1.message(), e1
    assert e2 is None and r2.as_numpy("x_out").tolist() == [2.0]


def test_malformed_and_oversize_messages_end_the_call(srv: Served) -> None:
    """What cannot be read as a request ends the call with a status (as Triton's gRPC
    library does): after the replies to the requests before it."""
    with srv.channel() as ch:
        call = stream_call(ch, raw_requests=True)
        replies = call(iter([request([1.0], "a").SerializeToString(), b"\xff\xff\xff"]))
        with pytest.raises(grpc.RpcError) as e:
            for r in replies:
                assert values(r) == [1.0]
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value
        assert "malformed protobuf ModelInferRequest" in (e.value.details() or "")

        big = request([1.0] * (LIMIT // 4 + 16), "big").SerializeToString()
        with pytest.raises(grpc.RpcError) as e:
            list(call(iter([big]), timeout=10))
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e.value
        assert "--max-body-bytes" in (e.value.details() or ""), e.value.details()
        # The server serves on.
        replies = list(stream_call(ch)(iter([request([4.0], "after")]), timeout=10))
        assert values(replies[0]) == [4.0]


def test_a_call_without_requests_ends_ok(srv: Served) -> None:
    with srv.channel() as ch:
        assert list(stream_call(ch)(iter([]), timeout=10)) == []


def test_cancel_keeps_the_server_serving(slow: Served) -> None:
    """A call cancelled while its request runs: the server answers the next call."""
    with slow.channel() as ch:
        call = stream_call(ch)(iter([request([2.0], "long", model="slow")]))
        time.sleep(0.3)
        call.cancel()
        with pytest.raises(grpc.RpcError) as e:
            list(call)
        assert e.value.code() == grpc.StatusCode.CANCELLED
        replies = list(stream_call(ch)(iter([request([0.0], "next", model="slow")]), timeout=10))
    r = replies[0].infer_response
    assert not replies[0].error_message and r.id == "next" and final(replies[0])


def test_counted_under_infer_stream(srv: Served) -> None:
    def count() -> float:
        text = httpx.get(srv.url + "/metrics").text
        total = 0.0
        for line in text.splitlines():
            if line.startswith("inferwire_requests_total{") and 'route="infer-stream"' in line:
                if 'protocol="grpc"' in line and 'code="OK"' in line:
                    total += float(line.rsplit(" ", 1)[1])
        return total

    before = count()
    with srv.channel() as ch:
        list(stream_call(ch)(iter([request([1.0]), request([2.0])]), timeout=10))
    assert count() == before + 2  # one per request on the call


def test_auth_is_checked_once_per_call(serve: Any, tmp_path: Any) -> None:
    tokens = tmp_path / "tokens"
    token = subprocess.run(
        [sys.executable, "-m", "inferwire", "auth", "token", "bot", "--scopes", "predict",
         "--file", str(tokens)],
        capture_output=True, text=True, check=True,
    ).stdout.strip().split()[-1]  # fmt: skip
    s = serve("tritonmodels:Identity", "--model-name", MODEL, "--auth-tokens", str(tokens))
    with s.channel() as ch:
        with pytest.raises(grpc.RpcError) as e:
            list(stream_call(ch)(iter([request([1.0])]), timeout=10))
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
        meta = [("authorization", f"Bearer {token}")]
        replies = list(stream_call(ch)(iter([request([1.0]), request([2.0])]), metadata=meta))
    assert [values(r) for r in replies] == [[1.0], [2.0]]


# With models that stream (tests/stream_models.py: knobs in the request's parameters).

GENERATORS = ["stream_models:Tokens", "stream_models:AsyncTokens"]


def metric(url: str, name: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(httpx.get(url + "/metrics").text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                total += s.value
    return total


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


@pytest.fixture(scope="module", params=GENERATORS, ids=["generator", "async-generator"])
def gen(request: Any, serve: Any, tmp_path_factory: Any) -> tuple[Served, Any]:
    log = tmp_path_factory.mktemp("grpc-stream") / "events.log"
    server = serve(
        request.param,
        "--model-name",
        "tokens",
        "--stream-max-pieces",
        "20",
        env={"STREAM_LOG": str(log)},
    )
    return server, log


def knobs(rid: str, empty_final: bool = False, **params: float) -> Any:
    req = service_pb2.ModelInferRequest(model_name="tokens", id=rid)
    req.inputs.add(name="x", datatype="INT64", shape=[1])
    req.raw_input_contents.append(np.array([1], np.int64).tobytes())
    for k, v in params.items():
        if isinstance(v, float):
            req.parameters[k].double_param = v
        else:
            req.parameters[k].int64_param = v
    if empty_final:
        req.parameters["triton_enable_empty_final_response"].bool_param = True
    return req


def indices(reply: service_pb2.ModelStreamInferResponse) -> list[int]:
    r = reply.infer_response
    assert not reply.error_message, reply.error_message
    names = [o.name for o in r.outputs]
    raw = r.raw_output_contents[names.index("index")]
    return np.frombuffer(raw, np.int64).tolist()


def test_tritonclient_reads_a_generator_piece_by_piece(gen: Any) -> None:
    """Decoupled replies: each piece with triton_final_response false, then (when asked)
    the empty final reply; requests in order on one stream."""
    server, _ = gen
    got: queue.Queue[Any] = queue.Queue()
    c = grpcclient.InferenceServerClient(url=server.grpc_target)
    c.start_stream(callback=lambda result, error: got.put((result, error)))
    try:
        for rid, n, empty_final in (("a", 4, True), ("b", 3, False)):
            i = grpcclient.InferInput("x", [1], "INT64")
            i.set_data_from_numpy(np.array([1], np.int64))
            c.async_stream_infer(
                "tokens",
                [i],
                request_id=rid,
                parameters={"n": n},
                enable_empty_final_response=empty_final,
            )
        replies = [got.get(timeout=10) for _ in range(4 + 1 + 3)]
    finally:
        c.stop_stream()
    seen = []
    for result, error in replies:
        assert error is None, error
        r = result.get_response()
        last = r.parameters["triton_final_response"].bool_param
        index = result.as_numpy("index")
        seen.append((r.id, None if index is None else int(index[0]), last))
        if index is not None:
            assert result.as_numpy("text")[0] == f"piece-{index[0]}".encode()
    assert seen == [
        ("a", 0, False),
        ("a", 1, False),
        ("a", 2, False),
        ("a", 3, False),
        ("a", None, True),
        ("b", 0, False),
        ("b", 1, False),
        ("b", 2, False),
    ]
    assert got.empty()


def test_a_generator_that_raises_then_the_next_request(gen: Any) -> None:
    server, _ = gen
    failed = metric(server.url, "inferwire_streams_total", protocol="grpc", end="failed")
    with server.channel() as ch:
        replies = list(
            stream_call(ch)(
                iter([knobs("f", n=5, fail_at=2), knobs("g", True, n=2)]),
                timeout=10,
            )
        )
    assert [indices(r) for r in replies[:2]] == [[0], [1]]
    assert "the model failed at piece 2" in replies[2].error_message
    assert replies[2].infer_response.id == "f"
    assert [indices(r) for r in replies[3:5]] == [[0], [1]]
    assert final(replies[5]) and not replies[5].infer_response.outputs
    assert len(replies) == 6
    assert metric(server.url, "inferwire_streams_total", protocol="grpc", end="failed") > failed
    assert "the model failed at piece 2" in server.log()  # logged, and the server serves on


def test_a_stream_limit_is_an_error_reply(gen: Any) -> None:
    server, _ = gen
    with server.channel() as ch:
        replies = list(stream_call(ch)(iter([knobs("l", n=50), knobs("m", n=1)]), timeout=10))
    assert len(replies) == 20 + 1 + 1, [r.error_message for r in replies]
    assert "--stream-max-pieces" in replies[20].error_message
    assert indices(replies[21]) == [0] and replies[21].infer_response.id == "m"


def test_cancel_mid_stream_closes_the_generator(gen: Any) -> None:
    server, log = gen
    labels = {"protocol": "grpc", "end": "cancelled"}
    cancelled = metric(server.url, "inferwire_streams_total", **labels)
    with server.channel() as ch:
        call = stream_call(ch)(iter([knobs("c", n=1000, delay=0.02)]))
        for n, reply in enumerate(call):
            assert indices(reply) == [n]
            if n == 2:
                break
        call.cancel()
        wait_for(lambda: "closed" in log.read_text())
        closed = [x for x in log.read_text().splitlines() if x.startswith("closed")][-1]
        assert int(closed.split()[1]) < 100
        wait_for(lambda: metric(server.url, "inferwire_streams_total", **labels) > cancelled)
        # The next call is served at once.
        replies = list(stream_call(ch)(iter([knobs("n", n=1)]), timeout=10))
    assert indices(replies[0]) == [0]


def test_an_idle_stream_ends_after_the_idle_timeout(serve: Any) -> None:
    """No request for --stream-idle-timeout while none is being answered: the call ends
    with DEADLINE_EXCEEDED naming the setting (after answering what came)."""
    server = serve("stream_models:Tokens", "--model-name", "tokens", "--stream-idle-timeout", "1")
    reqs: queue.Queue[Any] = queue.Queue()
    reqs.put(knobs("i", n=1))
    with server.channel() as ch:
        call = stream_call(ch)(iter(reqs.get, None), timeout=20)
        first = next(call)
        assert indices(first) == [0]
        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as e:
            next(call)
        waited = time.monotonic() - started
        reqs.put(None)
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED, e.value
    assert "--stream-idle-timeout" in (e.value.details() or "")
    assert 0.5 < waited < 10, waited


def test_a_drain_ends_an_idle_stream(serve: Any) -> None:
    """SIGTERM with a stream open and idle: the call ends UNAVAILABLE within about a
    second, and the server stops without waiting out its grace period."""
    server = serve("tritonmodels:Identity", "--model-name", MODEL, "--grace-period", "20")
    reqs: queue.Queue[Any] = queue.Queue()
    reqs.put(request([1.0], "before"))
    with server.channel() as ch:
        call = stream_call(ch)(iter(reqs.get, None), timeout=30)
        assert values(next(call)) == [1.0]
        started = time.monotonic()
        server.proc.send_signal(15)
        with pytest.raises(grpc.RpcError) as e:
            next(call)
        reqs.put(None)
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE, e.value
    assert "shutting down" in (e.value.details() or "")
    assert server.proc.wait(15) == 0
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_compressed_requests_on_a_stream(srv: Served, algorithm: str) -> None:
    got: queue.Queue[Any] = queue.Queue()
    c = grpcclient.InferenceServerClient(url=srv.grpc_target)
    c.start_stream(
        callback=lambda result, error: got.put((result, error)), compression_algorithm=algorithm
    )
    try:
        i = grpcclient.InferInput("x", [1, 1000], "FP32")
        i.set_data_from_numpy(np.zeros((1, 1000), np.float32))
        c.async_stream_infer(MODEL, [i], request_id="z")
        result, error = got.get(timeout=10)
    finally:
        c.stop_stream()
    assert error is None, error
    assert result.as_numpy("x_out").shape == (1, 1000)


def test_inferwire_bench_streams_from_model_stream_infer(gen: Any) -> None:
    """``inferwire bench stream`` (its gRPC client reads Triton's replies) against the
    real method: every stream's pieces, the empty final reply not counted as one."""
    import json

    server, _ = gen
    body = {
        "inputs": [{"name": "x", "datatype": "INT64", "shape": [1], "data": [1]}],
        "parameters": {"n": 3, "triton_enable_empty_final_response": True},
    }
    r = subprocess.run(
        [sys.executable, "-m", "inferwire", "bench", "stream", server.grpc_target,
         "--call", "inference.GRPCInferenceService/ModelStreamInfer", "--model", "tokens",
         "-d", json.dumps(body), "-c", "2", "-n", "4", "--format", "json", "--no-progress"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert (rep["streams"], rep["ok"], rep["pieces"]) == (4, 4, 12), rep
    assert rep["status_codes"] == {"OK": 4} and rep["reply"] == "triton"


def test_mlserver_reply_shape(serve: Any) -> None:
    """``--grpc-stream-reply mlserver``: bare ``ModelInferResponse``s, as MLServer's clients
    (its generated ``dataplane_pb2`` stubs) read them, no final flags, and a failed
    request ends the call with its status."""
    s = serve(
        "stream_models:AsyncTokens", "--model-name", "tokens", "--grpc-stream-reply", "mlserver"
    )

    def one(n: int, fail_at: int = -1) -> service_pb2.ModelInferRequest:
        req = service_pb2.ModelInferRequest(model_name="tokens", id="m-1")
        req.inputs.add(name="x", datatype="INT64", shape=[1]).contents.int64_contents.append(1)
        req.parameters["n"].int64_param = n
        req.parameters["fail_at"].int64_param = fail_at
        return req

    with s.channel() as ch:
        call = ch.stream_stream(
            METHOD,
            request_serializer=service_pb2.ModelInferRequest.SerializeToString,
            response_deserializer=service_pb2.ModelInferResponse.FromString,
        )
        replies = list(call(iter([one(3)]), timeout=30))
        assert [r.id for r in replies] == ["m-1"] * 3
        assert all("triton_final_response" not in r.parameters for r in replies)
        # A typed request is answered typed, as ModelInfer answers it.
        assert [list(r.outputs[1].contents.int64_contents) for r in replies] == [[0], [1], [2]]
        got = []
        with pytest.raises(grpc.RpcError) as e:
            for r in call(iter([one(5, fail_at=2)]), timeout=30):
                got.append(r)
        assert len(got) == 2
        assert e.value.code() == grpc.StatusCode.INTERNAL
        assert "failed at piece 2" in e.value.details()
