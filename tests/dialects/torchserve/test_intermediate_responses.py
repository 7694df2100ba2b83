"""A TorchServe handler's intermediate responses (``send_intermediate_predict_response``)
reach the client as the handler sends them, as TorchServe sends them: over REST a chunked
reply, each piece a chunk written when it is sent, the reply last; over gRPC each piece a
``PredictionResponse`` of ``StreamPredictions`` (and of ``StreamPredictions2``, request by
request). Shown with TorchServe's own streaming test handler (vendored) and its client's
way of reading (``requests`` with ``stream=True``), and with a handler that waits for the
client to have read its first piece before it sends the next: a reply joined at the end
would never let it go on. Also: a client that goes away stops the handler and the server
goes on serving; a handler failing after its pieces; a batch of two streaming requests,
each getting only its own pieces."""

# The tests name test_grpc's fixtures (`pb`) as their parameters.
# ruff: noqa: F811

from __future__ import annotations

import concurrent.futures
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
from test_grpc import pb, stub, stubs  # noqa: F401  (test_grpc's fixtures: its stubs)
from torchserve_archives import archive, handler_file, needs_ts, streaming_handler_source
from torchserve_server import TorchServe

grpc = pytest.importorskip("grpc")
pytestmark = needs_ts

# Each request's body asks for its pieces: {"tag", "n", "gate", "sleep", "fail", "log"}.
# Piece k of a request is "<tag>-<k>;", sent to that request alone; after its first piece
# the handler waits (up to 10 s) for the file `gate` to exist, which the test makes once it
# has read that piece. It then answers "<tag>-end(batch=<size>,gate=<ok|timeout>)", or
# raises after its pieces with `fail`. `log` gets a line per piece sent.
PACER = """
import json
import os
import time

from ts.handler_utils.utils import send_intermediate_predict_response


def _ask(row):
    value = row.get("data") or row.get("body")
    if isinstance(value, (bytes, bytearray)):
        value = json.loads(bytes(value))
    return value


def _wait(path):
    end = time.monotonic() + 10
    while time.monotonic() < end:
        if os.path.exists(path):
            return "ok"
        time.sleep(0.01)
    return "timeout"


def handle(data, context):
    if data is None:
        return None
    asks = [_ask(row) for row in data]
    ids = context.request_ids
    gates = {}
    for k in range(max(a["n"] for a in asks)):
        for i, a in enumerate(asks):
            if k >= a["n"]:
                continue
            send_intermediate_predict_response(
                {i: f"{a['tag']}-{k};"}, {i: ids[i]}, "Intermediate", 200, context
            )
            if a.get("log"):
                with open(a["log"], "a") as f:
                    f.write(f"{k}\\n")
            if k == 0 and a.get("gate"):
                gates[i] = _wait(a["gate"])
        time.sleep(max(a.get("sleep", 0) for a in asks))
    if any(a.get("fail") for a in asks):
        raise ValueError("failed after its pieces")
    return [
        f"{a['tag']}-end(batch={len(asks)},gate={gates.get(i, '-')})"
        for i, a in enumerate(asks)
    ]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TorchServe]:
    tmp = tmp_path_factory.mktemp("ts_stream")
    store = tmp / "store"
    store.mkdir()
    src = tmp / "src"
    archive(store, "tp_model", handler_file(src, "stream_handler.py", streaming_handler_source()))
    archive(store, "pacer", handler_file(src, "pacer.py", PACER))
    config = src / "model-config.yaml"
    config.write_text("batchSize: 2\nmaxBatchDelay: 1000\n")
    archive(store, "pairs", src / "pacer.py", config=config)
    s = TorchServe(store, "tp_model.mar", "pacer.mar", "pairs.mar")
    yield s
    s.stop()


def ask(tag: str, n: int, **more: Any) -> bytes:
    return json.dumps({"tag": tag, "n": n, **more}).encode()


# -- REST ------------------------------------------------------------------------------


@pytest.mark.parametrize(("stream", "chunks"), [(True, 4), (False, 1)])
def test_torchserve_s_own_streaming_test_passes(
    server: TorchServe, stream: bool, chunks: int
) -> None:
    # TorchServe's test_send_intermediate_prediction_response.py, as it calls the server.
    response = requests.post(
        url=f"{server.url}/predictions/tp_model", data=json.dumps(42), stream=stream, timeout=30
    )
    assert response.status_code == 200
    assert response.headers["Transfer-Encoding"] == "chunked"
    prediction = [c.decode("utf-8") for c in response.iter_content(chunk_size=None) if c]
    assert len(prediction) == chunks
    assert "".join(prediction) == "hellohellohellohello world "


def test_each_piece_is_a_chunk_read_before_the_handler_goes_on(
    server: TorchServe, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    body = ask("t", 3, gate=str(gate))
    with httpx.stream(
        "POST",
        f"{server.url}/predictions/pacer",
        content=body,
        headers={"content-type": "application/json"},
        timeout=30,
    ) as r:
        assert r.status_code == 200
        assert r.headers["transfer-encoding"] == "chunked"
        assert r.headers["ts_stream_next"] == "true"
        chunks = r.iter_raw()
        started = time.monotonic()
        assert next(chunks) == b"t-0;"
        # The handler is waiting for this file: the piece came while it ran.
        assert time.monotonic() - started < 5
        gate.touch()
        rest = b"".join(chunks)
    assert rest == b"t-1;t-2;t-end(batch=1,gate=ok)"


def test_a_client_without_streaming_gets_the_pieces_and_the_reply(server: TorchServe) -> None:
    r = httpx.post(
        f"{server.url}/predictions/pacer",
        content=ask("w", 3),
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert r.status_code == 200
    assert r.content == b"w-0;w-1;w-2;w-end(batch=1,gate=-)"


def test_a_failure_after_the_pieces_cuts_the_reply_short(server: TorchServe) -> None:
    got = b""
    with pytest.raises(httpx.RemoteProtocolError):
        with httpx.stream(
            "POST",
            f"{server.url}/predictions/pacer",
            content=ask("f", 2, fail=True),
            headers={"content-type": "application/json"},
            timeout=30,
        ) as r:
            assert r.status_code == 200
            for chunk in r.iter_raw():
                got += chunk
    # The pieces, then TorchServe's error body; the body never ends.
    assert got.startswith(b"f-0;f-1;")
    assert json.loads(got[len(b"f-0;f-1;") :]) == {
        "code": 503,
        "type": "InternalServerException",
        "message": "Prediction failed",
    }
    # The model goes on serving.
    again = httpx.post(f"{server.url}/predictions/pacer", content=ask("g", 1), timeout=30)
    assert again.content == b"g-0;g-end(batch=1,gate=-)"


def test_a_client_that_goes_away_stops_the_handler(server: TorchServe, tmp_path: Path) -> None:
    log = tmp_path / "sent.log"
    with httpx.stream(
        "POST",
        f"{server.url}/predictions/pacer",
        content=ask("c", 10_000, sleep=0.005, log=str(log)),
        timeout=30,
    ) as r:
        chunks = r.iter_raw()
        assert next(chunks).startswith(b"c-0;")
    # Closed: the handler's next send raises (BrokenPipeError) and it stops.
    assert 0 < _pieces_sent_once_stopped(log) < 10_000
    # The server goes on serving, the same model included.
    r2 = httpx.post(f"{server.url}/predictions/pacer", content=ask("n", 2), timeout=30)
    assert r2.content == b"n-0;n-1;n-end(batch=1,gate=-)"
    assert "every client of the batch has gone" in server.log.read_text()


def test_a_batch_of_two_streams_each_gets_its_own_pieces(server: TorchServe) -> None:
    def one(tag: str) -> list[bytes]:
        with httpx.stream(
            "POST",
            f"{server.url}/predictions/pairs",
            content=ask(tag, 3, sleep=0.05),
            headers={"content-type": "application/json"},
            timeout=30,
        ) as r:
            assert r.status_code == 200
            return [c for c in r.iter_raw()]

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        a, b = pool.map(one, ["a", "b"])
    assert b"".join(a) == b"a-0;a-1;a-2;a-end(batch=2,gate=-)"
    assert b"".join(b) == b"b-0;b-1;b-2;b-end(batch=2,gate=-)"


# -- gRPC ------------------------------------------------------------------------------


def test_stream_predictions_sends_each_piece_as_it_comes(
    pb: Any, server: TorchServe, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    replies = stub(pb, server).StreamPredictions(
        pb.msgs.PredictionsRequest(model_name="pacer", input={"data": ask("g", 3, gate=str(gate))})
    )
    started = time.monotonic()
    assert next(replies).prediction == b"g-0;"
    assert time.monotonic() - started < 5
    gate.touch()
    assert [r.prediction for r in replies] == [b"g-1;", b"g-2;", b"g-end(batch=1,gate=ok)"]


def test_stream_predictions_ends_with_the_handler_s_failure(pb: Any, server: TorchServe) -> None:
    replies = stub(pb, server).StreamPredictions(
        pb.msgs.PredictionsRequest(model_name="pacer", input={"data": ask("e", 2, fail=True)})
    )
    assert next(replies).prediction == b"e-0;"
    assert next(replies).prediction == b"e-1;"
    with pytest.raises(grpc.RpcError) as e:
        next(replies)
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    assert e.value.details() == "Prediction failed\norg.pytorch.serve.http.InternalServerException"


def test_stream_predictions2_streams_each_request_in_turn(
    pb: Any, server: TorchServe, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"

    def requests_() -> Iterator[Any]:
        yield pb.msgs.PredictionsRequest(
            model_name="pacer", sequence_id="s1", input={"data": ask("x", 2, gate=str(gate))}
        )
        yield pb.msgs.PredictionsRequest(
            model_name="pacer", sequence_id="s1", input={"data": ask("y", 2, fail=True)}
        )
        yield pb.msgs.PredictionsRequest(
            model_name="pacer", sequence_id="s1", input={"data": ask("z", 1)}
        )

    replies = stub(pb, server).StreamPredictions2(requests_())
    assert next(replies).prediction == b"x-0;"
    gate.touch()
    rest = list(replies)
    assert [r.prediction for r in rest[:4]] == [
        b"x-1;",
        b"x-end(batch=1,gate=ok)",
        b"y-0;",
        b"y-1;",
    ]
    # A failed request is answered with its status; the call goes on.
    assert rest[4].status.code == grpc.StatusCode.UNAVAILABLE.value[0]
    assert rest[4].status.message == "Prediction failed"
    assert [r.prediction for r in rest[5:]] == [b"z-0;", b"z-end(batch=1,gate=-)"]


def test_a_grpc_client_that_cancels_leaves_the_server_serving(
    pb: Any, server: TorchServe, tmp_path: Path
) -> None:
    log = tmp_path / "sent.log"
    s = stub(pb, server)
    call = s.StreamPredictions(
        pb.msgs.PredictionsRequest(
            model_name="pacer", input={"data": ask("k", 10_000, sleep=0.005, log=str(log))}
        )
    )
    assert next(call).prediction == b"k-0;"
    call.cancel()
    assert 0 < _pieces_sent_once_stopped(log) < 10_000
    again = s.Predictions(
        pb.msgs.PredictionsRequest(model_name="pacer", input={"data": ask("p", 1)})
    )
    assert again.prediction == b"p-0;p-end(batch=1,gate=-)"


def _pieces_sent_once_stopped(log: Path) -> int:
    """How many pieces the handler logged, once the count stops growing (10 s at most);
    the handler writes its log after sending, so it may not be there yet."""
    deadline = time.monotonic() + 10
    sent = -1
    while time.monotonic() < deadline:
        now = len(log.read_text().split()) if log.exists() else 0
        if now == sent and now > 0:
            break
        sent = now
        time.sleep(0.5)
    return sent
