"""inferwire beside every server a user would pick instead, in one run (docs/benchmarks.md,
"Beside the other model servers").

Each server runs with the launch settings its project documents as fastest on CPU (see
each ``benchmarks/peers/NAME/README.md``), serving the same echo model and, where it takes
images, seed 001's image model. Every cell is measured by the same load generator
(``inferwire bench attack``, closed loop, a warm-up first), one server after another, with
the server's whole process tree's CPU time per request (from /proc):

- small request (one INT64 / one number), 1, 8 and 64 clients, over REST JSON and, where
  the server has it, gRPC;
- 100,000 INT64, one client, over every encoding the server has: JSON, the V2 binary
  tensor extension, gRPC raw contents;
- seed 001's images, 20 in flight, three sizes, binary and base64, REST and gRPC where
  the server takes images (the answer is the seed's small structured reply).

Last, a summary: for each peer, inferwire's requests/s and the peer's server CPU per
request, each divided by the other's, on the small request (REST JSON), on 100,000 INT64
(each server's fastest encoding) and on the images (each server's fastest binary form, and
its fastest base64 form, at each size).

    for p in kserve bentoml litserve mlserver pytriton torchserve; do
        bash benchmarks/peers/$p/install.sh; done
    .venv/bin/python benchmarks/peer_servers.py        # about 12 minutes

A peer that is not installed is skipped and named. Results:
benchmarks/results/peer_servers.{md,json}.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import os
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from images_numpy import SIZES, field, jpeg  # noqa: E402
from lib.servers import free_port  # noqa: E402
from lib.v2_bodies import binary_extension, bytes_element, infer_request_pb  # noqa: E402
from runtime import Cell, PeerProc, Proc, attack, fmt_us, machine  # noqa: E402

PEERS = ROOT / ".tools/peers"
V2_CALL = "inference.GRPCInferenceService/ModelInfer"
TS_CALL = "org.pytorch.serve.grpc.inference.InferenceAPIsService/Predictions"
SELDON_CALL = "seldon.protos.Seldon/Predict"
N = 100_000
# The same values every peer's smoke test echoes: the whole INT64 range, past 2**53.
BIG = [(i - N // 2) * 92233720368547 for i in range(N)]


class Bodies:
    """Every request body, written once into a temporary folder."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.images = {s: jpeg(s) for s in SIZES}

    def file(self, name: str, make: Callable[[], bytes | str]) -> str:
        p = self.work / name
        if not p.exists():
            data = make()
            p.write_bytes(data if isinstance(data, bytes) else data.encode())
        return str(p)

    def v2(self, n: int, batch: bool = False) -> str:
        """A V2 JSON request for ``input-0`` (shape [1, n] with ``batch``: Triton's
        batching models take the batch dimension)."""
        data = [7] if n == 1 else BIG
        shape = [1, n] if batch else [n]
        body = {"inputs": [{"name": "input-0", "shape": shape, "datatype": "INT64", "data": data}]}
        return self.file(f"v2-{n}-{batch}.json", lambda: json.dumps(body))

    def v2_binary(self, batch: bool = False) -> tuple[str, int]:
        """The binary tensor extension, the reply binary too: (file, header length)."""
        shape = [1, N] if batch else [N]
        tensor = {"name": "input-0", "shape": shape, "datatype": "INT64"}
        body, head = binary_extension([(tensor, struct.pack(f"<{N}q", *BIG))], True)
        return self.file(f"v2-bin-{batch}.bin", lambda: body), head

    def raw(self, n: int) -> str:
        """The INT64s as little-endian bytes, nothing else (TorchServe's binary body)."""
        return self.file(f"raw-{n}.bin", lambda: struct.pack(f"<{n}q", *([7] if n == 1 else BIG)))

    def predictions(self, model: str, name: str, data: bytes) -> str:
        """TorchServe's gRPC PredictionsRequest: model_name = 1, input = 3 (a map entry:
        key 1, value 2), ``data`` as the input named ``data``."""
        message = field(1, model.encode()) + field(3, field(1, b"data") + field(2, data))
        return self.file(f"ts-{name}.pb", lambda: message)

    def triton_image(self, size: tuple[int, int]) -> tuple[str, str, str, int]:
        """Triton's images model, with the batch dimension its batching wants: (base64
        JSON, gRPC raw binary, REST binary extension, its header length)."""
        h = size[0]
        b64 = {"inputs": [{"name": "image_b64", "shape": [1, 1], "datatype": "BYTES",
                           "data": [self.b64(size)]}]}  # fmt: skip
        element = bytes_element(self.images[size])
        tensor = {"name": "image", "shape": [1, 1], "datatype": "BYTES"}
        body, head = binary_extension([(tensor, element)])
        return (
            self.file(f"triton-b64-{h}.json", lambda: json.dumps(b64)),
            self.file(
                f"triton-{h}.pb", lambda: infer_request_pb("images", "image", [1, 1], element)
            ),
            self.file(f"triton-{h}.bin", lambda: body),
            head,
        )

    def data(self, n: int) -> str:
        """``{"data": [...]}``: the JSON body of the peers with their own REST API."""
        return self.file(f"data-{n}.json", lambda: json.dumps({"data": [7] if n == 1 else BIG}))

    def jpeg(self, size: tuple[int, int]) -> str:
        return self.file(f"img-{size[0]}.jpg", lambda: self.images[size])

    def b64(self, size: tuple[int, int]) -> str:
        return base64.b64encode(self.images[size]).decode()

    def image_json(self, size: tuple[int, int]) -> str:
        return self.file(f"img-{size[0]}.json", lambda: json.dumps({"image": self.b64(size)}))

    def seldon(self, size: tuple[int, int], kind: str) -> str:
        """A SeldonMessage (JSON, sent as protobuf): the image's bytes in ``binData``, or
        its base64 text in ``jsonData`` as the REST base64 body."""
        body = {"binData": self.b64(size)} if kind == "binData" else {
            "jsonData": {"image": self.b64(size)}}  # fmt: skip
        return self.file(f"seldon-{kind}-{size[0]}.json", lambda: json.dumps(body))


@dataclass
class Form:
    """One cell: a workload sent one way."""

    workload: str  # small | 100k | images
    label: str  # REST JSON, gRPC raw, REST binary, ...
    clients: int
    target: str  # URL, or host:port with --call
    extra: list[str]
    size: str = ""  # the image size

    @property
    def key(self) -> str:
        return f"{self.workload}|{self.label}|{self.size}|{self.clients}"


@dataclass
class Running:
    proc: Proc | PeerProc
    url: str
    grpc: str


@dataclass
class Phase:
    """One server process and the cells sent to it."""

    start: Callable[[], Running]
    forms: Callable[[Running, Bodies], list[Form]]


@dataclass
class Server:
    name: str
    settings: str  # the launch settings, stated beside the figures
    phases: list[Phase]
    folder: str = ""  # benchmarks/peers/FOLDER, installed in .tools/peers/FOLDER ("": ours)

    @property
    def install(self) -> str:
        return f"bash benchmarks/peers/{self.folder}/install.sh"

    def installed(self) -> bool:
        return not self.folder or (PEERS / self.folder / "bin/python").exists()


JSON = ["-H", "Content-Type: application/json"]


def small(url: str, body: str, label: str = "REST JSON") -> list[Form]:
    return [Form("small", label, c, url, ["-D", body, *JSON]) for c in (1, 8, 64)]


def small_grpc(target: str, body: str, model: str = "noop") -> list[Form]:
    extra = ["--call", V2_CALL, "--v2", "raw", "--model", model, "-D", body]
    return [Form("small", "gRPC raw", c, target, extra) for c in (1, 8, 64)]


def v2_forms(r: Running, b: Bodies, binary: bool = True, batch: bool = False) -> list[Form]:
    """The echo workloads over V2: REST JSON and gRPC raw, and the binary extension."""
    infer = f"{r.url}/v2/models/noop/infer"
    forms = small(infer, b.v2(1, batch)) + small_grpc(r.grpc, b.v2(1, batch))
    forms.append(Form("100k", "REST JSON", 1, infer, ["-D", b.v2(N, batch), *JSON]))
    if binary:
        body, head = b.v2_binary(batch)
        header = f"Inference-Header-Content-Length: {head}"
        octets = ["-H", "Content-Type: application/octet-stream", "-H", header]
        forms.append(Form("100k", "REST binary", 1, infer, ["-D", body, *octets]))
    grpc = ["--call", V2_CALL, "--v2", "raw", "--model", "noop", "-D", b.v2(N, batch)]
    forms.append(Form("100k", "gRPC raw", 1, r.grpc, grpc))
    return forms


def peer(folder: str, *args: str, grpc: bool = True) -> Callable[[], Running]:
    """Starts ``benchmarks/peers/FOLDER/serve.py`` in its virtualenv on free ports; it is
    ready once it prints READY (every model it serves answering)."""

    def start() -> Running:
        python = PEERS / folder / "bin/python"
        argv = [str(python), str(ROOT / "benchmarks/peers" / folder / "serve.py")]
        ports = ["--http-port", str(free_port()), "--grpc-port", str(free_port())]
        argv += ports if grpc else ["--port", str(free_port())]
        peer = PeerProc([*argv, *args], folder)
        return Running(peer, peer.url, peer.grpc)

    return start


def inferwire_server(python: str, workers: int) -> Server:
    def serve(model: str, *args: str) -> Callable[[], Running]:
        def start() -> Running:
            http, gport = free_port(), free_port()
            argv = [python, "-m", "inferwire", "serve", model, "--host", "127.0.0.1"]
            argv += ["--http-port", str(http), "--grpc-port", str(gport)]
            argv += ["--workers", str(workers), *args]
            url = f"http://127.0.0.1:{http}"
            return Running(Proc(argv, url + "/health/ping"), url, f"127.0.0.1:{gport}")

        return start

    def images(r: Running, b: Bodies) -> list[Form]:
        forms = []
        for size in SIZES:
            s = f"{size[0]}x{size[1]}"
            grpc = ["--call", SELDON_CALL, "--seldon-json", "-D"]
            forms += [
                Form("images", "REST binary", 20, f"{r.url}/predict",
                     ["-D", b.jpeg(size), "-H", "Content-Type: image/jpeg"], s),
                Form("images", "REST base64", 20, f"{r.url}/predict",
                     ["-D", b.image_json(size), *JSON], s),
                Form("images", "gRPC binary", 20, r.grpc, [*grpc, b.seldon(size, "binData")], s),
                Form("images", "gRPC base64", 20, r.grpc, [*grpc, b.seldon(size, "jsonData")], s),
            ]  # fmt: skip
        return forms

    return Server(
        "inferwire",
        f"`inferwire serve` defaults but `--workers {workers}` (one per core): "
        + ("one worker process" if workers == 1 else f"{workers} worker processes")
        + ", two I/O threads and one model thread each, batching off",
        [
            Phase(serve("benchmarks/models/noop.py:Echo", "--model-name", "noop"), v2_forms),
            Phase(serve("benchmarks/models/images.py:Seed001"), images),
        ],
    )


def data_forms(url: str, b: Bodies) -> list[Form]:
    """The echo workloads of a server with its own REST API: ``{"data": [...]}``."""
    return [*small(url, b.data(1)), Form("100k", "REST JSON", 1, url, ["-D", b.data(N), *JSON])]


def bentoml_images(r: Running, b: Bodies) -> list[Form]:
    forms = []
    for size in SIZES:
        s = f"{size[0]}x{size[1]}"
        forms += [
            Form("images", "REST binary", 20, f"{r.url}/binary",
                 ["-D", b.jpeg(size), "-H", "Content-Type: image/jpeg"], s),
            Form("images", "REST base64", 20, f"{r.url}/base64",
                 ["-D", b.image_json(size), *JSON], s),
        ]  # fmt: skip
    return forms


def triton_forms(r: Running, b: Bodies) -> list[Form]:
    forms = v2_forms(r, b, batch=True)
    for size in SIZES:
        b64, pb, binary, head = b.triton_image(size)
        infer, s = f"{r.url}/v2/models/images/infer", f"{size[0]}x{size[1]}"
        forms += [
            Form("images", "REST binary", 20, infer,
                 ["-D", binary, "-H", "Content-Type: application/octet-stream",
                  "-H", f"Inference-Header-Content-Length: {head}"], s),
            Form("images", "REST base64", 20, infer, ["-D", b64, *JSON], s),
            Form("images", "gRPC binary", 20, r.grpc, ["--call", V2_CALL, "-D", pb], s),
            Form("images", "gRPC base64", 20, r.grpc,
                 ["--call", V2_CALL, "--v2", "raw", "--model", "images", "-D", b64], s),
        ]  # fmt: skip
    return forms


def torchserve_forms(r: Running, b: Bodies) -> list[Form]:
    noop, images = f"{r.url}/predictions/noop", f"{r.url}/predictions/images"
    octets = ["-H", "Content-Type: application/octet-stream"]
    small_pb = b.predictions("noop", "small", struct.pack("<q", 7))
    forms = small(noop, b.data(1)) + [
        Form("small", "gRPC raw", c, r.grpc, ["--call", TS_CALL, "-D", small_pb])
        for c in (1, 8, 64)
    ]
    large_pb = b.predictions("noop", "large", struct.pack(f"<{N}q", *BIG))
    forms += [
        Form("100k", "REST JSON", 1, noop, ["-D", b.data(N), *JSON]),
        Form("100k", "REST binary", 1, noop, ["-D", b.raw(N), *octets]),
        Form("100k", "gRPC raw", 1, r.grpc, ["--call", TS_CALL, "-D", large_pb]),
    ]
    for size in SIZES:
        s = f"{size[0]}x{size[1]}"
        pb = b.predictions("images", f"img-{size[0]}", b.images[size])
        forms += [
            Form("images", "REST binary", 20, images,
                 ["-D", b.jpeg(size), "-H", "Content-Type: image/jpeg"], s),
            Form("images", "REST base64", 20, images, ["-D", b.image_json(size), *JSON], s),
            Form("images", "gRPC binary", 20, r.grpc, ["--call", TS_CALL, "-D", pb], s),
        ]  # fmt: skip
    return forms


def litserve_images(r: Running, b: Bodies) -> list[Form]:
    """LitServe reads JSON bodies (no raw binary body): base64 only."""
    return [
        Form("images", "REST base64", 20, f"{r.url}/predict", ["-D", b.image_json(size), *JSON],
             f"{size[0]}x{size[1]}")
        for size in SIZES
    ]  # fmt: skip


def servers(python: str, workers: int) -> list[Server]:
    return [
        inferwire_server(python, workers),
        Server(
            "Triton",
            "PyTriton 0.7.0 (tritonserver 2.51.0, Python models): dynamic batching, "
            "`max_batch_size` 64, no queue delay (requests carry a batch dimension: `[1, n]`), "
            "one instance per model, `async def` callables, metrics on (Triton's default)",
            [
                Phase(
                    peer("pytriton", "--models", "noop,images", "--metrics"),
                    triton_forms,
                )
            ],
            "pytriton",
        ),
        Server(
            "TorchServe",
            "torchserve 0.12.0: 2 workers per model with 1 torch thread each (its performance "
            "guide for CPU), batching `batchSize` 8 / `maxBatchDelay` 10 ms (its batching "
            "guide's example), token auth off, per-request logs off",
            [Phase(peer("torchserve", "--models", "noop,images"), torchserve_forms)],
            "torchserve",
        ),
        Server(
            "KServe",
            "kserve 0.21.0 `ModelServer`: `--workers 1` (REST processes, its default), "
            "`--max_threads 4` (gRPC), per-request logging off; no batching in the Python "
            "server",
            [Phase(peer("kserve"), v2_forms)],
            "kserve",
        ),
        Server(
            "BentoML",
            'bentoml 1.4.40: `workers="cpu_count"` (2), `async def` APIs, adaptive '
            "batching off (its default), no access log; REST only",
            [
                Phase(
                    peer("bentoml", grpc=False),
                    lambda r, b: [*data_forms(f"{r.url}/echo", b), *bentoml_images(r, b)],
                )
            ],
            "bentoml",
        ),
        Server(
            "LitServe",
            "litserve 0.2.19: `workers_per_device` = cores (2), an API server per worker, "
            "`fast_queue=True` (ZeroMQ), batching off; REST only, JSON bodies (images as "
            "base64)",
            [
                Phase(
                    peer("litserve", grpc=False),
                    lambda r, b: data_forms(f"{r.url}/predict", b),
                ),
                Phase(peer("litserve", "--images", grpc=False), litserve_images),
            ],
            "litserve",
        ),
        Server(
            "MLServer",
            "mlserver 1.7.1: `parallel_workers` default (1 inference process), adaptive "
            "batching off (its default); no binary tensor extension",
            [Phase(peer("mlserver"), lambda r, b: v2_forms(r, b, False))],
            "mlserver",
        ),
    ]


# ---------------------------------------------------------------- measuring


def measure(server: Server, bodies: Bodies, seconds: float) -> dict[str, Cell]:
    cells: dict[str, Cell] = {}
    for phase in server.phases:
        running = phase.start()
        try:
            for form in phase.forms(running, bodies):
                report = attack(form.target, form.clients, seconds, running.proc.pid, *form.extra)
                if report["success"] < 1.0:
                    raise RuntimeError(
                        f"{server.name} {form.key}: {report['status_codes']} {report['errors'][:3]}"
                    )
                cells[form.key] = Cell.of(report)
                print(
                    f"{server.name:<10} {form.key:<34} {report['throughput']:>9.0f}/s",
                    file=sys.stderr,
                )
        finally:
            running.proc.stop()
    return cells


# ---------------------------------------------------------------- tables


def times(a: float, b: float) -> str:
    r = a / b
    return f"{r:.0f}×" if r >= 10 else f"{r:.1f}×"


def split(key: str) -> tuple[str, str, str, int]:
    workload, label, size, clients = key.split("|")
    return workload, label, size, int(clients)


def small_table(results: dict[str, dict[str, Cell]]) -> list[str]:
    lines = [
        "| server | form | 1 client | 8 clients | 64 clients | CPU/req at 64 |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, cells in results.items():
        for label in dict.fromkeys(split(k)[1] for k in cells if k.startswith("small|")):
            row = [cells.get(f"small|{label}||{c}") for c in (1, 8, 64)]
            rates = " | ".join(f"{c.rps:,.0f}/s" if c else "-" for c in row)
            cpu = fmt_us(row[2].server_cpu_us) if row[2] else "-"
            lines.append(f"| {name} | {label} | {rates} | {cpu} |")
    return lines


def large_table(results: dict[str, dict[str, Cell]]) -> list[str]:
    labels = ["REST JSON", "REST binary", "gRPC raw"]
    lines = [
        "| server | " + " | ".join(f"{label}: mean | CPU/req" for label in labels) + " |",
        "|---|" + "---:|---:|" * len(labels),
    ]
    for name, cells in results.items():
        row = []
        for label in labels:
            c = cells.get(f"100k|{label}||1")
            row.append(f"{fmt_us(c.mean_us)} | {fmt_us(c.server_cpu_us)}" if c else "- | -")
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    return lines


def images_table(results: dict[str, dict[str, Cell]]) -> list[str]:
    sizes = [f"{h}x{w}" for h, w in SIZES]
    lines = [
        "| server | form | " + " | ".join(f"{s}: req/s | CPU/req" for s in sizes) + " |",
        "|---|---|" + "---:|---:|" * len(sizes),
    ]
    for name, cells in results.items():
        for label in dict.fromkeys(split(k)[1] for k in cells if k.startswith("images|")):
            row = []
            for s in sizes:
                c = cells.get(f"images|{label}|{s}|20")
                row.append(f"{c.rps:,.0f} | {fmt_us(c.server_cpu_us)}" if c else "- | -")
            lines.append(f"| {name} | {label} | " + " | ".join(row) + " |")
    return lines


def best(cells: dict[str, Cell], *parts: str) -> Cell | None:
    """The fastest cell (requests/s) whose key holds every one of ``parts``."""
    found = [c for k, c in cells.items() if all(p in k for p in parts)]
    return max(found, key=lambda c: c.rps, default=None)


@dataclass
class Ratio:
    rps: list[float] = dataclasses.field(default_factory=list)  # inferwire's ÷ the peer's
    cpu: list[float] = dataclasses.field(default_factory=list)  # the peer's ÷ inferwire's

    def add(self, ours: Cell | None, theirs: Cell | None) -> None:
        if ours and theirs:
            self.rps.append(ours.rps / theirs.rps)
            if ours.server_cpu_us and theirs.server_cpu_us:
                self.cpu.append(theirs.server_cpu_us / ours.server_cpu_us)

    def text(self) -> str:
        """Worst (smallest) first; a range when the cells disagree."""
        if not self.rps:
            return "not measured"

        def span(xs: list[float]) -> str:
            lo, hi = times(min(xs), 1), times(max(xs), 1)
            return lo if lo == hi else f"{lo}–{hi}"

        cpu = span(self.cpu) if self.cpu else "-"
        return f"{span(self.rps)} · {cpu}"


def summary(results: dict[str, dict[str, Cell]]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Rows per peer: inferwire's requests/s ÷ the peer's · the peer's CPU/request ÷
    inferwire's, per workload; and the worst of each (for the README)."""
    ours = results["inferwire"]
    lines = [
        "| peer | small request, REST JSON, 1 / 8 / 64 clients | 100,000 INT64, fastest "
        "encoding each | seed 001 images, binary, 3 sizes | seed 001 images, base64, 3 sizes |",
        "|---|---:|---:|---:|---:|",
    ]
    worst: dict[str, dict[str, Any]] = {}
    for name, cells in results.items():
        if name == "inferwire":
            continue
        small_r, large_r, binary_r, base64_r = Ratio(), Ratio(), Ratio(), Ratio()
        for c in (1, 8, 64):
            small_r.add(ours.get(f"small|REST JSON||{c}"), cells.get(f"small|REST JSON||{c}"))
        large_r.add(best(ours, "100k|"), best(cells, "100k|"))
        for h, w in SIZES:
            for kind, ratio in (("binary", binary_r), ("base64", base64_r)):
                size = f"|{h}x{w}|"
                ratio.add(best(ours, "images|", kind, size), best(cells, "images|", kind, size))
        row = (small_r, large_r, binary_r, base64_r)
        lines.append(f"| {name} | " + " | ".join(r.text() for r in row) + " |")
        every = [x for r in row for x in r.rps]
        every_cpu = [x for r in row for x in r.cpu]
        worst[name] = {
            "rps_min": min(every) if every else None,
            "rps_max": max(every) if every else None,
            "cpu_min": min(every_cpu) if every_cpu else None,
            "cpu_max": max(every_cpu) if every_cpu else None,
        }
    lines += [
        "",
        "Each cell: inferwire's requests/s ÷ the peer's · the peer's server CPU per request ÷",
        "inferwire's (above 1×: inferwire is faster, and cheaper). Where a workload has several",
        "cells (clients, sizes), the range, worst first. Images: each server's fastest form",
        "(REST or gRPC) at each size.",
    ]
    return lines, worst


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seconds", type=float, default=5.0, help="per cell, after 1 s of warm-up")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    p.add_argument("--only", help="comma-separated servers to run (inferwire always runs)")
    p.add_argument(
        "--python", default=sys.executable, help="the interpreter whose inferwire serves"
    )
    p.add_argument(
        "--inferwire-workers",
        type=int,
        default=os.cpu_count() or 1,
        help="inferwire's --workers (default: one per core, as the peers' workers; its "
        "operations guide's advice for models that run Python on the CPU)",
    )
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    chosen = [s.strip().lower() for s in args.only.split(",")] if args.only else None
    bodies = Bodies(Path(tempfile.mkdtemp(prefix="peer-servers-")))
    results: dict[str, dict[str, Cell]] = {}
    settings: dict[str, str] = {}
    skipped = []
    for server in servers(args.python, args.inferwire_workers):
        if chosen and server.name != "inferwire" and server.name.lower() not in chosen:
            continue
        if not server.installed():
            skipped.append(f"{server.name} (not installed: `{server.install}`)")
            print(f"skipping {server.name}: {server.install}", file=sys.stderr)
            continue
        results[server.name] = measure(server, bodies, args.seconds)
        settings[server.name] = server.settings
    when = time.strftime("%Y-%m-%d %H:%M")
    table, worst = summary(results)
    md = [
        f"# inferwire beside the other model servers ({when}, {machine()})",
        "",
        "## Summary",
        "",
        *table,
        "",
        "## Small request (requests/s)",
        "",
        *small_table(results),
        "",
        "## 100,000 INT64, one client",
        "",
        *large_table(results),
        "",
        "## Seed 001 images, 20 in flight (requests/s)",
        "",
        *images_table(results),
        "",
        "## Launch settings",
        "",
        *[f"- **{n}**: {s}" for n, s in settings.items()],
        "",
        f"Closed loop, {args.seconds:g} s per cell after 1 s of warm-up; CPU/req is the "
        "server's whole process tree's CPU time divided by the requests it answered.",
    ]
    if skipped:
        md.append("Not measured: " + "; ".join(skipped) + ".")
    (args.out / "peer_servers.md").write_text("\n".join(md) + "\n")
    (args.out / "peer_servers.json").write_text(
        json.dumps(
            {
                "when": when,
                "seconds": args.seconds,
                "settings": settings,
                "worst": worst,
                "cells": {n: {k: c.__dict__ for k, c in r.items()} for n, r in results.items()},
            },
            indent=2,
        )
    )
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
