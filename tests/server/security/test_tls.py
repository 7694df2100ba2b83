"""TLS on both ports (rustls): REST over HTTP/1.1 and HTTP/2, gRPC (Seldon and V2) with
grpcio and inferwire.Client, mutual TLS that refuses clients without a certificate, and
clear start errors for bad files."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import numpy as np
import pytest
import trustme
from conftest import TESTS, free_port
from google.protobuf import json_format

BODY = {"data": {"ndarray": [[1.0, 2.0]]}}


def trust(ca: Path, cert: Path | None = None) -> ssl.SSLContext:
    """Trusts ``ca``; presents ``cert`` (a PEM with key and chain) when given."""
    ctx = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        ctx.load_cert_chain(str(cert))
    return ctx


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("client@example.com")
    paths = {name: d / name for name in ("ca.pem", "cert.pem", "key.pem", "client.pem")}
    ca.cert_pem.write_to_path(str(paths["ca.pem"]))
    server.private_key_pem.write_to_path(str(paths["key.pem"]))
    with paths["cert.pem"].open("wb") as f:
        for blob in server.cert_chain_pems:
            f.write(blob.bytes())
    client.private_key_and_cert_chain_pem.write_to_path(str(paths["client.pem"]))
    return paths


class TlsServer:
    def __init__(self, *args: str) -> None:
        self.http, self.grpc = free_port(), free_port()
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"inferwire-tls-{self.http}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "inferwire", "serve", "models:Echo", "--host", "127.0.0.1",
             "--http-port", str(self.http), "--grpc-port", str(self.grpc), *args],
            cwd=TESTS, stdout=self.log_path.open("w"), stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.url = f"https://127.0.0.1:{self.http}"
        self.target = f"127.0.0.1:{self.grpc}"

    def wait(self, ca: Path, cert: Path | None = None) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(self.log_path.read_text())
            try:
                if httpx.get(self.url + "/ready", verify=trust(ca, cert)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"not ready:\n{self.log_path.read_text()}")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


@pytest.fixture(scope="module")
def server(pki: dict[str, Path]) -> Iterator[TlsServer]:
    s = TlsServer("--tls-cert", str(pki["cert.pem"]), "--tls-key", str(pki["key.pem"]))
    s.wait(pki["ca.pem"])
    yield s
    s.stop()


def test_rest_over_tls_http1_and_http2(server: TlsServer, pki: dict[str, Path]) -> None:
    for http2 in (False, True):
        with httpx.Client(verify=trust(pki["ca.pem"]), http2=http2) as c:
            r = c.post(server.url + "/api/v1.0/predictions", json=BODY)
            assert r.status_code == 200 and r.json()["data"]["ndarray"] == [[1.0, 2.0]]
            assert r.http_version == ("HTTP/2" if http2 else "HTTP/1.1")
    # Plaintext to a TLS port is not served, and an unknown CA is refused by the client.
    with pytest.raises(httpx.TransportError):
        httpx.post(f"http://127.0.0.1:{server.http}/api/v1.0/predictions", json=BODY, timeout=3)
    with pytest.raises(httpx.ConnectError):
        httpx.post(server.url + "/api/v1.0/predictions", json=BODY)
    assert "REST  https://127.0.0.1" in server.log_path.read_text()


def test_grpc_over_tls(server: TlsServer, pki: dict[str, Path], pb: Any) -> None:
    creds = grpc.ssl_channel_credentials(root_certificates=pki["ca.pem"].read_bytes())
    with grpc.secure_channel(server.target, creds) as ch:
        reply = pb.grpc.SeldonStub(ch).Predict(
            json_format.ParseDict(BODY, pb.msgs.SeldonMessage()), timeout=10
        )
    assert json_format.MessageToDict(reply)["data"]["ndarray"] == [[1.0, 2.0]]
    import tritonclient.grpc as triton

    client = triton.InferenceServerClient(
        server.target, ssl=True, root_certificates=str(pki["ca.pem"])
    )
    i = triton.InferInput("x", [2], "FP32")
    i.set_data_from_numpy(np.array([1, 2], dtype=np.float32))
    assert client.infer("Echo", [i]).as_numpy("output-0").tolist() == [1.0, 2.0]
    # inferwire.Client: TLS on both transports from an https URL and a CA file.
    import inferwire

    with inferwire.Client(server.url, verify=str(pki["ca.pem"]), grpc=server.target) as c:
        np.testing.assert_array_equal(c.predict(np.ones(2), encoding="npy"), np.ones(2))
        assert c.infer({"x": np.ones(2)}, model="Echo")["output-0"].tolist() == [1.0, 1.0]
        assert c.metadata()["name"] == "Echo" or c.ready()


def test_mutual_tls_needs_a_client_certificate(pki: dict[str, Path]) -> None:
    s = TlsServer("--tls-cert", str(pki["cert.pem"]), "--tls-key", str(pki["key.pem"]),
                  "--tls-client-ca", str(pki["ca.pem"]))  # fmt: skip
    try:
        s.wait(pki["ca.pem"], cert=pki["client.pem"])
        with httpx.Client(verify=trust(pki["ca.pem"], pki["client.pem"])) as c:
            assert c.post(s.url + "/api/v1.0/predictions", json=BODY).status_code == 200
        with pytest.raises(httpx.TransportError):
            httpx.post(s.url + "/api/v1.0/predictions", json=BODY, verify=trust(pki["ca.pem"]))
    finally:
        s.stop()


def test_bad_tls_files_are_start_errors(pki: dict[str, Path], tmp_path: Path) -> None:
    def start(*args: str) -> str:
        r = subprocess.run(
            [sys.executable, "-m", "inferwire", "serve", "models:Echo", *args],
            cwd=TESTS, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert r.returncode != 0, r.stderr  # one line naming the file, no traceback
        assert "Traceback" not in r.stderr, r.stderr
        return r.stderr

    assert "tls_cert and tls_key go together" in start("--tls-cert", str(pki["cert.pem"]))
    empty = tmp_path / "empty.pem"
    empty.write_text("")
    err = start("--tls-cert", str(empty), "--tls-key", str(pki["key.pem"]))
    assert "no certificate in it" in err
    err = start("--tls-cert", str(pki["ca.pem"]), "--tls-key", str(pki["key.pem"]))
    assert "the key does not match the certificate" in err


def test_bench_attacks_tls_targets(server: TlsServer, pki: dict[str, Path]) -> None:
    """The load generator over HTTPS (HTTP/1.1 and h2) and gRPC over TLS, trusting the CA
    from --cacert; an unknown CA stops the run with the certificate error."""

    def attack(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "inferwire", "bench", "attack", "-n", "50", "--format",
             "json", "-c", "2", *args],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    body = '{"data":{"ndarray":[[1,2]]}}'
    predict = server.url + "/api/v1.0/predictions"
    for extra in ([], ["--http2"]):
        r = attack(predict, "-d", body, "--cacert", str(pki["ca.pem"]), *extra)
        assert r.returncode == 0, r.stderr
        rep = json.loads(r.stdout)
        assert rep["requests"] == 50 and rep["status_codes"] == {"200": 50}, rep
        assert rep["bytes_in"] > 50 * len(body) / 2
    r = attack(f"grpcs://{server.target}", "--call", "seldon.protos.Seldon/Predict",
               "--seldon-json", "-d", body, "--cacert", str(pki["ca.pem"]))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status_codes"] == {"OK": 50}
    r = attack(predict, "-d", body, "--insecure")
    assert r.returncode == 0 and json.loads(r.stdout)["status_codes"] == {"200": 50}, r.stderr
    for extra in ([], ["--http2"]):
        r = attack(predict, "-d", body, *extra)  # the system's CAs do not know trustme's
        assert r.returncode != 0 and "TLS handshake with 127.0.0.1" in r.stderr, r.stderr
        assert "UnknownIssuer" in r.stderr, r.stderr


def test_bench_presents_a_client_certificate(pki: dict[str, Path]) -> None:
    s = TlsServer("--tls-cert", str(pki["cert.pem"]), "--tls-key", str(pki["key.pem"]),
                  "--tls-client-ca", str(pki["ca.pem"]))  # fmt: skip
    try:
        s.wait(pki["ca.pem"], cert=pki["client.pem"])
        client = str(pki["client.pem"])  # the key and the chain in one file
        r = subprocess.run(
            [sys.executable, "-m", "inferwire", "bench", "attack", "-n", "20", "--format",
             "json", "--cacert", str(pki["ca.pem"]), "--cert", client, "--key", client,
             s.url + "/ready"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["status_codes"] == {"200": 20}
    finally:
        s.stop()
