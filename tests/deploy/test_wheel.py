"""The wheel as a user installs it: for each CPython the wheel supports and this machine
has, a fresh virtualenv with no Rust on PATH, `pip install` of the wheel (its
dependencies from the package index, as binary wheels only, so nothing is compiled), the
quick-start model served with the installed `inferwire serve` on 127.0.0.1, a Seldon
request over REST whose answer is checked against the model's own arithmetic, and a short
`inferwire bench attack` over REST and gRPC: the load generator is in the wheel.

Opt-in: runs when ``scripts/build-wheels.sh`` has built a wheel into dist/
(INFERWIRE_WHEEL_DIR names another folder); skipped otherwise, CI included, because the
wheel is a release build of several minutes. About 20 s per Python with a warm pip cache.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from conftest import ROOT, free_port, wait_ready

WHEEL_DIR = Path(os.environ.get("INFERWIRE_WHEEL_DIR", ROOT / "dist"))
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
MODEL = ROOT / "examples" / "seldon_model" / "model.py"
ROW = [5.1, 3.5, 1.4, 0.2]
BODY = json.dumps({"data": {"ndarray": [ROW]}})


def _wheel() -> Path | None:
    wheels = sorted(WHEEL_DIR.glob("inferwire-*.whl"), key=lambda p: p.stat().st_mtime)
    return wheels[-1] if wheels else None


WHEEL = _wheel()

pytestmark = [
    pytest.mark.optin,
    pytest.mark.slow,
    pytest.mark.skipif(
        WHEEL is None, reason=f"no wheel in {WHEEL_DIR} (bash scripts/build-wheels.sh builds it)"
    ),
]


def _supports(wheel: Path, version: str) -> bool:
    """Whether the wheel's Python tag takes CPython ``version``: ``cp310-abi3`` takes 3.10
    and every later 3.x, ``cp311-cp311`` only 3.11."""
    m = re.search(r"-cp3(\d+)-(abi3|cp3\d+)-", wheel.name)
    assert m, f"not a CPython wheel: {wheel.name}"
    minor, wanted = int(m[1]), int(version.split(".")[1])
    return wanted >= minor if m[2] == "abi3" else wanted == minor


def _python(version: str) -> str | None:
    """CPython ``version`` from PATH or pyenv's folders (pyenv's shims answer for every
    version, so each candidate is run)."""
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(
        str(p) for p in (Path.home() / ".pyenv" / "versions").glob(f"{version}.*/bin/python3")
    )
    for c in candidates:
        if not c:
            continue
        r = subprocess.run(
            [c, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
        )
        if r.returncode == 0 and r.stdout.strip() == version:
            return c
    return None


def _expected(row: list[float]) -> list[float]:
    """The quick-start model's answer for one row (examples/seldon_model/model.py)."""
    w = np.array([[0.4, -0.1, -0.3], [0.9, -0.2, -0.7], [-1.5, 0.2, 1.3], [-0.8, 0.1, 0.9]])
    logits = np.array([row]) @ w
    e = np.exp(logits - logits.max())
    return list((e / e.sum())[0])


@pytest.mark.parametrize("version", PYTHONS)
def test_wheel_installs_serves_and_benches(version: str, tmp_path: Path) -> None:
    assert WHEEL is not None
    if not _supports(WHEEL, version):
        pytest.skip(f"{WHEEL.name} is not for Python {version}")
    python = _python(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine")

    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=120)
    # No cargo, rustc or the checkout's tools: only the virtualenv and the system's basics.
    path = f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    for tool in ("cargo", "rustc", "maturin"):
        assert shutil.which(tool, path=path) is None, f"{tool} is on {path}"
    env = {
        "PATH": path,
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "LANG": "C.UTF-8",
    }
    start = time.monotonic()
    r = subprocess.run(
        [str(venv / "bin/pip"), "install", "--only-binary", ":all:", str(WHEEL)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    print(f"Python {version}: pip install {WHEEL.name}: {time.monotonic() - start:.1f} s")

    # Served from a folder outside the checkout, so that only the installed package is found.
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(MODEL, work / "model.py")
    http_port, grpc_port = free_port(), free_port()
    url = f"http://127.0.0.1:{http_port}"
    log_path = tmp_path / "serve.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [
                str(venv / "bin/inferwire"),
                "serve",
                "model.py:IrisLikeClassifier",
                "--host",
                "127.0.0.1",
                "--http-port",
                str(http_port),
                "--grpc-port",
                str(grpc_port),
            ],
            cwd=work,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        assert wait_ready(proc, f"{url}/health/ping", log_path.read_text, 60), log_path.read_text()
        # The installed package, not the checkout's.
        r = subprocess.run(
            [str(venv / "bin/python"), "-c", "import inferwire._core as c; print(c.__file__)"],
            capture_output=True,
            text=True,
            cwd=work,
            env=env,
            check=True,
        )
        assert r.stdout.startswith(str(venv)), r.stdout

        resp = httpx.post(
            f"{url}/api/v1.0/predictions",
            content=BODY,
            headers={"content-type": "application/json"},
            timeout=30,
        )
        assert resp.status_code == 200, resp.text
        data = resp.json()["data"]
        assert data["names"] == ["setosa", "versicolor", "virginica"]
        np.testing.assert_allclose(data["ndarray"][0], _expected(ROW), rtol=1e-12)

        for target in (
            [f"{url}/api/v1.0/predictions"],
            [f"127.0.0.1:{grpc_port}", "--call", "seldon.protos.Seldon/Predict", "--seldon-json"],
        ):
            attack = [*target, "-d", BODY, "-n", "200", "-c", "2", "--format", "json"]
            r = subprocess.run(
                [str(venv / "bin/inferwire"), "bench", "attack", *attack, "--no-progress"],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            assert r.returncode == 0, r.stderr
            report = json.loads(r.stdout)
            assert (report["requests"], report["ok"], report["errors"]) == (200, 200, []), report
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
