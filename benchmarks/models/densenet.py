"""torchvision's densenet161 with random weights, on the CPU: inferwire's side of seed 001's
TorchServe tables (benchmarks/torchserve_densenet.py). The same work as the TorchServe
handler benchmarks/peers/torchserve/handlers/densenet161.py: the same network and seed
(no download), each JPEG decoded with Pillow, resized to 256, center-cropped to 224 and
normalized as TorchServe's image_classifier does, the batch run as one tensor in
``torch.inference_mode``, the top 5 classes and their softmax scores answered.

    inferwire serve benchmarks/models/densenet.py:Densenet161 --workers 2 \\
        --max-batch-size 8 --max-batch-delay 0.01

Inputs:
- V2 (REST JSON, REST binary extension, gRPC): one BYTES input of shape ``[1]`` (or
  ``[n]``) holding JPEGs; with ``"content_type": "base64"`` in its parameters the JPEGs are
  sent as base64 text and inferwire decodes them. These requests are joined by dynamic
  batching; the answer is two outputs, ``classes`` (INT64 ``[n, 5]``) and ``scores``
  (FP32 ``[n, 5]``).
- Seldon: a raw JPEG body (``Content-Type: image/jpeg``, or gRPC ``binData``), or
  ``{"image": "<base64>"}`` (JSON, or gRPC ``jsonData``), as seed 001 sends them; each runs
  alone (inferwire batches arrays, not bytes or JSON data) and gets
  ``{"classes": [...], "scores": [...]}``.

Torch threads per worker: ``DENSENET_THREADS`` (default 1: one worker per core, as
TorchServe's performance guide advises and its side of the benchmark runs).
"""

from __future__ import annotations

import base64
import binascii
import io
import os
from typing import Any

import numpy as np

SEED = 0
TOPK = 5


class Densenet161:
    def __init__(self) -> None:
        self.net: Any = None

    def load(self) -> None:
        import torch
        import torchvision
        from torchvision import transforms

        torch.set_num_threads(int(os.environ.get("DENSENET_THREADS", "1")))
        torch.manual_seed(SEED)
        self.net = torchvision.models.densenet161(weights=None).eval()
        self.prepare = transforms.Compose(
            [
                transforms.Resize(256),
                transforms.CenterCrop(224),
                transforms.ToTensor(),
                transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
            ]
        )

    def image(self, data: Any) -> Any:
        from inferwire import BadRequest
        from PIL import Image, UnidentifiedImageError

        if not isinstance(data, (bytes, bytearray)):
            raise BadRequest(f"expected a JPEG, got {type(data).__name__}")
        try:
            return self.prepare(Image.open(io.BytesIO(data)).convert("RGB"))
        except (UnidentifiedImageError, OSError) as e:
            raise BadRequest(f"not an image: {e}") from None

    def top5(self, images: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        import torch

        batch = torch.stack([self.image(b) for b in images])
        with torch.inference_mode():
            scores, classes = torch.softmax(self.net(batch), dim=1).topk(TOPK, dim=1)
        return classes.numpy().astype(np.int64), scores.numpy()

    def predict(self, X: Any, features_names: Any = None, **kwargs: Any) -> Any:
        from inferwire import BadRequest

        if isinstance(X, (bytes, bytearray)):  # Seldon: the raw body, or gRPC binData
            classes, scores = self.top5([X])
            return {"classes": classes[0].tolist(), "scores": scores[0].tolist()}
        if isinstance(X, dict):  # Seldon jsonData: {"image": "<base64>"}
            if "image" not in X:
                raise BadRequest('expected {"image": "<base64 JPEG>"}')
            try:
                image = base64.b64decode(X["image"], validate=True)
            except (binascii.Error, TypeError) as e:
                raise BadRequest(f'"image" is not base64: {e}') from None
            classes, scores = self.top5([image])
            return {"classes": classes[0].tolist(), "scores": scores[0].tolist()}
        # V2 BYTES: an object array of bytes, or a list of decoded bytes (content_type base64)
        images = list(np.asarray(X, dtype=object).reshape(-1))
        classes, scores = self.top5(images)
        return {"classes": classes, "scores": scores}
