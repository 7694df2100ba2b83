"""The quick start's model: a Seldon Python wrapper class (``model.py``), unchanged,
served by ``inferwire serve model.py:IrisLikeClassifier`` and called three ways: a
SeldonMessage over REST, the same rows over gRPC (``seldon.protos.Seldon/Predict``, with
stubs generated from the repository's protos, as any Seldon client does), and a V2
inference. A request with the wrong number of features gets the model's own error.

    python examples/seldon_model/demo.py
"""

import subprocess
import sys
from pathlib import Path

import inferwire
import numpy as np

HERE = Path(__file__).resolve().parent
rows = np.array([[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]])
names = ["sepal_length", "sepal_width", "petal_length", "petal_width"]

with inferwire.local(HERE / "model.py:IrisLikeClassifier") as server:
    with inferwire.Client(server.url) as client:
        reply = client.predict_raw({"data": {"names": names, "ndarray": rows.tolist()}})
        print("REST classes:", reply["data"]["names"])
        print("REST probabilities:", np.round(reply["data"]["ndarray"], 3).tolist())
        print("REST tags:", reply["meta"]["tags"])
        v2 = client.infer({"x": rows}, model="IrisLikeClassifier")
        print("V2 output:", {k: np.round(v, 3).tolist() for k, v in v2.items()})
        try:
            client.predict(np.array([[1.0, 2.0, 3.0]]))
        except inferwire.InferwireError as e:
            print(f"3 features: {e.status} {e.message[:40]}...")
    grpc = subprocess.run(
        [sys.executable, HERE / "grpc_call.py", server.grpc],
        capture_output=True,
        text=True,
        check=True,
    )
    print("gRPC reply:", grpc.stdout.strip())
