"""Smoke test of serve.py (seed 001's FastAPI and grpcio image servers), on 127.0.0.1.

Starts serve.py on free ports and times the start, checks that both servers listen on
loopback only, then sends every request kind once with a 360x640 JPEG of random noise
(Pillow, quality 95 as OpenCV's ``imencode`` has by default) and checks each answer:

- REST (httpx): ``/basic``, ``/base64``, ``/binary`` as ``application/octet-stream`` and
  as ``image/jpeg``, ``/upload`` (multipart), and a body that is not base64 (400);
- gRPC (the generated stub): ``Basic``, ``Base64``, ``Binary``, a 20 MiB ``Binary`` (past
  grpcio's 4 MiB default, within the servers' 64 MiB) and a string that is not base64
  (``INVALID_ARGUMENT``).

Then, unless ``--calls 0``, the mean latency of ``--calls`` sequential calls of each kind
(one client, one keep-alive connection or channel; rough figures, the client shares the
machine). Last it sends SIGTERM to serve.py, times the stop and checks that neither
server nor serve.py is left.

    .tools/peers/fastapi-images/bin/python benchmarks/peers/fastapi_images/smoke.py \\
        [--calls 20] [--server-log FILE]

Run it with the virtualenv's Python: it needs grpcio, httpx, Pillow, numpy and the
generated modules.
"""

from __future__ import annotations

import argparse
import base64
import io
import sys
from pathlib import Path
from typing import Any

import grpc
import httpx
import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pair import channel, load_generated
from smoke_checks import add_server_log, mean_ms, smoke_pair

HERE = Path(__file__).resolve().parent
ANSWER = {"prediction1": [0.1, 0.2, 0.3], "prediction2": {"a": 1}}
BASIC = {"field1": "hello", "field2": "world", "field3": 42, "field4": {"x": 1, "y": 2}}


def jpeg(height: int, width: int) -> bytes:
    noise = np.random.default_rng(1).integers(0, 256, (height, width, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(noise, "RGB").save(out, format="JPEG", quality=95)
    return out.getvalue()


def check_rest(client: httpx.Client, image: bytes) -> list[str]:
    sent: list[str] = []

    def post(path: str, expect: int = 200, **kwargs: Any) -> None:
        reply = client.post(path, **kwargs)
        assert reply.status_code == expect, (path, reply.status_code, reply.text[:300])
        if expect == 200:
            assert reply.json() == ANSWER, (path, reply.text[:300])
        sent.append(f"{path} {expect}")

    post("/basic", json=BASIC)
    post("/base64", json={"image": base64.b64encode(image).decode()})
    post("/binary", content=image, headers={"Content-Type": "application/octet-stream"})
    post("/binary", content=image, headers={"Content-Type": "image/jpeg"})
    post("/upload", files={"file": ("noise.jpg", image, "image/jpeg")})
    post("/base64", expect=400, json={"image": "not base64!"})
    return sent


def check_answer(pb2: Any, reply: Any) -> None:
    assert isinstance(reply, pb2.BasicResponse), type(reply)
    # float32 on the wire: compare with the float32 values.
    want = np.array(ANSWER["prediction1"], dtype=np.float32)
    assert np.array_equal(np.array(reply.prediction1, dtype=np.float32), want), reply
    assert dict(reply.prediction2) == ANSWER["prediction2"], reply


def check_grpc(pb2: Any, stub: Any, image: bytes) -> list[str]:
    sent = []
    check_answer(pb2, stub.Basic(pb2.BasicRequest(**BASIC), timeout=10))
    sent.append("Basic")
    check_answer(
        pb2, stub.Base64(pb2.ImageBase64Request(image=base64.b64encode(image)), timeout=10)
    )
    sent.append("Base64")
    check_answer(pb2, stub.Binary(pb2.ImageBinaryRequest(image=image), timeout=10))
    sent.append("Binary")
    big = np.random.default_rng(2).bytes(20 * 1024 * 1024)
    check_answer(pb2, stub.Binary(pb2.ImageBinaryRequest(image=big), timeout=30))
    sent.append("Binary 20 MiB")
    try:
        stub.Base64(pb2.ImageBase64Request(image="not base64!"), timeout=10)
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e
    else:
        raise AssertionError("Base64 accepted a string that is not base64")
    sent.append("Base64 INVALID_ARGUMENT")
    return sent


def timings(client: httpx.Client, pb2: Any, stub: Any, image: bytes, calls: int) -> str:
    b64 = base64.b64encode(image).decode()
    basic = pb2.BasicRequest(**BASIC)
    in_b64 = pb2.ImageBase64Request(image=b64)
    in_bin = pb2.ImageBinaryRequest(image=image)
    octet = {"Content-Type": "application/octet-stream"}
    rows = {
        "REST basic": lambda: client.post("/basic", json=BASIC),
        "REST base64": lambda: client.post("/base64", json={"image": b64}),
        "REST binary": lambda: client.post("/binary", content=image, headers=octet),
        "REST upload": lambda: client.post("/upload", files={"file": ("n.jpg", image)}),
        "gRPC Basic": lambda: stub.Basic(basic, timeout=10),
        "gRPC Base64": lambda: stub.Base64(in_b64, timeout=10),
        "gRPC Binary": lambda: stub.Binary(in_bin, timeout=10),
    }
    return ", ".join(f"{name} {mean_ms(call, calls):.2f} ms" for name, call in rows.items())


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--calls", type=int, default=20, help="timed calls of each kind; 0: none")
    add_server_log(p, "the servers' output")
    args = p.parse_args()
    pb2, pb2_grpc = load_generated("images")
    image = jpeg(360, 640)
    print(f"image: 360x640 JPEG of noise, {len(image):,} bytes", flush=True)

    def check(url: str, target: str) -> None:
        with (
            httpx.Client(base_url=url, timeout=30, trust_env=False) as client,
            channel(target) as grpc_channel,
        ):
            stub = pb2_grpc.ImageServiceStub(grpc_channel)
            print(f"REST checks passed: {', '.join(check_rest(client, image))}", flush=True)
            print(f"gRPC checks passed: {', '.join(check_grpc(pb2, stub, image))}", flush=True)
            if args.calls:
                times = timings(client, pb2, stub, image, args.calls)
                print(f"mean of {args.calls} calls: {times}", flush=True)

    return smoke_pair(HERE / "serve.py", args.server_log, check)


if __name__ == "__main__":
    raise SystemExit(main())
