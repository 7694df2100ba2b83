"""`inferwire bench stream` end to end, against small real streaming servers started here:
an HTTP/1.1 server answering server-sent events (Python's http.server), and grpcio servers
implementing `inference.GRPCInferenceService/ModelStreamInfer` with Triton's reply wrapper
(tritonclient's generated messages) and MLServer's bare replies. Each sends the pieces its
request asks for, sleeping between them, so counts and times can be checked exactly."""

from __future__ import annotations

import json
import os
import ssl
import time
from collections.abc import Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import grpc
import pytest
import trustme
from conftest import free_port
from test_bench import FIRST_SERIES, bench, pixels_of, render, self_contained
from tritonclient.grpc import service_pb2 as pb

MS = 1_000_000  # ns

# -------------------------------------------------------------------- the SSE server


class SseHandler(BaseHTTPRequestHandler):
    """POST with a JSON body saying what to send: `pieces` events `sleep` seconds apart
    (the first after one sleep too), then optionally an error event; or a `status`."""

    protocol_version = "HTTP/1.1"
    # Each event leaves when written: with Nagle's algorithm a small write waits for the
    # client's delayed ACK of the last one (40 ms), which would pass for the server's.
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:
        pass

    def write_chunk(self, data: bytes) -> None:
        if self.chunked:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        else:
            self.wfile.write(data)
        self.wfile.flush()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        ask = json.loads(self.rfile.read(length)) if length else {"pieces": 2, "how": "GET"}
        assert self.command == ask.get("how", "POST")
        assert self.headers["accept"] == "text/event-stream"
        status = ask.get("status", 200)
        if status != 200:
            body = json.dumps({"error": "the queue is full, try later"}).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        # Chunked and kept alive, or delimited by the connection's close.
        self.chunked = not ask.get("close", False)
        nl = b"\r\n" if ask.get("crlf") else b"\n"
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        if self.chunked:
            self.send_header("transfer-encoding", "chunked")
        else:
            self.send_header("connection", "close")
            self.close_connection = True
        self.end_headers()
        self.write_chunk(b": the stream starts" + nl + nl)
        for i in range(ask["pieces"]):
            time.sleep(ask.get("sleep", 0))
            if ask.get("multiline"):
                # One event of two data lines and a named type: one piece.
                event = b"event: token" + nl + b'data: {"text":' + nl + b'data: "%d"}' % i
            else:
                event = b'data: {"text":"%016d"}' % i
            self.write_chunk(event + nl + nl)
        if ask.get("error"):
            self.write_chunk(b'data: {"error":"%s"}' % ask["error"].encode() + nl + nl)
        if ask.get("done"):
            self.write_chunk(b"data: [DONE]" + nl + nl)
        if self.chunked:
            self.wfile.write(b"0\r\n\r\n")

    do_GET = do_POST


@pytest.fixture(scope="module")
def sse() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), SseHandler)
    server.daemon_threads = True
    Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v2/models/m/infer_stream"
    server.shutdown()


def stream_json(*args: str, returncode: int = 0) -> Any:
    r = bench("stream", "--format", "json", "--no-progress", *args)
    assert r.returncode == returncode, r.stderr
    return json.loads(r.stdout)


def ask(**kw: Any) -> str:
    return json.dumps(kw)


PIECE = len('{"text":"0000000000000000"}')


def test_sse_counts_pieces_and_times_them(sse: str) -> None:
    rep = stream_json(
        sse, "-d", ask(pieces=4, sleep=0.05), "-c", "2", "-n", "6",
        "--server-pid", str(os.getpid()),
    )  # fmt: skip
    assert (rep["streams"], rep["ok"], rep["failed"]) == (6, 6, 0)
    assert rep["status_codes"] == {"200": 6}
    assert rep["errors"] == []
    assert rep["pieces"] == 24
    assert rep["pieces_per_stream"] == {"mean": 4.0, "min": 4, "max": 4}
    assert rep["bytes"] == 24 * PIECE  # the events' data, not the SSE framing
    first, gaps = rep["time_to_first_piece"], rep["time_between_pieces"]
    # The server sleeps 50 ms before each piece (HDR buckets are within 0.1%).
    assert first["min_ns"] >= 49.9 * MS
    # A gap is not bounded below by the sleep (a piece read late shortens the next gap),
    # but the typical one is the sleep, and the stream lasts all four.
    assert 30 * MS <= gaps["p50_ns"] < 200 * MS
    assert rep["stream_duration"]["min_ns"] >= 199 * MS
    assert sum(b["count"] for b in rep["ttft_histogram"]) == 6
    assert sum(b["count"] for b in rep["gap_histogram"]) == 6 * 3
    assert rep["pieces_per_second"] > 0 and rep["bytes_per_second"] > 0
    assert rep["transport"] == "HTTP/1.1 server-sent events" and rep["reply"] is None
    assert rep["server_cpu_ns_per_piece"] is not None
    assert rep["client_cpu_ns_per_stream"] >= rep["client_cpu_ns_per_piece"]


@pytest.mark.parametrize(
    "wire",
    [
        {"crlf": True, "multiline": True},  # CRLF line ends, named events, two data lines
        {"close": True},  # no chunking: the body ends with the connection
        {"done": True},  # OpenAI's closing `data: [DONE]` is not a piece
    ],
)
def test_sse_wire_forms(sse: str, wire: dict[str, Any]) -> None:
    rep = stream_json(sse, "-d", ask(pieces=3, **wire), "-c", "2", "-n", "4")
    assert (rep["ok"], rep["pieces"]) == (4, 12), rep
    assert rep["pieces_per_stream"]["min"] == 3


def test_sse_without_a_body_is_a_get(sse: str) -> None:
    rep = stream_json(sse, "-n", "2")
    assert (rep["ok"], rep["pieces"]) == (2, 4)


def test_sse_errors_fail_the_stream(sse: str) -> None:
    # An error event after two pieces: the pieces count, the stream failed.
    rep = stream_json(sse, "-d", ask(pieces=2, error="model failed"), "-n", "3", returncode=1)
    assert (rep["streams"], rep["ok"], rep["failed"], rep["pieces"]) == (3, 0, 3, 6)
    assert rep["status_codes"] == {"error event": 3}
    assert rep["errors"] == ["model failed"]
    # A refusal before any piece: its status, with the body's start as the message.
    r = bench("stream", sse, "-d", ask(pieces=1, status=503), "-n", "2")
    assert r.returncode == 1
    assert "every stream failed (2 of 2)" in r.stderr and "queue is full" in r.stderr
    assert "503:2" in r.stdout


def test_fail_exits_1_when_any_stream_failed(sse: str) -> None:
    args = [sse, "-d", ask(pieces=1, error="x"), "-n", "1", "--warmup", "0s"]
    assert bench("stream", *args).returncode == 1  # every stream failed
    ok = [sse, "-d", ask(pieces=1), "-n", "2"]
    assert bench("stream", *ok, "--fail").returncode == 0


def test_sse_timeout_and_unreachable(sse: str) -> None:
    rep = stream_json(sse, "-d", ask(pieces=3, sleep=0.3), "-n", "1", "--timeout", "100ms",
                      returncode=1)  # fmt: skip
    assert rep["status_codes"] == {"error": 1}
    assert "did not end within" in rep["errors"][0]
    r = bench("stream", f"http://127.0.0.1:{free_port()}/x", "-d", "{}", "-n", "1")
    assert r.returncode == 1 and "connect" in r.stderr


def test_sse_open_loop(sse: str) -> None:
    rep = stream_json(sse, "-d", ask(pieces=2, sleep=0.01), "-r", "20", "-z", "500ms", "-c", "4")
    assert rep["mode"] == "open" and rep["rate"] == 20
    assert rep["streams"] == 10 and rep["pieces"] == 20


def test_text_and_markdown_reports(sse: str) -> None:
    r = bench("stream", sse, "-d", ask(pieces=2), "-n", "2")
    assert r.returncode == 0, r.stderr
    for field in ("Streams", "First piece", "Between pieces", "Pieces", "Bytes",
                  "Status Codes", "CPU/piece", "CPU/stream", "Error Set"):  # fmt: skip
        assert field in r.stdout
    assert "200:2" in r.stdout
    r = bench("stream", sse, "-d", ask(pieces=2), "-n", "2", "-c", "1,2", "--format", "markdown")
    assert r.returncode == 0, r.stderr
    rows = [x for x in r.stdout.splitlines() if x.startswith("| http")]
    assert len(rows) == 2 and "first piece p50" in r.stdout


def test_html_report_renders(sse: str, tmp_path: Path) -> None:
    page = tmp_path / "stream.html"
    r = bench("stream", sse, "-d", ask(pieces=3, sleep=0.01), "-n", "6", "-c", "1,3",
              "--html", str(page))  # fmt: skip
    assert r.returncode == 0, r.stderr
    html = page.read_text()
    self_contained(html)
    assert html.count('data-chart="bars"') == 2  # first piece, between pieces
    assert html.count('data-chart="lines"') == 1  # pieces/s against concurrency
    assert html.count('data-chart="histogram"') == 2 * 2
    assert "concurrency 3" in html
    img = render(page)
    assert pixels_of(img, FIRST_SERIES) > 2000, "no chart bars were drawn"


# ------------------------------------------------------------------ the gRPC servers

METHOD = "/inference.GRPCInferenceService/ModelStreamInfer"


def param(req: Any, name: str, default: Any) -> Any:
    if name not in req.parameters:
        return default
    p = req.parameters[name]
    return getattr(p, p.WhichOneof("parameter_choice"))


def infer_response(req: Any, i: int, final: bool) -> Any:
    r = pb.ModelInferResponse(model_name=req.model_name, id=req.id)
    r.parameters["triton_final_response"].bool_param = final
    if i >= 0:
        out = r.outputs.add(name="text", datatype="BYTES", shape=[1])
        out.contents.bytes_contents.append(b"%016d" % i)
    return r


FINALS_SENT: list[str] = []


def triton_stream(requests: Iterator[Any], context: Any) -> Iterator[Any]:
    """Triton's decoupled shape: replies wrapped, errors as `error_message`, and the
    empty final reply when the request asks for it."""
    for req in requests:
        assert req.inputs[0].contents.bytes_contents == [b"hello"]  # -d, typed contents
        for i in range(param(req, "pieces", 1)):
            time.sleep(param(req, "sleep_ms", 0) / 1000)
            yield pb.ModelStreamInferResponse(infer_response=infer_response(req, i, False))
        if param(req, "fail", False):
            yield pb.ModelStreamInferResponse(error_message="the model failed on piece 2")
        elif param(req, "triton_enable_empty_final_response", False):
            FINALS_SENT.append(req.id)
            yield pb.ModelStreamInferResponse(infer_response=infer_response(req, -1, True))


def mlserver_stream(requests: Iterator[Any], context: Any) -> Iterator[Any]:
    """MLServer's shape: bare ModelInferResponse messages; errors end the call."""
    for req in requests:
        for i in range(param(req, "pieces", 1)):
            yield infer_response(req, i, False)
        if param(req, "fail", False):
            context.abort(grpc.StatusCode.INTERNAL, "mlserver: the model failed")


def grpc_server(handler: Any, credentials: Any = None) -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    rpc = grpc.stream_stream_rpc_method_handler(
        handler,
        request_deserializer=pb.ModelInferRequest.FromString,
        response_serializer=lambda m: m.SerializeToString(),
    )
    service = grpc.method_handlers_generic_handler(
        "inference.GRPCInferenceService", {"ModelStreamInfer": rpc}
    )
    server.add_generic_rpc_handlers((service,))
    if credentials is None:
        port = server.add_insecure_port("127.0.0.1:0")
    else:
        port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(0)


@pytest.fixture(scope="module")
def triton() -> Iterator[str]:
    yield from grpc_server(triton_stream)


@pytest.fixture(scope="module")
def mlserver() -> Iterator[str]:
    yield from grpc_server(mlserver_stream)


def v2(**parameters: Any) -> str:
    inp = {"name": "text_input", "datatype": "BYTES", "shape": [1], "data": ["hello"]}
    return json.dumps({"inputs": [inp], "parameters": parameters})


GRPC = ["--call", "inference.GRPCInferenceService/ModelStreamInfer", "--model", "m"]


def test_grpc_triton_replies(triton: str) -> None:
    body = v2(pieces=3, sleep_ms=50, triton_enable_empty_final_response=True)
    FINALS_SENT.clear()
    rep = stream_json(triton, *GRPC, "-d", body, "-c", "2", "-n", "4")
    assert len(FINALS_SENT) == 4  # the JSON's bool parameter reached the server
    assert (rep["streams"], rep["ok"]) == (4, 4)
    assert rep["status_codes"] == {"OK": 4}
    # Three pieces each: the empty final reply is not one.
    assert rep["pieces"] == 12 and rep["pieces_per_stream"]["max"] == 3
    assert rep["time_to_first_piece"]["min_ns"] >= 49.9 * MS
    assert 30 * MS <= rep["time_between_pieces"]["p50_ns"] < 200 * MS
    assert rep["reply"] == "triton" and rep["connections"] == 1


def test_grpc_error_message_fails_the_stream(triton: str) -> None:
    rep = stream_json(triton, *GRPC, "-d", v2(pieces=2, fail=True), "-n", "3", returncode=1)
    assert (rep["failed"], rep["pieces"]) == (3, 6)
    assert rep["status_codes"] == {"error reply": 3}
    assert rep["errors"] == ["the model failed on piece 2"]


def test_grpc_request_from_a_protobuf_file(triton: str, tmp_path: Path) -> None:
    req = pb.ModelInferRequest(model_name="m", id="r1")
    inp = req.inputs.add(name="text_input", datatype="BYTES", shape=[1])
    inp.contents.bytes_contents.append(b"hello")
    req.parameters["pieces"].int64_param = 2
    (tmp_path / "req.bin").write_bytes(req.SerializeToString())
    rep = stream_json(triton, "--call", METHOD, "-D", str(tmp_path / "req.bin"), "-n", "2",
                      "--connections", "2", "-c", "2")  # fmt: skip
    assert (rep["ok"], rep["pieces"], rep["connections"]) == (2, 4, 2)


def test_grpc_mlserver_replies(mlserver: str) -> None:
    rep = stream_json(mlserver, *GRPC, "--reply", "mlserver", "-d", v2(pieces=4), "-n", "3")
    assert (rep["ok"], rep["pieces"], rep["reply"]) == (3, 12, "mlserver")
    assert rep["bytes"] > 0
    # A failure is the call's status.
    rep = stream_json(mlserver, *GRPC, "--reply", "mlserver", "-d", v2(pieces=1, fail=True),
                      "-n", "2", returncode=1)  # fmt: skip
    assert rep["status_codes"] == {"Internal": 2} and rep["pieces"] == 2
    assert rep["errors"] == ["mlserver: the model failed"]
    # Read as Triton's wrapper, the bare replies are recognised and the option named.
    r = bench("stream", mlserver, *GRPC, "-d", v2(pieces=1), "-n", "1")
    assert r.returncode == 1 and "--reply mlserver" in r.stderr


def test_grpc_needs_a_model_for_json() -> None:
    r = bench("stream", "127.0.0.1:1", "--call", METHOD, "-d", v2())
    assert r.returncode == 1 and "--model" in r.stderr


def test_tls_streams(tmp_path: Path) -> None:
    """https:// server-sent events and grpcs:// streams, trusting a private CA."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(ctx)
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), SseHandler)
    server.daemon_threads = True
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    Thread(target=server.serve_forever, daemon=True).start()
    key = cert.private_key_pem.bytes()
    chain = b"".join(blob.bytes() for blob in cert.cert_chain_pems)
    creds = grpc.ssl_server_credentials([(key, chain)])
    grpcs = grpc_server(triton_stream, creds)
    try:
        url = f"https://127.0.0.1:{server.server_address[1]}/v2/models/m/infer_stream"
        cacert = ["--cacert", str(tmp_path / "ca.pem")]
        rep = stream_json(url, *cacert, "-d", ask(pieces=3), "-n", "3", "-c", "2")
        assert (rep["ok"], rep["pieces"]) == (3, 9)
        target = next(grpcs)
        rep = stream_json(f"grpcs://{target}", *GRPC, *cacert, "-d", v2(pieces=2), "-n", "2")
        assert (rep["ok"], rep["pieces"]) == (2, 4)
        # Without the CA: the certificate's error, before any stream.
        r = bench("stream", url, "-d", ask(pieces=1), "-n", "1")
        assert r.returncode == 1 and "UnknownIssuer" in r.stderr, r.stderr
    finally:
        server.shutdown()
        grpcs.close()


# ------------------------------------------------------------- inferwire's own server


def test_against_inferwire_serve(serve: Any) -> None:
    """inferwire's own SSE routes (tests/stream_models.py: `n` pieces `delay` apart)."""
    s = serve("stream_models:Tokens", "--model-name", "model")
    x = {"name": "x", "datatype": "INT64", "shape": [1], "data": [1]}
    body = json.dumps({"inputs": [x], "parameters": {"n": 4, "delay": 0.02}})
    infer = f"{s.url}/v2/models/model/infer_stream"
    rep = stream_json(infer, "-d", body, "-n", "3", "--server-cpu")
    assert (rep["ok"], rep["pieces"], rep["status_codes"]) == (3, 12, {"200": 3})
    assert rep["time_to_first_piece"]["min_ns"] >= 19.9 * MS
    assert rep["server_pids"] == [s.proc.pid]
    # Over HTTP/2 (h2c): two streams at once on one connection.
    rep = stream_json(infer, "--http2", "-d", body, "-n", "4", "-c", "2")
    assert (rep["ok"], rep["pieces"], rep["connections"]) == (4, 16, 1)
    assert rep["transport"] == "HTTP/2 server-sent events"
    # Triton's flat body on generate_stream.
    flat = json.dumps({"x": [1], "parameters": {"n": 2}})
    rep = stream_json(f"{s.url}/v2/models/model/generate_stream", "-d", flat, "-n", "2")
    assert (rep["ok"], rep["pieces"]) == (2, 4)
    # Failing after two pieces: the error event; before the first: a 500.
    fail = json.dumps({"inputs": [x], "parameters": {"n": 4, "fail_at": 2}})
    rep = stream_json(infer, "-d", fail, "-n", "2", returncode=1)
    assert (rep["status_codes"], rep["pieces"]) == ({"error event": 2}, 4)
    assert "failed at piece 2" in rep["errors"][0]
    fail = json.dumps({"inputs": [x], "parameters": {"n": 4, "fail_at": 0}})
    for h2 in ([], ["--http2"]):
        rep = stream_json(infer, *h2, "-d", fail, "-n", "2", returncode=1)
        assert rep["status_codes"] == {"500": 2} and "failed at piece 0" in rep["errors"][0]
