"""Archives made as TorchServe's users make them: with the real `torch-model-archiver`
0.12 command (requirements-test.txt), from TorchServe's own handlers
(tests/vendor/torchserve_examples) or a handler written by a test."""

from __future__ import annotations

import ast
import contextlib
import functools
import http.server
import importlib.util
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
VENDOR = ROOT / "tests" / "vendor" / "torchserve_examples"


def has(*modules: str) -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except ModuleNotFoundError:
        return False


# TorchServe's handler utilities import torch; its vision handlers torchvision and captum.
HAS_TS = has("ts", "torch")
HAS_VISION = HAS_TS and has("torchvision", "captum")
needs_ts = pytest.mark.skipif(not HAS_TS, reason="needs the torchserve package and torch")
needs_vision = pytest.mark.skipif(
    not HAS_VISION, reason="needs torchserve, torch, torchvision and captum"
)


def archiver() -> str:
    """The torch-model-archiver command beside this interpreter (the test venv's)."""
    exe = Path(sys.executable).parent / "torch-model-archiver"
    found = str(exe) if exe.exists() else shutil.which("torch-model-archiver")
    if found is None:
        pytest.skip("torch-model-archiver is not installed (requirements-test.txt)")
    return found


def archive(
    out: Path,
    name: str,
    handler: Path | str,
    *,
    fmt: str = "default",
    version: str = "1.0",
    serialized: Path | None = None,
    model_file: Path | None = None,
    extra: list[Path] = (),  # type: ignore[assignment]
    config: Path | None = None,
    requirements: Path | None = None,
) -> Path:
    """``torch-model-archiver`` run as its documentation shows; the archive's path (the
    folder for ``no-archive``)."""
    cmd = [archiver(), "--model-name", name, "--version", version, "--handler", str(handler)]
    cmd += ["--export-path", str(out), "--archive-format", fmt, "--force"]
    if serialized is not None:
        cmd += ["--serialized-file", str(serialized)]
    if model_file is not None:
        cmd += ["--model-file", str(model_file)]
    if extra:
        cmd += ["--extra-files", ",".join(str(e) for e in extra)]
    if config is not None:
        cmd += ["--config-file", str(config)]
    if requirements is not None:
        cmd += ["--requirements-file", str(requirements)]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)
    suffix = {"default": ".mar", "zip-store": ".mar", "tgz": ".tar.gz", "no-archive": ""}[fmt]
    path = out / f"{name}{suffix}"
    assert path.exists(), path
    return path


def handler_file(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(source)
    return path


def streaming_handler_source() -> str:
    """The handler TorchServe's own intermediate-response test archives (its HANDLER_PY),
    read out of the vendored test file."""
    tree = ast.parse(
        (VENDOR / "streaming" / "test_send_intermediate_prediction_response.py").read_text()
    )
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "HANDLER_PY" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, str)
            return value
    raise AssertionError("HANDLER_PY not found")


class _Site(http.server.SimpleHTTPRequestHandler):
    """Serves the folder it is given; /good/jump.mar redirects to /bad/echo.mar."""

    def do_GET(self) -> None:
        if self.path == "/good/jump.mar":
            self.send_response(302)
            self.send_header("Location", "/bad/echo.mar")
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def archive_site(folder: Path) -> Iterator[str]:
    """A web server on 127.0.0.1 holding TorchServe's echo archive at /good/echo.mar and
    /bad/echo.mar (and /good/jump.mar, a redirect to the bad one): its base URL."""
    for part in ("good", "bad"):
        (folder / part).mkdir(parents=True)
        archive(folder / part, "echo", VENDOR / "echo" / "handler.py")
    handler = functools.partial(_Site, directory=str(folder))
    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{web.server_address[1]}"
    finally:
        web.shutdown()
