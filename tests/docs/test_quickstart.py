"""The README's first command, ``bash scripts/quickstart.sh``, as a newcomer runs it: it
serves the example model, shows a REST and a gRPC call with their replies, and stops
cleanly at Ctrl-C (SIGINT to the terminal's whole process group). The release build is
the one step left out: the test serves the extension this test run built."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT, free_port


def test_quickstart_serves_calls_and_stops_at_ctrl_c() -> None:
    http, grpc = free_port(), free_port()
    env = {
        **os.environ,
        "INFERWIRE_SKIP_BUILD": "1",
        "INFERWIRE_VENV": str(Path(sys.executable).parent.parent),
        "INFERWIRE_HTTP_PORT": str(http),
        "INFERWIRE_GRPC_PORT": str(grpc),
    }
    proc = subprocess.Popen(
        ["bash", "scripts/quickstart.sh"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal gives it
    )
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 120
        for line in proc.stdout:
            seen.append(line)
            if "Ctrl-C stops" in line or time.monotonic() > deadline:
                break
        out = "".join(seen)
        assert "Ctrl-C stops" in out, out
        rest = next(x for x in seen if x.startswith('{"data":{"names":'))
        assert '["setosa","versicolor","virginica"]' in rest and '"iris-like"' in rest
        grpc_reply = next(x for x in seen if x.startswith('{"meta"'))
        assert '"shape": [2, 3]' in grpc_reply, out
        assert f"http://127.0.0.1:{http}/api/v1.0/predictions" in out
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does
        rest_of_it, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, out + rest_of_it
    assert "INFO inferwire: stopped" in rest_of_it, rest_of_it
    assert "killing" not in rest_of_it and "Traceback" not in out + rest_of_it
