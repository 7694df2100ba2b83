"""inferwire on a real Kubernetes node (deploy/e2e): the Helm chart serving through a
Service, a rolling update and a deleted pod under load with no accepted request lost,
readiness during start and drain, the HPA, KServe's controller with the ServingRuntime
and an InferenceService, KServe's own MLServer, Triton and TorchServe runtimes with only
their image changed, Seldon Core's operator with a SeldonDeployment.

Opt-in: runs only while the cluster is up (``bash deploy/e2e/run.sh``, or
``deploy/e2e/cluster.sh up`` and ``deploy/e2e/image.sh`` first); everywhere else, CI
included, it is skipped. Load figures are written to $CLUSTER_DIR/results/ as the
load generator's JSON reports. About 3 minutes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_DIR = Path(
    os.environ.get(
        "INFERWIRE_CLUSTER_DIR",
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "inferwire" / "cluster",
    )
)
KUBECONFIG = CLUSTER_DIR / "state" / "admin.kubeconfig"
BIN = CLUSTER_DIR / "bin"
RESULTS = CLUSTER_DIR / "results"
VERSION = "0.1.0"
IMAGE = "localhost/inferwire-repository"
NS = "inferwire-e2e"
RELEASE = "e2e"
IRIS = {
    "inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP64", "data": [5.1, 3.5, 1.4, 0.2]}]
}


def _cluster_up() -> bool:
    if not KUBECONFIG.exists() or not (BIN / "kubectl").exists():
        return False
    r = subprocess.run(
        [str(BIN / "kubectl"), f"--kubeconfig={KUBECONFIG}", "get", "--raw", "/readyz"],
        capture_output=True,
        text=True,
        timeout=10,
    )
    return r.returncode == 0


pytestmark = [
    pytest.mark.optin,
    pytest.mark.slow,
    pytest.mark.skipif(
        not _cluster_up(), reason="no cluster up (bash deploy/e2e/run.sh starts one)"
    ),
]


def kubectl(*args: str, check: bool = True, timeout: float = 300, stdin: str | None = None) -> str:
    r = subprocess.run(
        [str(BIN / "kubectl"), f"--kubeconfig={KUBECONFIG}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and r.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {r.stderr}{r.stdout}")
    return r.stdout


def helm(*args: str) -> str:
    r = subprocess.run(
        [str(BIN / "helm"), f"--kubeconfig={KUBECONFIG}", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, f"helm {' '.join(args)}: {r.stderr}{r.stdout}"
    return r.stdout


def bench() -> str:
    venv = ROOT / ".venv" / "bin" / "inferwire"
    return str(venv if venv.exists() else shutil.which("inferwire"))


def cluster_ip(service: str, namespace: str = NS) -> str:
    return kubectl("get", "service", service, "-n", namespace, "-o", "jsonpath={.spec.clusterIP}")


def wait_until(what: str, check: Any, seconds: float = 180) -> Any:
    deadline = time.monotonic() + seconds
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except (httpx.HTTPError, AssertionError) as e:
            last = e
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}: {last}")


def ready_endpoints(service: str, namespace: str = NS) -> list[str]:
    doc = json.loads(
        kubectl(
            "get",
            "endpointslices",
            "-n",
            namespace,
            "-l",
            f"kubernetes.io/service-name={service}",
            "-o",
            "json",
        )
    )
    return sorted(
        addr
        for s in doc["items"]
        for e in s.get("endpoints") or []
        if (e.get("conditions") or {}).get("ready")
        for addr in e["addresses"]
    )


def install_chart(**values: str) -> None:
    sets = {
        "image.repository": IMAGE,
        "image.tag": VERSION,
        "image.pullPolicy": "Never",
        # Two replicas and a surge pod on a 2-core node.
        "resources.requests.cpu": "100m",
        "resources.requests.memory": "128Mi",
        "server.gracePeriod": "10",
        **values,
    }
    args = [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]
    helm(
        "upgrade",
        "--install",
        RELEASE,
        str(ROOT / "deploy" / "helm" / "inferwire"),
        "-n",
        NS,
        "--create-namespace",
        "--wait",
        "--timeout",
        "5m",
        *args,
    )


@pytest.fixture(scope="module")
def chart() -> Iterator[str]:
    install_chart()
    service = f"{RELEASE}-inferwire"
    wait_until("two ready endpoints", lambda: len(ready_endpoints(service)) == 2)
    ip = cluster_ip(service)
    wait_until(
        "kube-proxy to route the Service",
        lambda: httpx.get(f"http://{ip}:9000/ready", timeout=2).status_code == 200,
        60,
    )
    yield service
    helm("uninstall", RELEASE, "-n", NS, "--wait")


def test_the_chart_serves_predictions_through_a_service(chart: str) -> None:
    ip = cluster_ip(chart)
    r = httpx.post(f"http://{ip}:9000/v2/models/iris/infer", json=IRIS, timeout=10)
    assert r.status_code == 200, r.text
    probs = np.array(r.json()["outputs"][0]["data"])
    assert probs.shape == (3,) and abs(probs.sum() - 1) < 1e-9
    import tritonclient.grpc as tc

    client = tc.InferenceServerClient(f"{ip}:5000")
    x = tc.InferInput("x", [1, 4], "FP64")
    x.set_data_from_numpy(np.array([[5.1, 3.5, 1.4, 0.2]]))
    result = client.infer("iris", [x])
    got = result.as_numpy(result.get_response().outputs[0].name)
    assert np.allclose(np.ravel(got), probs)
    # The doubler, a second model of the baked repository.
    r = httpx.post(
        f"http://{ip}:9000/v2/models/doubler/infer",
        json={"inputs": [{"name": "x", "shape": [3], "datatype": "INT64", "data": [1, 2, 3]}]},
    )
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [2, 4, 6], r.text


def attack_during(name: str, url: str, action: Any, seconds: int = 40) -> dict[str, Any]:
    """Sends 100 requests/s for `seconds` while `action` runs; returns the report."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{name}.json"
    proc = subprocess.Popen(
        [
            bench(),
            "bench",
            "attack",
            url,
            "-d",
            json.dumps(IRIS),
            "-r",
            "100",
            "-c",
            "16",
            "-z",
            f"{seconds}s",
            "--timeout",
            "10s",
            "--format",
            "json",
            "-o",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(5)
    began = time.monotonic()
    action()
    took = time.monotonic() - began
    _, err = proc.communicate(timeout=seconds + 60)
    assert proc.returncode in (0, 1), err
    # The whole action happened under load.
    assert 5 + took < seconds, f"{name} took {took:.0f} s, longer than the load"
    report: dict[str, Any] = json.loads(out.read_text())
    report["action_seconds"] = round(took, 1)
    out.write_text(json.dumps(report))
    return report


def test_a_rolling_update_under_load_loses_no_request(chart: str) -> None:
    ip = cluster_ip(chart)
    before = set(ready_endpoints(chart))

    def restart() -> None:
        kubectl("rollout", "restart", f"deployment/{chart}", "-n", NS)
        kubectl("rollout", "status", f"deployment/{chart}", "-n", NS, "--timeout=180s")

    rep = attack_during("rolling-update", f"http://{ip}:9000/v2/models/iris/infer", restart)
    after = set(ready_endpoints(chart))
    assert not (before & after), "the rollout replaced no pod"
    assert rep["status_codes"] == {"200": rep["requests"]} and rep["errors"] == [], rep
    assert rep["requests"] >= 3000


def test_a_pod_deleted_under_load_loses_no_request(chart: str) -> None:
    ip = cluster_ip(chart)
    pods = kubectl(
        "get",
        "pods",
        "-n",
        NS,
        "-l",
        "app.kubernetes.io/instance=" + RELEASE,
        "-o",
        "jsonpath={.items[0].metadata.name}",
    )

    def delete() -> None:
        kubectl("delete", "pod", pods, "-n", NS, "--wait=false")
        wait_until("a replacement pod", lambda: len(ready_endpoints(chart)) == 2, 120)

    rep = attack_during("pod-deleted", f"http://{ip}:9000/v2/models/iris/infer", delete)
    assert rep["status_codes"] == {"200": rep["requests"]} and rep["errors"] == [], rep


def pods(service: str) -> dict[str, str]:
    """The release's pods: name -> pod IP (those that have one)."""
    doc = json.loads(
        kubectl(
            "get", "pods", "-n", NS, "-l", f"app.kubernetes.io/instance={RELEASE}", "-o", "json"
        )
    )
    return {
        p["metadata"]["name"]: p["status"]["podIP"]
        for p in doc["items"]
        if p["status"].get("podIP") and not p["metadata"].get("deletionTimestamp")
    }


def probe(ip: str) -> bool:
    try:
        return httpx.get(f"http://{ip}:9000/ready", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_readiness_follows_start_and_drain(chart: str) -> None:
    """A deleted pod leaves the Service's endpoints at once and goes on answering
    through the preStop pause, then drains; its replacement is an endpoint only while
    its own /ready answers 200."""
    name, ip = sorted(pods(chart).items())[0]
    seen: list[tuple[float, bool, bool]] = []  # (time, /ready is 200, an endpoint)
    fresh: list[tuple[bool, bool]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            endpoints = ready_endpoints(chart)
            seen.append((time.monotonic(), probe(ip), ip in endpoints))
            for other_ip in pods(chart).values():
                if other_ip != ip and other_ip not in before:
                    fresh.append((probe(other_ip), other_ip in endpoints))
            time.sleep(0.2)

    before = set(pods(chart).values())
    t = threading.Thread(target=watch)
    t.start()
    started = time.monotonic()
    kubectl("delete", "pod", name, "-n", NS, "--wait=true", "--timeout=60s")
    took = time.monotonic() - started
    wait_until("a replacement pod", lambda: len(ready_endpoints(chart)) == 2, 120)
    stop.set()
    t.join()
    left = next(when for when, _, listed in seen if when > started and not listed)
    assert left - started < 5, seen
    # The preStop pause (5 s): no longer sent traffic, still answering.
    assert any(ready for when, ready, _ in seen if left < when < left + 4), seen
    # Then the drain: /ready stops answering 200 before the pod is gone.
    assert not seen[-1][1], seen
    assert fresh and not any(listed and not ready for ready, listed in fresh), fresh
    drained = next(when for when, ready, _ in seen if when > left and not ready)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "readiness.json").write_text(
        json.dumps(
            {
                "left_endpoints_s": round(left - started, 2),
                "ready_off_s": round(drained - started, 2),
                "pod_gone_s": round(took, 2),
            }
        )
    )
    for pod in json.loads(kubectl("get", "pods", "-n", NS, "-o", "json"))["items"]:
        assert pod["status"]["containerStatuses"][0]["restartCount"] == 0


def hpa(service: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(kubectl("get", "hpa", service, "-n", NS, "-o", "json"))
    return doc


def metrics_api() -> bool:
    return kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/pods", check=False) != ""


def test_the_hpa_is_accepted_and_scales_under_load(chart: str) -> None:
    install_chart(
        **{
            "autoscaling.enabled": "true",
            "autoscaling.minReplicas": "2",
            "autoscaling.maxReplicas": "4",
        }
    )
    try:
        spec = hpa(chart)["spec"]
        assert spec["scaleTargetRef"]["name"] == chart
        assert (spec["minReplicas"], spec["maxReplicas"]) == (2, 4)
        wait_until("the HPA's controller to act on it", lambda: hpa(chart).get("status"), 60)
        if not metrics_api():
            pytest.skip("no resource metrics API (deploy/e2e/build.sh metrics-server)")
        wait_until(
            "a CPU reading for the HPA",
            lambda: any(
                m.get("resource", {}).get("current", {}).get("averageUtilization") is not None
                for m in hpa(chart)["status"].get("currentMetrics") or []
            ),
            120,
        )
        # Closed-loop load, far above 70 % of the pods' 100m request, until it scales.
        ip = cluster_ip(chart)
        load = subprocess.Popen(
            [
                bench(),
                "bench",
                "attack",
                f"http://{ip}:9000/v2/models/iris/infer",
                "-d",
                json.dumps(IRIS),
                "-c",
                "8",
                "-z",
                "150s",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            started = time.monotonic()
            wait_until(
                "the HPA to scale up",
                lambda: hpa(chart)["status"].get("desiredReplicas", 0) > 2,
                140,
            )
            RESULTS.mkdir(parents=True, exist_ok=True)
            (RESULTS / "hpa-scaled.json").write_text(
                json.dumps(
                    {
                        "seconds": round(time.monotonic() - started, 1),
                        "status": hpa(chart)["status"],
                    }
                )
            )
        finally:
            load.terminate()
            load.wait(timeout=30)
    finally:
        install_chart()


def fresh_namespace(name: str) -> None:
    """`name`, empty: what an earlier run left is deleted first (and waited for)."""
    kubectl("delete", "namespace", name, "--ignore-not-found", "--wait=true", "--timeout=180s")
    kubectl("create", "namespace", name)


def crd_installed(name: str) -> bool:
    return kubectl("get", "crd", name, check=False) != ""


def apply(doc: dict[str, Any] | list[dict[str, Any]], namespace: str) -> None:
    import yaml

    docs = doc if isinstance(doc, list) else [doc]
    kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump_all(docs))


def load_manifest(path: str) -> dict[str, Any]:
    import yaml

    doc: dict[str, Any] = yaml.safe_load((ROOT / path).read_text())
    return doc


def model_volume(namespace: str, name: str, source: Path, under: str = "iris") -> None:
    """A PersistentVolume on the node (hostPath) holding `source` in its folder `under`
    (a storageUri's path: pvc://NAME/UNDER), claimed as `name`."""
    folder = CLUSTER_DIR / "state" / "volumes" / namespace / name
    # A volume an earlier run released keeps that claim's UID: made anew.
    kubectl("delete", "pv", f"{namespace}-{name}", "--ignore-not-found", "--wait=true")
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(source, folder / under)
    for p in [folder, *folder.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"{namespace}-{name}"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadOnlyMany", "ReadWriteOnce"],
            "hostPath": {"path": str(folder), "type": "Directory"},
            "storageClassName": "",
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": namespace, "name": name},
        },
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "volumeName": f"{namespace}-{name}",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    apply([pv, pvc], namespace)


KSERVE_NS = "kserve-e2e"


@pytest.fixture(scope="module")
def kserve() -> Iterator[None]:
    if not crd_installed("inferenceservices.serving.kserve.io"):
        pytest.skip("KServe is not installed (deploy/e2e/kserve.py up)")
    fresh_namespace(KSERVE_NS)
    model_volume(KSERVE_NS, "models", ROOT / "examples" / "repository" / "models")
    # deploy/kserve's manifests with the image this machine built, and requests that
    # fit two pods on a 2-core node.
    runtime = load_manifest("deploy/kserve/servingruntime.yaml")
    container = runtime["spec"]["containers"][0]
    container["image"] = f"localhost/inferwire:{VERSION}"
    container["resources"]["requests"] = {"cpu": "100m", "memory": "128Mi"}
    isvc = load_manifest("deploy/kserve/inferenceservice.yaml")
    isvc["spec"]["predictor"]["model"]["resources"]["requests"] = {"cpu": "100m", "memory": "128Mi"}
    grpc_isvc = json.loads(json.dumps(isvc))
    grpc_isvc["metadata"]["name"] = "iris-grpc"
    grpc_isvc["spec"]["predictor"]["model"]["ports"] = [
        {"name": "h2c", "containerPort": 5000, "protocol": "TCP"}
    ]
    apply([runtime, isvc, grpc_isvc], KSERVE_NS)
    for name in ("iris", "iris-grpc"):
        kubectl(
            "wait",
            f"inferenceservice/{name}",
            "-n",
            KSERVE_NS,
            "--for=condition=Ready",
            "--timeout=180s",
        )
    yield
    kubectl("delete", "namespace", KSERVE_NS, "--wait=true", "--timeout=180s", check=False)


def test_kserve_inferenceservice_answers_v2_over_rest_and_grpc(kserve: None) -> None:
    isvc = json.loads(kubectl("get", "inferenceservice", "iris", "-n", KSERVE_NS, "-o", "json"))
    assert isvc["status"]["url"], isvc["status"]
    deployment = json.loads(
        kubectl("get", "deployment", "iris-predictor", "-n", KSERVE_NS, "-o", "json")
    )
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"].startswith(
        "localhost/inferwire:"
    )
    ip = cluster_ip("iris-predictor", KSERVE_NS)
    # Ready InferenceServices; kube-proxy may take a moment more to route to them.
    wait_until(
        "the predictor's Service to answer",
        lambda: httpx.get(f"http://{ip}/v2/health/ready", timeout=2).status_code == 200,
        60,
    )
    r = httpx.post(f"http://{ip}/v2/models/iris/infer", json=IRIS, timeout=10)
    assert r.status_code == 200, r.text
    rest = np.array(r.json()["outputs"][0]["data"])
    assert rest.shape == (3,) and abs(rest.sum() - 1) < 1e-9
    meta = httpx.get(f"http://{ip}/v2/models/iris").json()
    assert meta["name"] == "iris" and meta["platform"], meta
    import tritonclient.grpc as tc

    service = json.loads(
        kubectl("get", "service", "iris-grpc-predictor", "-n", KSERVE_NS, "-o", "json")
    )
    port = next(p["port"] for p in service["spec"]["ports"] if p["targetPort"] == 5000)
    rest_port = next(p["port"] for p in service["spec"]["ports"] if p["targetPort"] == 8080)
    grpc_ip = service["spec"]["clusterIP"]
    wait_until(
        "the gRPC predictor's Service to answer",
        lambda: (
            httpx.get(f"http://{grpc_ip}:{rest_port}/v2/health/ready", timeout=2).status_code == 200
        ),
        60,
    )
    client = tc.InferenceServerClient(f"{grpc_ip}:{port}")
    assert client.is_server_ready() and client.is_model_ready("iris")
    x = tc.InferInput("x", [1, 4], "FP64")
    x.set_data_from_numpy(np.array([[5.1, 3.5, 1.4, 0.2]]))
    result = client.infer("iris", [x])
    assert np.allclose(np.ravel(result.as_numpy(result.get_response().outputs[0].name)), rest)


MLSERVER_NS = "kserve-mlserver-e2e"


def kserve_runtime(name: str) -> dict[str, Any]:
    """KServe's own config/runtimes/NAME.yaml, from its Go module (the version
    deploy/validate checks against)."""
    import yaml

    out = subprocess.run(
        ["go", "mod", "download", "-json", "github.com/kserve/kserve@v0.15.2"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    folder = Path(json.loads(out.stdout)["Dir"])
    doc: dict[str, Any] = yaml.safe_load(
        (folder / "config" / "runtimes" / f"{name}.yaml").read_text()
    )
    return doc


@pytest.fixture(scope="module")
def kserve_mlserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """KServe's kserve-mlserver ClusterServingRuntime with deploy/kserve's patch applied
    (the image, and nothing else: here the node's local name for it), and an
    InferenceService of modelFormat sklearn whose storageUri holds a model.joblib, as
    KServe's MLServer examples deploy it."""
    if not crd_installed("clusterservingruntimes.serving.kserve.io"):
        pytest.skip("KServe is not installed (deploy/e2e/kserve.py up)")
    import joblib
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    runtime = kserve_runtime("kserve-mlserver")
    (patch,) = json.loads((ROOT / "deploy/kserve/kserve-mlserver-image.json").read_text())
    assert patch["path"] == "/spec/containers/0/image"
    runtime["spec"]["containers"][0]["image"] = f"localhost/{patch['value']}"
    fresh_namespace(MLSERVER_NS)
    source = tmp_path_factory.mktemp("sklearn-iris")
    X, y = load_iris(return_X_y=True)
    joblib.dump(
        RandomForestClassifier(n_estimators=10, random_state=0).fit(X, y), source / "model.joblib"
    )
    model_volume(MLSERVER_NS, "models", source)
    isvc = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "sklearn-iris", "namespace": MLSERVER_NS},
        "spec": {
            "predictor": {
                "model": {
                    "modelFormat": {"name": "sklearn"},
                    "protocolVersion": "v2",
                    "runtime": "kserve-mlserver",
                    "storageUri": "pvc://models/iris",
                    # The runtime asks for a whole core and 2 GiB; a 2-core node's share.
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "256Mi"},
                        "limits": {"cpu": "1", "memory": "2Gi"},
                    },
                }
            }
        },
    }
    kubectl("apply", "-f", "-", stdin=json.dumps(runtime))
    apply(isvc, MLSERVER_NS)
    kubectl(
        "wait",
        "inferenceservice/sklearn-iris",
        "-n",
        MLSERVER_NS,
        "--for=condition=Ready",
        "--timeout=300s",
    )
    yield cluster_ip("sklearn-iris-predictor", MLSERVER_NS)
    kubectl("delete", "namespace", MLSERVER_NS, "--wait=true", "--timeout=180s", check=False)
    kubectl("delete", "clusterservingruntime", "kserve-mlserver", check=False)


def test_kserve_mlserver_runtime_with_only_its_image_changed(kserve_mlserver: str) -> None:
    """What KServe gives the container (MLSERVER_MODEL_IMPLEMENTATION from the model
    format, MLSERVER_MODEL_NAME, MLSERVER_MODEL_URI, MLServer's ports) is read by the
    image's `inferwire start`: the model answers V2 as mlserver-sklearn does."""
    ip = kserve_mlserver
    deployment = json.loads(
        kubectl("get", "deployment", "sklearn-iris-predictor", "-n", MLSERVER_NS, "-o", "json")
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"].endswith("inferwire-mlserver:0.1.0"), container["image"]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    assert env.get("MLSERVER_MODEL_IMPLEMENTATION") == "mlserver_sklearn.SKLearnModel", env
    assert env.get("MLSERVER_MODEL_NAME") == "sklearn-iris", env
    wait_until(
        "the predictor's Service to answer",
        lambda: httpx.get(f"http://{ip}/v2/health/ready", timeout=2).status_code == 200,
        60,
    )
    body = {
        "inputs": [
            {
                "name": "input-0",
                "datatype": "FP64",
                "shape": [2, 4],
                "data": [5.1, 3.5, 1.4, 0.2, 6.2, 3.4, 5.4, 2.3],
            }
        ]
    }
    r = httpx.post(f"http://{ip}/v2/models/sklearn-iris/infer", json=body, timeout=10)
    assert r.status_code == 200, r.text
    (out,) = r.json()["outputs"]
    assert (out["name"], out["shape"], out["datatype"]) == ("predict", [2, 1], "INT64"), out
    assert out["data"] == [0, 2]
    asked = dict(body, outputs=[{"name": "predict_proba"}])
    proba = httpx.post(f"http://{ip}/v2/models/sklearn-iris/infer", json=asked, timeout=10)
    assert proba.json()["outputs"][0]["shape"] == [2, 3], proba.text


TRITON_NS = "kserve-triton-e2e"
ADD_SUB = ROOT / "tests" / "vendor" / "triton_python_backend" / "repository" / "add_sub"
# add_sub's two FP32 [4] inputs; it answers their sum (OUTPUT0) and difference (OUTPUT1).
ADD_SUB_INPUTS = {
    "INPUT0": np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32),
    "INPUT1": np.array([0.5, 0.25, 2.0, -1.0], dtype=np.float32),
}


@pytest.fixture(scope="module")
def kserve_tritonserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """KServe's kserve-tritonserver ClusterServingRuntime with deploy/kserve's patch
    applied (Triton's image replaced by inferwire's, here by the node's local name for
    it; the args, `tritonserver --model-store=/mnt/models --grpc-port=9000
    --http-port=8080 ...`, unchanged), and an InferenceService of modelFormat triton whose
    storageUri holds a Triton model repository with Triton's add_sub example, as KServe's
    Triton examples deploy one. The InferenceService names the runtime's two ports (http1
    8080 first, which the Service's port 80 and the readiness probe take; h2c 9000 for
    gRPC), as KServe's docs do for Triton's gRPC."""
    if not crd_installed("clusterservingruntimes.serving.kserve.io"):
        pytest.skip("KServe is not installed (deploy/e2e/kserve.py up)")
    runtime = kserve_runtime("kserve-tritonserver")
    (patch,) = json.loads((ROOT / "deploy/kserve/kserve-tritonserver-image.json").read_text())
    assert patch["path"] == "/spec/containers/0/image"
    runtime["spec"]["containers"][0]["image"] = f"localhost/{patch['value']}"
    fresh_namespace(TRITON_NS)
    source = tmp_path_factory.mktemp("triton-repository")
    shutil.copytree(ADD_SUB, source / "add_sub", ignore=shutil.ignore_patterns("__pycache__"))
    model_volume(TRITON_NS, "models", source, under="repository")
    isvc = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "add-sub", "namespace": TRITON_NS},
        "spec": {
            "predictor": {
                "model": {
                    "modelFormat": {"name": "triton"},
                    "protocolVersion": "v2",
                    "runtime": "kserve-tritonserver",
                    "storageUri": "pvc://models/repository",
                    "ports": [
                        {"name": "http1", "containerPort": 8080, "protocol": "TCP"},
                        {"name": "h2c", "containerPort": 9000, "protocol": "TCP"},
                    ],
                    # The runtime asks for a whole core and 2 GiB; a 2-core node's share.
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "256Mi"},
                        "limits": {"cpu": "1", "memory": "2Gi"},
                    },
                }
            }
        },
    }
    kubectl("apply", "-f", "-", stdin=json.dumps(runtime))
    apply(isvc, TRITON_NS)
    kubectl(
        "wait",
        "inferenceservice/add-sub",
        "-n",
        TRITON_NS,
        "--for=condition=Ready",
        "--timeout=300s",
    )
    yield runtime
    kubectl("delete", "namespace", TRITON_NS, "--wait=true", "--timeout=180s", check=False)
    kubectl("delete", "clusterservingruntime", "kserve-tritonserver", check=False)


def test_kserve_tritonserver_runtime_with_only_its_image_changed(
    kserve_tritonserver: dict[str, Any],
) -> None:
    """KServe runs the image with Triton's command line (`tritonserver ...` after the
    image's ENTRYPOINT, `inferwire`) as Triton's user (runAsUser 1000): add_sub answers
    V2 over REST and gRPC through the predictor's Service as under Triton, and the
    metrics port KServe's annotation names serves Triton's series."""
    (want,) = kserve_tritonserver["spec"]["containers"]
    deployment = json.loads(
        kubectl("get", "deployment", "add-sub-predictor", "-n", TRITON_NS, "-o", "json")
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == f"localhost/inferwire:{VERSION}", container["image"]
    assert container["args"] == want["args"] and "command" not in container, container
    assert container["securityContext"]["runAsUser"] == 1000, container["securityContext"]
    service = json.loads(
        kubectl("get", "service", "add-sub-predictor", "-n", TRITON_NS, "-o", "json")
    )
    ip = service["spec"]["clusterIP"]
    ports = {p["targetPort"]: p["port"] for p in service["spec"]["ports"]}
    rest, grpc = f"http://{ip}:{ports[8080]}", f"{ip}:{ports[9000]}"
    wait_until(
        "the predictor's Service to answer",
        lambda: httpx.get(f"{rest}/v2/health/ready", timeout=2).status_code == 200,
        60,
    )
    assert httpx.get(f"{rest}/v2").json()["name"] == "triton"
    total = ADD_SUB_INPUTS["INPUT0"] + ADD_SUB_INPUTS["INPUT1"]
    difference = ADD_SUB_INPUTS["INPUT0"] - ADD_SUB_INPUTS["INPUT1"]
    body = {
        "inputs": [
            {"name": k, "shape": [4], "datatype": "FP32", "data": v.tolist()}
            for k, v in ADD_SUB_INPUTS.items()
        ]
    }
    r = httpx.post(f"{rest}/v2/models/add_sub/infer", json=body, timeout=10)
    assert r.status_code == 200, r.text
    outputs = {o["name"]: o for o in r.json()["outputs"]}
    assert outputs["OUTPUT0"]["data"] == total.tolist(), outputs
    assert outputs["OUTPUT1"]["data"] == difference.tolist(), outputs
    assert (outputs["OUTPUT0"]["datatype"], outputs["OUTPUT0"]["shape"]) == ("FP32", [4])

    import tritonclient.grpc as tc

    client = tc.InferenceServerClient(grpc)
    assert client.is_server_ready() and client.is_model_ready("add_sub")
    inputs = []
    for name, value in ADD_SUB_INPUTS.items():
        tensor = tc.InferInput(name, [4], "FP32")
        tensor.set_data_from_numpy(value)
        inputs.append(tensor)
    result = client.infer("add_sub", inputs)
    assert np.array_equal(result.as_numpy("OUTPUT0"), total)
    assert np.array_equal(result.as_numpy("OUTPUT1"), difference)

    # prometheus.kserve.io/port: the pod's metrics, not behind the Service.
    annotations = kserve_tritonserver["spec"]["annotations"]
    (pod,) = json.loads(
        kubectl(
            "get",
            "pods",
            "-n",
            TRITON_NS,
            "-l",
            "serving.kserve.io/inferenceservice=add-sub",
            "--field-selector=status.phase=Running",
            "-o",
            "json",
        )
    )["items"]
    metrics = httpx.get(
        f"http://{pod['status']['podIP']}:{annotations['prometheus.kserve.io/port']}"
        f"{annotations['prometheus.kserve.io/path']}",
        timeout=5,
    ).text
    assert 'nv_inference_request_success{model="add_sub",version="1"} 2' in metrics, metrics


TORCHSERVE_NS = "kserve-torchserve-e2e"
# /mnt/models/config/config.properties as KServe's TorchServe docs write it: TorchServe's
# frontend on 8085 (the KServe wrapper's 8080 free), metrics on the annotation's 8082,
# TS_* variables read (TS_SERVICE_ENVELOPE among them), the model from the snapshot.
# Token authorization off, as TorchServe 0.12's own KServe image needs it: its wrapper
# sends no key.
TORCHSERVE_CONFIG = """\
inference_address=http://0.0.0.0:8085
management_address=http://0.0.0.0:8085
metrics_address=http://0.0.0.0:8082
grpc_inference_port=7070
grpc_management_port=7071
enable_metrics_api=true
metrics_mode=prometheus
number_of_netty_threads=4
job_queue_size=10
enable_envvars_config=true
install_py_dep_per_model=true
disable_token_authorization=true
model_store=/mnt/models/model-store
model_snapshot={"name":"startup.cfg","modelCount":1,"models":{"echo":{"1.0":{"defaultVersion":\
true,"marName":"echo.mar","minWorkers":1,"maxWorkers":1,"batchSize":1,"maxBatchDelay":10,\
"responseTimeout":60}}}}
"""


@pytest.fixture(scope="module")
def kserve_torchserve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """KServe's kserve-torchserve ClusterServingRuntime with deploy/kserve's patch applied
    (TorchServe's KServe image, pytorch/torchserve-kfs, replaced by inferwire's, here by
    the node's local name for it; the args, `torchserve --start
    --model-store=/mnt/models/model-store --ts-config=/mnt/models/config/config.properties`,
    unchanged), and two InferenceServices of modelFormat pytorch over a PVC laid out as
    KServe's TorchServe docs lay out a storageUri (config/config.properties and
    model-store/echo.mar, an archive torch-model-archiver made of TorchServe's echo
    handler, which imports no torch): one of protocol v1, one of v2, for which KServe sets
    TS_SERVICE_ENVELOPE to kserve and kservev2."""
    if not crd_installed("clusterservingruntimes.serving.kserve.io"):
        pytest.skip("KServe is not installed (deploy/e2e/kserve.py up)")
    sys.path.insert(0, str(ROOT / "tests" / "dialects" / "torchserve"))
    from torchserve_archives import VENDOR, archive

    runtime = kserve_runtime("kserve-torchserve")
    (patch,) = json.loads((ROOT / "deploy/kserve/kserve-torchserve-image.json").read_text())
    assert patch["path"] == "/spec/containers/0/image"
    runtime["spec"]["containers"][0]["image"] = f"localhost/{patch['value']}"
    fresh_namespace(TORCHSERVE_NS)
    source = tmp_path_factory.mktemp("torchserve-models")
    (source / "config").mkdir()
    (source / "config" / "config.properties").write_text(TORCHSERVE_CONFIG)
    (source / "model-store").mkdir()
    archive(source / "model-store", "echo", VENDOR / "echo" / "handler.py")
    model_volume(TORCHSERVE_NS, "models", source, under="echo")
    services = []
    for name, protocol in (("echo-v1", "v1"), ("echo-v2", "v2")):
        services.append(
            {
                "apiVersion": "serving.kserve.io/v1beta1",
                "kind": "InferenceService",
                "metadata": {"name": name, "namespace": TORCHSERVE_NS},
                "spec": {
                    "predictor": {
                        "model": {
                            "modelFormat": {"name": "pytorch"},
                            "protocolVersion": protocol,
                            "runtime": "kserve-torchserve",
                            "storageUri": "pvc://models/echo",
                            # The runtime asks for a whole core and 2 GiB; a 2-core node's
                            # share.
                            "resources": {
                                "requests": {"cpu": "100m", "memory": "256Mi"},
                                "limits": {"cpu": "1", "memory": "2Gi"},
                            },
                        }
                    }
                },
            }
        )
    kubectl("apply", "-f", "-", stdin=json.dumps(runtime))
    apply(services, TORCHSERVE_NS)
    for name in ("echo-v1", "echo-v2"):
        kubectl(
            "wait",
            f"inferenceservice/{name}",
            "-n",
            TORCHSERVE_NS,
            "--for=condition=Ready",
            "--timeout=300s",
        )
    yield runtime
    kubectl("delete", "namespace", TORCHSERVE_NS, "--wait=true", "--timeout=180s", check=False)
    kubectl("delete", "clusterservingruntime", "kserve-torchserve", check=False)


def _torchserve_predictor(name: str) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """The InferenceService's predictor: its container, its Service's URL and its pod."""
    deployment = json.loads(
        kubectl("get", "deployment", f"{name}-predictor", "-n", TORCHSERVE_NS, "-o", "json")
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    service = json.loads(
        kubectl("get", "service", f"{name}-predictor", "-n", TORCHSERVE_NS, "-o", "json")
    )
    ports = {p["targetPort"]: p["port"] for p in service["spec"]["ports"]}
    url = f"http://{service['spec']['clusterIP']}:{ports[8080]}"
    (pod,) = json.loads(
        kubectl(
            "get",
            "pods",
            "-n",
            TORCHSERVE_NS,
            "-l",
            f"serving.kserve.io/inferenceservice={name}",
            "--field-selector=status.phase=Running",
            "-o",
            "json",
        )
    )["items"]
    return container, url, pod


def test_kserve_torchserve_runtime_with_only_its_image_changed(
    kserve_torchserve: dict[str, Any],
) -> None:
    """KServe runs the image with TorchServe's command line (`torchserve --start ...`
    after the image's ENTRYPOINT, `inferwire`, as the container's main process, so it
    serves in the foreground) as uid 1000, with TS_SERVICE_ENVELOPE from the protocol
    version: the echo handler answers KServe's v1 request as `predictions` and its V2
    request as V2 outputs through the predictor's Service (port 8080, the KServe
    wrapper's in TorchServe's image), and the metrics port KServe's annotation names
    counts them in TorchServe's ts_inference_requests_total."""
    (want,) = kserve_torchserve["spec"]["containers"]
    annotations = kserve_torchserve["spec"]["annotations"]
    envelopes = {}
    urls = {}
    for name in ("echo-v1", "echo-v2"):
        container, url, pod = _torchserve_predictor(name)
        assert container["image"] == f"localhost/inferwire:{VERSION}", container["image"]
        assert container["args"] == want["args"] and "command" not in container, container
        assert container["securityContext"]["runAsUser"] == 1000, container["securityContext"]
        envelopes[name] = {e["name"]: e.get("value") for e in container["env"]}[
            "TS_SERVICE_ENVELOPE"
        ]
        urls[name] = (url, pod)
        wait_until(
            f"{name}'s Service to answer",
            lambda url=url: httpx.get(f"{url}/v1/models/echo", timeout=2).status_code == 200,
            60,
        )
    assert envelopes == {"echo-v1": "kserve", "echo-v2": "kservev2"}, envelopes

    v1, v1_pod = urls["echo-v1"]
    assert httpx.get(f"{v1}/v1/models/echo").json() == {"name": "echo", "ready": True}
    body = {"instances": [{"data": "hello"}, {"data": [1, 2, 3]}]}
    for _ in range(2):
        r = httpx.post(f"{v1}/v1/models/echo:predict", json=body, timeout=10)
        assert r.status_code == 200, r.text
        assert r.json() == {"predictions": ["hello", [1, 2, 3]]}
    bad = httpx.post(f"{v1}/v1/models/echo:predict", json={"instances": 3}, timeout=10)
    assert bad.status_code == 400 and bad.json()["error"].startswith('"instances"'), bad.text

    v2, v2_pod = urls["echo-v2"]
    assert httpx.get(f"{v2}/v2/health/ready").status_code == 200
    assert httpx.get(f"{v2}/v2/models/echo/ready").status_code == 200
    request = {
        "id": "r-1",
        "inputs": [{"name": "x", "shape": [2, 2], "datatype": "INT64", "data": [1, 2, 3, 4]}],
    }
    r = httpx.post(f"{v2}/v2/models/echo/infer", json=request, timeout=10)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "id": "r-1",
        "model_name": "echo",
        "model_version": "1.0",
        "outputs": [{"name": "x", "datatype": "INT64", "data": [1, 2, 3, 4], "shape": [4]}],
    }

    # prometheus.kserve.io/port: each pod's metrics, not behind the Service.
    for pod, count in ((v1_pod, 3), (v2_pod, 1)):
        metrics = httpx.get(
            f"http://{pod['status']['podIP']}:{annotations['prometheus.kserve.io/port']}"
            f"{annotations['prometheus.kserve.io/path']}",
            timeout=5,
        ).text
        line = (
            f'ts_inference_requests_total{{model_name="echo",model_version="default",'
            f'hostname="{pod["metadata"]["name"]}",}} {count}.0'
        )
        assert line in metrics, metrics


@pytest.mark.optin
def test_kserve_torchserve_grpc_v2_on_the_wrapper_s_grpc_port(
    kserve_torchserve: dict[str, Any],
) -> None:
    """The kservev2 pod (KServe sets that envelope for v2 and grpc-v2) answers KServe's V2
    gRPC on 8081, the KServe wrapper's gRPC port in TorchServe's image, which an
    InferenceService of protocol grpc-v2 names as its container port: readiness and
    ModelInfer through the envelope to the echo handler. Asked of the pod directly (the
    v2 InferenceService's Service carries 8080 only). An extension not yet run on the e2e
    cluster (the image needs rebuilding from this tree)."""
    import numpy as np
    import tritonclient.grpc as tc

    _, _, pod = _torchserve_predictor("echo-v2")
    client = tc.InferenceServerClient(f"{pod['status']['podIP']}:8081")
    from tritonclient.utils import InferenceServerException

    def ready() -> bool:
        try:
            return bool(client.is_server_ready())
        except InferenceServerException:
            return False

    wait_until("the pod's KServe gRPC port to answer", ready, 60)
    assert client.is_model_ready("echo")
    x = tc.InferInput("x", [2, 2], "INT64")
    x.set_data_from_numpy(np.array([[1, 2], [3, 4]], dtype=np.int64))
    r = client.infer("echo", [x], request_id="g-1")
    assert r.get_response().id == "g-1"
    assert r.as_numpy("x").tolist() == [1, 2, 3, 4]
    client.close()


SELDON_NS = "seldon-e2e"
# The seed notebook's three payload shapes (ndarray, tensor, tftensor), for the
# iris-like model's 4 features.
NOTEBOOK_BODIES = {
    "ndarray": {"data": {"ndarray": [[5.1, 3.5, 1.4, 0.2]]}},
    "tensor": {"data": {"tensor": {"shape": [1, 4], "values": [5.1, 3.5, 1.4, 0.2]}}},
    "tftensor": {
        "data": {
            "tftensor": {
                "dtype": "DT_DOUBLE",
                "tensorShape": {"dim": [{"size": "1"}, {"size": "4"}]},
                "doubleVal": [5.1, 3.5, 1.4, 0.2],
            }
        }
    },
}


@pytest.fixture(scope="module")
def seldon() -> Iterator[str]:
    if not crd_installed("seldondeployments.machinelearning.seldon.io"):
        pytest.skip("Seldon Core's operator is not installed (docs/deploy.md)")
    fresh_namespace(SELDON_NS)
    sdep = load_manifest("deploy/seldon/seldondeployment.yaml")
    predictor = sdep["spec"]["predictors"][0]
    # No executor image can be built here (docs/deploy.md): the Service goes straight
    # to the model container, which takes the same paths.
    predictor.setdefault("annotations", {})["seldon.io/no-engine"] = "true"
    container = predictor["componentSpecs"][0]["spec"]["containers"][0]
    container["image"] = f"localhost/iris-inferwire:{VERSION}"
    container["resources"]["requests"] = {"cpu": "100m", "memory": "128Mi"}
    apply(sdep, SELDON_NS)
    wait_until(
        "the SeldonDeployment to be Available",
        lambda: (
            json.loads(kubectl("get", "seldondeployment", "iris", "-n", SELDON_NS, "-o", "json"))
            .get("status", {})
            .get("state")
            == "Available"
        ),
        240,
    )
    service = json.loads(kubectl("get", "service", "iris-default", "-n", SELDON_NS, "-o", "json"))
    port = next(p["port"] for p in service["spec"]["ports"] if p["name"] == "http")
    url = f"http://{service['spec']['clusterIP']}:{port}"
    # Available; kube-proxy may take a moment more to route to it.
    wait_until(
        "the Service to answer",
        lambda: httpx.get(f"{url}/health/ping", timeout=2).status_code == 200,
        60,
    )
    yield url
    kubectl("delete", "namespace", SELDON_NS, "--wait=true", "--timeout=180s", check=False)


@pytest.mark.parametrize("shape", list(NOTEBOOK_BODIES))
def test_seldon_deployment_answers_the_notebooks_curl_calls(seldon: str, shape: str) -> None:
    # As the notebook calls it: curl, JSON, Seldon's ingress path.
    r = subprocess.run(
        [
            "curl",
            "-s",
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-d",
            json.dumps(NOTEBOOK_BODIES[shape]),
            f"{seldon}/seldon/{SELDON_NS}/iris/api/v1.0/predictions",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    reply = json.loads(r.stdout)
    assert shape in reply["data"], reply
    assert reply["meta"]["requestPath"] == {"classifier": f"localhost/iris-inferwire:{VERSION}"}
