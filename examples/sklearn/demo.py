"""A scikit-learn model served natively: trained here, saved with joblib, served with
``inferwire serve model.joblib`` (scored in Rust, no Python on the request path), called
with rows and with data-frame columns.

    python examples/sklearn/demo.py
"""

import tempfile
from pathlib import Path

import inferwire
import joblib
import numpy as np
import pandas as pd
from sklearn.datasets import load_iris
from sklearn.ensemble import RandomForestClassifier

iris = load_iris(as_frame=True)
X = iris.data.rename(columns=lambda c: c.replace(" (cm)", "").replace(" ", "_"))
model = RandomForestClassifier(n_estimators=20, random_state=0).fit(
    X, iris.target_names[iris.target]
)
path = Path(tempfile.mkdtemp()) / "iris.joblib"
joblib.dump(model, path)

with inferwire.local(path) as server, inferwire.Client(server.url) as client:
    print(next(line for line in server.log().splitlines() if "runtime" in line).split(": ", 1)[1])
    rows = X.iloc[:2].to_numpy()
    print("rows:", client.predict(rows).round(3).tolist())
    columns = {c: X[c].iloc[:2].tolist() for c in X.columns}
    print("columns:", client.predict(columns))
    same = np.allclose(
        client.predict(rows), model.predict_proba(pd.DataFrame(rows, columns=X.columns))
    )
    print("same as predict_proba:", same)
