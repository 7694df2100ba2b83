"""An image model: the built-in ``image-stats`` (decodes a JPEG with Pillow), called with
the image's bytes over REST and gRPC, as a multipart upload, and as base64 JSON.

    python examples/image_model/demo.py
"""

import base64
import io

import httpx
import inferwire
import numpy as np
from PIL import Image

pixels = np.random.default_rng(0).integers(0, 256, size=(48, 64, 3), dtype=np.uint8)
buf = io.BytesIO()
Image.fromarray(pixels).save(buf, format="JPEG")
jpeg = buf.getvalue()

with inferwire.local("image-stats") as server:
    with inferwire.Client(server.url) as c:
        print("REST bytes:", c.predict(jpeg, content_type="image/jpeg"))
    with inferwire.Client(server.url, grpc=server.grpc) as c:
        print("gRPC binData:", c.predict(jpeg, content_type="image/jpeg"))
    upload = httpx.post(server.url + "/predict", files={"file": ("cat.jpg", jpeg, "image/jpeg")})
    print("multipart:", upload.json())
    b64 = httpx.post(server.url + "/predict", json={"image": base64.b64encode(jpeg).decode()})
    print("base64 JSON:", b64.json())
