"""Every body encoding round-trips through the built-in ``echo`` model, checked with the
reference libraries (numpy's .npy reader, msgpack-numpy, Pillow); bad bodies get clear
4xx answers; the same binary bodies work over gRPC in ``binData``."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from typing import Any

import grpc
import httpx
import msgpack
import msgpack_numpy
import numpy as np
import pytest
from PIL import Image

DTYPES = ["|b1", "|u1", "<u2", "<u4", "<u8", "|i1", "<i2", "<i4", "<i8", "<f2", "<f4", "<f8"]
SHAPES = [(), (0,), (5,), (2, 3), (2, 0, 4), (2, 1, 3, 2)]
PREDICT = "/api/v1.0/predictions"


@pytest.fixture(scope="module")
def echo(serve: Any) -> Any:
    return serve("echo")


@pytest.fixture(scope="module")
def stats(serve: Any) -> Any:
    return serve("image-stats")


def sample(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    n = int(np.prod(shape))
    if dtype == "|b1":
        return (np.arange(n) % 3 == 0).reshape(shape)
    values = np.arange(n) * 3 - (n if np.dtype(dtype).kind in "if" else 0)
    if np.dtype(dtype).kind == "f":
        values = values / 4
    return values.astype(dtype).reshape(shape)


# (Content-Type, encode request, decode reply)
def npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def npy_load(b: bytes) -> np.ndarray:
    return np.load(io.BytesIO(b), allow_pickle=False)  # type: ignore[no-any-return]


def msgpack_bytes(a: np.ndarray) -> bytes:
    return msgpack.packb(a, default=msgpack_numpy.encode)  # type: ignore[no-any-return]


def msgpack_load(b: bytes) -> np.ndarray:
    return np.asarray(msgpack.unpackb(b, object_hook=msgpack_numpy.decode))


def json_list(a: np.ndarray) -> bytes:
    import json

    return json.dumps({"data": a.tolist(), "dtype": a.dtype.str}).encode()


def json_list_load(b: bytes) -> np.ndarray:
    import json

    d = json.loads(b)
    return np.array(d["data"], dtype=d["dtype"])


def json_b64(a: np.ndarray) -> bytes:
    import json

    doc = {
        "buffer": base64.b64encode(a.tobytes()).decode(),
        "dtype": a.dtype.str,
        "shape": list(a.shape),
    }
    return json.dumps(doc).encode()


def json_b64_load(b: bytes) -> np.ndarray:
    import json

    d = json.loads(b)
    return np.frombuffer(base64.b64decode(d["buffer"]), dtype=d["dtype"]).reshape(d["shape"])


ENCODINGS: dict[str, tuple[str, Callable[[np.ndarray], bytes], Callable[[bytes], np.ndarray]]] = {
    "npy": ("application/x-npy", npy_bytes, npy_load),
    "msgpack": ("application/msgpack", msgpack_bytes, msgpack_load),
    "json-list": ("application/json", json_list, json_list_load),
    "json-base64": ("application/json", json_b64, json_b64_load),
}


@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_every_dtype_and_shape_round_trips(echo: Any, encoding: str) -> None:
    ctype, encode, decode = ENCODINGS[encoding]
    with httpx.Client(base_url=echo.url, timeout=30) as c:
        for dtype in DTYPES:
            for shape in SHAPES:
                a = sample(dtype, shape)
                r = c.post(PREDICT, content=encode(a), headers={"Content-Type": ctype})
                assert r.status_code == 200, (encoding, dtype, shape, r.text)
                assert r.headers["content-type"] == ctype
                got = decode(r.content)
                # A JSON list cannot say what lies beyond an empty axis: compare with
                # what numpy itself reads back from the same list.
                want = np.array(a.tolist(), dtype=a.dtype) if encoding == "json-list" else a
                assert got.dtype == want.dtype, (encoding, dtype, shape, got.dtype)
                assert got.shape == want.shape, (encoding, dtype, shape, got.shape)
                np.testing.assert_array_equal(got, want)


def test_npy_big_endian_and_fortran_order(echo: Any) -> None:
    a = np.arange(12, dtype=">i4").reshape(3, 4)
    f = np.asfortranarray(np.arange(24, dtype="<f8").reshape(2, 3, 4))
    for arr in (a, f):
        r = httpx.post(
            echo.url + PREDICT,
            content=npy_bytes(arr),
            headers={"Content-Type": "application/x-npy"},
        )
        assert r.status_code == 200, r.text
        got = npy_load(r.content)
        np.testing.assert_array_equal(got, arr)
        assert got.flags["C_CONTIGUOUS"]


def test_seed_003_msgpack_with_string_keys(echo: Any) -> None:
    """The seed's layout as older packers wrote it: raw keys, `type` as bytes."""
    a = np.arange(4, dtype="<i8").reshape(2, 2)
    body = msgpack.packb(
        {"nd": True, "type": b"<i8", "kind": b"", "shape": [2, 2], "data": a.tobytes()},
        use_bin_type=False,
    )
    r = httpx.post(
        echo.url + PREDICT, content=body, headers={"Content-Type": "application/msgpack"}
    )
    assert r.status_code == 200, r.text
    np.testing.assert_array_equal(msgpack_load(r.content), a)


def test_accept_picks_the_reply_encoding(echo: Any) -> None:
    a = np.arange(6, dtype="<f4").reshape(2, 3)
    url = echo.url + PREDICT
    npy = {"Content-Type": "application/x-npy"}
    r = httpx.post(url, content=npy_bytes(a), headers={**npy, "Accept": "application/msgpack"})
    assert r.headers["content-type"] == "application/msgpack"
    np.testing.assert_array_equal(msgpack_load(r.content), a)
    r = httpx.post(url, content=npy_bytes(a), headers={**npy, "Accept": "application/json"})
    assert r.json() == {"data": a.tolist(), "dtype": "<f4"}
    r = httpx.post(
        url, content=npy_bytes(a), headers={**npy, "Accept": "text/html;q=0.9, image/png"}
    )
    assert r.status_code == 406
    assert "application/x-npy can" in r.json()["status"]["info"]
    # A Seldon request may ask for its array as .npy.
    r = httpx.post(
        url, json={"data": {"ndarray": [[1, 2], [3, 4]]}}, headers={"Accept": "application/x-npy"}
    )
    assert r.headers["content-type"] == "application/x-npy"
    np.testing.assert_array_equal(npy_load(r.content), [[1, 2], [3, 4]])
    # and a Seldon client that sends an Accept nothing fits still gets its SeldonMessage.
    r = httpx.post(url, json={"data": {"ndarray": [1]}}, headers={"Accept": "text/html"})
    assert r.json()["data"]["ndarray"] == [1]


def test_bytes_images_and_multipart(echo: Any) -> None:
    url = echo.url + PREDICT
    blob = bytes(range(256)) * 40
    for ctype in ("application/octet-stream", "image/jpeg", "audio/wav"):
        r = httpx.post(url, content=blob, headers={"Content-Type": ctype})
        assert r.status_code == 200, r.text
        assert r.headers["content-type"] == ctype
        assert r.content == blob
    # As FastAPI UploadFile clients send a file, with another form field beside it.
    r = httpx.post(url, files={"file": ("x.png", blob, "image/png")}, data={"note": "hi"})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "image/png"
    assert r.content == blob
    r = httpx.post(url, content=b"", headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 200 and r.content == b""
    # Chunked, with no Content-Length: the frames are joined in order.
    big = bytes(range(256)) * 8192

    def chunks() -> Any:
        for i in range(0, len(big), 100_000):
            yield big[i : i + 100_000]

    r = httpx.post(url, content=chunks(), headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 200 and r.content == big


def test_seed_001_basic_request_as_plain_json_and_json_data(echo: Any, pb: Any) -> None:
    basic = {"field1": "a" * 20, "field2": "b" * 20, "field3": 42, "field4": {"x": 1, "y": 2}}
    r = httpx.post(echo.url + PREDICT, json=basic)
    assert r.status_code == 200, r.text
    assert r.json() == basic
    r = httpx.post(echo.url + PREDICT, json={"jsonData": basic})
    assert r.json()["jsonData"] == basic
    from google.protobuf import json_format

    with echo.channel() as ch:
        reply = pb.grpc.SeldonStub(ch).Predict(
            json_format.ParseDict({"jsonData": basic}, pb.msgs.SeldonMessage()), timeout=10
        )
    assert json_format.MessageToDict(reply)["jsonData"] == basic


def grpc_bin(server: Any, pb: Any, body: bytes, **meta: str) -> tuple[bytes, dict[str, str]]:
    with server.channel() as ch:
        reply, call = pb.grpc.SeldonStub(ch).Predict.with_call(
            pb.msgs.SeldonMessage(binData=body),
            metadata=[(k.replace("_", "-"), v) for k, v in meta.items()],
            timeout=10,
        )
    return reply.binData, dict(call.initial_metadata())


def test_grpc_carries_the_same_binary_bodies(echo: Any, pb: Any) -> None:
    a = np.arange(24, dtype="<i2").reshape(2, 3, 4)
    out, meta = grpc_bin(echo, pb, npy_bytes(a), x_content_type="application/x-npy")
    assert meta["x-content-type"] == "application/x-npy"
    np.testing.assert_array_equal(npy_load(out), a)
    out, meta = grpc_bin(
        echo,
        pb,
        npy_bytes(a),
        x_content_type="application/x-npy",
        x_accept="application/msgpack",
    )
    assert meta["x-content-type"] == "application/msgpack"
    np.testing.assert_array_equal(msgpack_load(out), a)
    out, _ = grpc_bin(echo, pb, json_b64(a), x_content_type="application/json")
    np.testing.assert_array_equal(json_b64_load(out), a)
    # Without x-content-type, binData is bytes for the model, as in Seldon.
    out, _ = grpc_bin(echo, pb, b"\x00raw\xff")
    assert out == b"\x00raw\xff"
    with pytest.raises(grpc.RpcError) as e:
        grpc_bin(echo, pb, b"\x93NUMPY\x01\x00", x_content_type="application/x-npy")
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "invalid .npy body" in (e.value.details() or "")
    with echo.channel() as ch, pytest.raises(grpc.RpcError) as e:
        pb.grpc.SeldonStub(ch).Predict(
            pb.msgs.SeldonMessage(strData="x"),
            metadata=[("x-content-type", "application/x-npy")],
            timeout=10,
        )
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "describes binData, but this message carries strData" in (e.value.details() or "")


def image(fmt: str, size: tuple[int, int] = (64, 48)) -> bytes:
    rng = np.random.default_rng(7)
    pixels = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format=fmt)
    return buf.getvalue()


def test_image_stats_over_every_path(stats: Any, pb: Any) -> None:
    for fmt in ("JPEG", "PNG"):
        data = image(fmt)
        want = np.asarray(Image.open(io.BytesIO(data)))
        expected = {"shape": [48, 64, 3], "mean": float(want.mean()), "format": fmt}
        url = stats.url + PREDICT
        replies = [
            httpx.post(url, content=data, headers={"Content-Type": f"image/{fmt.lower()}"}),
            httpx.post(url, files={"file": ("img", data, f"image/{fmt.lower()}")}),
            httpx.post(url, json={"image": base64.b64encode(data).decode()}),
        ]
        for r in replies:
            assert r.status_code == 200, r.text
            assert r.headers["content-type"] == "application/json"
            assert r.json() == expected
        with stats.channel() as ch:
            reply = pb.grpc.SeldonStub(ch).Predict(pb.msgs.SeldonMessage(binData=data), timeout=10)
        from google.protobuf import json_format

        assert json_format.MessageToDict(reply)["jsonData"] == expected
    r = httpx.post(
        stats.url + PREDICT, content=b"not an image", headers={"Content-Type": "image/png"}
    )
    assert r.status_code == 400
    assert "cannot decode the image" in r.json()["status"]["info"]


def test_noop_answers_one_in_the_request_encoding(serve: Any) -> None:
    s = serve("noop")
    r = httpx.post(
        s.url + PREDICT,
        content=npy_bytes(np.zeros((3, 3))),
        headers={"Content-Type": "application/x-npy"},
    )
    np.testing.assert_array_equal(npy_load(r.content), [1])
    r = httpx.post(s.url + PREDICT, json={"data": {"ndarray": [[0.0]]}})
    assert r.json()["data"]["ndarray"] == [1]


def msgpack_doc(**fields: Any) -> bytes:
    base: dict[bytes, Any] = {
        b"nd": True,
        b"type": "<f8",
        b"kind": b"",
        b"shape": [2],
        b"data": np.zeros(2).tobytes(),
    }
    base.update({k.encode(): v for k, v in fields.items()})
    return msgpack.packb(base)  # type: ignore[no-any-return]


def truncated_npy() -> bytes:
    return npy_bytes(np.zeros(3))[:30]


BAD_BODIES = [
    ("application/x-npy", truncated_npy(), "header says it is"),
    ("application/x-npy", b"PK\x03\x04 zip", "magic string"),
    ("application/x-npy", npy_bytes(np.zeros(3))[:-4], "20 bytes"),
    ("application/msgpack", msgpack_doc(shape=[3]), "16 bytes, but 3 elements"),
    ("application/msgpack", msgpack_doc(data=b"\x00" * 5), "5 bytes"),
    ("application/msgpack", msgpack_doc(kind=b"O"), "kind 'O'"),
    ("application/msgpack", msgpack_doc(type="|O"), "unpickling"),
    ("application/msgpack", msgpack.packb([1, 2, 3]), "not a msgpack map"),
    ("application/msgpack", msgpack_doc()[:-3], "past the end"),
    ("application/json", b'{"buffer": "@@@", "dtype": "<f8", "shape": [1]}', "not valid base64"),
    ("application/json", b'{"buffer": "AAAA", "dtype": "<f8", "shape": [1]}', "3 bytes"),
    ("application/json", b'{"data": [[1], [2, 3]], "dtype": "<i8"}', "rectangular"),
    ("application/json", b'{"data": [1, 2], "dtype": "<U3"}', "string arrays"),
    ("application/json", b'{"data": [256], "dtype": "|u1"}', "256 does not fit in u8"),
    (
        "multipart/form-data; boundary=XX",
        b'--XX\r\nContent-Disposition: form-data; name="note"\r\n\r\nhi\r\n--XX--\r\n',
        "exactly one file part",
    ),
    ("multipart/form-data; boundary=XX", b"no boundary here", "never occurs"),
    ("multipart/form-data", b"--XX\r\n", "no boundary parameter"),
    ("text/xml", b"<a/>", "unsupported Content-Type"),
]


@pytest.mark.parametrize(("ctype", "body", "message"), BAD_BODIES)
def test_malformed_bodies_get_clear_400s(echo: Any, ctype: str, body: bytes, message: str) -> None:
    r = httpx.post(echo.url + PREDICT, content=body, headers={"Content-Type": ctype})
    assert r.status_code in (400, 415), r.text
    assert message in r.json()["status"]["info"], r.text
    # and the server keeps serving
    ok = httpx.post(
        echo.url + PREDICT,
        content=npy_bytes(np.ones(2)),
        headers={"Content-Type": "application/x-npy"},
    )
    assert ok.status_code == 200


def test_npy_with_pickled_objects_is_refused(echo: Any) -> None:
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    r = httpx.post(
        echo.url + PREDICT, content=buf.getvalue(), headers={"Content-Type": "application/x-npy"}
    )
    assert r.status_code == 400
    assert "unpickling" in r.json()["status"]["info"]


def test_encoding_label_in_metrics(echo: Any) -> None:
    httpx.post(
        echo.url + PREDICT,
        content=msgpack_bytes(np.ones(1)),
        headers={"Content-Type": "application/msgpack"},
    )
    text = httpx.get(echo.url + "/metrics").text
    assert 'encoding="msgpack"' in text
