"""Request bodies against a real server: slow and unfinished bodies get 408 /
DEADLINE_EXCEEDED after --body-timeout and free their connection; bodies being received
are bounded by --max-body-bytes-in-flight (503 / RESOURCE_EXHAUSTED at once past it, the
budget whole again after refused, timed-out and aborted bodies); Content-Encoding gzip and
deflate (REST) and grpc-encoding gzip (gRPC) are inflated within --max-body-bytes, a bomb
stopped at the limit, other encodings refused with what is supported."""

from __future__ import annotations

import gzip
import json
import re
import socket
import struct
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import h2.config
import h2.connection
import h2.events
import httpx
import pytest
from conftest import Served, proc_status_kib

MiB = 1024 * 1024
LIMIT = 8 * MiB  # --max-body-bytes
BUDGET = 3 * LIMIT  # --max-body-bytes-in-flight
TIMEOUT = 2.0  # --body-timeout
SLACK = 3.0  # for a loaded machine: the server answers within TIMEOUT + SLACK
SELDON = "/api/v1.0/predictions"
BODY = {"data": {"ndarray": [[1.0, 2.0]]}}


@pytest.fixture(scope="module")
def srv() -> Iterator[Served]:
    s = Served(
        "models:Echo",
        "--model-name", "echo",
        "--max-body-bytes", str(LIMIT),
        "--max-body-bytes-in-flight", str(BUDGET),
        "--body-timeout", str(TIMEOUT),
        "--max-connections", "16",
    )  # fmt: skip
    yield s
    s.stop()


@pytest.fixture(scope="module")
def roomy() -> Iterator[Served]:
    """The same limits with a body timeout long enough to hold bodies open at will."""
    s = Served(
        "models:Echo",
        "--max-body-bytes", str(LIMIT),
        "--max-body-bytes-in-flight", str(BUDGET),
        "--body-timeout", "120",
    )  # fmt: skip
    yield s
    s.stop()


def wait_for(cond: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def body_bytes(s: Served) -> int:
    """The server's `inferwire_request_body_bytes` gauge: bytes charged to the budget."""
    text = httpx.get(s.url + "/metrics").text
    m = re.search(r"^inferwire_request_body_bytes (\d+)$", text, re.M)
    assert m, text
    return int(m.group(1))


def rss_kib(s: Served) -> int:
    return proc_status_kib(s.proc.pid, "VmRSS")


def still_serving(s: Served, pb: Any) -> None:
    r = httpx.post(s.url + SELDON, json=BODY, timeout=10)
    assert r.status_code == 200 and r.json()["data"]["ndarray"] == [[1.0, 2.0]], r.text
    with s.channel() as ch:
        reply = pb.grpc.SeldonStub(ch).Predict(seldon_message(pb), timeout=10)
    assert list(reply.data.tensor.values) == [1.0, 2.0], reply


def seldon_message(pb: Any, values: tuple[float, ...] = (1.0, 2.0)) -> Any:
    return pb.msgs.SeldonMessage(
        data=pb.msgs.DefaultData(tensor=pb.msgs.Tensor(shape=[1, len(values)], values=values))
    )


def open_body(s: Served, declared: int | None, sent: bytes) -> socket.socket:
    """A REST request whose body is started and never finished: Content-Length
    ``declared`` (None: chunked, ``sent`` as one chunk)."""
    sock = socket.create_connection(("127.0.0.1", s.http_port), timeout=30)
    framing = (
        f"content-length: {declared}" if declared is not None else "transfer-encoding: chunked"
    )
    head = (
        f"POST {SELDON} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n{framing}\r\n\r\n"
    )
    sock.sendall(head.encode() + framed_part(sent, declared is None))
    return sock


def framed_part(data: bytes, chunked: bool) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data) if chunked else data


def response_of(sock: socket.socket, timeout: float) -> tuple[bytes, bytes]:
    """The status line and the rest of what the server sends before it closes."""
    sock.settimeout(timeout)
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except ConnectionResetError:
        pass
    head, _, rest = got.partition(b"\r\n")
    return head, rest


def status_info(raw: bytes) -> str:
    """The Seldon FAILURE message in a raw HTTP/1.1 reply."""
    body = raw.partition(b"\r\n\r\n")[2]
    return str(json.loads(body)["status"]["info"])


# --- Slow and unfinished bodies ---------------------------------------------------------


def test_a_slow_body_gets_408_after_the_body_timeout(srv: Served, pb: Any) -> None:
    sock = open_body(srv, 1000, b"{")
    started = time.monotonic()
    stop = threading.Event()

    def trickle() -> None:  # one byte every 0.3 s: never finishes within the timeout
        while not stop.wait(0.3):
            try:
                sock.sendall(b" ")
            except OSError:
                return

    t = threading.Thread(target=trickle)
    t.start()
    try:
        still_serving(srv, pb)  # others are served meanwhile
        head, rest = response_of(sock, TIMEOUT + SLACK + 5)
        took = time.monotonic() - started
    finally:
        stop.set()
        t.join()
        sock.close()
    assert head == b"HTTP/1.1 408 Request Timeout", head
    assert b"connection: close" in rest.lower()
    assert "--body-timeout" in status_info(rest)
    assert TIMEOUT - 0.1 < took < TIMEOUT + SLACK, took  # and the connection closed
    wait_for(lambda: body_bytes(srv) == 0, "the timed-out body's bytes to be given back")
    still_serving(srv, pb)


def test_slow_senders_free_their_connections_after_the_body_timeout(srv: Served, pb: Any) -> None:
    # 16 senders hold every connection (--max-connections 16): a 17th waits...
    held = [open_body(srv, 100, b"{") for _ in range(16)]
    started = time.monotonic()
    try:
        with pytest.raises(httpx.TimeoutException):
            httpx.post(srv.url + SELDON, json=BODY, timeout=0.5)
        # ... until the body timeout answers them 408 and closes their connections.
        for sock in held:
            head, _ = response_of(sock, 2 * TIMEOUT + SLACK + 5)
            assert head == b"HTTP/1.1 408 Request Timeout", head
        # (A connection the server had not yet seen closed may hold the last sender's
        # slot a little longer, so that its own body timeout starts late.)
        assert time.monotonic() - started < 2 * TIMEOUT + SLACK
    finally:
        for sock in held:
            sock.close()
    still_serving(srv, pb)


def test_unfinished_bodies_are_bounded_by_the_budget(roomy: Served, pb: Any) -> None:
    """Three bodies of LIMIT - 1 bytes sent and never finished fill the budget; every
    further body is refused at once, whether it declares its length or not, so memory
    stays bounded; once they are gone the budget is whole again."""
    baseline = rss_kib(roomy)
    filler = [open_body(roomy, LIMIT, b" " * (LIMIT - 1)) for _ in range(3)]
    try:
        wait_for(lambda: body_bytes(roomy) == BUDGET, "the budget to fill")
        refused = 0
        for i in range(12):
            # Half declare their length (refused before it is read), half are chunked
            # (refused at the first bytes that do not fit).
            declared = LIMIT if i % 2 else None
            sock = open_body(roomy, declared, b" " * 1000)
            try:
                try:
                    sock.sendall(framed_part(b" " * (LIMIT - 2000), declared is None))
                except OSError:
                    pass  # refused and closed while sending
                head, rest = response_of(sock, 10)
            finally:
                sock.close()
            assert head == b"HTTP/1.1 503 Service Unavailable", head
            assert b"retry-after: 1" in rest.lower()
            assert "--max-body-bytes-in-flight" in status_info(rest)
            refused += 1
        grown_mib = (rss_kib(roomy) - baseline) / 1024
        # Unbounded, 15 bodies of 8 MiB would hold 120 MiB; the budget allows 24 MiB.
        assert grown_mib < BUDGET / MiB + 40, grown_mib
        # gRPC shares the budget.
        with roomy.channel() as ch, pytest.raises(grpc.RpcError) as e:
            pb.grpc.SeldonStub(ch).Predict(seldon_message(pb), timeout=10)
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e.value
        assert "--max-body-bytes-in-flight" in (e.value.details() or "")
        assert refused == 12 and body_bytes(roomy) == BUDGET
    finally:
        for sock in filler:
            sock.close()  # aborted: their bytes come back
    wait_for(lambda: body_bytes(roomy) == 0, "the aborted bodies' bytes to be given back")
    # The whole budget again: three full-size bodies at once.
    full = json.dumps(BODY).encode().rjust(LIMIT)
    with httpx.Client(timeout=30) as c:
        replies = [c.post(roomy.url + SELDON, content=full) for _ in range(3)]
    assert [r.status_code for r in replies] == [200] * 3, replies[0].text
    assert body_bytes(roomy) == 0
    still_serving(roomy, pb)


def test_budget_whole_again_after_timed_out_bodies(srv: Served, pb: Any) -> None:
    held = [open_body(srv, LIMIT, b"{") for _ in range(3)]
    try:
        wait_for(lambda: body_bytes(srv) == BUDGET, "the budget to fill")
        r = httpx.post(srv.url + SELDON, json=BODY)
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        for sock in held:
            assert response_of(sock, TIMEOUT + SLACK + 5)[0] == b"HTTP/1.1 408 Request Timeout"
    finally:
        for sock in held:
            sock.close()
    wait_for(lambda: body_bytes(srv) == 0, "the timed-out bodies' bytes to be given back")
    still_serving(srv, pb)


# --- gRPC over a raw HTTP/2 connection --------------------------------------------------


class H2Call:
    """gRPC calls over one raw HTTP/2 connection, so that a message can be left
    unfinished."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        )
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())
        self.headers: dict[int, dict[str, str]] = {}
        self.data: dict[int, bytes] = {}
        self.ended: set[int] = set()

    def start(
        self,
        path: str,
        data: bytes,
        extra: tuple[tuple[str, str], ...] = (),
        content_type: str = "application/grpc",
    ) -> int:
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(
            sid,
            [
                (":method", "POST"),
                (":scheme", "http"),
                (":path", path),
                (":authority", "x"),
                ("content-type", content_type),
                ("te", "trailers"),
                *extra,
            ],
        )
        self.conn.send_data(sid, data)  # no END_STREAM: the request is left open
        self.sock.sendall(self.conn.data_to_send())
        self.data[sid] = b""
        self.headers[sid] = {}
        return sid

    def wait(self, sid: int, timeout: float) -> dict[str, str]:
        """Response headers and trailers of stream ``sid``, once it has ended or been
        reset."""
        self.sock.settimeout(timeout)
        while sid not in self.ended:
            data = self.sock.recv(65536)
            assert data, "connection closed"
            for ev in self.conn.receive_data(data):
                if isinstance(ev, h2.events.ResponseReceived | h2.events.TrailersReceived):
                    self.headers[ev.stream_id].update(
                        (k, urllib.parse.unquote(v)) for k, v in ev.headers
                    )
                elif isinstance(ev, h2.events.DataReceived):
                    self.data[ev.stream_id] += ev.data
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded | h2.events.StreamReset):
                    self.ended.add(ev.stream_id)
            self.sock.sendall(self.conn.data_to_send())
        return self.headers[sid]

    def close(self) -> None:
        self.sock.close()


PREDICT = "/seldon.protos.Seldon/Predict"


def test_a_slow_rest_body_over_http2_gets_408(srv: Served, pb: Any) -> None:
    call = H2Call(srv.http_port)  # h2c with prior knowledge
    try:
        started = time.monotonic()
        sid = call.start(SELDON, b'{"data"', (("content-length", "100"),), "application/json")
        got = call.wait(sid, TIMEOUT + SLACK + 5)
        took = time.monotonic() - started
        assert got.get(":status") == "408", got
        assert "--body-timeout" in json.loads(call.data[sid])["status"]["info"]
        assert TIMEOUT - 0.1 < took < TIMEOUT + SLACK, took
        # The connection itself stays usable for other streams.
        sid = call.start(SELDON, json.dumps(BODY).encode(), content_type="application/json")
        call.conn.end_stream(sid)
        call.sock.sendall(call.conn.data_to_send())
        assert call.wait(sid, 10).get(":status") == "200"
        assert json.loads(call.data[sid])["data"]["ndarray"] == [[1.0, 2.0]]
    finally:
        call.close()
    wait_for(lambda: body_bytes(srv) == 0, "the timed-out body's bytes to be given back")
    still_serving(srv, pb)


def framed(message: bytes, compressed: bool = False) -> bytes:
    return struct.pack(">BI", int(compressed), len(message)) + message


def test_grpc_partial_message_gets_deadline_exceeded(srv: Served, pb: Any) -> None:
    call = H2Call(srv.grpc_port)
    try:
        whole = framed(seldon_message(pb).SerializeToString())
        started = time.monotonic()
        sid = call.start(PREDICT, whole[:-3])  # three bytes short, forever
        got = call.wait(sid, TIMEOUT + SLACK + 5)
        took = time.monotonic() - started
        assert got.get("grpc-status") == "4", got  # DEADLINE_EXCEEDED
        assert "--body-timeout" in got.get("grpc-message", ""), got
        assert TIMEOUT - 0.1 < took < TIMEOUT + SLACK, took
        # A whole message never followed by the end of the stream times out too.
        sid = call.start(PREDICT, whole)
        assert call.wait(sid, TIMEOUT + SLACK + 5).get("grpc-status") == "4"
    finally:
        call.close()
    wait_for(lambda: body_bytes(srv) == 0, "the partial messages' bytes to be given back")
    still_serving(srv, pb)


def test_grpc_messages_are_charged_at_their_prefix(roomy: Served, pb: Any) -> None:
    """A message's declared length is charged before its bytes come: three prefixes of
    LIMIT bytes fill the budget, a fourth call and REST bodies are refused at once."""
    call = H2Call(roomy.grpc_port)
    try:
        for _ in range(3):
            call.start(PREDICT, struct.pack(">BI", 0, LIMIT - 5) + b"\x00" * 10)
        wait_for(lambda: body_bytes(roomy) == BUDGET, "the budget to fill")
        sid = call.start(PREDICT, struct.pack(">BI", 0, 100) + b"\x00" * 10)
        got = call.wait(sid, 10)
        assert got.get("grpc-status") == "8", got  # RESOURCE_EXHAUSTED
        assert "--max-body-bytes-in-flight" in got.get("grpc-message", ""), got
        r = httpx.post(roomy.url + SELDON, json=BODY)
        assert r.status_code == 503 and "--max-body-bytes-in-flight" in r.text
    finally:
        call.close()  # aborted: every charge comes back
    wait_for(lambda: body_bytes(roomy) == 0, "the aborted messages' bytes to be given back")
    still_serving(roomy, pb)


def test_grpc_unsupported_encoding_is_unimplemented(srv: Served, pb: Any) -> None:
    call = H2Call(srv.grpc_port)
    try:
        message = framed(seldon_message(pb).SerializeToString(), compressed=True)
        sid = call.start(PREDICT, message, (("grpc-encoding", "br"),))
        got = call.wait(sid, 10)
    finally:
        call.close()
    assert got.get("grpc-status") == "12", got  # UNIMPLEMENTED
    assert "gzip or identity" in got.get("grpc-message", ""), got
    assert got.get("grpc-accept-encoding") == "identity,gzip,deflate", got
    still_serving(srv, pb)


# --- Compressed bodies ------------------------------------------------------------------


def deflate(data: bytes, raw: bool = False) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15 if raw else 15)
    return c.compress(data) + c.flush()


CODINGS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "deflate": deflate,  # the zlib format, as HTTP defines it
    "deflate-raw": lambda d: deflate(d, raw=True),  # what some clients send instead
    "identity": lambda d: d,
}


@pytest.mark.parametrize("coding", list(CODINGS))
def test_rest_compressed_bodies_are_inflated(srv: Served, coding: str) -> None:
    header = {"content-encoding": coding.removesuffix("-raw"), "content-type": "application/json"}
    seldon = {"data": {"ndarray": [[float(i) for i in range(1000)]]}}
    r = httpx.post(
        srv.url + SELDON, content=CODINGS[coding](json.dumps(seldon).encode()), headers=header
    )
    assert r.status_code == 200, r.text
    assert r.json()["data"]["ndarray"] == seldon["data"]["ndarray"]
    v2 = {
        "inputs": [{"name": "x", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6]}]
    }
    r = httpx.post(
        srv.url + "/v2/models/echo/infer",
        content=CODINGS[coding](json.dumps(v2).encode()),
        headers=header,
    )
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["data"] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize(
    "coding", ["br", "zstd", "compress", "x-unknown", "gzip, br", "gzip, gzip"]
)
def test_rest_other_encodings_get_415(srv: Served, pb: Any, coding: str) -> None:
    r = httpx.post(
        srv.url + SELDON, content=gzip.compress(json.dumps(BODY).encode()),
        headers={"content-encoding": coding},
    )  # fmt: skip
    assert r.status_code == 415, r.text
    assert "gzip, deflate or identity" in r.json()["status"]["info"], r.text
    still_serving(srv, pb)


def test_rest_invalid_gzip_is_400(srv: Served, pb: Any) -> None:
    r = httpx.post(
        srv.url + SELDON, content=b"not gzip at all", headers={"content-encoding": "gzip"}
    )
    assert r.status_code == 400 and "not valid gzip" in r.text, r.text
    still_serving(srv, pb)


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """512 MiB of zeros, gzipped to about half a megabyte."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MiB)
    return b"".join(c.compress(zeros) for _ in range(512)) + c.flush()


def test_rest_gzip_bomb_is_413_without_inflating_past_the_limit(
    srv: Served, pb: Any, bomb: bytes
) -> None:
    assert len(bomb) < MiB
    still_serving(srv, pb)  # warm
    baseline = rss_kib(srv)
    for _ in range(3):
        r = httpx.post(srv.url + SELDON, content=bomb, headers={"content-encoding": "gzip"})
        assert r.status_code == 413, r.text
        info = r.json()["status"]["info"]
        assert f"inflates (Content-Encoding: gzip) to more than the limit of {LIMIT}" in info
        assert "--max-body-bytes" in info
    grown_mib = (rss_kib(srv) - baseline) / 1024
    assert grown_mib < LIMIT / MiB * 2 + 40, grown_mib  # not the 512 MiB it inflates to
    assert body_bytes(srv) == 0
    still_serving(srv, pb)


def test_grpc_gzip_messages_are_inflated(srv: Served, pb: Any) -> None:
    from tritonclient.grpc import service_pb2 as v2
    from tritonclient.grpc import service_pb2_grpc

    values = tuple(float(i) for i in range(5000))
    with srv.channel() as ch:
        reply = pb.grpc.SeldonStub(ch).Predict(
            seldon_message(pb, values), compression=grpc.Compression.Gzip, timeout=10
        )
        assert tuple(reply.data.tensor.values) == values
        # Seldon's Model service, and V2 (tonic's generated handlers, not the fast path).
        reply = pb.grpc.ModelStub(ch).Predict(
            seldon_message(pb, values), compression=grpc.Compression.Gzip, timeout=10
        )
        assert tuple(reply.data.tensor.values) == values
        req = v2.ModelInferRequest(model_name="echo")
        req.inputs.add(
            name="x", datatype="FP32", shape=[1, 5000],
            contents=v2.InferTensorContents(fp32_contents=values),
        )  # fmt: skip
        out = service_pb2_grpc.GRPCInferenceServiceStub(ch).ModelInfer(
            req, compression=grpc.Compression.Gzip, timeout=10
        )
        assert tuple(out.outputs[0].contents.fp32_contents) == values


def test_grpc_gzip_bomb_is_resource_exhausted(srv: Served, pb: Any) -> None:
    bomb = pb.msgs.SeldonMessage(binData=bytes(2 * LIMIT))
    baseline = rss_kib(srv)
    with srv.channel() as ch:
        for stub in (pb.grpc.SeldonStub(ch), pb.grpc.ModelStub(ch)):
            with pytest.raises(grpc.RpcError) as e:
                stub.Predict(bomb, compression=grpc.Compression.Gzip, timeout=10)
            assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e.value
            details = e.value.details() or ""
            assert f"inflates (grpc-encoding: gzip) to more than the limit of {LIMIT}" in details
            assert "--max-body-bytes" in details
    assert (rss_kib(srv) - baseline) / 1024 < LIMIT / MiB * 2 + 40
    still_serving(srv, pb)


def test_bad_body_settings_are_start_errors() -> None:
    import subprocess
    import sys

    for args, message in [
        (["--body-timeout", "0"], "body_timeout: must be above 0"),
        (["--max-body-bytes-in-flight", "1000"], "max_body_bytes_in_flight 1000 is below"),
    ]:
        r = subprocess.run([sys.executable, "-m", "inferwire", "serve", "noop", *args],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        assert r.returncode != 0 and message in r.stderr, r.stderr
