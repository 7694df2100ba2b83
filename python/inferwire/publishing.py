"""Publishing trained models to a running inferwire server (``inferwire publish``,
``inferwire.publish``): the server validates and converts the model, stores it in its
model repository, and serves it on ``/api/NAME/VERSION`` and V2. Uses only the standard
library."""

from __future__ import annotations

import argparse
import io
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from .client import server_message
from .errors import ClientError, InferwireError, PublishError, UnreachableError  # noqa: F401


def _call(
    server: str,
    method: str,
    path: str,
    token: str | None,
    data: bytes | None = None,
    content_type: str | None = None,
    timeout: float = 120.0,
) -> Any:
    req = urllib.request.Request(server.rstrip("/") + path, data=data, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if content_type:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raise ClientError.reply(e.code, server_message(e.read()), f"{method} {path}") from None
    except urllib.error.URLError as e:
        raise UnreachableError(f"cannot reach {server}: {e.reason}") from None


def publish(
    model: Any,
    name: str,
    version: str,
    server: str = "http://127.0.0.1:9000",
    token: str | None = None,
) -> dict[str, Any]:
    """Publishes ``model``: a path to a model file, or a fitted model object. An object
    the native runtime can score is sent as an inferwire tree file (plain data); any other
    is pickled with joblib. Returns the server's answer (the routes it serves it on)."""
    if isinstance(model, (str, Path)):
        path = Path(model)
        data, filename = path.read_bytes(), path.name
    else:
        from .trees import UnsupportedModel, convert

        try:
            data, filename = json.dumps(convert(model)).encode(), "model.json"
        except UnsupportedModel:
            import joblib

            buf = io.BytesIO()
            joblib.dump(model, buf)
            data, filename = buf.getvalue(), "model.joblib"
    quoted = f"{urllib.parse.quote(name, safe='')}/{urllib.parse.quote(version, safe='')}"
    query = urllib.parse.urlencode({"filename": filename})
    out: dict[str, Any] = _call(
        server,
        "POST",
        f"/api/v1.0/publish/{quoted}?{query}",
        token,
        data,
        "application/octet-stream",
    )
    return out


def list_published(server: str = "http://127.0.0.1:9000", token: str | None = None) -> Any:
    """Published models: ``[{"name", "versions", "serving"}]``."""
    return _call(server, "GET", "/api/v1.0/publish", token)["models"]


def delete(
    name: str, version: str, server: str = "http://127.0.0.1:9000", token: str | None = None
) -> None:
    """Removes a published version; the newest one left serves."""
    quoted = f"{urllib.parse.quote(name, safe='')}/{urllib.parse.quote(version, safe='')}"
    _call(server, "DELETE", f"/api/v1.0/publish/{quoted}", token)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "publish", help="publish a trained model file to a running server (or list, delete)"
    )
    p.add_argument("file", nargs="?", type=Path, help="the model file (.joblib, .json, ...)")
    p.add_argument("--name", help="the model's name")
    p.add_argument("--version", dest="model_version", help="the model's version")
    p.add_argument("--server", default="http://127.0.0.1:9000")
    p.add_argument("--token", help="a bearer token with the publish scope (or INFERWIRE_TOKEN)")
    p.add_argument("--list", action="store_true", help="list published models and versions")
    p.add_argument("--delete", action="store_true", help="delete --name's --version")


def run(args: dict[str, Any]) -> int:
    import os

    token = args["token"] or os.environ.get("INFERWIRE_TOKEN")
    server = args["server"]
    try:
        if args["list"]:
            for m in list_published(server, token):
                versions = ", ".join(
                    f"{v}{' (serving)' if v == m['serving'] else ''}" for v in m["versions"]
                )
                print(f"{m['name']}: {versions}")
            return 0
        if not args["name"] or not args["model_version"]:
            raise argparse.ArgumentTypeError("--name and --version are required")
        if args["delete"]:
            delete(args["name"], args["model_version"], server, token)
            print(f"deleted {args['name']} {args['model_version']}")
            return 0
        if args["file"] is None:
            raise argparse.ArgumentTypeError("give the model file to publish")
        out = publish(args["file"], args["name"], args["model_version"], server, token)
        print(f"published {args['name']} {args['model_version']}: " + ", ".join(out["routes"]))
        return 0
    except (InferwireError, argparse.ArgumentTypeError, OSError) as e:
        print(f"inferwire: {e}", file=sys.stderr)
        return 1
