"""Writes the request bodies of the Triton peer's unary workloads (README.md, "Workloads")
into a folder, for ``inferwire bench attack -D FILE``. Run it with main's virtualenv (it
uses benchmarks/images_numpy.py's JPEGs, which need Pillow):

    .venv/bin/python benchmarks/peers/pytriton/bodies.py DIR

Every request carries a batch dimension of 1 first (``[1, 1]``, ``[1, 100000]``): serve.py
batches by default, and Triton then wants it. With ``serve.py --no-batching`` use
``--no-batch-dim``. The 100,000 INT64 are kserve/smoke.py's (``BIG``), the images and the
"basic" fields seed 001's (images_numpy.py). Prints each file with its size, and the
``Inference-Header-Content-Length`` of the binary bodies.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
from images_numpy import BASIC, SIZES, jpeg  # noqa: E402
from lib.v2_bodies import binary_extension, bytes_element, infer_request_pb  # noqa: E402

N = 100_000
BIG = (np.arange(N, dtype=np.int64) - N // 2) * np.int64(92_233_720_368_547)


def v2(inputs: list[dict], **parameters: object) -> dict:
    body: dict = {"inputs": inputs}
    if parameters:
        body["parameters"] = parameters
    return body


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("folder", type=Path)
    p.add_argument("--no-batch-dim", action="store_true", help="for serve.py --no-batching")
    args = p.parse_args()
    out: Path = args.folder
    out.mkdir(parents=True, exist_ok=True)
    b = [] if args.no_batch_dim else [1]
    files: dict[str, bytes] = {}
    headers: dict[str, int] = {}

    def int64(n: int) -> dict:
        return {"name": "input-0", "shape": [*b, n], "datatype": "INT64"}

    files["small.json"] = json.dumps(v2([dict(int64(1), data=[7])])).encode()
    files["large.json"] = json.dumps(v2([dict(int64(N), data=BIG.tolist())])).encode()
    big = BIG.astype("<i8").tobytes()
    files["large.bin"], headers["large.bin"] = binary_extension([(int64(N), big)], True)

    def text(name: str, value: str) -> dict:
        return {"name": name, "shape": [*b, 1], "datatype": "BYTES", "data": [value]}

    basic = [
        text("field1", BASIC["field1"]),
        text("field2", BASIC["field2"]),
        {"name": "field3", "shape": [*b, 1], "datatype": "INT64", "data": [BASIC["field3"]]},
        text("field4", json.dumps(BASIC["field4"])),
    ]
    files["basic.json"] = json.dumps(v2(basic)).encode()
    for h, w in SIZES:
        img = jpeg((h, w))
        b64 = base64.b64encode(img).decode()
        files[f"b64-{h}.json"] = json.dumps(v2([text("image_b64", b64)])).encode()
        image = {"name": "image", "shape": [*b, 1], "datatype": "BYTES"}
        body, headers[f"img-{h}.bin"] = binary_extension([(image, bytes_element(img))])
        files[f"img-{h}.bin"] = body
        files[f"img-{h}.pb"] = infer_request_pb("images", "image", [*b, 1], bytes_element(img))
    for name, data in files.items():
        (out / name).write_bytes(data)
        extra = f"  Inference-Header-Content-Length: {headers[name]}" if name in headers else ""
        print(f"{out / name}  {len(data):,} bytes{extra}")
    # For scripts: one "FILE LENGTH" line per binary-extension body.
    lengths = "".join(f"{name} {n}\n" for name, n in headers.items())
    (out / "header-lengths.txt").write_text(lengths)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
