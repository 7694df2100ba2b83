"""TorchServe 0.12 against ``inferwire torchserve``: the same ``.mar`` archives, the same
``config.properties``, the same requests, one server after the other on this machine
(issue 38's evidence; docs/benchmarks.md, "TorchServe against inferwire torchserve, the
same archives").

The archives are made once, with ``torch-model-archiver`` (0.12, ``--archiver``), from
the TorchServe peer's handlers (benchmarks/peers/torchserve/handlers), each with a
``model-config.yaml`` holding its batch settings and one worker (``minWorkers`` =
``maxWorkers`` = 1):

- ``noop``: ``handlers/noop.py``, a custom handler with no torch that answers a request
  with its input (``{"data": [7]}`` -> ``[7]``; bytes -> the same bytes); ``batchSize``
  1, TorchServe's default (``--noop-batch-size``): a request is never held back for others;
- ``densenet161``: ``handlers/densenet161.py``, torchvision's densenet161 with random
  weights after ``torch.manual_seed(0)`` (nothing downloaded), prepared as TorchServe's
  image classifier does; ``batchSize`` 8, ``maxBatchDelay`` 10 ms (``--batch-size``,
  ``--max-batch-delay``), the peer's densenet benchmark's settings.

Both servers get one ``config.properties`` (only the ports differ): every listener on
127.0.0.1, ``default_workers_per_model=1``, token authorization off
(``disable_token_authorization=true``, also ``--disable-token-auth`` on the command line),
``load_models`` = both archives; and the same environment: ``--threads`` torch threads
(``OMP_NUM_THREADS``, and ``DENSENET_THREADS`` which the handler passes to
``torch.set_num_threads``). Commands:

- TorchServe: ``.tools/peers/torchserve/bin/torchserve --start --foreground --ncs
  --ts-config CFG --model-store STORE --disable-token-auth`` with the peer's quiet log
  configuration (no per-request log lines; ``--log-requests`` keeps TorchServe's own);
- inferwire: ``INFERWIRE torchserve`` with the same arguments (``--inferwire``, shell
  words; the release build in docs/benchmarks.md).

A third server, the floor (``--servers``, default ``torchserve,inferwire,floor``), runs
the small cells only: ``http_floor`` and ``grpc_floor`` (release builds in ``--examples``,
``cargo build --release -p inferwire-server --example http_floor --example grpc_floor``),
which parse nothing and answer every request with the same small reply. Its requests/s
is the most any server can answer here with the load generator on the same two cores:
where it is below 10× TorchServe's, the goal cannot be met by any server in that cell.

Before measuring, each server must answer correctly (content checked, not just the
status): ``[7]`` for the small request, and for one image the top 5 as
``{"classes": [5 ints], "scores": [5 floats]}``, which must be the same classes on both
servers (same network, seed and preprocessing); over gRPC (``--protocols``) the same.

Cells, ``inferwire bench attack`` (closed loop) on 127.0.0.1:

1. small: ``POST /predictions/noop`` with ``{"data":[7]}`` (REST) and ``Predictions``
   with input ``data`` = the same bytes (gRPC), at 1, 8 and 64 clients: ``--warmup``
   seconds not counted, then ``--seconds``: requests/s, p50/p99, server CPU per request;
2. images: seed 001's three sizes (benchmarks/images_numpy.py's JPEGs) to
   ``densenet161`` as the raw JPEG (REST ``image/jpeg``; gRPC input ``data``) and as
   ``{"image": "<base64>"}`` (REST JSON), 20 requests in flight: one round of 20 not
   counted, then ``--image-rounds`` rounds (``-n 20×rounds``): seconds per round of 20,
   p50, server CPU per request.

Server CPU: ``utime + stime`` (and reaped children's) from ``/proc`` over the server's
whole process tree (TorchServe: the launcher, the Java frontend, the Python backend
workers), before and after the measured part, divided by the requests answered.

The handler's own cost: in a separate process of this script (``--handler-time``, the
test venv's Python, the same torch threads) the archives' handler classes are loaded and
their ``handle`` called directly on the same bodies, as batches of ``--batch-size``
images (the batches both servers form with 20 in flight): wall and CPU time per image.
The image tables put it beside each server's figures, and what is left beyond it.

Every server and measurement is bounded in time; servers are stopped at the end, also on
failure. ``--rounds`` runs of everything (servers alternating which goes first, the
handler timing in every round); each figure is the median over the rounds.

    bash benchmarks/peers/torchserve/install.sh          # once (TorchServe, 0.12)
    .venv/bin/python benchmarks/torchserve_archives.py [--rounds 2] \\
        [--inferwire "/tmp/python-rel-ts -m inferwire"] [--protocols rest,grpc]

About 15 minutes at the defaults on 2 cores. Results:
benchmarks/results/torchserve_archives.{md,json}; a server that fails is reported (its log's
tail) and the run goes on with the other; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from images_numpy import SEED_001_MB, SIZES, field, jpeg  # noqa: E402
from lib.proc_cpu import cpu_seconds  # noqa: E402
from lib.servers import FLOOR_EXAMPLES, floor_command, free_port  # noqa: E402
from runtime import Proc, machine  # noqa: E402

PEER = ROOT / "benchmarks/peers/torchserve"
HANDLERS = PEER / "handlers"
TS_BIN = ROOT / ".tools/peers/torchserve/bin"
ARCHIVER = ROOT / ".venv/bin/torch-model-archiver"
RELEASE_BENCH = ROOT / "target/release/inferwire-bench"
SERVERS = ("torchserve", "inferwire", "floor")
# The two that serve the archives (the floor answers the small requests only).
ARCHIVE_SERVERS = ("torchserve", "inferwire")
LABEL = {"torchserve": "TorchServe", "inferwire": "inferwire", "floor": "floor"}
TS_CALL = "org.pytorch.serve.grpc.inference.InferenceAPIsService/Predictions"
CLIENTS = (1, 8, 64)
IMAGE_CLIENTS = 20  # seed 001's burst
SMALL = b'{"data":[7]}'
# (protocol, form) of the image cells; gRPC has no base64 form (its input holds bytes).
IMAGE_KINDS = (("rest", "binary"), ("rest", "base64"), ("grpc", "binary"))


# ---------------------------------------------------------------- wire helpers


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def predictions_request(model: str, data: bytes) -> bytes:
    """``PredictionsRequest``: model_name = 1, input = 3 (map<string, bytes>)."""
    return field(1, model.encode()) + field(3, field(1, b"data") + field(2, data))


def prediction(message: bytes) -> bytes:
    """``PredictionResponse.prediction`` (field 1, bytes) of an encoded message."""
    i = 0
    while i < len(message):
        key, i = read_varint(message, i)
        if key & 7 == 2:
            size, i = read_varint(message, i)
            if key >> 3 == 1:
                return message[i : i + size]
            i += size
        elif key & 7 == 0:
            _, i = read_varint(message, i)
        else:
            raise ValueError(f"unexpected wire type {key & 7} in PredictionResponse")
    return b""


def read_varint(buf: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def post(url: str, body: bytes, content_type: str, timeout: float = 120.0) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    req = urllib.request.Request(url, body, {"Content-Type": content_type}, method="POST")
    with opener.open(req, timeout=timeout) as r:
        return r.read()  # type: ignore[no-any-return]


def grpc_predict(target: str, message: bytes, timeout: float = 120.0) -> bytes:
    import grpc

    with grpc.insecure_channel(target) as channel:
        call = channel.unary_unary(f"/{TS_CALL}")
        return prediction(call(message, timeout=timeout))


# ---------------------------------------------------------------- bodies and archives


class Bodies:
    """Every request file, written once into ``work``."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.images = {s: jpeg(s) for s in SIZES}
        self.small = self.write("small.json", SMALL)
        self.small_pb = self.write("small.pb", predictions_request("noop", SMALL))
        self.image_files: dict[tuple[int, int], dict[str, Path]] = {}
        for size, img in self.images.items():
            b64 = json.dumps({"image": base64.b64encode(img).decode()}).encode()
            self.image_files[size] = {
                "binary": self.write(f"img-{size[0]}.jpg", img),
                "base64": self.write(f"b64-{size[0]}.json", b64),
                "pb": self.write(f"img-{size[0]}.pb", predictions_request("densenet161", img)),
            }

    def write(self, name: str, data: bytes) -> Path:
        path = self.work / name
        path.write_bytes(data)
        return path


def make_archives(args: argparse.Namespace, store: Path) -> dict[str, dict[str, Any]]:
    """noop.mar and densenet161.mar in ``store``, each with its model-config.yaml."""
    configs = {
        "noop": {"minWorkers": 1, "maxWorkers": 1, "batchSize": args.noop_batch_size},
        "densenet161": {
            "minWorkers": 1,
            "maxWorkers": 1,
            "batchSize": args.batch_size,
            "maxBatchDelay": args.max_batch_delay,
            "responseTimeout": 120,
        },
    }
    if args.noop_batch_size > 1:
        configs["noop"]["maxBatchDelay"] = args.noop_max_batch_delay
    store.mkdir(parents=True, exist_ok=True)
    for name, cfg in configs.items():
        yaml_path = store.parent / f"{name}-model-config.yaml"
        yaml_path.write_text("".join(f"{k}: {v}\n" for k, v in cfg.items()))
        cmd = [str(args.archiver), "--model-name", name, "--version", "1.0"]
        cmd += ["--handler", str(HANDLERS / f"{name}.py"), "--config-file", str(yaml_path)]
        cmd += ["--export-path", str(store), "--force"]
        subprocess.run(cmd, check=True, timeout=120, capture_output=True)
    return configs


def properties(tmp: Path, store: Path, ports: dict[str, int]) -> Path:
    """One config.properties for either server; only the ports differ between them."""
    lines = {
        "inference_address": f"http://127.0.0.1:{ports['http']}",
        "management_address": f"http://127.0.0.1:{ports['management']}",
        "metrics_address": f"http://127.0.0.1:{ports['metrics']}",
        "grpc_inference_address": "127.0.0.1",
        "grpc_inference_port": str(ports["grpc"]),
        "grpc_management_address": "127.0.0.1",
        "grpc_management_port": str(ports["grpc_management"]),
        "model_store": str(store),
        "load_models": "noop=noop.mar,densenet161=densenet161.mar",
        "default_workers_per_model": "1",
        "job_queue_size": "100",
        "disable_token_authorization": "true",
        "enable_model_api": "false",
        "install_py_dep_per_model": "false",
        "metrics_mode": "prometheus",
        # TorchServe's frontend-to-worker Unix sockets in this run's folder, not /tmp.
        "vmargs": f"-Djava.io.tmpdir={tmp}",
        "max_request_size": str(16 << 20),
        "max_response_size": str(16 << 20),
    }
    path = tmp / "config.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return path


# ---------------------------------------------------------------- servers


@dataclass
class Running:
    name: str
    pid: int
    url: str
    grpc: str
    start_s: float
    answers: dict[str, Any]
    stop: Callable[[], None]


def check_answers(url: str, grpc: str, bodies: Bodies, protocols: list[str]) -> dict[str, Any]:
    """Every kind of request the cells send, its answer's content checked."""
    got: dict[str, Any] = {}
    small = post(f"{url}/predictions/noop", SMALL, "application/json", 10)
    if json.loads(small) != [7]:
        raise RuntimeError(f"noop over REST answered {small[:200]!r}, not [7]")
    got["small_rest"] = small.decode()
    if "grpc" in protocols:
        echoed = grpc_predict(grpc, bodies.small_pb.read_bytes(), 10)
        if echoed != SMALL:
            raise RuntimeError(f"noop over gRPC answered {echoed[:200]!r}, not {SMALL!r}")
        got["small_grpc"] = echoed.decode()
    for size, files in bodies.image_files.items():
        answers = {
            "rest_binary": post(
                f"{url}/predictions/densenet161", files["binary"].read_bytes(), "image/jpeg"
            ),
            "rest_base64": post(
                f"{url}/predictions/densenet161", files["base64"].read_bytes(), "application/json"
            ),
        }
        if "grpc" in protocols:
            answers["grpc_binary"] = grpc_predict(grpc, files["pb"].read_bytes())
        for kind, raw in answers.items():
            answer = json.loads(raw)
            if len(answer.get("classes", [])) != 5 or len(answer.get("scores", [])) != 5:
                raise RuntimeError(f"densenet161 {size} {kind} answered {raw[:300]!r}")
            got[f"densenet161_{size[0]}_{kind}"] = answer["classes"]
        if len({tuple(c) for k, c in got.items() if k.startswith(f"densenet161_{size[0]}_")}) > 1:
            raise RuntimeError(f"densenet161 {size}: the kinds disagree: {got}")
    return got


def start(name: str, args: argparse.Namespace, store: Path, bodies: Bodies) -> Running:
    """The server in its own process group and folder; ready once every kind of request
    is answered correctly (``--start-timeout``)."""
    tmp = Path(tempfile.mkdtemp(prefix=f"ts-archives-{name}-"))
    keys = ("http", "management", "metrics", "grpc", "grpc_management")
    ports = {k: free_port() for k in keys}
    cfg = properties(tmp, store, ports)
    common = ["--start", "--foreground", "--ncs", "--ts-config", str(cfg)]
    common += ["--model-store", str(store), "--disable-token-auth"]
    threads = str(args.threads)
    env = {**os.environ, "TMPDIR": str(tmp), "OMP_NUM_THREADS": threads}
    env.update(DENSENET_THREADS=threads, MKL_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads)
    if name == "torchserve":
        argv = [str(TS_BIN / "torchserve"), *common]
        if not args.log_requests:
            argv += ["--log-config", str(PEER / "log4j2-quiet.xml")]
        env.update(LOG_LOCATION=str(tmp / "logs"), METRICS_LOCATION=str(tmp / "logs"))
        env["PATH"] = f"{TS_BIN}{os.pathsep}{env.get('PATH', '')}"
    else:
        argv = [*args.inferwire, "torchserve", *common]
    log = (tmp / "server.log").open("w")
    started = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=tmp,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )

    def stop() -> None:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever of the group is left
        except ProcessLookupError:
            pass
        proc.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)

    url, grpc = f"http://127.0.0.1:{ports['http']}", f"127.0.0.1:{ports['grpc']}"
    deadline = started + args.start_timeout
    last = ""
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited ({proc.returncode}): {tail(tmp)}")
            try:
                post(f"{url}/predictions/noop", SMALL, "application/json", 5)
                break
            except (urllib.error.URLError, OSError) as e:
                last = str(e)
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} not serving in {args.start_timeout:.0f} s ({last})")
            time.sleep(0.5)
        answers = check_answers(url, grpc, bodies, args.protocols)
        answers["described"] = describe(f"http://127.0.0.1:{ports['management']}")
    except BaseException as e:
        log.flush()
        message = f"{e}\n{tail(tmp)}"
        stop()
        raise RuntimeError(message) from None
    return Running(name, proc.pid, url, grpc, time.monotonic() - started, answers, stop)


def start_floor(args: argparse.Namespace) -> Running:
    """The floor (``lib.servers.floor_command``): what the small cells cost a server that
    parses nothing and runs no handler, measured beside the two in the same run."""
    argv, http, grpc = floor_command(args.examples)
    url = f"http://{http}"
    proc = Proc(argv, f"{url}/ping", timeout=30.0)
    return Running("floor", proc.pid, url, grpc, proc.start_seconds, {}, proc.stop)


def describe(management: str) -> dict[str, Any]:
    """Each model's batch settings and workers as the management API describes them."""
    out: dict[str, Any] = {}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for model in ("noop", "densenet161"):
        try:
            with opener.open(f"{management}/models/{model}", timeout=10) as r:
                (d,) = json.loads(r.read())
        except (urllib.error.URLError, OSError, ValueError) as e:
            out[model] = f"not described: {e}"
            continue
        keys = ("batchSize", "maxBatchDelay", "minWorkers", "maxWorkers")
        out[model] = {k: d.get(k) for k in keys} | {"workers": len(d.get("workers", []))}
    return out


def tail(tmp: Path) -> str:
    try:
        return (tmp / "server.log").read_text(errors="replace")[-3000:]
    except OSError:
        return ""


# ---------------------------------------------------------------- measuring


@dataclass
class Cell:
    requests: int
    rps: float
    p50_us: float
    p99_us: float
    round_s: float  # image cells: seconds per round of 20 (elapsed ÷ rounds); else 0
    server_cpu_us: float  # /proc over the server's tree, before and after
    client_cpu_us: float


def run_bench(argv: list[str], timeout: float) -> dict[str, Any]:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0 or not out.stdout.strip():
        raise RuntimeError(f"{shlex.join(argv)}: exit {out.returncode}\n{out.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(out.stdout)
    if report["success"] < 1.0:
        raise RuntimeError(f"{shlex.join(argv)}: {report['status_codes']} {report['errors'][:3]}")
    return report


def measure(
    bench: list[str], r: Running, target: list[str], warm: list[str], run: list[str], limit: float
) -> tuple[Cell, dict[str, Any]]:
    """A warm-up run (not counted), then the measured run with the server's CPU read from
    /proc before and after."""
    argv = [*bench, "attack", *target, "--timeout", "120s", "--no-progress", "--format", "json"]
    run_bench([*argv, *warm], limit)
    before = cpu_seconds(r.pid)
    report = run_bench([*argv, *run], limit)
    after = cpu_seconds(r.pid)
    n, lat = report["requests"], report["latency"]
    return Cell(
        requests=n,
        rps=report["throughput"],
        p50_us=lat["p50_ns"] / 1e3,
        p99_us=lat["p99_ns"] / 1e3,
        round_s=0.0,
        server_cpu_us=(after - before) / n * 1e6,
        client_cpu_us=report["client_cpu_ns_per_request"] / 1e3,
    ), report


def small_target(r: Running, bodies: Bodies, protocol: str) -> list[str]:
    if protocol == "rest":
        url = f"{r.url}/predictions/noop"
        return [url, "-D", str(bodies.small), "-H", "Content-Type: application/json"]
    return [r.grpc, "--call", TS_CALL, "-D", str(bodies.small_pb)]


def image_target(r: Running, bodies: Bodies, size: tuple[int, int], kind: str) -> list[str]:
    files = bodies.image_files[size]
    url = f"{r.url}/predictions/densenet161"
    if kind == "rest|binary":
        return [url, "-D", str(files["binary"]), "-H", "Content-Type: image/jpeg"]
    if kind == "rest|base64":
        return [url, "-D", str(files["base64"]), "-H", "Content-Type: application/json"]
    return [r.grpc, "--call", TS_CALL, "-D", str(files["pb"])]


def measure_server(
    name: str, args: argparse.Namespace, store: Path, bodies: Bodies
) -> tuple[dict[str, Cell], dict[str, Any]]:
    began = time.monotonic()
    r = start_floor(args) if name == "floor" else start(name, args, store, bodies)
    facts: dict[str, Any] = {"start_s": round(r.start_s, 1), "answers": r.answers}
    cells: dict[str, Cell] = {}
    try:
        if "small" in args.parts:
            for protocol in args.protocols:
                for clients in CLIENTS:
                    run = ["-c", str(clients), "-z", f"{args.seconds}s"]
                    warm = ["-c", str(clients), "-z", f"{args.warmup}s"]
                    target = small_target(r, bodies, protocol)
                    limit = args.seconds + args.warmup + 120
                    cell, _ = measure(args.bench, r, target, warm, run, limit)
                    cells[f"small|{protocol}|{clients}"] = cell
                    progress(name, f"small {protocol} c={clients}", cell)
        if "images" in args.parts and name != "floor":
            for size in args.sizes:
                for protocol, form in IMAGE_KINDS:
                    if protocol not in args.protocols:
                        continue
                    kind = f"{protocol}|{form}"
                    c = str(IMAGE_CLIENTS)
                    run = ["-c", c, "-n", str(IMAGE_CLIENTS * args.image_rounds)]
                    warm = ["-c", c, "-n", c]
                    target = image_target(r, bodies, size, kind)
                    cell, report = measure(args.bench, r, target, warm, run, args.cell_timeout)
                    cell.round_s = report["duration_ns"] / 1e9 / args.image_rounds
                    cells[f"image|{size[0]}|{kind}"] = cell
                    progress(name, f"densenet161 {size[0]} {kind}", cell)
    finally:
        stopping = time.monotonic()
        r.stop()
        facts["stop_s"] = round(time.monotonic() - stopping, 1)
        facts["total_s"] = round(time.monotonic() - began, 1)
    return cells, facts


def progress(name: str, what: str, c: Cell) -> None:
    extra = f" {c.round_s:.2f} s/round" if c.round_s else ""
    print(
        f"{name:<10} {what:<28} {c.rps:>8.1f}/s p50 {fmt(c.p50_us)} p99 {fmt(c.p99_us)} "
        f"CPU/req {fmt(c.server_cpu_us)}{extra}",
        file=sys.stderr,
        flush=True,
    )


# ---------------------------------------------------------------- the handler alone


class FakeContext:
    """What the handlers use of TorchServe's context."""

    manifest: dict[str, Any] = {"model": {"modelName": "bench"}}
    system_properties: dict[str, Any] = {"model_dir": ".", "gpu_id": None, "batch_size": 1}

    def set_response_content_type(self, idx: int, value: str) -> None:
        pass


def load_handler(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HANDLERS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (cls,) = [v for v in vars(module).values() if isinstance(v, type) and hasattr(v, "handle")]
    handler = cls()
    handler.initialize(FakeContext())
    return handler


def handler_time(args: argparse.Namespace) -> dict[str, Any]:
    """In this process: each handler's ``handle`` on the cells' bodies, as the servers
    hand them over (a JSON body parsed, a binary one as bytes); wall and CPU per request."""
    ctx = FakeContext()
    out: dict[str, Any] = {}
    noop = load_handler("noop")
    batch = [{"body": json.loads(SMALL)}]
    for _ in range(1000):
        noop.handle(batch, ctx)
    n = 20000
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        noop.handle(batch, ctx)
    out["noop"] = {
        "wall_us": (time.perf_counter() - wall) / n * 1e6,
        "cpu_us": (time.process_time() - cpu) / n * 1e6,
    }
    densenet = load_handler("densenet161")
    for size in args.sizes:
        img = jpeg(size)
        forms = {"binary": img, "base64": {"image": base64.b64encode(img).decode()}}
        for form, body in forms.items():
            rows = [{"body": body} for _ in range(args.batch_size)]
            densenet.handle(rows, ctx)  # warm
            walls, cpus = [], []
            for _ in range(args.handler_reps):
                wall, cpu = time.perf_counter(), time.process_time()
                densenet.handle(rows, ctx)
                walls.append((time.perf_counter() - wall) / len(rows))
                cpus.append((time.process_time() - cpu) / len(rows))
            out[f"densenet161|{size[0]}|{form}"] = {
                "wall_us": statistics.median(walls) * 1e6,
                "cpu_us": statistics.median(cpus) * 1e6,
            }
            key = f"densenet161|{size[0]}|{form}"
            print(f"handler alone {key}: {out[key]}", file=sys.stderr, flush=True)
    return out


def measure_handler(args: argparse.Namespace) -> dict[str, Any]:
    threads = str(args.threads)
    env = {**os.environ, "OMP_NUM_THREADS": threads, "DENSENET_THREADS": threads}
    env.update(MKL_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads)
    argv = [args.handler_python, str(Path(__file__).resolve()), "--handler-time"]
    argv += ["--sizes", ",".join(str(s[0]) for s in args.sizes)]
    argv += ["--batch-size", str(args.batch_size), "--handler-reps", str(args.handler_reps)]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"--handler-time: exit {out.returncode}\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)  # type: ignore[no-any-return]


# ---------------------------------------------------------------- tables


def fmt(us: float | None) -> str:
    if us is None:
        return "-"
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1000:
        return f"{us / 1000:.1f} ms" if us >= 10000 else f"{us / 1000:.2f} ms"
    return f"{us:.0f} µs" if us >= 10 else f"{us:.1f} µs"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}×" if b else "-"


def small_table(results: dict[str, dict[str, Cell]], protocols: list[str]) -> list[str]:
    """Each server's figures, then what the goal asks (10× TorchServe's requests/s) beside
    what inferwire and the floor reach of TorchServe's."""
    lines = [
        "| protocol | clients | TorchServe req/s | p50 / p99 | CPU/req "
        "| inferwire req/s | p50 / p99 | CPU/req | floor req/s | CPU/req "
        "| req/s inferwire ÷ TorchServe | floor ÷ TorchServe | CPU/req TorchServe ÷ inferwire |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for protocol in protocols:
        for clients in CLIENTS:
            key = f"small|{protocol}|{clients}"
            ts, iw, fl = (results.get(s, {}).get(key) for s in SERVERS)
            row = f"| {'REST' if protocol == 'rest' else 'gRPC'} | {clients} |"
            for c in (ts, iw):
                row += (
                    f" {c.rps:,.0f} | {fmt(c.p50_us)} / {fmt(c.p99_us)} | {fmt(c.server_cpu_us)} |"
                    if c
                    else " - | - | - |"
                )
            row += f" {fl.rps:,.0f} | {fmt(fl.server_cpu_us)} |" if fl else " - | - |"
            row += f" **{ratio(iw.rps, ts.rps)}** |" if ts and iw else " - |"
            row += f" {ratio(fl.rps, ts.rps)} |" if ts and fl else " - |"
            row += f" {ratio(ts.server_cpu_us, iw.server_cpu_us)} |" if ts and iw else " - |"
            lines.append(row)
    return lines


def image_table(
    results: dict[str, dict[str, Cell]],
    handler: dict[str, Any],
    bodies: Bodies,
    args: argparse.Namespace,
) -> list[str]:
    lines: list[str] = []
    n = IMAGE_CLIENTS
    for size in args.sizes:
        img = bodies.images[size]
        lines += [
            f"**{size[0]}×{size[1]}** (JPEG {len(img) / 1e6:.3f} MB; the seed's "
            f"{SEED_001_MB[size]:.3f} MB). Per server: seconds per round of {n} "
            f"(p50; server CPU per request). Handler alone: {n} × its wall time per image "
            "(CPU per image). Left: the server's figure minus the handler's.",
            "",
            "| request | TorchServe | inferwire | handler alone "
            "| left: TorchServe | left: inferwire |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for protocol, form in IMAGE_KINDS:
            if protocol not in args.protocols:
                continue
            key = f"image|{size[0]}|{protocol}|{form}"
            h = handler.get(f"densenet161|{size[0]}|{form}")
            row = f"| {'REST' if protocol == 'rest' else 'gRPC'} {form} |"
            cells = [results.get(s, {}).get(key) for s in ARCHIVE_SERVERS]
            for c in cells:
                row += (
                    f" {c.round_s:.3f} s ({c.p50_us / 1e6:.2f} s; {fmt(c.server_cpu_us)}) |"
                    if c
                    else " - |"
                )
            if h:
                row += f" {n * h['wall_us'] / 1e6:.3f} s ({fmt(h['cpu_us'])}) |"
            else:
                row += " - |"
            for c in cells:
                row += (
                    f" {c.round_s - n * h['wall_us'] / 1e6:+.3f} s "
                    f"({signed(c.server_cpu_us - h['cpu_us'])}) |"
                    if c and h
                    else " - |"
                )
            lines.append(row)
        lines.append("")
    return lines


def signed(us: float) -> str:
    return ("+" if us >= 0 else "−") + fmt(abs(us))


def median_cells(rounds: list[dict[str, Cell]]) -> dict[str, Cell]:
    out = {}
    for key in rounds[0]:
        runs = [asdict(r[key]) for r in rounds if key in r]
        merged = {f: statistics.median(run[f] for run in runs) for f in runs[0]}
        merged["requests"] = sum(run["requests"] for run in runs)
        out[key] = Cell(**merged)
    return out


def median_handler(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        key: {f: statistics.median(r[key][f] for r in rounds) for f in rounds[0][key]}
        for key in rounds[0]
    }


# ---------------------------------------------------------------- main


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--servers", default=",".join(SERVERS), help="comma-separated")
    p.add_argument("--parts", default="small,images", help="small, images, or both")
    p.add_argument("--protocols", default="rest,grpc", help="rest, grpc, or both")
    p.add_argument("--rounds", type=int, default=2, help="runs of everything; medians")
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds, small cells")
    p.add_argument("--warmup", type=float, default=1.0, help="seconds before each small cell")
    p.add_argument("--image-rounds", type=int, default=3, help="rounds of 20 per image cell")
    p.add_argument("--sizes", default="360,720,1080", help="heights, of 360,720,1080")
    p.add_argument("--threads", type=int, default=1, help="torch threads, both servers")
    p.add_argument("--batch-size", type=int, default=8, help="densenet161's batchSize")
    p.add_argument("--max-batch-delay", type=int, default=10, help="its maxBatchDelay, ms")
    p.add_argument("--noop-batch-size", type=int, default=1, help="noop's batchSize")
    p.add_argument("--noop-max-batch-delay", type=int, default=0, help="ms, with batchSize > 1")
    p.add_argument("--handler-reps", type=int, default=3, help="batches timed per size")
    p.add_argument("--start-timeout", type=float, default=300.0, help="seconds per start")
    p.add_argument("--cell-timeout", type=float, default=600.0, help="seconds per image run")
    p.add_argument("--log-requests", action="store_true", help="TorchServe's own logging")
    p.add_argument(
        "--inferwire",
        type=shlex.split,
        default=[sys.executable, "-m", "inferwire"],
        help="the inferwire executable (shell words)",
    )
    p.add_argument(
        "--bench",
        type=shlex.split,
        default=[str(RELEASE_BENCH)]
        if RELEASE_BENCH.exists()
        else [sys.executable, "-m", "inferwire", "bench"],
        help="the load generator (shell words; default target/release/inferwire-bench)",
    )
    p.add_argument("--archiver", type=Path, default=ARCHIVER, help="torch-model-archiver")
    p.add_argument(
        "--examples",
        type=Path,
        default=FLOOR_EXAMPLES,
        help="folder of the release http_floor and grpc_floor (the floor server)",
    )
    p.add_argument(
        "--handler-python", default=sys.executable, help="the Python timing the handlers"
    )
    p.add_argument("--handler-time", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results")
    args = p.parse_args()
    args.sizes = [s for s in SIZES if str(s[0]) in args.sizes.split(",")]
    if args.handler_time:
        print(json.dumps(handler_time(args)))
        return 0
    servers = [s for s in args.servers.split(",") if s]
    args.parts = [s for s in args.parts.split(",") if s]
    args.protocols = [s for s in args.protocols.split(",") if s]
    if set(servers) - set(SERVERS) or set(args.parts) - {"small", "images"}:
        p.error("--servers: torchserve,inferwire,floor; --parts: small,images")
    if set(args.protocols) - {"rest", "grpc"} or not args.protocols:
        p.error("--protocols: rest, grpc or both")
    if "torchserve" in servers and not (TS_BIN / "torchserve").exists():
        raise SystemExit("TorchServe is not installed: bash benchmarks/peers/torchserve/install.sh")

    began = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="torchserve-archives-"))
    rounds: dict[str, list[dict[str, Cell]]] = {s: [] for s in servers}
    facts: dict[str, list[dict[str, Any]]] = {s: [] for s in servers}
    handler_rounds: list[dict[str, Any]] = []
    failed: dict[str, str] = {}
    try:
        bodies = Bodies(work)
        configs = make_archives(args, work / "store")
        for i in range(args.rounds):
            if "images" in args.parts:
                handler_rounds.append(measure_handler(args))
            for name in servers if i % 2 == 0 else servers[::-1]:
                if name in failed:
                    continue
                try:
                    cells, fact = measure_server(name, args, work / "store", bodies)
                    rounds[name].append(cells)
                    facts[name].append(fact)
                except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
                    failed[name] = str(e)
                    print(f"{name} failed: {str(e)[-3000:]}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    results = {name: median_cells(r) for name, r in rounds.items() if r}
    handler = median_handler(handler_rounds) if handler_rounds else {}
    archive_servers = [s for s in servers if s in ARCHIVE_SERVERS]
    first = archive_servers[0] if archive_servers else ""
    same = {
        k: {s: facts[s][0]["answers"].get(k) for s in archive_servers if facts.get(s)}
        for k in (facts[first][0]["answers"] if facts.get(first) else {})
        if k.startswith("densenet161")
    }
    agree = all(len({json.dumps(v) for v in pair.values()}) == 1 for pair in same.values())
    when = time.strftime("%Y-%m-%d %H:%M")
    proto = " and ".join("REST" if x == "rest" else "gRPC" for x in args.protocols)
    md = [
        f"# TorchServe and inferwire torchserve, the same archives ({when}, {machine()})",
        "",
        f"The same `noop.mar` and `densenet161.mar` (torch-model-archiver 0.12, one worker "
        f"each) and `config.properties` for both, token authorization off, {proto}; "
        f"{args.threads} torch thread(s); median of {args.rounds} round(s), servers "
        "alternating. CPU/req: the server's whole process tree (/proc utime + stime) over "
        "the measured part, divided by the requests answered.",
        "",
    ]
    if "small" in args.parts:
        noop = handler.get("noop")
        md += [
            f"## Small requests (`noop`, batchSize {args.noop_batch_size}; "
            f"{args.warmup:g} s warm-up, {args.seconds:g} s measured per cell)",
            "",
            *small_table(results, args.protocols),
            "",
        ]
        if noop:
            md += [
                f"The noop handler's own `handle`, called in-process: {fmt(noop['cpu_us'])} "
                "CPU per request.",
                "",
            ]
    if "images" in args.parts:
        md += [
            f"## densenet161, seed 001's images (batchSize {args.batch_size}, maxBatchDelay "
            f"{args.max_batch_delay} ms; {IMAGE_CLIENTS} in flight, one round of warm-up, "
            f"{args.image_rounds} rounds measured per cell)",
            "",
            "Handler alone: the archive's handler class loaded in a separate process, its "
            f"`handle` called on batches of {args.batch_size} of the same bodies, "
            f"{args.handler_reps} batches per cell (median).",
            "",
            *image_table(results, handler, bodies, args),
            "Top-5 classes of every image: "
            + ("the same on both servers." if agree else f"DIFFER between servers: {same}"),
            "",
        ]
    described = {
        n: f[0]["answers"].get("described") for n, f in facts.items() if f and n != "floor"
    }
    if described and len({json.dumps(d, sort_keys=True) for d in described.values()}) == 1:
        settings_line = [
            "- Both management APIs describe the models alike: "
            + "; ".join(
                f"`{m}` " + ", ".join(f"{k} {v}" for k, v in d.items())
                if isinstance(d, dict)
                else f"`{m}` {d}"
                for m, d in next(iter(described.values())).items()
            )
        ]
    else:
        settings_line = [f"- As the management APIs describe the models: {described}"]
    md += [
        "## Servers",
        "",
        *settings_line,
        *[
            f"- **{LABEL[n]}**: ready (every kind of request answered correctly) in "
            f"{', '.join(str(x['start_s']) for x in f)} s"
            for n, f in facts.items()
            if f and n != "floor"
        ],
        *[
            "- **floor**: `http_floor` and `grpc_floor` (crates/inferwire-server/examples), "
            "which parse nothing and answer every request with the same small reply: the "
            "least any server here can spend on the small cells"
            for n, f in facts.items()
            if f and n == "floor"
        ],
        *[
            f"- **{LABEL[n]}**: did not run: {why.strip().splitlines()[0][:300]}"
            for n, why in failed.items()
        ],
        "",
        f"Run took {(time.monotonic() - began) / 60:.1f} min.",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "torchserve_archives.md").write_text("\n".join(md) + "\n")
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "archiver")}
    settings["sizes"] = [list(s) for s in args.sizes]
    (args.out / "torchserve_archives.json").write_text(
        json.dumps(
            {
                "when": when,
                "machine": machine(),
                "settings": settings,
                "model_configs": configs,
                "servers": facts,
                "failed": failed,
                "handler_alone": handler,
                "handler_by_round": handler_rounds,
                "cells": {n: {k: asdict(c) for k, c in r.items()} for n, r in results.items()},
                "cells_by_round": {
                    n: [{k: asdict(c) for k, c in cells.items()} for cells in r]
                    for n, r in rounds.items()
                },
            },
            indent=2,
            default=str,
        )
    )
    print("\n".join(md))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
