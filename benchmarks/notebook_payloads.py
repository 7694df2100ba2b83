"""The Seldon benchmark notebook's request files, written as the notebook writes them.

``data_ndarray.json`` and ``data_tensor.json`` are built with the notebook's own string
expressions. ``data_tftensor.json`` is what ``tf.make_tensor_proto(np.array(vals))`` and
``json_format.MessageToJson`` produce: for more than one int64 the values go in
``tensorContent`` (base64 of the little-endian bytes), for one value in ``int64Val``;
it is written here with numpy and base64 alone, so TensorFlow is not needed.
The ``vegeta_*.json`` files are vegeta JSON targets with the body base64-encoded.

    python benchmarks/notebook_payloads.py OUT_DIR --size 100000 [--url URL]
"""

from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path

import numpy as np

# The notebook's URL with only host:port changed.
DEFAULT_URL = "http://127.0.0.1:9000/seldon/seldon/seldon-model/api/v1.0/predictions"
ENCODINGS = ("ndarray", "tensor", "tftensor")


def payloads(size: int) -> dict[str, str]:
    vals = list(range(size))
    val_str = f"{vals}"
    tensor_json: dict[str, object] = {
        "dtype": "DT_INT64",
        "tensorShape": {"dim": [{"size": str(size)}]},
    }
    if size == 1:
        tensor_json["int64Val"] = [str(v) for v in vals]
    else:
        raw = np.array(vals, dtype="<i8").tobytes()
        tensor_json["tensorContent"] = base64.b64encode(raw).decode("ascii")
    return {
        "ndarray": '{"data": {"ndarray": [' + val_str + "]}}",
        "tensor": '{"data":{"tensor":{"shape":[1,' + str(size) + '],"values":' + val_str + "}}}",
        "tftensor": '{"data":{"tftensor":' + json.dumps(tensor_json, separators=(",", ":")) + "}}",
    }


def vegeta_target(url: str, body: str) -> str:
    target = {
        "method": "POST",
        "url": url,
        "body": base64.b64encode(body.encode("ascii")).decode("ascii"),
        "header": {"Content-Type": ["application/json"]},
    }
    return json.dumps(target, separators=(",", ":")) + "\n"


def write(out: Path, size: int, url: str = DEFAULT_URL) -> dict[str, Path]:
    """Writes data_<enc>.json and vegeta_<enc>.json; returns {encoding: data file}."""
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for encoding, body in payloads(size).items():
        data = out / f"data_{encoding}.json"
        data.write_text(body)
        (out / f"vegeta_{encoding}.json").write_text(vegeta_target(url, body))
        files[encoding] = data
    return files


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("out", type=Path)
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--url", default=DEFAULT_URL)
    args = p.parse_args()
    for encoding, path in write(args.out, args.size, args.url).items():
        print(f"{encoding}: {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
