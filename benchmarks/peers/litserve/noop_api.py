"""The no-op model as a LitServe API, and the LitServer that serves it (run by serve.py
in its own process group; see README.md).

``POST /predict`` takes ``{"data": [...]}`` (a list, e.g. INT64 values) and answers
``{"data": [...]}`` with the same list: the JSON LitServe decoded handed back unchanged.

    python noop_api.py --port 8000 [--workers 2] [--max-batch-size 1] [--batch-timeout 0]
        [--no-fast-queue] [--api-servers N] [--stream | --images]

With ``--stream`` (LitServe's ``stream=True``) the same route answers a streamed body
instead: one ``{"data": VALUE}`` JSON object per element of ``data``, as LitServe sends
each piece the generators yield (smoke.py's streaming check; no benchmark uses it).

With ``--images`` the route is seed 001's server instead (benchmarks/models/images.py is
inferwire's): any JSON body gets the seed's small answer, and a body ``{"image": BASE64}``
is decoded first. LitServe reads JSON (or forms, with python-multipart), not a raw binary
body, so this is the only way it takes the seed's images.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import os
import signal
from typing import Any

import litserve as ls


class NoopAPI(ls.LitAPI):
    """Echoes ``data``; with batching on, LitServe's default batch/unbatch (lists)."""

    def setup(self, device: str) -> None:
        pass  # nothing to load

    # No annotation on `request` nor on encode_response's result: LitServe builds the
    # FastAPI route from them, and an unannotated one means "read the body as JSON".
    def decode_request(self, request):
        return request["data"]

    def predict(self, x: Any) -> Any:
        return x

    def encode_response(self, output):
        return {"data": output}


class NoopStreamAPI(NoopAPI):
    """Yields each element of ``data`` as a piece of its own."""

    def predict(self, x):
        yield from x

    def encode_response(self, output):
        for value in output:
            yield {"data": value}


SEED_001_ANSWER = {"prediction1": [0.1, 0.2, 0.3], "prediction2": {"a": 1}}


class Seed001API(ls.LitAPI):
    """Seed 001's server: decodes a base64 ``image``, answers the same small reply."""

    def setup(self, device: str) -> None:
        pass

    def decode_request(self, request):
        if isinstance(request, dict) and "image" in request:
            try:
                # As inferwire's Seed001 decodes (not validate=True: that adds a regex pass).
                return base64.b64decode(request["image"])
            except (binascii.Error, TypeError) as e:
                # LitServe turns an HTTPException into its status; anything else is a 500.
                from fastapi import HTTPException

                raise HTTPException(400, f"image: not base64 ({e})") from None
        return request

    def predict(self, x: Any) -> Any:
        return SEED_001_ANSWER

    def encode_response(self, output):
        return output


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="inference worker processes (workers_per_device, accelerator cpu); "
        "LitServe's docs: the number of cores for CPU",
    )
    p.add_argument(
        "--api-servers",
        type=int,
        default=None,
        help="uvicorn API server processes; left out: LitServe's default (= workers)",
    )
    p.add_argument("--max-batch-size", type=int, default=1, help="1 = batching off")
    p.add_argument("--batch-timeout", type=float, default=0.0, help="seconds")
    p.add_argument(
        "--no-fast-queue",
        action="store_true",
        help="multiprocessing queues instead of ZeroMQ (fast_queue=False, LitServe's default)",
    )
    p.add_argument("--stream", action="store_true", help="stream=True (NoopStreamAPI)")
    p.add_argument("--images", action="store_true", help="seed 001's server (Seed001API)")
    args = p.parse_args()
    # LitServe stops gracefully on KeyboardInterrupt only (serve.py sends SIGINT), and
    # Python leaves SIGINT ignored if it was so when started (a shell's background job).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    cls = NoopStreamAPI if args.stream else Seed001API if args.images else NoopAPI
    api = cls(
        max_batch_size=args.max_batch_size, batch_timeout=args.batch_timeout, stream=args.stream
    )
    server = ls.LitServer(
        api,
        accelerator="cpu",
        workers_per_device=args.workers,
        fast_queue=not args.no_fast_queue,
    )
    server.run(
        host="127.0.0.1",
        port=args.port,
        num_api_servers=args.api_servers,
        log_level="warning",
        generate_client_file=False,  # else it writes client.py into the current directory
    )


if __name__ == "__main__":
    main()
