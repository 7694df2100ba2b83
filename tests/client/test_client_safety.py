"""``inferwire.Client`` never unpickles what a server sends: a hostile server (played here
by a small HTTP server and a grpcio server, since the attacker is not inferwire) answers
with a msgpack-numpy object array or an object-dtype ``.npy``, each holding a pickle that
would create a file if it ran. The client raises a clear error and the file never appears."""

from __future__ import annotations

import base64
import io
import json
import pickle
import threading
from collections.abc import Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from inferwire import Client, InferwireError


class _Trap:
    """Unpickling this creates ``path``: proof that a pickle ran."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (Path.touch, (self.path,))


def _msgpack_object_array(marker: Path) -> bytes:
    # msgpack-numpy's layout for an object array: kind "O", data a pickle.
    return msgpack.packb(
        {
            b"nd": True,
            b"type": "|O",
            b"kind": b"O",
            b"shape": [1],
            b"data": pickle.dumps(np.array([_Trap(marker)], dtype=object)),
        }
    )


def _npy_object_array(marker: Path) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.array([_Trap(marker)], dtype=object), allow_pickle=True)
    return buf.getvalue()


PAYLOADS = {
    "application/msgpack": _msgpack_object_array,
    "application/x-npy": _npy_object_array,
}


@pytest.fixture
def hostile_rest(tmp_path: Path) -> Iterator[tuple[str, dict[str, bytes]]]:
    """A server answering every POST with the body and type set in ``reply``."""
    reply: dict[str, bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", reply["type"].decode())
            self.send_header("Content-Length", str(len(reply["body"])))
            self.end_headers()
            self.wfile.write(reply["body"])

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", reply
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("content_type", sorted(PAYLOADS))
def test_rest_reply_is_never_unpickled(
    hostile_rest: tuple[str, dict[str, bytes]], tmp_path: Path, content_type: str
) -> None:
    url, reply = hostile_rest
    marker = tmp_path / "pwned"
    reply["type"] = content_type.encode()
    reply["body"] = PAYLOADS[content_type](marker)
    with Client(url, retries=0) as c, pytest.raises(InferwireError) as e:
        c.predict(np.ones((1, 2)), encoding="npy")
    assert "object" in str(e.value) or "pickl" in str(e.value), str(e.value)
    assert not marker.exists(), "the client ran a pickle from the server's reply"
    # The same client still reads an honest reply.
    reply["body"] = _honest(content_type)
    with Client(url, retries=0) as c:
        np.testing.assert_array_equal(c.predict(np.ones((1, 2)), encoding="npy"), [[1.0, 2.0]])


def _honest(content_type: str) -> bytes:
    a = np.array([[1.0, 2.0]])
    if content_type == "application/msgpack":
        import msgpack_numpy

        return bytes(msgpack.packb(a, default=msgpack_numpy.encode))
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


@pytest.mark.parametrize("content_type", sorted(PAYLOADS))
def test_grpc_reply_is_never_unpickled(tmp_path: Path, content_type: str) -> None:
    import grpc
    from inferwire import _core

    marker = tmp_path / "pwned"
    payload = PAYLOADS[content_type](marker)
    reply = _core.seldon_to_pb(json.dumps({"binData": base64.b64encode(payload).decode()}).encode())

    def predict(_request: bytes, context: Any) -> bytes:
        context.send_initial_metadata((("x-content-type", content_type),))
        return bytes(reply)

    handler = grpc.method_handlers_generic_handler(
        "seldon.protos.Seldon", {"Predict": grpc.unary_unary_rpc_method_handler(predict)}
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with Client("http://127.0.0.1:1", grpc=f"127.0.0.1:{port}", retries=0) as c:
            with pytest.raises(InferwireError) as e:
                c.predict(np.ones((1, 2)), encoding="npy")
        assert "object" in str(e.value) or "pickl" in str(e.value), str(e.value)
        assert not marker.exists(), "the client ran a pickle from the server's reply"
    finally:
        server.stop(None)
