"""seldon-core 1.18.2's own wrapper tests (its python/tests, vendored unchanged in
tests/vendor/seldon_core_tests) run against inferwire: wherever they build the wrapper
around a user object, the transport shim (wrapper_shim.py) starts ``inferwire serve`` for
that object and sends their calls as real HTTP and gRPC requests. Every test that sends
a request passes, but those below that read what only the wrapper's own process holds.

They run in the virtualenv scripts/seldon-wrapper-tests-env.sh makes (seldon-core with
its protobuf pin, and this checkout's inferwire), made once and cached, as the seldon
client's is for test_seldon_client_compat.py; the run takes a few minutes (a server per
test), hence ``slow``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from client_venv import client_venv

HERE = Path(__file__).parent
VENDORED = HERE.parents[1] / "vendor" / "seldon_core_tests"

# Tests that send requests but assert on what only the wrapper's process holds, with why
# (node id prefixes; their parameters are every case of them). Deselected.
READS_THE_WRAPPERS_PROCESS = {
    "tests/test_metrics.py::test_seldon_metrics_": "asserts on the wrapper's in-process "
    "metrics store (seldon_metrics.data[os.getpid()]); inferwire's are on its /metrics",
    "tests/test_metrics.py::test_proto_seldon_metrics_": "as above, over gRPC",
    "tests/test_runtime_metrics_tags.py::test_seldon_runtime_data_": "asserts on the "
    "wrapper's in-process metrics store (seldon_metrics.data[os.getpid()])",
    "tests/test_runtime_metrics_tags.py::test_proto_seldon_runtime_data_": "as above, over gRPC",
    "tests/test_runtime_metrics_tags.py::test_seldon_metrics_endpoint": "the metrics page "
    "of the wrapper's in-process store (get_metrics_microservice): empty before the first "
    "request and labelled worker_id=<the test's pid>",
    "tests/test_runtime_metrics_tags.py::test_proto_seldon_metrics_endpoint": "as above",
    "tests/test_metrics.py::test_seldon_metrics_endpoint": "as above",
    "tests/test_metrics.py::test_proto_seldon_metrics_endpoint": "as above",
    "tests/test_model_microservice.py::test_model_feedback_ok": "asserts on the user "
    "object in the test's process (user_object.rewards), not on the reply; the served copy "
    "is in the server",
}

# Tests that send no request: they call seldon-core's own functions in process (its
# metric validation, metadata validation, message conversion, get_grpc_server), so there
# is nothing of inferwire's in them. They run (and pass) against seldon-core itself; this
# list is checked against the shim's record of the servers each test started.
IN_PROCESS_ONLY = {
    "tests/test_metadata.py": "seldon_core.metadata's validation of metadata dicts",
    "tests/test_metrics.py": "seldon_core.metrics' validation and SeldonMetrics itself",
    "tests/test_model_microservice.py::test_get_grpc_server": "builds the wrapper's own "
    "grpc.Server",
    "tests/test_runtime_metrics_tags.py::test_generate_tags_key": "SeldonMetrics' key function",
}

# Files of seldon-core's python/tests not vendored, with why: they test the wrapper's own
# command line, its client library, its utilities, never a model server's replies.
NOT_VENDORED = {
    "test_microservice.py": "starts seldon-core-microservice (the wrapper's own CLI)",
    "test_microservice_tester.py": "seldon-core-microservice-tester's argument handling",
    "test_api_tester.py": "seldon-core-api-tester's argument handling (mocked requests)",
    "test_seldon_client.py": "SeldonClient with mocked transports (the client against "
    "inferwire: test_seldon_client_compat.py)",
    "test_utils.py": "seldon_core.utils' conversions, in process",
    "test_user_model.py": "seldon_core.user_model's helpers, in process",
    "test_flask_utils.py": "seldon_core.flask_utils, in process",
    "test_gunicorn_utils.py": "the wrapper's gunicorn configuration",
    "test_storage.py": "seldon_core.storage's downloads",
}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    python = client_venv("seldon-wrapper-tests-env.sh")
    path = tmp_path_factory.mktemp("wrapper-suite") / "report.json"
    deselect = [f"--deselect={prefix}" for prefix in READS_THE_WRAPPERS_PROCESS]
    r = subprocess.run(
        [python, "-m", "pytest", "-p", "wrapper_shim", "tests", "-q", *deselect],
        cwd=VENDORED,
        env={**os.environ, "PYTHONPATH": str(HERE), "WRAPPER_SHIM_REPORT": str(path)},
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert path.is_file(), r.stdout[-3000:] + r.stderr[-3000:]
    out: dict[str, Any] = json.loads(path.read_text())
    return out


@pytest.mark.slow
def test_every_test_that_sends_a_request_passes(report: dict[str, Any]) -> None:
    sent = {k: v for k, v in report.items() if v.get("servers")}
    assert len(sent) >= 130, len(sent)
    failed = {
        k: v.get("error", v.get("outcome")) for k, v in sent.items() if v.get("outcome") != "passed"
    }
    assert not failed, "\n\n".join(f"{k}\n{v}" for k, v in failed.items())
    # None of the deselected ran.
    assert not [k for k in report if k.startswith(tuple(READS_THE_WRAPPERS_PROCESS))]


@pytest.mark.slow
def test_the_rest_run_seldon_cores_own_code_in_process(report: dict[str, Any]) -> None:
    local = {k for k, v in report.items() if not v.get("servers")}
    # Skipped by seldon-core's own marker where tensorflow is missing (it is not
    # installed here: inferwire's tftensor is tested in test_seldon_matrix.py).
    skipped = {k for k in local if report[k].get("outcome") == "skipped"}
    assert skipped and all("tftensor" in k for k in skipped), skipped
    unlisted = sorted(k for k in local - skipped if not k.startswith(tuple(IN_PROCESS_ONLY)))
    assert not unlisted, unlisted
    assert all(report[k].get("outcome") == "passed" for k in local - skipped)
