"""Models that ship with inferwire, for smoke tests and benchmarks: ``inferwire serve
noop``, ``echo`` or ``image-stats``."""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

import numpy as np

from .errors import BadRequest
from .model import Model


class Noop(Model):
    """Answers ``[1]`` whatever it is sent: the cost of the server alone."""

    def predict(self, X: Any, features_names: list[str] | None = None, **kwargs: Any) -> Any:
        return np.ones(1, dtype=np.int64)


class Echo(Model):
    """Answers its input unchanged, in the encoding it came in (arrays keep their dtype
    and shape; bytes, strings and JSON come back as they were)."""

    def predict(self, X: Any, features_names: list[str] | None = None, **kwargs: Any) -> Any:
        return X


# 16 megapixels (4096 x 4096): decoded RGB with numpy's copy, about 100 MB at the most.
MAX_PIXELS = 16 * 1024 * 1024


class ImageStats(Model):
    """Decodes a JPEG or PNG (bytes, a base64 string, or ``{"image": base64}``) with
    Pillow and answers its shape, mean and format: a realistic image path without a
    neural network. An array input (height × width × channels) is measured as it is.

    An image of more than ``max_pixels`` pixels (a constructor parameter, default 16 M)
    is refused with a 400 before it is decoded: a few hundred kilobytes of PNG can
    declare 9000 x 9000 pixels, which decode to gigabytes."""

    def __init__(self, max_pixels: int = MAX_PIXELS) -> None:
        if max_pixels < 1:
            raise ValueError(f"max_pixels: must be at least 1, got {max_pixels}")
        self.max_pixels = max_pixels

    def load(self) -> None:
        try:
            from PIL import Image
        except ImportError as e:
            raise RuntimeError("image-stats needs Pillow: pip install 'inferwire[images]'") from e
        self._image = Image

    def predict(self, X: Any, features_names: list[str] | None = None, **kwargs: Any) -> Any:
        if isinstance(X, dict):
            if "image" not in X:
                raise BadRequest('a JSON request needs the image as {"image": "<base64>"}')
            X = X["image"]
        if isinstance(X, str):
            try:
                X = base64.b64decode(X, validate=True)
            except (binascii.Error, ValueError) as e:
                raise BadRequest(f"image: not valid base64 ({e})") from e
        if isinstance(X, (bytes, bytearray, memoryview)):
            try:
                with self._image.open(io.BytesIO(X)) as img:
                    # open() reads the header only: the size is known before decoding.
                    width, height = img.size
                    if width * height > self.max_pixels:
                        raise BadRequest(
                            f"image: {width} x {height} is {width * height} pixels, more "
                            f"than the limit of {self.max_pixels} (the max_pixels parameter)"
                        )
                    fmt = img.format
                    arr = np.asarray(img)
            except BadRequest:
                raise
            except Exception as e:
                raise BadRequest(f"cannot decode the image: {e}") from e
        else:
            arr, fmt = np.asarray(X), "array"
        return {
            "shape": list(arr.shape),
            "mean": float(arr.mean()) if arr.size else 0.0,
            "format": fmt,
        }


BUILTIN: dict[str, type] = {"noop": Noop, "echo": Echo, "image-stats": ImageStats}
