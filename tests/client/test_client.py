"""``inferwire.Client`` against real servers: every encoding round-trips numpy arrays
through ``echo``, V2 with and without the binary extension, bytes, strings and data
frames, typed errors carrying the server's message, tokens, and retries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import inferwire
import numpy as np
import pytest
from inferwire import Client


@pytest.fixture(scope="module")
def echo(serve: Any) -> Any:
    return serve("echo", "--model-name", "echo")


@pytest.mark.parametrize("encoding", ["ndarray", "tensor", "tftensor", "npy", "msgpack", "json",
                                      "base64"])  # fmt: skip
def test_predict_round_trips_in_every_encoding(echo: Any, encoding: str) -> None:
    a = np.arange(12, dtype=np.float64).reshape(3, 4) / 4
    with Client(echo.url) as c:
        out = c.predict(a, encoding=encoding)
    np.testing.assert_array_equal(out, a)
    if encoding in ("npy", "msgpack", "base64"):
        assert out.dtype == a.dtype and out.shape == a.shape


def test_dtypes_kept_by_the_binary_encodings(echo: Any) -> None:
    with Client(echo.url) as c:
        for dtype in ("|u1", "<i2", "<f4", "|b1"):
            a = (np.arange(6) % 2).astype(dtype).reshape(2, 3)
            for encoding in ("npy", "msgpack", "base64", "json"):
                out = c.predict(a, encoding=encoding)
                assert out.dtype == a.dtype, (dtype, encoding)
                np.testing.assert_array_equal(out, a)


def test_bytes_strings_and_json(echo: Any) -> None:
    with Client(echo.url) as c:
        assert c.predict(b"\x89PNG....", content_type="image/png") == b"\x89PNG...."
        assert c.predict("hello") == "hello"
        assert c.predict({"Number": [70], "Start": [3]}) == {"Number": [70], "Start": [3]}
        reply = c.predict_raw({"jsonData": {"a": 1}})
        assert reply["jsonData"] == {"a": 1}


def test_v2_infer_binary_and_json(echo: Any) -> None:
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    with Client(echo.url) as c:
        for binary in (True, False):
            out = c.infer({"x": x}, model="echo", binary=binary)
            np.testing.assert_array_equal(out["output-0"], x)
            assert out["output-0"].dtype == np.int32
        words = np.array([b"a", b"bc"], dtype=object)
        out = c.infer({"w": words}, model="echo")
        assert out["output-0"].tolist() == [b"a", b"bc"]
        assert c.metadata("echo")["name"] == "echo"
        assert c.ready() and c.live()


def test_errors_are_typed_with_the_servers_message(serve: Any, echo: Any) -> None:
    failing = serve("models:Failing")
    rejecting = serve("models:Rejecting")
    with Client(failing.url) as c, pytest.raises(inferwire.ServerError) as e:
        c.predict(np.ones(2))
    assert e.value.status == 500 and "model exploded: bad luck" in e.value.message
    with Client(rejecting.url) as c, pytest.raises(inferwire.BadRequestError) as b:
        c.predict(np.ones(2))
    assert b.value.status == 400 and "feature 'age' must be positive" in str(b.value)
    with Client(echo.url) as c:
        with pytest.raises(inferwire.NotFoundError, match='no model named "nope"'):
            c.infer({"x": np.ones(1)}, model="nope")
        with pytest.raises(inferwire.BadRequestError, match="unsupported Content-Type"):
            c.predict(b"x", content_type="text/xml")
    with Client("http://127.0.0.1:9", retries=1, timeout=2) as c:
        with pytest.raises(inferwire.UnreachableError, match="after 2 tries"):
            c.predict(np.ones(1))
    assert not Client("http://127.0.0.1:9").ready()


def test_tokens(serve: Any, tmp_path: Path) -> None:
    import subprocess
    import sys

    tokens = tmp_path / "tokens"
    token = subprocess.run(
        [sys.executable, "-m", "inferwire", "auth", "token", "me", "--file", str(tokens)],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    s = serve("echo", "--auth-tokens", str(tokens))
    with Client(s.url) as c, pytest.raises(inferwire.AuthError) as e:
        c.predict(np.ones(1))
    assert e.value.status == 401 and "authentication required" in e.value.message
    with Client(s.url, token=token) as c:
        np.testing.assert_array_equal(c.predict(np.ones(2)), [1.0, 1.0])


def test_async_client_runs_calls_concurrently(echo: Any) -> None:
    import asyncio

    async def main() -> list[Any]:
        async with inferwire.AsyncClient(echo.url) as c:
            arrays = [np.full((2, 2), i, dtype=np.int64) for i in range(20)]
            calls = [c.predict(a, encoding="npy") for a in arrays]
            calls.append(c.infer({"x": np.ones(3, np.float32)}, model="echo"))
            out = await asyncio.gather(*calls)
            with pytest.raises(inferwire.NotFoundError):
                await c.infer({"x": np.ones(1)}, model="nope")
            meta = await c.metadata("echo")
            return [*out, meta]

    out = asyncio.run(main())
    for i in range(20):
        np.testing.assert_array_equal(out[i], np.full((2, 2), i))
    np.testing.assert_array_equal(out[20]["output-0"], np.ones(3, np.float32))
    assert out[21]["name"] == "echo"


def test_predict_command(echo: Any, tmp_path: Path) -> None:
    import subprocess
    import sys

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "inferwire", "predict", "--url", echo.url, *args],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    r = run("--data", "[[1, 2]]")
    assert r.returncode == 0 and r.stdout.strip() == "[[1, 2]]", r.stderr
    r = run("--data", '{"data": {"names": ["a"], "ndarray": [[3]]}}')
    assert '"ndarray": [[3]]' in r.stdout
    r = run("--data", "[1.5, 2.5]", "--model", "echo")
    assert r.stdout.strip() == '{"output-0": [1.5, 2.5]}'
    npy = tmp_path / "x.npy"
    np.save(npy, np.eye(2, dtype=np.float32))
    r = run("--file", str(npy))
    assert r.stdout.strip() == "[[1.0, 0.0], [0.0, 1.0]]", r.stderr
    r = run("--data", "[1]", "--model", "nope")
    assert r.returncode == 1 and 'no model named "nope"' in r.stderr


def test_grpc_transport(echo: Any, serve: Any, tmp_path: Path) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    with Client(echo.url, grpc=echo.grpc_target) as c:
        for encoding in ("ndarray", "tensor", "tftensor"):
            np.testing.assert_array_equal(c.predict(a, encoding=encoding), a)
        for encoding in ("npy", "msgpack", "base64"):  # in binData, with x-content-type
            out = c.predict(a, encoding=encoding)
            assert out.dtype == a.dtype
            np.testing.assert_array_equal(out, a)
        assert c.predict("hi") == "hi"
        assert c.predict({"a": [1]}) == {"a": [1]}
        assert c.predict(b"\x00\x01", content_type="image/png") == b"\x00\x01"
        out = c.infer({"x": a, "w": np.array([b"z"], dtype=object)}, model="echo")
        np.testing.assert_array_equal(out["x"], a)  # two inputs: echoed by name
        assert out["w"].tolist() == [b"z"]
        with pytest.raises(inferwire.NotFoundError, match="nope"):
            c.infer({"x": a}, model="nope")
    failing = serve("models:Failing")
    with Client(failing.url, grpc=failing.grpc_target) as c:
        with pytest.raises(inferwire.ServerError, match="model exploded"):
            c.predict(np.ones(2))
    with Client("http://127.0.0.1:9", grpc="127.0.0.1:9", retries=0, timeout=2) as c:
        with pytest.raises(inferwire.UnreachableError):
            c.predict(np.ones(1))

    import asyncio

    async def main() -> Any:
        async with inferwire.AsyncClient(echo.url, grpc=echo.grpc_target) as c:
            return await asyncio.gather(
                c.predict(a, encoding="npy"), c.infer({"x": a}, model="echo")
            )

    npy, v2 = asyncio.run(main())
    np.testing.assert_array_equal(npy, a)
    np.testing.assert_array_equal(v2["output-0"], a)


def test_overloaded_calls_are_retried(serve: Any) -> None:
    """One model call at a time and a queue of one: of 6 concurrent 0.2 s calls, most are
    refused with 503 at first; with retries they all get through."""
    from concurrent.futures import ThreadPoolExecutor

    s = serve("models.py:Slow", "--max-queue", "1")

    def call(retries: int) -> Any:
        with Client(s.url, retries=retries) as c:
            try:
                return c.predict("0.2")
            except inferwire.OverloadedError as e:
                return e

    with ThreadPoolExecutor(6) as pool:
        plain = list(pool.map(call, [0] * 6))
    refused = [r for r in plain if isinstance(r, inferwire.OverloadedError)]
    assert refused and refused[0].status == 503
    with ThreadPoolExecutor(6) as pool:
        retried = list(pool.map(call, [12] * 6))
    assert all(isinstance(r, str) and r.startswith("slept 0.2") for r in retried), retried
