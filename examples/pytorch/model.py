"""A small PyTorch model behind a Seldon-style class: the network is defined here, its
weights come from a file given as a constructor parameter, and inference runs on the CPU
in ``torch.inference_mode`` with one thread per worker (scale with ``--workers``)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

FEATURES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
CLASSES = ["setosa", "versicolor", "virginica"]


class Net(nn.Module):
    """Four features in, three class probabilities out."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.layers(x), dim=-1)


class TorchClassifier:
    """``inferwire serve model.py:TorchClassifier --parameters '[{"name": "weights",
    "value": "net.pt", "type": "STRING"}]'``"""

    def __init__(self, weights: str = "net.pt") -> None:
        self.weights = weights
        self.net: Net | None = None

    def load(self) -> None:
        # One intra-op thread: the server's workers, not torch, spread work over cores.
        torch.set_num_threads(1)
        net = Net()
        net.load_state_dict(torch.load(self.weights, weights_only=True))
        self.net = net.eval()

    def predict(self, X: np.ndarray, names: list[str], meta: dict | None = None) -> np.ndarray:
        assert self.net is not None, "load() was not called"
        x = torch.as_tensor(np.asarray(X, dtype=np.float32))
        with torch.inference_mode():
            return self.net(x).numpy()

    def class_names(self) -> list[str]:
        return CLASSES
