"""TLS on both ports: a self-signed certificate made with ``openssl``, a server started
with ``--tls-cert`` and ``--tls-key``, and calls over HTTPS and gRPC with TLS, trusting
that certificate.

    python examples/tls/demo.py
"""

import subprocess
import tempfile
from pathlib import Path

import inferwire
import numpy as np

folder = Path(tempfile.mkdtemp())
cert, key = folder / "cert.pem", folder / "key.pem"
subprocess.run(
    ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
     "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
     "-addext", "subjectAltName=IP:127.0.0.1"],
    check=True, capture_output=True,
)  # fmt: skip

with inferwire.local("echo", "--tls-cert", cert, "--tls-key", key, ca=cert) as server:
    print("serving on", server.url)
    with inferwire.Client(server.url, verify=str(cert), grpc=server.grpc) as c:
        print("HTTPS predict:", c.predict(np.array([[1.0, 2.0]]), encoding="npy").tolist())
        print(
            "gRPC with TLS infer:",
            c.infer({"x": np.arange(3.0)}, model="Echo")["output-0"].tolist(),
        )
