"""A PyTorch model: a small network created and trained here on the CPU, its weights
saved with ``torch.save``, served by ``model.py:TorchClassifier`` (weights path as a
Seldon-style constructor parameter), called over REST and gRPC with numpy arrays.

    python examples/pytorch/demo.py
"""

import json
import tempfile
from pathlib import Path

import inferwire
import numpy as np
import torch
from model import CLASSES, Net
from sklearn.datasets import load_iris

torch.manual_seed(0)
iris = load_iris()
X = torch.tensor(iris.data, dtype=torch.float32)
y = torch.tensor(iris.target)
net = Net()
optimizer = torch.optim.Adam(net.parameters(), lr=0.05)
for _ in range(200):
    optimizer.zero_grad()
    loss = torch.nn.functional.nll_loss(torch.log(net(X)), y)
    loss.backward()
    optimizer.step()
print(f"trained: loss {loss.item():.3f}")
weights = Path(tempfile.mkdtemp()) / "net.pt"
torch.save(net.state_dict(), weights)

model = f"{Path(__file__).parent / 'model.py'}:TorchClassifier"
params = json.dumps([{"name": "weights", "value": str(weights), "type": "STRING"}])
rows = iris.data[[0, 60, 120]]
with inferwire.local(model, "--parameters", params) as server:
    with inferwire.Client(server.url) as c:
        rest = c.predict(rows)
        print("REST:", rest.round(3).tolist())
        print("classes:", [CLASSES[i] for i in rest.argmax(axis=1)])
    with inferwire.Client(server.url, grpc=server.grpc) as c:
        grpc = c.predict(rows, encoding="tensor")
        print("gRPC:", grpc.round(3).tolist())
with torch.inference_mode():
    local = net.eval()(torch.tensor(rows, dtype=torch.float32)).numpy()
print(
    "same as the network in this process:",
    np.allclose(rest, local, atol=1e-6) and np.allclose(grpc, local, atol=1e-6),
)
