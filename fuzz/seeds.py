"""Writes the committed seed corpus (fuzz/corpus/TARGET/*): small valid inputs of every
shape each decoder takes, so that fuzzing starts from the real formats.

    .venv/bin/python fuzz/seeds.py
"""

from __future__ import annotations

import base64
import io
import json
import struct
from pathlib import Path

import msgpack
import msgpack_numpy
import numpy as np
from inferwire import _core

CORPUS = Path(__file__).resolve().parent / "corpus"

SELDON = [
    {"data": {"ndarray": [[1, 2, 3]]}},
    {"data": {"names": ["a", "b"], "ndarray": [[1.5, -2e3], [0, 1]]}},
    {"data": {"tensor": {"shape": [2, 2], "values": [1, 2, 3, 4]}}},
    {
        "data": {
            "tftensor": {
                "dtype": "DT_INT64",
                "tensorShape": {"dim": [{"size": "2"}]},
                "int64Val": ["1", "2"],
            }
        }
    },
    {"data": {"ndarray": [["a", "b"], [True, None]]}},
    {"binData": base64.b64encode(b"\x00\x01bytes").decode()},
    {"strData": "hello"},
    {"jsonData": {"x": [1, 2, {"y": None}]}},
    {"meta": {"puid": "p", "tags": {"k": "v"}}, "data": {"ndarray": [1]}},
    {
        "request": {"data": {"ndarray": [[1]]}},
        "response": {"data": {"ndarray": [[2]]}},
        "reward": 1.0,
    },
]
V2 = [
    {"inputs": [{"name": "x", "shape": [2, 2], "datatype": "INT64", "data": [1, 2, 3, 4]}]},
    {
        "id": "1",
        "inputs": [{"name": "x", "shape": [3], "datatype": "FP32", "data": [[1.5, 2], [3]]}],
        "outputs": [{"name": "y"}],
    },
    {
        "inputs": [
            {
                "name": "s",
                "shape": [2],
                "datatype": "BYTES",
                "data": ["a", "bc"],
                "parameters": {"content_type": "str"},
            }
        ]
    },
    {
        "inputs": [{"name": "b", "shape": [1], "datatype": "BOOL", "data": [True]}],
        "parameters": {"content_type": "pd"},
    },
]


# Triton generate bodies: inputs by name, parameters beside them.
GENERATE = [
    {"text_input": "hello", "max_tokens": 16, "parameters": {"temperature": 0.5}},
    {"ids": [[1, 2], [3, 4]], "scale": [0.5, 1.5], "stop": True, "id": "7"},
]


def write(target: str, name: str, data: bytes) -> None:
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def varint(n: int) -> bytes:
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def field(number: int, wire: int, payload: bytes) -> bytes:
    key = varint(number << 3 | wire)
    return key + (varint(len(payload)) + payload if wire == 2 else payload)


def tensor_proto(dtype: int, dims: list[int], content: bytes) -> bytes:
    shape = b"".join(field(2, 2, field(1, 0, varint(d))) for d in dims)
    return field(1, 0, varint(dtype)) + field(2, 2, shape) + field(4, 2, content)


def main() -> None:
    for i, m in enumerate(SELDON):
        body = json.dumps(m).encode()
        write("seldon_json", f"{i}.json", body)
        if "request" not in m:
            write("seldon_pb", f"{i}.pb", _core.seldon_to_pb(body))
    for i, m in enumerate(V2):
        body = json.dumps(m).encode()
        write("v2_json", f"{i}.json", body)
        write("v2_pb", f"{i}.pb", _core.v2_request_to_pb(body, None, "m"))
    for i, m in enumerate(GENERATE):
        write("v2_generate", f"{i}.json", json.dumps(m).encode())
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "x",
                    "shape": [2],
                    "datatype": "INT64",
                    "parameters": {"binary_data_size": 16},
                }
            ]
        }
    ).encode()
    blob = np.array([1, 2], dtype="<i8").tobytes()
    write("v2_binary", "0.bin", struct.pack("<H", len(header)) + header + blob)
    strings = struct.pack("<I", 2) + b"ab" + struct.pack("<I", 1) + b"c"
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "s",
                    "shape": [2],
                    "datatype": "BYTES",
                    "parameters": {"binary_data_size": len(strings)},
                }
            ]
        }
    ).encode()
    write("v2_binary", "1.bin", struct.pack("<H", len(header)) + header + strings)
    write("tftensor", "int64.pb", tensor_proto(9, [2, 2], np.arange(4, dtype="<i8").tobytes()))
    write("tftensor", "float.pb", tensor_proto(1, [3], np.ones(3, dtype="<f4").tobytes()))
    for i, a in enumerate(
        [
            np.arange(6, dtype="<i8").reshape(2, 3),
            np.float32(1.5),
            np.zeros((0, 2)),
            np.array([True, False]),
            np.asfortranarray(np.ones((2, 2), dtype=">f8")),
        ]
    ):
        buf = io.BytesIO()
        np.save(buf, a)
        write("npy", f"{i}.npy", buf.getvalue())
        write(
            "msgpack",
            f"{i}.msgpack",
            msgpack.packb(np.ascontiguousarray(a), default=msgpack_numpy.encode),
        )
        write(
            "array_json",
            f"list{i}.json",
            json.dumps({"data": np.asarray(a).tolist(), "dtype": a.dtype.str}).encode(),
        )
        write(
            "array_json",
            f"b64{i}.json",
            json.dumps(
                {
                    "buffer": base64.b64encode(np.ascontiguousarray(a).tobytes()).decode(),
                    "dtype": a.dtype.str,
                    "shape": list(np.shape(a)),
                }
            ).encode(),
        )
    write(
        "multipart",
        "0.txt",
        b'XyZ\n--XyZ\r\nContent-Disposition: form-data; name="file"; '
        b'filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n\xff\xd8\xff\r\n--XyZ--\r\n',
    )
    write(
        "multipart",
        "1.txt",
        b"b\npreamble\r\n--b\r\nContent-Disposition: form-data; "
        b'name="x"\r\n\r\n1\r\n--b\r\nContent-Disposition: form-data; name="y"\r\n\r\n2'
        b"\r\n--b--",
    )


if __name__ == "__main__":
    main()
