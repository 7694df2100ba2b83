"""The command line: model specs, settings from flags and env, errors, shutdown."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import TESTS, Served, free_port
from seldon_client import rest


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inferwire", *args],
        cwd=TESTS,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    "spec", ["models:Noop", "models.Noop", "models.py:Noop", str(TESTS / "models.py") + ":Noop"]
)
def test_model_specs(spec: str) -> None:
    s = Served(spec)
    try:
        assert rest(s.url, {"data": {"ndarray": [5]}}).json()["data"]["ndarray"] == [1]
    finally:
        assert s.stop() == 0


def test_file_without_class_name_picks_the_model(tmp_path: Path) -> None:
    (tmp_path / "Scorer.py").write_text(
        "class Helper:\n    pass\n\nclass Scorer:\n    def predict(self, X, names):\n        return X * 2\n"
    )
    s = Served(str(tmp_path / "Scorer.py"))
    try:
        assert rest(s.url, {"data": {"ndarray": [2]}}).json()["data"]["ndarray"] == [4]
    finally:
        s.stop()


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["serve", "nope_missing.py"], "model file nope_missing.py does not exist"),
        (["serve", "models:Missing"], "has no attribute 'Missing'"),
        (["serve", "no_such_module:X"], "cannot import the model"),
        (["serve", "models:Noop", "--http-port", "99999"], "http_port: 99999 is not a TCP port"),
        (["serve", "models:Noop", "--http-port", "abc"], "--http-port: 'abc' is not a valid int"),
        (
            ["serve", "models:Noop", "--http-port", "7001", "--grpc-port", "7001"],
            "give them different ports",
        ),
        (
            ["serve", "models:Noop", "--parameters", '[{"name": 1}]'],
            "parameters[0]: needs name and value",
        ),
        (["serve", "models:Noop", "--log-level", "loud"], "log_level"),
    ],
)
def test_bad_invocations_exit_with_a_clear_message(args: list[str], text: str) -> None:
    r = run_cli(*args)
    assert r.returncode != 0
    assert text in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_port_in_use_is_reported() -> None:
    s = Served("models:Noop")
    try:
        r = run_cli(
            "serve",
            "models:Noop",
            "--host",
            "127.0.0.1",
            "--http-port",
            str(s.http_port),
            "--grpc-port",
            str(free_port()),
        )
        assert r.returncode == 1
        assert f"cannot listen for REST on 127.0.0.1:{s.http_port}" in r.stderr
    finally:
        s.stop()


def test_env_vars_and_seldon_env_vars() -> None:
    http, grpc_port = free_port(), free_port()
    env = {
        "INFERWIRE_HOST": "127.0.0.1",
        "PREDICTIVE_UNIT_HTTP_SERVICE_PORT": str(http),
        "INFERWIRE_GRPC_PORT": str(grpc_port),
        "PREDICTIVE_UNIT_ID": "classifier",
        "PREDICTIVE_UNIT_IMAGE": "seldonio/seldontest_predict:1.10.0-dev",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "inferwire", "serve", "models:Noop"],
        cwd=TESTS,
        env={**os.environ, **env},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                r = httpx.post(
                    f"http://127.0.0.1:{http}/api/v1.0/predictions",
                    json={"data": {"ndarray": [[0]]}},
                )
                break
            except httpx.TransportError:
                time.sleep(0.1)
        # The notebook's reply, byte for byte.
        assert r.text == (
            '{"data":{"names":[],"ndarray":[1]},"meta":{"requestPath":'
            '{"classifier":"seldonio/seldontest_predict:1.10.0-dev"}}}'
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
    assert proc.returncode == 0
    assert f"http://127.0.0.1:{http}/api/v1.0/predictions" in err  # the URLs are logged
    assert f"127.0.0.1:{grpc_port}" in err


def test_sigterm_drains_in_flight_requests(tmp_path: Path) -> None:
    (tmp_path / "Slow.py").write_text(
        "import time\n\nclass Slow:\n    def predict(self, X, names):\n        time.sleep(1.0)\n        return X\n"
    )
    s = Served(str(tmp_path / "Slow.py"), "--grace-period", "10")
    results: list[Any] = []
    t = threading.Thread(target=lambda: results.append(rest(s.url, {"strData": "done"})))
    t.start()
    time.sleep(0.3)  # the request is now inside the model
    s.proc.send_signal(signal.SIGTERM)
    t.join(15)
    assert results and results[0].status_code == 200 and results[0].json()["strData"] == "done"
    assert s.proc.wait(15) == 0
    assert "stopped" in s.log()


def test_settings_file_with_flags_and_env_taking_precedence(tmp_path: Path) -> None:
    from seldon_client import rest

    settings = tmp_path / "settings.yaml"
    settings.write_text(
        "model-name: from-file\nmodel_image: img-from-file\nmax_batch_size: 4\n"
        "parameters:\n  - {name: threshold, value: '0.9', type: FLOAT}\n"
    )
    s = Served(
        "models:Annotated",
        "--settings",
        str(settings),
        "--model-name",
        "from-flag",
        env={"INFERWIRE_MODEL_IMAGE": "img-from-env"},
    )
    try:
        r = rest(s.url, {"data": {"ndarray": [[0.5, 0.3]]}})
        assert r.status_code == 200, r.text
        reply = r.json()
        assert reply["meta"]["requestPath"] == {"from-flag": "img-from-env"}
        assert reply["meta"]["tags"]["threshold"] == 0.9  # parameters from the file
        assert "batching up to 4 requests" in s.log()
    finally:
        s.stop()


@pytest.mark.parametrize(
    ("text", "suffix", "message"),
    [
        ("max_batch_sise: 4\n", ".yaml", "unknown setting 'max_batch_sise'"),
        ('{"workers": "many"}', ".json", "workers in"),
        ("- 1\n- 2\n", ".yaml", "must be a mapping"),
        ("max_batch_size: [\n", ".yml", "not valid YAML/JSON"),
        ("workers: 1.5\n", ".yaml", "1.5 is not a valid int"),
    ],
)
def test_bad_settings_files_are_refused(
    tmp_path: Path, text: str, suffix: str, message: str
) -> None:
    path = tmp_path / f"settings{suffix}"
    path.write_text(text)
    r = run_cli("serve", "models:Noop", "--settings", str(path))
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and str(path) in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    missing = run_cli("serve", "models:Noop", "--settings", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "nope.yaml" in missing.stderr
