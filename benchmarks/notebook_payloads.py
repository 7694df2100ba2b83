"""The request files of Seldon's "Python Wrapper Benchmarking" notebook, for one size.

Writes into a directory, byte for byte as the notebook's cells do for ``sz = SIZE``:

- ``data_ndarray.json``, ``data_tensor.json``: the notebook's own string expressions;
- ``data_tftensor.json``: the notebook builds it with
  ``json_format.MessageToJson(tf.make_tensor_proto(np.array(vals)))``. That TensorProto
  has ``dtype`` DT_INT64 (numpy's default integer on Linux), one dimension of ``size``
  and, because ``make_tensor_proto`` packs arrays of more than one element into
  ``tensor_content``, either ``tensorContent`` (base64 of the little-endian int64 bytes)
  or, for a single element, ``int64Val`` (int64 values are JSON strings in the protobuf
  JSON mapping). MessageToJson writes fields in field-number order (dtype 1,
  tensor_shape 2, tensor_content 4, int64_val 10), which ``json.loads`` + ``json.dumps``
  keep. The same JSON is produced here from numpy and base64, without TensorFlow;
  ``--check-tensorflow`` compares it with TensorFlow's where TensorFlow is installed;
- ``vegeta_{ndarray,tensor,tftensor}.json``: vegeta JSON targets (one line, body in
  base64), as the notebook writes them, with a configurable URL.

    python benchmarks/notebook_payloads.py OUT_DIR [--size 100000] [--url URL]
"""

from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path

import numpy as np

DEFAULT_URL = "http://127.0.0.1:9000/api/v1.0/predictions"
ENCODINGS = ("ndarray", "tensor", "tftensor")
SIZES = (100_000, 1)


def tftensor_json(vals: list[int]) -> dict[str, object]:
    """What ``json.loads(MessageToJson(tf.make_tensor_proto(np.array(vals))))`` gives."""
    proto: dict[str, object] = {
        "dtype": "DT_INT64",
        "tensorShape": {"dim": [{"size": str(len(vals))}]},
    }
    if len(vals) > 1:
        raw = np.asarray(vals, dtype="<i8").tobytes()
        proto["tensorContent"] = base64.b64encode(raw).decode("ascii")
    else:
        proto["int64Val"] = [str(v) for v in vals]
    return proto


def payloads(size: int) -> dict[str, str]:
    """The three request bodies for ``size`` consecutive integers, keyed by encoding."""
    vals = list(range(size))
    val_str = f"{vals}"
    tensor = json.dumps(tftensor_json(vals), separators=(",", ":"))
    return {
        "ndarray": '{"data": {"ndarray": [' + val_str + "]}}",
        "tensor": '{"data":{"tensor":{"shape":[1,' + str(size) + '],"values":' + val_str + "}}}",
        "tftensor": '{"data":{"tftensor":' + tensor + "}}",
    }


def vegeta_target(url: str, body: str) -> str:
    """One vegeta JSON target line, as the notebook writes it."""
    target = {
        "method": "POST",
        "url": url,
        "body": base64.b64encode(body.encode("ascii")).decode("ascii"),
        "header": {"Content-Type": ["application/json"]},
    }
    return json.dumps(target, separators=(",", ":")) + "\n"


def write(out: Path, size: int, url: str = DEFAULT_URL) -> dict[str, Path]:
    """Writes data_<enc>.json and vegeta_<enc>.json into ``out``; returns the data files."""
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for encoding, body in payloads(size).items():
        data = out / f"data_{encoding}.json"
        data.write_text(body)
        (out / f"vegeta_{encoding}.json").write_text(vegeta_target(url, body))
        files[encoding] = data
    return files


def check_against_tensorflow(size: int) -> None:
    """Builds data_tftensor.json the notebook's way and compares (needs tensorflow)."""
    import tensorflow as tf
    from google.protobuf import json_format

    proto = tf.make_tensor_proto(np.array(list(range(size))))
    expected = json.dumps(json.loads(json_format.MessageToJson(proto)), separators=(",", ":"))
    ours = json.dumps(tftensor_json(list(range(size))), separators=(",", ":"))
    if ours != expected:
        raise SystemExit(f"size {size}: differs from TensorFlow's\n{ours[:200]}\n{expected[:200]}")
    print(f"size {size}: identical to TensorFlow's make_tensor_proto + MessageToJson")


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("out", type=Path, nargs="?", help="directory to write the files into")
    p.add_argument("--size", type=int, default=100_000, help="integers per request")
    p.add_argument("--url", default=DEFAULT_URL, help="URL in the vegeta targets")
    p.add_argument(
        "--check-tensorflow", action="store_true", help="compare tftensor with TensorFlow's"
    )
    args = p.parse_args()
    if args.check_tensorflow:
        check_against_tensorflow(args.size)
    if args.out is not None:
        for encoding, path in write(args.out, args.size, args.url).items():
            print(f"{encoding}: {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
