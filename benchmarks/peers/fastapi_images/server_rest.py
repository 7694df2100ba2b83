"""The REST server of seed 001's image benchmark: FastAPI on uvicorn, one worker.

    .tools/peers/fastapi-images/bin/python benchmarks/peers/fastapi_images/server_rest.py \\
        [--port 8000]

Listens on 127.0.0.1 (port from ``--port``, else the ``PORT`` environment variable, else
8000), no access log, uvloop and httptools. Every route answers the same small
``BasicResponse`` (``{"prediction1": [0.1, 0.2, 0.3], "prediction2": {"a": 1}}``):

- ``POST /basic``: JSON ``BasicRequest`` (``field1``, ``field2`` strings, ``field3`` int,
  ``field4`` string-to-int map), validated by pydantic.
- ``POST /base64``: JSON ``{"image": "<base64>"}``; the server decodes the base64 to bytes
  (400 when it is not base64), as an image server must before it can read the image.
- ``POST /binary``: the encoded image as the raw body (``application/octet-stream``,
  ``image/jpeg`` or any other type); 400 when empty.
- ``POST /upload``: the encoded image as a multipart form file (field ``file``), the
  usual FastAPI way (``UploadFile``) to receive a file; 400 when empty.

No model work: the image itself is never decoded.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import os

import uvicorn
from fastapi import FastAPI, HTTPException, Request, UploadFile
from pydantic import BaseModel


class BasicRequest(BaseModel):
    field1: str
    field2: str
    field3: int
    field4: dict[str, int]


class ImageBase64Request(BaseModel):
    image: str


class BasicResponse(BaseModel):
    prediction1: list[float]
    prediction2: dict[str, int]


ANSWER = BasicResponse(prediction1=[0.1, 0.2, 0.3], prediction2={"a": 1})

app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)


@app.post("/basic")
async def basic(request: BasicRequest) -> BasicResponse:
    return ANSWER


@app.post("/base64")
async def image_base64(request: ImageBase64Request) -> BasicResponse:
    try:
        image = base64.b64decode(request.image, validate=True)
    except binascii.Error as e:
        raise HTTPException(status_code=400, detail=f"image is not base64: {e}") from e
    if not image:
        raise HTTPException(status_code=400, detail="empty image")
    return ANSWER


@app.post("/binary")
async def image_binary(request: Request) -> BasicResponse:
    image = await request.body()
    if not image:
        raise HTTPException(status_code=400, detail="empty body: send the image's bytes")
    return ANSWER


@app.post("/upload")
async def image_upload(file: UploadFile) -> BasicResponse:
    image = await file.read()
    if not image:
        raise HTTPException(status_code=400, detail="empty file")
    return ANSWER


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    args = p.parse_args()
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        workers=1,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
