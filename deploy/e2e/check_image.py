"""Checks inferwire's container image as a user would, with podman (deploy/e2e/image.sh).

Each check prints one line; the first failure stops with a non-zero status. The
containers publish their ports on 127.0.0.1 only and are removed at the end.

    .venv/bin/python deploy/e2e/check_image.py --image IMAGE --baked IMAGE_WITH_MODELS
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
# runc, with lowered limits: crun refuses this machine's cgroup-v1 hybrid layout, and
# raising the open-file limit past the host's is refused.
RUN = ["--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
BUILD_TOOLS = ["cargo", "rustc", "gcc", "cc", "make", "maturin", "curl"]

SLOW_MODEL = '''
import time

class Slow:
    """Takes its time, so that a drain has a request to finish."""

    def predict(self, X, features_names=None):
        time.sleep(3)
        return X
'''


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, check=check)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ok(what: str) -> None:
    print(f"ok    {what}", flush=True)


class Container:
    def __init__(self, name: str) -> None:
        self.name = name
        self.http = free_port()
        self.grpc = free_port()
        self.url = f"http://127.0.0.1:{self.http}"

    def logs(self) -> str:
        r = podman("logs", self.name, check=False)
        return r.stdout + r.stderr

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/ready", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            state = podman("inspect", "-f", "{{.State.Status}}", self.name, check=False)
            if state.stdout.strip() == "exited":
                break
            time.sleep(0.3)
        raise SystemExit(f"{self.name} did not become ready:\n{self.logs()}")


@contextmanager
def container(
    image: str,
    *args: str,
    env: dict[str, str] | None = None,
    mount: Path | None = None,
    http_inside: int = 9000,
) -> Iterator[Container]:
    c = Container(f"inferwire-check-{int(time.time() * 1000) % 10**9}")
    opts = [*RUN, "-d", "--name", c.name]
    opts += ["-p", f"127.0.0.1:{c.http}:{http_inside}", "-p", f"127.0.0.1:{c.grpc}:5000"]
    for k, v in (env or {}).items():
        opts += ["-e", f"{k}={v}"]
    if mount is not None:
        opts += ["-v", f"{mount}:/models:ro"]
    podman("run", *opts, image, *args)
    try:
        yield c
    finally:
        podman("rm", "-f", "-t", "0", c.name, check=False)


def check_image_facts(image: str) -> None:
    info = json.loads(podman("image", "inspect", image).stdout)[0]
    config = info["Config"]
    if config.get("User") != "10001:10001":
        raise SystemExit(f"image user {config.get('User')!r}, want 10001:10001")
    ok(f"runs as user {config['User']} (numeric, for runAsNonRoot)")
    found = podman(
        "run",
        "--rm",
        *RUN,
        "--entrypoint",
        "sh",
        image,
        "-c",
        "for t in " + " ".join(BUILD_TOOLS) + '; do command -v "$t" || true; done',
    ).stdout.split()
    if found:
        raise SystemExit(f"build tools left in the image: {found}")
    ok(f"no build tools ({', '.join(BUILD_TOOLS)})")
    print(f"size  {info['Size'] / 1e6:.0f} MB ({image})", flush=True)


def check_mounted_model(image: str) -> None:
    model = ROOT / "examples" / "seldon_model"
    with container(image, "serve", "model.py:IrisLikeClassifier", mount=model) as c:
        c.wait_ready()
        uid = podman("exec", c.name, "id", "-u").stdout.strip()
        if uid != "10001":
            raise SystemExit(f"the server runs as uid {uid}")
        ok("the server process runs as uid 10001")
        r = httpx.post(
            f"{c.url}/api/v1.0/predictions",
            json={"data": {"ndarray": [[5.1, 3.5, 1.4, 0.2]]}},
        )
        probs = np.array(r.json()["data"]["ndarray"])
        if r.status_code != 200 or probs.shape != (1, 3) or abs(probs.sum() - 1) > 1e-9:
            raise SystemExit(f"REST predict: {r.status_code} {r.text}")
        ok(f"mounted model: REST Seldon predict {probs.round(3).tolist()}")
        from inferwire.client import Client

        with Client(c.url, grpc=f"127.0.0.1:{c.grpc}") as client:
            got = np.asarray(client.predict(np.array([[5.1, 3.5, 1.4, 0.2]])))
        if not np.allclose(got, probs):
            raise SystemExit(f"gRPC predict {got} differs from REST {probs}")
        ok("mounted model: gRPC Seldon Predict gives the same answer")
        for path, want in [("/health/ping", "pong"), ("/live", None), ("/ready", None)]:
            r = httpx.get(c.url + path)
            if r.status_code != 200 or (want and want not in r.text):
                raise SystemExit(f"{path}: {r.status_code} {r.text}")
        metrics = httpx.get(f"{c.url}/metrics").text
        if "inferwire_requests_total" not in metrics:
            raise SystemExit("/metrics has no inferwire_requests_total")
        ok("probes /health/ping, /live, /ready and /metrics answer")


def check_baked_repository(image: str) -> None:
    with container(image) as c:
        c.wait_ready()
        r = httpx.get(f"{c.url}/v2/health/ready")
        if r.status_code != 200:
            raise SystemExit(f"/v2/health/ready: {r.status_code}")
        names = ["iris", "doubler"]
        for name in names:
            r = httpx.get(f"{c.url}/v2/models/{name}/ready")
            if r.status_code != 200:
                raise SystemExit(f"baked model {name}: {r.status_code} {r.text}")
        body = {
            "inputs": [
                {"name": "x", "shape": [1, 4], "datatype": "FP64", "data": [5.1, 3.5, 1.4, 0.2]}
            ]
        }
        r = httpx.post(f"{c.url}/v2/models/iris/infer", json=body)
        if r.status_code != 200:
            raise SystemExit(f"V2 REST infer: {r.status_code} {r.text}")
        rest = np.array(r.json()["outputs"][0]["data"])
        ok(f"baked models {sorted(names)}: V2 REST infer on iris {rest.round(3).tolist()}")
        import tritonclient.grpc as tc

        client = tc.InferenceServerClient(f"127.0.0.1:{c.grpc}")
        if not client.is_server_ready() or not client.is_model_ready("iris"):
            raise SystemExit("gRPC ServerReady / ModelReady false")
        x = tc.InferInput("x", [1, 4], "FP64")
        x.set_data_from_numpy(np.array([[5.1, 3.5, 1.4, 0.2]]))
        result = client.infer("iris", [x])
        out = result.as_numpy(result.get_response().outputs[0].name)
        if not np.allclose(np.ravel(out), rest):
            raise SystemExit(f"V2 gRPC infer {out} differs from REST {rest}")
        ok("baked models: V2 gRPC ModelInfer (tritonclient) gives the same answer")


def check_settings_from_environment(image: str) -> None:
    model = ROOT / "examples" / "seldon_model"
    # Seldon Core's port variable, and inferwire's own for another setting.
    env = {"PREDICTIVE_UNIT_HTTP_SERVICE_PORT": "9100", "INFERWIRE_MAX_BODY_BYTES": "4096"}
    with container(
        image, "serve", "model.py:IrisLikeClassifier", env=env, mount=model, http_inside=9100
    ) as c:
        c.wait_ready()
        r = httpx.post(
            f"{c.url}/api/v1.0/predictions",
            json={"data": {"ndarray": [[0.0] * 4] * 400}},
        )
        if r.status_code != 413:
            raise SystemExit(f"a 400-row body with INFERWIRE_MAX_BODY_BYTES=4096: {r.status_code}")
        ok("settings from the environment: the port Seldon Core assigns, a body limit (413)")


def check_drain(image: str, grace: float = 10) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "slow"
        folder.mkdir(mode=0o755)
        (folder / "model.py").write_text(SLOW_MODEL)
        (folder / "model.py").chmod(0o644)
        folder.parent.chmod(0o755)
        env = {"INFERWIRE_GRACE_PERIOD": str(grace)}
        with container(image, "serve", "model.py:Slow", env=env, mount=folder) as c:
            c.wait_ready()
            answer: dict[str, Any] = {}

            def call() -> None:
                r = httpx.post(
                    f"{c.url}/api/v1.0/predictions",
                    json={"data": {"ndarray": [[1, 2]]}},
                    timeout=30,
                )
                answer["status"] = r.status_code
                answer["body"] = r.json()

            t = threading.Thread(target=call)
            t.start()
            time.sleep(1)
            started = time.monotonic()
            podman("kill", "--signal", "TERM", c.name)
            code = podman("wait", c.name).stdout.strip()
            took = time.monotonic() - started
            t.join()
            if answer.get("status") != 200 or answer["body"]["data"]["ndarray"] != [[1, 2]]:
                raise SystemExit(f"the request open at SIGTERM got {answer}")
            if code != "0" or took > grace:
                raise SystemExit(f"exit {code} after {took:.1f} s (grace {grace} s)\n{c.logs()}")
            ok(f"SIGTERM: the open request finished (200), exit 0 after {took:.1f} s")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--image", required=True)
    p.add_argument("--baked", required=True)
    a = p.parse_args()
    if shutil.which("podman") is None:
        raise SystemExit("podman is not installed")
    check_image_facts(a.image)
    check_mounted_model(a.image)
    check_baked_repository(a.baked)
    check_settings_from_environment(a.image)
    check_drain(a.image)
    size = json.loads(podman("image", "inspect", a.baked).stdout)[0]["Size"]
    print(f"size  {size / 1e6:.0f} MB ({a.baked})")


if __name__ == "__main__":
    main()
