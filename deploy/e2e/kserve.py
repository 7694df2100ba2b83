"""KServe's controller on the e2e cluster, in RawDeployment mode (no Knative, no Istio).

    .venv/bin/python deploy/e2e/kserve.py up      install and start it
    .venv/bin/python deploy/e2e/kserve.py down    stop it and remove its webhooks (the CRDs stay)

Everything comes from KServe's own Go module (github.com/kserve/kserve, the version
deploy/e2e/env.sh pins; build.sh builds its manager): its CustomResourceDefinitions, its
`inferenceservice-config` ConfigMap and its webhook configurations. The manager runs
beside the cluster, as a process on this machine with the admin kubeconfig, rather than
as a pod: there is no registry here to pull KServe's image from. So that the API server
reaches its webhooks, they name it by URL (this machine's address) instead of by Service,
with a certificate made here. What changes in KServe's configuration, and why:
  deploy.defaultDeploymentMode  RawDeployment: plain Deployments and Services
  ingress.disableIngressCreation  true: there is no ingress controller; callers use the
                                predictor's Service
  storageInitializer.enableDirectPvcVolumeMount  true: a pvc:// storageUri is mounted
                                straight into the pod; KServe's storage-initializer image
                                cannot be pulled here
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

E2E = Path(__file__).resolve().parent
# What env.sh decides (the cluster's folder, the pinned versions), read from it.
_NAMES = ["CLUSTER_DIR", "KSERVE_VERSION"]
ENV = dict(
    zip(
        _NAMES,
        subprocess.run(
            [
                "bash",
                "-c",
                f"source {E2E}/env.sh && printf '%s\\n' " + " ".join(f'"${n}"' for n in _NAMES),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines(),
        strict=True,
    )
)
CLUSTER_DIR = Path(ENV["CLUSTER_DIR"])
STATE = CLUSTER_DIR / "state"
BIN = CLUSTER_DIR / "bin"
KUBECONFIG = STATE / "admin.kubeconfig"
WORK = STATE / "kserve"
PIDFILE = STATE / "pids" / "kserve-manager"
LOG = CLUSTER_DIR / "logs" / "kserve-manager.log"
WEBHOOK_PORT = 9443
NAMESPACE = "kserve"
# The webhooks inferwire's InferenceServices and ServingRuntimes pass through.
WEBHOOKS = {
    "inferenceservice.serving.kserve.io",
    "servingruntime.serving.kserve.io",
    "clusterservingruntime.serving.kserve.io",
}


def module_dir() -> Path:
    version = ENV["KSERVE_VERSION"]
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"github.com/kserve/kserve@{version}"],
        capture_output=True,
        text=True,
        check=True,
        cwd="/tmp",
        env={**os.environ, "GOFLAGS": "-mod=mod"},
    ).stdout
    return Path(json.loads(out)["Dir"])


def kubectl(*args: str, stdin: str | None = None, check: bool = True) -> str:
    r = subprocess.run(
        [str(BIN / "kubectl"), f"--kubeconfig={KUBECONFIG}", *args],
        input=stdin,
        capture_output=True,
        text=True,
    )
    if check and r.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)}: {r.stderr}")
    return r.stdout


def host_ip() -> str:
    server = yaml.safe_load(KUBECONFIG.read_text())["clusters"][0]["cluster"]["server"]
    return str(server.split("//")[1].rsplit(":", 1)[0])


def certificates(ip: str) -> Path:
    """A CA and a serving certificate for this machine's address, where
    controller-runtime looks for them (TMPDIR/k8s-webhook-server/serving-certs)."""
    certs = WORK / "tmp" / "k8s-webhook-server" / "serving-certs"
    if (certs / "tls.crt").exists():
        return certs
    certs.mkdir(parents=True, exist_ok=True)

    def ssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=certs)

    ssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "3650",
        "-subj",
        "/CN=kserve-webhook-ca",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
    )
    ssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=kserve-webhook",
        "-keyout",
        "tls.key",
        "-out",
        "tls.csr",
    )
    (certs / "san.ext").write_text(f"subjectAltName=IP:{ip}\n")
    ssl(
        "x509",
        "-req",
        "-in",
        "tls.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "3650",
        "-extfile",
        "san.ext",
        "-out",
        "tls.crt",
    )
    return certs


def configmap(kserve: Path) -> str:
    doc = yaml.safe_load((kserve / "config" / "configmap" / "inferenceservice.yaml").read_text())
    data = doc["data"]

    def edit(key: str, **changes: Any) -> None:
        value = json.loads(data[key])
        for path, v in changes.items():
            *parents, last = path.split("__")
            target = value
            for p in parents:
                target = target[p]
            target[last] = v
        data[key] = json.dumps(value, indent=2)

    edit("deploy", defaultDeploymentMode="RawDeployment")
    edit("ingress", disableIngressCreation=True)
    edit("storageInitializer", enableDirectPvcVolumeMount=True)
    return yaml.safe_dump(doc)


def webhooks(kserve: Path, ip: str, ca: bytes) -> str:
    import base64

    docs = [
        d
        for d in yaml.safe_load_all((kserve / "config" / "webhook" / "manifests.yaml").read_text())
        if d and d["metadata"]["name"] in WEBHOOKS
    ]
    bundle = base64.b64encode(ca).decode()
    for d in docs:
        d["metadata"].pop("creationTimestamp", None)
        for w in d["webhooks"]:
            path = w["clientConfig"]["service"]["path"]
            w["clientConfig"] = {"url": f"https://{ip}:{WEBHOOK_PORT}{path}", "caBundle": bundle}
            # KServe's namespaceSelector keeps its own namespace out; ours has no label.
            w["admissionReviewVersions"] = ["v1", "v1beta1"]
    return yaml.safe_dump_all(docs)


def running() -> bool:
    try:
        os.kill(int(PIDFILE.read_text()), 0)
        return True
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return False


# The manager's own ports on this machine; the variables move them off ports a local
# server already holds (its health port must answer for `up` to finish).
METRICS_ADDR = "127.0.0.1:" + os.environ.get("INFERWIRE_E2E_KSERVE_METRICS_PORT", "18080")
HEALTH_ADDR = "127.0.0.1:" + os.environ.get("INFERWIRE_E2E_KSERVE_HEALTH_PORT", "18081")


def up() -> None:
    subprocess.run(["bash", str(E2E / "build.sh"), "kserve"], check=True)
    kserve = module_dir()
    ip = host_ip()
    print("==> KServe's CustomResourceDefinitions", file=sys.stderr)
    crds = sorted((kserve / "config" / "crd" / "full").glob("serving.kserve.io_*.yaml"))
    kubectl("apply", "--server-side", "--force-conflicts", *(f"--filename={c}" for c in crds))
    kubectl("create", "namespace", NAMESPACE, check=False)
    kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=configmap(kserve))
    certs = certificates(ip)
    if not running():
        print("==> starting KServe's manager", file=sys.stderr)
        WORK.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "KUBECONFIG": str(KUBECONFIG),
            "POD_NAMESPACE": NAMESPACE,
            "TMPDIR": str(WORK / "tmp"),
        }
        with open(LOG, "ab") as log:
            proc = subprocess.Popen(
                [
                    str(BIN / "kserve-manager"),
                    f"--webhook-port={WEBHOOK_PORT}",
                    f"--metrics-addr={METRICS_ADDR}",
                    f"--health-probe-addr={HEALTH_ADDR}",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        PIDFILE.write_text(str(proc.pid))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = subprocess.run(["curl", "-sf", f"http://{HEALTH_ADDR}/readyz"], capture_output=True)
        if r.returncode == 0:
            break
        if not running():
            raise SystemExit(f"KServe's manager exited; see {LOG}")
        time.sleep(1)
    else:
        raise SystemExit(f"KServe's manager is not ready; see {LOG}")
    kubectl("apply", "-f", "-", stdin=webhooks(kserve, ip, (certs / "ca.crt").read_bytes()))
    print(f"==> KServe {ENV['KSERVE_VERSION']} is up (RawDeployment); log: {LOG}", file=sys.stderr)


def down() -> None:
    kubectl(
        "delete",
        "mutatingwebhookconfiguration,validatingwebhookconfiguration",
        *sorted(WEBHOOKS),
        "--ignore-not-found",
        check=False,
    )
    if running():
        os.killpg(int(PIDFILE.read_text()), signal.SIGTERM)
    PIDFILE.unlink(missing_ok=True)


if __name__ == "__main__":
    {"up": up, "down": down}[sys.argv[1] if len(sys.argv) > 1 else "up"]()
