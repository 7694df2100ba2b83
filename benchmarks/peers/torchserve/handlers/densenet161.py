"""TorchServe handler ``densenet161``: torchvision's densenet161 with random weights (a
fixed seed, no download), on the CPU, in eval mode under ``torch.inference_mode``. Input:
a JPEG, as the raw body (REST), base64 in JSON ``{"image": ...}`` (REST), or the bytes of
the gRPC input "data". Each image is decoded with Pillow and prepared as TorchServe's own
``image_classifier`` handler does (resize 256, center crop 224, ImageNet normalization);
the batch TorchServe gathered runs as one tensor; each request gets its top 5 as JSON
``{"classes": [...], "scores": [...]}`` (softmax scores). The same work as
benchmarks/models/densenet.py, inferwire's side of the benchmark.

Torch threads: ``DENSENET_THREADS`` (serve.py sets it; 1 by default, TorchServe's
performance guide's advice with one worker per core)."""

from __future__ import annotations

import base64
import binascii
import io
import json
import os
from typing import Any

import torch
import torchvision
from PIL import Image, UnidentifiedImageError
from torchvision import transforms

SEED = 0
TOPK = 5


class Densenet161:
    def initialize(self, context: Any) -> None:
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
        self.initialized = True

    def image(self, body: Any) -> torch.Tensor:
        if isinstance(body, dict):
            if "image" not in body:
                raise ValueError('a JSON body must be {"image": "<base64 JPEG>"}')
            try:
                body = base64.b64decode(body["image"], validate=True)
            except (binascii.Error, TypeError) as e:
                raise ValueError(f'"image" is not base64: {e}') from None
        if not isinstance(body, (bytes, bytearray)):
            raise ValueError(f"expected an image, got {type(body).__name__}")
        try:
            img = Image.open(io.BytesIO(body)).convert("RGB")
        except (UnidentifiedImageError, OSError) as e:
            raise ValueError(f"not an image: {e}") from None
        return self.prepare(img)

    def handle(self, data: list[dict[str, Any]], context: Any) -> list[Any]:
        batch = torch.stack([self.image(row.get("data", row.get("body"))) for row in data])
        with torch.inference_mode():
            scores, classes = torch.softmax(self.net(batch), dim=1).topk(TOPK, dim=1)
        out: list[Any] = []
        for i in range(len(data)):
            context.set_response_content_type(i, "application/json")
            answer = {"classes": classes[i].tolist(), "scores": scores[i].tolist()}
            out.append(json.dumps(answer).encode())
        return out
