"""An XGBoost model saved in its own JSON format, served natively and called over V2
(REST and gRPC).

    python examples/xgboost/demo.py
"""

import tempfile
from pathlib import Path

import inferwire
import numpy as np
import xgboost
from sklearn.datasets import make_classification

X, y = make_classification(n_samples=500, n_features=5, random_state=0)
model = xgboost.XGBClassifier(n_estimators=30, max_depth=4).fit(X, y)
path = Path(tempfile.mkdtemp()) / "booster.json"
model.save_model(path)

with inferwire.local(path, "--model-name", "booster") as server:
    with (
        inferwire.Client(server.url) as rest,
        inferwire.Client(server.url, grpc=server.grpc) as grpc,
    ):
        for name, client in (("REST", rest), ("gRPC", grpc)):
            out = client.infer({"x": X[:3]}, model="booster")
            print(name, "predict_proba:", out["predict_proba"].round(4).tolist())
            print(name, "predict:", out["predict"].tolist())
        same = np.allclose(
            rest.infer({"x": X}, model="booster")["predict_proba"],
            model.predict_proba(X),
            atol=1e-6,
        )
        print("same as predict_proba:", same)
