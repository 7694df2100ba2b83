"""A model repository: two models served together, each on its own V2 routes; the first
also answers the Seldon routes. The repository API lists them.

    python examples/repository/demo.py
"""

from pathlib import Path

import httpx
import inferwire
import numpy as np

models = Path(__file__).parent / "models"
# Without auth the repository API is off unless allowed (fine on this local demo server;
# see docs/reference/auth.md for a server others can reach).
with inferwire.local("--model-repository", models, "--allow-unauthenticated-repository") as server:
    with inferwire.Client(server.url) as c:
        print(
            "iris v2:",
            c.infer({"x": np.array([[5.1, 3.5, 1.4, 0.2]])}, model="iris", version="2")["output-0"]
            .round(3)
            .tolist(),
        )
        print(
            "doubler:", c.infer({"x": np.array([1.5, 2.0])}, model="doubler")["output-0"].tolist()
        )
        print(
            "Seldon route (the default model, doubler):",
            c.predict(np.array([[6.0, 3.0, 4.0, 1.0]])).round(3).tolist(),
        )
    index = httpx.post(server.url + "/v2/repository/index", json={}).json()
    print("index:", sorted((m["name"], m["state"]) for m in index))
