"""The REST server of seed 003's numpy echo benchmark: aiohttp on asyncio's own loop.

    .tools/peers/numpy-echo/bin/python benchmarks/peers/numpy_echo/server_aiohttp.py \\
        [--port 8080]

Listens on 127.0.0.1 (port from ``--port``, else the ``PORT`` environment variable, else
8080), no access log, request bodies up to 64 MiB (aiohttp's default is 1 MiB). Each
route decodes the array into numpy and answers it encoded again the same way:

- ``POST /json``: ``{"data": <nested list>, "dtype": "<i8"}`` ->
  ``numpy.array(data, dtype=dtype)`` -> ``{"data": arr.tolist(), "dtype": arr.dtype.str}``.
- ``POST /json_binary``: ``{"buffer": <base64>, "dtype": "<i8", "shape": [2, 2]}`` ->
  ``numpy.frombuffer(buffer, dtype).reshape(shape)`` -> the same three keys.
- ``POST /msgpack``: a msgpack_numpy-packed array -> unpacked -> packed back,
  ``Content-Type: application/msgpack``.

A body that does not decode to an array is answered 400 with the reason as text.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import os
from collections.abc import Awaitable, Callable
from typing import Any

import msgpack
import msgpack_numpy
import numpy as np
from aiohttp import web

MAX_BODY = 64 * 1024 * 1024
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def bad_request(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turns what a malformed body raises into 400."""
    try:
        return await handler(request)
    except (ValueError, TypeError, KeyError, binascii.Error) as e:
        # json.JSONDecodeError and msgpack's ExtraData/FormatError are ValueErrors too.
        raise web.HTTPBadRequest(text=f"{type(e).__name__}: {e}") from e


async def echo_json(request: web.Request) -> web.Response:
    body: dict[str, Any] = await request.json()
    arr = np.array(body["data"], dtype=body["dtype"])
    return web.json_response({"data": arr.tolist(), "dtype": arr.dtype.str})


async def echo_json_binary(request: web.Request) -> web.Response:
    body: dict[str, Any] = await request.json()
    buffer = base64.b64decode(body["buffer"], validate=True)
    arr = np.frombuffer(buffer, dtype=body["dtype"]).reshape(body["shape"])
    return web.json_response(
        {
            "buffer": base64.b64encode(arr.tobytes()).decode("ascii"),
            "dtype": arr.dtype.str,
            "shape": list(arr.shape),
        }
    )


async def echo_msgpack(request: web.Request) -> web.Response:
    arr = msgpack.unpackb(await request.read(), object_hook=msgpack_numpy.decode)
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"the body is a msgpack {type(arr).__name__}, not a msgpack_numpy array")
    packed = msgpack.packb(arr, default=msgpack_numpy.encode)
    return web.Response(body=packed, content_type="application/msgpack")


def make_app() -> web.Application:
    app = web.Application(client_max_size=MAX_BODY, middlewares=[bad_request])
    app.router.add_post("/json", echo_json)
    app.router.add_post("/json_binary", echo_json_binary)
    app.router.add_post("/msgpack", echo_msgpack)
    return app


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8080")))
    args = p.parse_args()
    web.run_app(make_app(), host="127.0.0.1", port=args.port, access_log=None, print=None)


if __name__ == "__main__":
    main()
