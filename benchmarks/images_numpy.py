"""Images and numpy arrays over REST and gRPC: seeds 001 and 003 re-run against inferwire and,
in the same run, against the reference servers those seeds describe (docs/benchmarks.md,
"Images and numpy arrays").

Seed 001 (images): a structured "basic" request, a base64 image and a binary image at
360×640, 720×1280 and 1080×1920, over REST and gRPC, 20 concurrent requests. inferwire
serves benchmarks/models/images.py:Seed001; the peer is FastAPI/uvicorn and grpcio
(benchmarks/peers/fastapi_images). Both answer the same small structured reply, and both
decode the base64 image.

Seed 003 (numpy echo): 1, 256 and 8,192 float64 points as a JSON list, a JSON base64 buffer,
msgpack-numpy and gRPC, echoed back, many requests in flight. inferwire serves the built-in
``echo`` model (gRPC: V2 ``raw_input_contents``, and a Seldon ``binData`` holding a .npy);
the peer is aiohttp and grpcio (benchmarks/peers/numpy_echo).

Every cell is measured with the same tool (inferwire bench attack, closed loop), one server
after another, with the server's CPU time per request from /proc. Last, the time to
copy the largest image over a loopback socket, measured here, is set beside inferwire's
single-client latency for the same bytes.

    bash benchmarks/peers/fastapi_images/install.sh   # once
    bash benchmarks/peers/numpy_echo/install.sh       # once
    .venv/bin/python benchmarks/images_numpy.py          # about 6 minutes

Results: benchmarks/results/images_numpy.{md,json}.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from lib.servers import free_port  # noqa: E402
from runtime import Cell, PeerProc, attack, fmt_us, inferwire, machine  # noqa: E402

PEERS = ROOT / ".tools/peers"
SIZES = [(360, 640), (720, 1280), (1080, 1920)]
# The seed's image sizes (binary, MB) and its tables (seconds per round of 20 requests).
SEED_001_MB = {(360, 640): 0.229, (720, 1280): 0.870, (1080, 1920): 2.320}
SEED_001 = {
    (360, 640): {"REST": (0.0723, 0.0943, 0.0572), "gRPC": (0.0093, 0.0179, 0.0120)},
    (720, 1280): {"REST": (0.0611, 0.2350, 0.0872), "gRPC": (0.0090, 0.0926, 0.0570)},
    (1080, 1920): {"REST": (0.0583, 0.8056, 0.1909), "gRPC": (0.0097, 0.2793, 0.1974)},
}
POINTS = [1, 256, 8192]
# The seed's best figure per encoding and size (ms per request, 1000 parallel requests).
SEED_003 = {
    "JSON": (0.529, 1.010, 15.408),
    "JSON base64": (0.516, 0.525, 1.616),
    "msgpack": (0.487, 0.506, 0.590),
    "gRPC": (0.203, 0.212, 0.297),
}
BASIC = {"field1": "a" * 100, "field2": "b" * 100, "field3": 42, "field4": {"x": 1, "y": 2}}


# ---------------------------------------------------------------- protobuf by hand
# The peers' messages are tiny; writing them here keeps their generated code in their venv.


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def basic_pb() -> bytes:
    out = field(1, BASIC["field1"].encode()) + field(2, BASIC["field2"].encode())  # type: ignore[attr-defined]
    out += varint(3 << 3) + varint(BASIC["field3"])  # type: ignore[arg-type]
    for k, v in BASIC["field4"].items():  # type: ignore[attr-defined]
        out += field(4, field(1, k.encode()) + varint(2 << 3) + varint(v))
    return out


def array_pb(a: np.ndarray) -> bytes:
    shape = b"".join(varint(d) for d in a.shape)
    return field(1, a.tobytes()) + field(2, a.dtype.str.encode()) + field(3, shape)


# ---------------------------------------------------------------- inputs


def jpeg(size: tuple[int, int]) -> bytes:
    """A noise JPEG near the seed's byte size for this resolution."""
    from PIL import Image

    h, w = size
    rng = np.random.default_rng(1)
    # Noise compresses worse than a photo; the quality is searched to match the seed's size.
    img = Image.fromarray(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8))
    target = SEED_001_MB[size] * 1e6
    best = b""
    for quality in range(30, 98, 4):
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=quality)
        if not best or abs(len(buf.getvalue()) - target) < abs(len(best) - target):
            best = buf.getvalue()
    return best


class Requests:
    """Request files for every cell, written once."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.images = {s: jpeg(s) for s in SIZES}

    def file(self, name: str, data: bytes | str) -> str:
        p = self.work / name
        if isinstance(data, str):
            p.write_text(data)
        else:
            p.write_bytes(data)
        return str(p)


# ---------------------------------------------------------------- servers


def start_peer(venv: str, folder: str) -> tuple[PeerProc, str, str]:
    """Starts the peer's serve.py on free ports and waits for its READY line."""
    python = PEERS / venv / "bin/python"
    if not python.exists():
        raise SystemExit(f"{venv} is not installed: bash benchmarks/peers/{folder}/install.sh")
    argv = [str(python), str(ROOT / "benchmarks/peers" / folder / "serve.py")]
    argv += ["--http-port", str(free_port()), "--grpc-port", str(free_port())]
    peer = PeerProc(argv, folder)
    return peer, peer.url, peer.grpc


def run(target: str, clients: int, seconds: float, pid: int, *extra: str) -> Cell:
    report = attack(target, clients, seconds, pid, *extra)
    if report["success"] < 1.0:
        raise RuntimeError(f"{target} {extra}: {report['status_codes']} {report['errors'][:3]}")
    return Cell.of(report)


# ---------------------------------------------------------------- seed 001


def seed_001(req: Requests, seconds: float) -> dict[str, dict[str, Cell]]:
    """{server: {"size|transport|kind": cell}}, 20 clients."""
    results: dict[str, dict[str, Cell]] = {}
    basic_json = req.file("basic.json", json.dumps(BASIC))
    basic_seldon = req.file("basic-seldon.json", json.dumps({"jsonData": BASIC}))
    basic_pb_file = req.file("basic.pb", basic_pb())

    server, url = inferwire("benchmarks/models/images.py:Seed001")
    grpc = "127.0.0.1:" + server.argv[server.argv.index("--grpc-port") + 1]
    seldon = "seldon.protos.Seldon/Predict"
    try:
        cells: dict[str, Cell] = {}
        for size in SIZES:
            h, w = size
            img = req.images[size]
            b64 = base64.b64encode(img).decode()
            b64_json = req.file(f"b64-{h}.json", json.dumps({"image": b64}))
            img_file = req.file(f"img-{h}.jpg", img)
            rest = [
                ("basic", ["-D", basic_json, "-H", "Content-Type: application/json"]),
                ("base64", ["-D", b64_json, "-H", "Content-Type: application/json"]),
                ("binary", ["-D", img_file, "-H", "Content-Type: image/jpeg"]),
            ]
            for kind, extra in rest:
                cells[f"{h}x{w}|REST|{kind}"] = run(
                    f"{url}/predict", 20, seconds, server.pid, *extra
                )
            b64_seldon = req.file(f"b64-seldon-{h}.json", json.dumps({"jsonData": {"image": b64}}))
            bin_seldon = req.file(f"bin-seldon-{h}.json", json.dumps({"binData": b64}))
            for kind, body in (
                ("basic", basic_seldon),
                ("base64", b64_seldon),
                ("binary", bin_seldon),
            ):
                extra = ["--call", seldon, "--seldon-json", "-D", body]
                cells[f"{h}x{w}|gRPC|{kind}"] = run(grpc, 20, seconds, server.pid, *extra)
            print(f"inferwire seed 001 {h}x{w} done", file=sys.stderr)
        results["inferwire"] = cells
    finally:
        server.stop()

    peer, url, grpc = start_peer("fastapi-images", "fastapi_images")
    try:
        cells = {}
        for size in SIZES:
            h, w = size
            img = req.images[size]
            b64 = base64.b64encode(img).decode()
            rest = [
                ("basic", "basic", ["-D", basic_json, "-H", "Content-Type: application/json"]),
                ("base64", "base64", ["-D", req.file(f"b64-{h}.json", json.dumps({"image": b64})),
                                      "-H", "Content-Type: application/json"]),
                ("binary", "binary", ["-D", req.file(f"img-{h}.jpg", img),
                                      "-H", "Content-Type: image/jpeg"]),
            ]  # fmt: skip
            for kind, path, extra in rest:
                cells[f"{h}x{w}|REST|{kind}"] = run(f"{url}/{path}", 20, seconds, peer.pid, *extra)
            grpc_calls = [
                ("basic", "Basic", basic_pb_file),
                ("base64", "Base64", req.file(f"b64-{h}.pb", field(1, b64.encode()))),
                ("binary", "Binary", req.file(f"img-{h}.pb", field(1, img))),
            ]
            for kind, method, body in grpc_calls:
                extra = ["--call", f"images.ImageService/{method}", "-D", body]
                cells[f"{h}x{w}|gRPC|{kind}"] = run(grpc, 20, seconds, peer.pid, *extra)
            print(f"FastAPI/grpcio seed 001 {h}x{w} done", file=sys.stderr)
        results["FastAPI + grpcio"] = cells
    finally:
        peer.stop()
    return results


def table_001(results: dict[str, dict[str, Cell]], req: Requests) -> list[str]:
    ours, peer = "inferwire", "FastAPI + grpcio"
    lines: list[str] = []
    for size in SIZES:
        h, w = size
        mb = len(req.images[size]) / 1e6
        b64_mb = len(base64.b64encode(req.images[size])) / 1e6
        lines += [
            f"**{h}×{w}** (JPEG {mb:.3f} MB, base64 {b64_mb:.3f} MB; the seed's: "
            f"{SEED_001_MB[size]:.3f} MB): seconds per round of 20 concurrent requests "
            "(20 ÷ requests/s), server CPU per request",
            "",
            "| | Basic: inferwire | FastAPI/grpcio | seed | B64: inferwire | FastAPI/grpcio | seed "
            "| Binary: inferwire | FastAPI/grpcio | seed |",
            "|---|" + "---|" * 9,
        ]
        for transport in ("REST", "gRPC"):
            row = f"| {transport} |"
            for k, kind in enumerate(("basic", "base64", "binary")):
                key = f"{h}x{w}|{transport}|{kind}"
                a, b = results[ours][key], results[peer][key]
                row += (
                    f" **{20 / a.rps:.4f}** ({fmt_us(a.server_cpu_us)}) |"
                    f" {20 / b.rps:.4f} ({fmt_us(b.server_cpu_us)}) |"
                    f" {SEED_001[size][transport][k]:.4f} |"
                )
            lines.append(row)
        lines.append("")
    return lines


# ---------------------------------------------------------------- seed 003


def seed_003(req: Requests, seconds: float, clients: int) -> dict[str, dict[str, Cell]]:
    import msgpack
    import msgpack_numpy

    results: dict[str, dict[str, Cell]] = {}
    bodies: dict[int, dict[str, str]] = {}
    for n in POINTS:
        a = np.random.default_rng(n).random(n)
        npy = io.BytesIO()
        np.save(npy, a)
        v2 = {"inputs": [{"name": "x", "shape": [n], "datatype": "FP64", "data": a.tolist()}]}
        bodies[n] = {
            "json": req.file(f"list-{n}.json", json.dumps({"data": a.tolist(), "dtype": "<f8"})),
            "b64": req.file(
                f"b64-{n}.json",
                json.dumps(
                    {"buffer": base64.b64encode(a.tobytes()).decode(), "dtype": "<f8", "shape": [n]}
                ),
            ),
            "msgpack": req.file(f"{n}.msgpack", msgpack.packb(a, default=msgpack_numpy.encode)),
            "v2": req.file(f"v2-{n}.json", json.dumps(v2)),
            "npy-seldon": req.file(
                f"npy-{n}.json", json.dumps({"binData": base64.b64encode(npy.getvalue()).decode()})
            ),
            "pb": req.file(f"array-{n}.pb", array_pb(a)),
        }

    server, url = inferwire("echo", "--model-name", "echo")
    grpc = "127.0.0.1:" + server.argv[server.argv.index("--grpc-port") + 1]
    try:
        cells: dict[str, Cell] = {}
        for n in POINTS:
            b = bodies[n]
            for label, body, ctype in (
                ("JSON", b["json"], "application/json"),
                ("JSON base64", b["b64"], "application/json"),
                ("msgpack", b["msgpack"], "application/msgpack"),
            ):
                extra = ["-D", body, "-H", f"Content-Type: {ctype}"]
                cells[f"{label}|{n}"] = run(f"{url}/predict", clients, seconds, server.pid, *extra)
            v2 = ["--call", "inference.GRPCInferenceService/ModelInfer", "--v2", "raw"]
            v2 += ["--model", "echo", "-D", b["v2"]]
            cells[f"gRPC|{n}"] = run(grpc, clients, seconds, server.pid, *v2)
            npy = ["--call", "seldon.protos.Seldon/Predict", "--seldon-json", "-D", b["npy-seldon"]]
            npy += ["-H", "x-content-type: application/x-npy"]
            cells[f"gRPC .npy in binData|{n}"] = run(grpc, clients, seconds, server.pid, *npy)
            print(f"inferwire seed 003 {n} done", file=sys.stderr)
        results["inferwire"] = cells
    finally:
        server.stop()

    peer, url, grpc = start_peer("numpy-echo", "numpy_echo")
    try:
        cells = {}
        for n in POINTS:
            b = bodies[n]
            for label, path, body, ctype in (
                ("JSON", "json", b["json"], "application/json"),
                ("JSON base64", "json_binary", b["b64"], "application/json"),
                ("msgpack", "msgpack", b["msgpack"], "application/msgpack"),
            ):
                extra = ["-D", body, "-H", f"Content-Type: {ctype}"]
                cells[f"{label}|{n}"] = run(f"{url}/{path}", clients, seconds, peer.pid, *extra)
            extra = ["--call", "numpy_echo.NumpyEcho/Echo", "-D", b["pb"]]
            cells[f"gRPC|{n}"] = run(grpc, clients, seconds, peer.pid, *extra)
            print(f"aiohttp/grpcio seed 003 {n} done", file=sys.stderr)
        results["aiohttp + grpcio"] = cells
    finally:
        peer.stop()
    return results


def table_003(results: dict[str, dict[str, Cell]], clients: int) -> list[str]:
    ours, peer = "inferwire", "aiohttp + grpcio"
    lines = [
        f"ms per request (1000 ÷ requests/s) with {clients} requests in flight, server CPU per "
        "request in brackets; the seed's best server for that encoding beside",
        "",
        "| encoding | "
        + " | ".join(f"{n:,} pt: inferwire | aiohttp/grpcio | seed" for n in POINTS)
        + " |",
        "|---|" + "---|" * (3 * len(POINTS)),
    ]
    for label in ("JSON", "JSON base64", "msgpack", "gRPC", "gRPC .npy in binData"):
        row = f"| {label} |"
        for i, n in enumerate(POINTS):
            a = results[ours][f"{label}|{n}"]
            b = results[peer].get(f"{label}|{n}")
            seed = SEED_003.get(label)
            row += f" **{1000 / a.rps:.3f}** ({fmt_us(a.server_cpu_us)}) |"
            row += f" {1000 / b.rps:.3f} ({fmt_us(b.server_cpu_us)}) |" if b else " - |"
            row += f" {seed[i]:.3f} |" if seed else " - |"
        lines.append(row)
    lines += [
        "",
        "gRPC for inferwire is V2 `ModelInfer` with `raw_input_contents` (FP64), and a Seldon "
        "`binData` holding a .npy (`x-content-type: application/x-npy`); the peer's is its "
        "own `Array{buffer, dtype, shape}` message.",
    ]
    return lines


# ---------------------------------------------------------------- loopback copy


def loopback_copy_us(data: bytes, rounds: int = 200) -> float:
    """Median time to send ``data`` over a loopback TCP connection and get a 1-byte
    acknowledgement: the floor for moving those bytes to another process."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def serve() -> None:
        conn, _ = srv.accept()
        buf = bytearray(len(data))
        view = memoryview(buf)
        with conn:
            while True:
                head = conn.recv(8, socket.MSG_WAITALL)
                if len(head) < 8:
                    return
                (n,) = struct.unpack("<Q", head)
                got = 0
                while got < n:
                    got += conn.recv_into(view[got:n])
                conn.sendall(b"k")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    times = []
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        head = struct.pack("<Q", len(data))
        for _ in range(rounds):
            start = time.perf_counter()
            c.sendall(head)
            c.sendall(data)
            c.recv(1)
            times.append(time.perf_counter() - start)
    srv.close()
    return statistics.median(times) * 1e6


def transfer(req: Requests, seconds: float) -> list[str]:
    img = req.images[SIZES[-1]]
    copy_us = loopback_copy_us(img)
    server, url = inferwire("benchmarks/models/images.py:Seed001")
    grpc = "127.0.0.1:" + server.argv[server.argv.index("--grpc-port") + 1]
    try:
        path = req.file("large.jpg", img)
        rest = run(
            f"{url}/predict", 1, seconds, server.pid, "-D", path, "-H", "Content-Type: image/jpeg"
        )
        body = req.file(
            "large-seldon.json", json.dumps({"binData": base64.b64encode(img).decode()})
        )
        grpc_cell = run(
            grpc, 1, seconds, server.pid, "--call", "seldon.protos.Seldon/Predict", "--seldon-json",
            "-D", body,
        )  # fmt: skip
    finally:
        server.stop()
    return [
        f"One client, the 1080×1920 JPEG ({len(img) / 1e6:.3f} MB), median latency:",
        "",
        "| | latency | ÷ loopback copy |",
        "|---|---|---|",
        f"| loopback TCP copy of the same bytes (Python, 1-byte ack) | {fmt_us(copy_us)} | 1 |",
        f"| inferwire REST, `image/jpeg` body | {fmt_us(rest.p50_ms * 1000)} | "
        f"{rest.p50_ms * 1000 / copy_us:.2f} |",
        f"| inferwire gRPC, `binData` | {fmt_us(grpc_cell.p50_ms * 1000)} | "
        f"{grpc_cell.p50_ms * 1000 / copy_us:.2f} |",
    ]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=3.0, help="measured seconds per cell")
    p.add_argument("--clients", type=int, default=100, help="seed 003: requests in flight")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    req = Requests(Path(tempfile.mkdtemp(prefix="encodings-bench-")))
    r001 = seed_001(req, args.seconds)
    r003 = seed_003(req, args.seconds, args.clients)
    copy = transfer(req, args.seconds)
    when = time.strftime("%Y-%m-%d %H:%M")
    md = [
        f"# Images and numpy arrays ({when}, {machine()})",
        "",
        "## Seed 001: images, REST and gRPC",
        "",
        *table_001(r001, req),
        "## Seed 003: numpy echo",
        "",
        *table_003(r003, args.clients),
        "",
        "## Binary transfer against a loopback copy",
        "",
        *copy,
    ]
    (args.out / "images_numpy.md").write_text("\n".join(md) + "\n")
    (args.out / "images_numpy.json").write_text(
        json.dumps(
            {
                "seed_001": {s: {k: c.__dict__ for k, c in r.items()} for s, r in r001.items()},
                "seed_003": {s: {k: c.__dict__ for k, c in r.items()} for s, r in r003.items()},
            },
            indent=2,
        )
    )
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
