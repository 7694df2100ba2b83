"""Smoke test of serve.py (TorchServe 0.12 with handlers/), against 127.0.0.1 only.

1. serve.py with every model (noop, images, densenet161) and ``--workers`` (2): the start
   time; the process tree (serve.py, the torchserve launcher, the Java frontend, one Python
   backend worker per model and worker); every listening socket of the tree on 127.0.0.1;
   then with real clients (httpx for REST, grpcio with stubs generated from
   torchserve_inference.proto for gRPC), asserting on content:
   - ``noop``: ``{"data": [7]}`` and 100,000 INT64 (negatives, values past 2**53) as JSON,
     element by element; 800,000 bytes as a binary body; the same bytes over gRPC;
   - ``images``: seed 001's basic JSON, ``{"image": <base64>}``, a raw JPEG body, and the
     JPEG over gRPC: the small answer;
   - ``densenet161``: a JPEG over REST (binary and base64) and over gRPC: the same top 5;
   - ``/metrics`` on the metrics port (Prometheus text, the models' request counters);
   - bad input and model errors (what TorchServe answers, and that it keeps serving);
     an unknown model; registering a model through the management API (off by default);
   - requests/s of small REST echoes, 1 client and 8 client threads, ``--seconds`` each
     (rough: the client is Python on the same machine);
   then SIGTERM: the stop time, exit status 0, no process of the virtualenv left.
2. serve.py with ``--token-auth`` (TorchServe's default) and noop only: an inference without
   the key is refused, one with the inference key from key_file.json is answered.

    .tools/peers/torchserve/bin/python benchmarks/peers/torchserve/smoke.py [--seconds 1]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import httpx
import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import launch  # noqa: E402
import pair  # noqa: E402

pb2, pb2_grpc = pair.load_generated("torchserve_inference")

N = 100_000
BIG = [(i - N // 2) * 92_233_720_368_547 for i in range(N)]
ANSWER = {"prediction1": [0.1, 0.2, 0.3], "prediction2": {"a": 1}}
BASIC = {"field1": "a" * 100, "field2": "b" * 100, "field3": 42, "field4": {"x": 1, "y": 2}}
MODELS = ["noop", "images", "densenet161"]
JPEG = {"Content-Type": "image/jpeg"}


def jpeg() -> bytes:
    pixels = np.random.default_rng(1).integers(0, 256, size=(360, 640, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="JPEG", quality=80)
    return buf.getvalue()


def tree(pid: int) -> list[tuple[int, str]]:
    out = subprocess.run(["ps", "-ww", "-eo", "pid,ppid,args"], capture_output=True, text=True)
    children: dict[int, list[int]] = {}
    args: dict[int, str] = {}
    for line in out.stdout.splitlines()[1:]:
        a, b, *cmd = line.split(None, 2)
        children.setdefault(int(b), []).append(int(a))
        args[int(a)] = cmd[0] if cmd else ""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append((p, args.get(p, "")))
        todo += children.get(p, [])
    return found


def listening(pids: set[int]) -> list[str]:
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    return sorted(
        {line.split()[3] for line in out.splitlines() if any(f"pid={p}," in line for p in pids)}
    )


def venv_processes() -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    venv = str(Path(sys.executable).parent.parent) + "/"
    return [
        line.strip()
        for line in out.splitlines()[1:]
        if venv in line and int(line.split()[0]) != os.getpid()
    ]


class Server:
    """serve.py on free ports; its stderr in a file (the temporary folder is named there)."""

    def __init__(self, *extra: str) -> None:
        self.ports = {k: launch.free_port() for k in ("http", "grpc", "management", "metrics")}
        argv = [sys.executable, str(HERE / "serve.py")]
        argv += ["--http-port", str(self.ports["http"]), "--grpc-port", str(self.ports["grpc"])]
        argv += ["--management-port", str(self.ports["management"])]
        argv += ["--metrics-port", str(self.ports["metrics"]), *extra]
        self.log = tempfile.NamedTemporaryFile(prefix="torchserve-smoke-", suffix=".log")
        started = time.monotonic()
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=self.log, text=True, start_new_session=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.start_s = time.monotonic() - started
        if not line.startswith("READY"):
            self.proc.kill()
            raise SystemExit(f"serve.py did not start: {line!r}\n{self.stderr()[-3000:]}")
        assert line.split() == [
            "READY",
            f"http://127.0.0.1:{self.ports['http']}",
            "grpc",
            f"127.0.0.1:{self.ports['grpc']}",
        ], line
        self.url = f"http://127.0.0.1:{self.ports['http']}"
        self.management = f"http://127.0.0.1:{self.ports['management']}"
        self.metrics = f"http://127.0.0.1:{self.ports['metrics']}"
        self.grpc = f"127.0.0.1:{self.ports['grpc']}"
        folder = re.search(r" folder (\S+)", self.stderr())
        self.folder = Path(folder.group(1)) if folder else None

    def stderr(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def stop(self) -> float:
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(60)
        took = time.monotonic() - started
        assert code == 0, f"serve.py exited with {code}:\n{self.stderr()[-3000:]}"
        assert "SIGKILL" not in self.stderr(), "TorchServe needed SIGKILL"
        return took


def check_tree(server: Server, workers: int, models: list[str]) -> None:
    procs = tree(server.proc.pid)
    java = [p for p, a in procs if a.startswith("java ") and "org.pytorch.serve.ModelServer" in a]
    backends = [p for p, a in procs if "ts/model_service_worker.py" in a]
    launcher = [p for p, a in procs if "bin/torchserve --start --foreground" in a]
    assert len(java) == 1 and len(launcher) == 1, procs
    assert len(backends) == workers * len(models), (len(backends), procs)
    sockets = listening({p for p, _ in procs})
    # Java reports IPv4 loopback as IPv4-mapped IPv6: both spellings are 127.0.0.1 only.
    assert sockets and all(s.startswith(("127.0.0.1:", "[::ffff:127.0.0.1]:")) for s in sockets), (
        sockets
    )
    assert len(sockets) == 5, sockets  # inference, management, metrics, gRPC x2
    print(
        f"tree: serve.py, torchserve launcher, 1 Java frontend, {len(backends)} Python "
        f"backend workers; listening on {', '.join(sockets)} (loopback only)"
    )


def check_noop(c: httpx.Client, stub: Any) -> None:
    r = c.post("/predictions/noop", json={"data": [7]})
    assert r.status_code == 200 and r.json() == [7], (r.status_code, r.text[:300])
    r = c.post("/predictions/noop", json={"data": BIG})
    assert r.status_code == 200, r.text[:300]
    got = r.json()
    assert len(got) == N and all(a == b for a, b in zip(got, BIG, strict=True)), "echo differs"
    raw = np.array(BIG, dtype="<i8").tobytes()
    r = c.post(
        "/predictions/noop", content=raw, headers={"Content-Type": "application/octet-stream"}
    )
    assert r.status_code == 200 and r.content == raw, (r.status_code, len(r.content))
    reply = stub.Predictions(pb2.PredictionsRequest(model_name="noop", input={"data": raw}))
    assert reply.prediction == raw, len(reply.prediction)
    print("noop: REST JSON 1 and 100,000 INT64, REST binary 800,000 bytes, gRPC bytes: echoed")


def check_images(c: httpx.Client, stub: Any, img: bytes) -> None:
    b64 = base64.b64encode(img).decode()
    for what, r in (
        ("basic", c.post("/predictions/images", json=BASIC)),
        ("base64", c.post("/predictions/images", json={"image": b64})),
        ("binary", c.post("/predictions/images", content=img, headers=JPEG)),
    ):
        assert r.status_code == 200 and r.json() == ANSWER, (what, r.status_code, r.text[:300])
    reply = stub.Predictions(pb2.PredictionsRequest(model_name="images", input={"data": img}))
    assert json.loads(reply.prediction) == ANSWER, reply.prediction[:300]
    print("images: basic, base64, binary over REST, binary over gRPC: the seed's answer")


def check_densenet(c: httpx.Client, stub: Any, img: bytes) -> None:
    b64 = base64.b64encode(img).decode()
    binary = c.post("/predictions/densenet161", content=img, headers={"Content-Type": "image/jpeg"})
    assert binary.status_code == 200, binary.text[:300]
    top = binary.json()
    assert len(top["classes"]) == 5 and all(0 <= k < 1000 for k in top["classes"]), top
    assert top["scores"] == sorted(top["scores"], reverse=True), top
    as_b64 = c.post("/predictions/densenet161", json={"image": b64})
    assert as_b64.status_code == 200 and as_b64.json() == top, as_b64.text[:300]
    reply = stub.Predictions(pb2.PredictionsRequest(model_name="densenet161", input={"data": img}))
    assert json.loads(reply.prediction) == top, reply.prediction[:300]
    print(f"densenet161: REST binary, REST base64, gRPC binary: the same top 5 {top['classes']}")


def check_metrics(server: Server) -> None:
    text = httpx.get(f"{server.metrics}/metrics", timeout=10).text
    for model in MODELS:
        assert re.search(rf'ts_inference_requests_total\{{[^}}]*model_name="{model}"', text), model
    assert "ts_queue_latency_microseconds" in text, text[:500]
    names = sorted({m for m in re.findall(r"^# TYPE (\S+)", text, re.M)})
    print(f"/metrics (metrics port): {len(names)} metric families, e.g. {', '.join(names[:6])}")


def check_errors(c: httpx.Client, server: Server, stub: Any) -> None:
    facts = []
    r = c.post("/predictions/images", json={"image": "not base64!"})
    assert r.status_code == 503 and r.json()["message"] == "Prediction failed", r.text
    facts.append(f"handler raises (bad base64) -> {r.status_code} {r.json()['message']!r}")
    r = c.post(
        "/predictions/densenet161", content=b"not an image", headers={"Content-Type": "image/jpeg"}
    )
    assert r.status_code == 503, r.text
    facts.append(f"not an image -> {r.status_code}")
    r = c.post("/predictions/noop", content=b"{bad", headers={"Content-Type": "application/json"})
    assert r.status_code == 200 and r.content == b"{bad", r.text
    facts.append("malformed JSON -> given to the handler as bytes (echoed)")
    r = c.post("/predictions/nope", json={"data": [1]})
    assert r.status_code == 404 and "Model not found" in r.text, r.text
    facts.append(f"unknown model -> 404 {r.json()['message']!r}")
    try:
        stub.Predictions(pb2.PredictionsRequest(model_name="nope", input={"data": b"x"}))
        raise AssertionError("gRPC call to an unknown model answered")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.INTERNAL and "Model not found" in e.details(), e
        facts.append(f"gRPC unknown model -> {e.code().name}")
    r = httpx.post(f"{server.management}/models", params={"url": "noop.mar"}, timeout=10)
    assert r.status_code == 405, r.text
    facts.append(f"register a model (management API) -> {r.status_code} (model API off)")
    too_big = b"x" * (17 << 20)
    r = c.post(
        "/predictions/noop", content=too_big, headers={"Content-Type": "application/octet-stream"}
    )
    assert r.status_code == 413, (r.status_code, r.text[:300])
    facts.append(f"17 MiB body (max_request_size 16 MiB) -> {r.status_code}")
    r = c.post("/predictions/noop", json={"data": [7]})
    assert r.status_code == 200 and r.json() == [7], r.text
    print("errors: " + "; ".join(facts) + "; then noop still answers")


def rates(url: str, seconds: float) -> str:
    body = json.dumps({"data": [7]}).encode()
    out = []
    for threads in (1, 8):
        stop = time.monotonic() + seconds
        counts = [0] * threads

        def loop(i: int, stop: float = stop, counts: list[int] = counts) -> None:
            headers = {"Content-Type": "application/json"}
            with httpx.Client(base_url=url, timeout=30) as c:
                while time.monotonic() < stop:
                    r = c.post("/predictions/noop", content=body, headers=headers)
                    assert r.status_code == 200
                    counts[i] += 1

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(loop, range(threads)))
        out.append(f"{threads} client{'s' if threads > 1 else ''} {sum(counts) / seconds:,.0f}/s")
    return ", ".join(out)


def run_all(args: argparse.Namespace) -> None:
    img = jpeg()
    server = Server("--models", ",".join(MODELS), "--workers", str(args.workers))
    try:
        print(f"workers={args.workers}: start {server.start_s:.1f} s")
        check_tree(server, args.workers, MODELS)
        with (
            httpx.Client(base_url=server.url, timeout=120) as c,
            grpc.insecure_channel(
                server.grpc, options=[*pair.GRPC_OPTIONS, ("grpc.enable_http_proxy", 0)]
            ) as channel,
        ):
            stub = pb2_grpc.InferenceAPIsServiceStub(channel)
            check_noop(c, stub)
            check_images(c, stub, img)
            check_densenet(c, stub, img)
            check_metrics(server)
            check_errors(c, server, stub)
        print(f"small REST echo, rough: {rates(server.url, args.seconds)}")
    except BaseException:
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(60)
        print(server.stderr()[-3000:], file=sys.stderr)
        raise
    took = server.stop()
    left = venv_processes()
    assert not left, left
    print(f"stop {took:.1f} s, no TorchServe process left")


def run_auth() -> None:
    server = Server("--models", "noop", "--workers", "1", "--token-auth")
    try:
        assert server.folder is not None, server.stderr()[-2000:]
        keys = json.loads((server.folder / "key_file.json").read_text())
        r = httpx.post(f"{server.url}/predictions/noop", json={"data": [7]}, timeout=30)
        # TorchServe 0.12 answers a missing key with 400 (InvalidKeyException), not 401.
        assert r.status_code == 400 and "InvalidKeyException" in r.text, (r.status_code, r.text)
        without = f"{r.status_code} {r.json()['type']}"
        headers = {"Authorization": f"Bearer {keys['inference']['key']}"}
        r = httpx.post(f"{server.url}/predictions/noop", json={"data": [7]}, headers=headers)
        assert r.status_code == 200 and r.json() == [7], (r.status_code, r.text)
        with grpc.insecure_channel(server.grpc) as channel:
            stub = pb2_grpc.InferenceAPIsServiceStub(channel)
            request = pb2.PredictionsRequest(model_name="noop", input={"data": b"x"})
            try:
                stub.Predictions(request)
                grpc_without = "answered"
            except grpc.RpcError as e:
                grpc_without = f"{e.code().name} {e.details()!r}"
            reply = stub.Predictions(
                request, metadata=[("authorization", headers["Authorization"])]
            )
            assert reply.prediction == b"x", reply
        metrics = httpx.get(f"{server.metrics}/metrics", timeout=10).status_code
    except BaseException:
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(60)
        print(server.stderr()[-3000:], file=sys.stderr)
        raise
    server.stop()
    assert not venv_processes(), venv_processes()
    print(
        f"token auth: REST without a key -> {without}; with the inference key -> 200; "
        f"gRPC without -> {grpc_without}, with -> OK; /metrics without a key -> {metrics}; "
        "stopped, nothing left"
    )


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seconds", type=float, default=1.0, help="of small echoes, per client count")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--skip-auth", action="store_true")
    args = p.parse_args()
    assert not venv_processes(), f"TorchServe already running: {venv_processes()}"
    run_all(args)
    if not args.skip_auth:
        run_auth()
    print("smoke checks passed")
    return 0


if __name__ == "__main__":
    threading.current_thread().name = "smoke"
    raise SystemExit(main())
