"""tritonclient's own example clients (tests/vendor/tritonclient_examples, unchanged) run
against `inferwire tritonserver`, as Triton's QA runs them (qa/L0_http, qa/L0_grpc,
qa/L0_client_memory_growth): each script a subprocess with ``-v`` and its URL pointed at
the server, passing when it exits 0 and prints what it prints on success.

The models are Triton's example and QA models ("simple", "simple_string",
"simple_sequence", ...), written here as Python-backend models from Triton's configs and
model graphs (tests/triton_repository), Triton's own Python "simple_identity"
(tests/vendor/triton_server_examples) and the Python backend's "repeat_int32"
(tests/vendor/triton_python_backend)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from triton_server import TESTS, Tritonserver, port_is_free, repository

EXAMPLES = TESTS / "vendor" / "tritonclient_examples"
WRITTEN = TESTS / "triton_repository"
SIMPLE_IDENTITY = TESTS / "vendor" / "triton_server_examples" / "model_repository"

# Triton's example repository (docs/examples/model_repository) and QA's additions to it.
SIMPLE = (
    "simple",
    "simple_string",
    "simple_identity",
    "simple_int8",
    "simple_sequence",
    "simple_dyna_sequence",
    "simple_string_dyna_sequence",
)
TRITON_PORTS = (8000, 8001, 8002)


def models(tmp: Path, *names: str, python_backend: tuple[str, ...] = ()) -> Path:
    """A repository of ``names`` (written here, or Triton's simple_identity) and of the
    Python backend's vendored examples ``python_backend``."""
    extra = {n: (SIMPLE_IDENTITY if n == "simple_identity" else WRITTEN) / n for n in names}
    return repository(tmp, *python_backend, extra=extra)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tritonserver]:
    root = models(
        tmp_path_factory.mktemp("examples"),
        *SIMPLE,
        "custom_identity_int32",
        python_backend=("repeat_int32",),
    )
    # Triton serves system shared memory by default; inferwire when asked.
    s = Tritonserver(root, env={"INFERWIRE_SYSTEM_SHARED_MEMORY": "true"})
    yield s
    s.stop()


def run(script: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), "-v", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=EXAMPLES,
    )


def passed(out: subprocess.CompletedProcess[str], s: Tritonserver, *lines: str) -> None:
    said = out.stdout + out.stderr
    assert out.returncode == 0, said[-6000:] + "\n--- server ---\n" + s.log()[-3000:]
    for line in lines:
        assert line in out.stdout, said[-6000:]


HTTP = "http"
GRPC = "grpc"


def client(script: str, protocol: str, *args: str, prints: tuple[str, ...], marks: Any = ()) -> Any:
    """One run of ``script``: its protocol's URL, ``args``, and the lines it prints on
    success."""
    name = script.removesuffix(".py") + "".join(args)
    return pytest.param(script, protocol, args, prints, id=name, marks=marks)


CLIENTS = [
    client("simple_http_infer_client.py", HTTP, prints=("15 - -1 = 16", "Request for unknown")),
    client("simple_grpc_infer_client.py", GRPC, prints=("PASS: infer",)),
    client("simple_http_async_infer_client.py", HTTP, prints=("15 + 1 = 16",)),
    client("simple_grpc_async_infer_client.py", GRPC, prints=("PASS: Async infer",)),
    client("simple_http_aio_infer_client.py", HTTP, prints=("PASS: infer",)),
    client("simple_grpc_aio_infer_client.py", GRPC, prints=("PASS: grpc aio infer",)),
    client("simple_http_string_infer_client.py", HTTP, prints=("PASS: string",)),
    client("simple_grpc_string_infer_client.py", GRPC, prints=("PASS: string",)),
    client("simple_http_health_metadata.py", HTTP, prints=("'name': 'simple'",)),
    client("simple_grpc_health_metadata.py", GRPC, prints=('name: "simple"',)),
    client("simple_http_sequence_sync_infer_client.py", HTTP, prints=("PASS: Sequence",)),
    client("simple_http_sequence_sync_infer_client.py", HTTP, "-d", prints=("PASS: Sequence",)),
    client("simple_grpc_sequence_sync_infer_client.py", GRPC, prints=("PASS: Sequence",)),
    client("simple_grpc_sequence_sync_infer_client.py", GRPC, "-d", prints=("PASS: Sequence",)),
    client("simple_grpc_sequence_stream_infer_client.py", GRPC, prints=("PASS: Sequence",)),
    client("simple_grpc_sequence_stream_infer_client.py", GRPC, "-d", prints=("PASS: Sequence",)),
    client(
        "simple_grpc_aio_sequence_stream_infer_client.py",
        GRPC,
        prints=("PASS: grpc aio sequence stream",),
    ),
    client(
        "simple_grpc_aio_sequence_stream_infer_client.py",
        GRPC,
        "-d",
        prints=("PASS: grpc aio sequence stream",),
    ),
    client("simple_grpc_custom_args_client.py", GRPC, prints=("PASS: CustomArgs",)),
    client("simple_grpc_keepalive_client.py", GRPC, prints=("PASS: KeepAlive",)),
    client("simple_grpc_custom_repeat.py", GRPC, prints=("PASS: Decoupled API",)),
    client(
        "grpc_explicit_int_content_client.py",
        GRPC,
        prints=("15 - 1 = 14", "PASS: explicit int"),
    ),
    client("grpc_explicit_int8_content_client.py", GRPC, prints=("PASS: explicit int8",)),
    client("grpc_explicit_byte_content_client.py", GRPC, prints=("PASS: explicit string",)),
    client("simple_http_shm_client.py", HTTP, prints=("PASS: system shared memory",)),
    client("simple_grpc_shm_client.py", GRPC, prints=("PASS: system shared memory",)),
    client("simple_http_shm_string_client.py", HTTP, prints=("PASS: system shared memory",)),
    client("simple_grpc_shm_string_client.py", GRPC, prints=("PASS: system shared memory",)),
    client("reuse_infer_objects_client.py", HTTP, prints=("NO_SHARED_MEMORY", "END")),
    client("reuse_infer_objects_client.py", GRPC, "-i", "grpc", prints=("NO_SHARED_MEMORY", "END")),
]


@pytest.mark.parametrize(("script", "protocol", "args", "prints"), CLIENTS)
def test_example_client_passes(
    server: Tritonserver, script: str, protocol: str, args: tuple[str, ...], prints: tuple[str]
) -> None:
    url = f"127.0.0.1:{server.http_port}" if protocol == HTTP else server.grpc_target
    passed(run(script, "-u", url, *args), server, *prints)


# -- model control: a server in explicit mode of its own, per protocol -----------------------
# Each script counts the models of the repository it is run against: 7 for
# simple_http_model_control.py, 8 for simple_grpc_model_control.py (the numbers are fixed
# in the scripts, for Triton QA's repositories of L0_http and L0_grpc).


@pytest.mark.parametrize(
    ("script", "protocol", "names"),
    [
        pytest.param("simple_http_model_control.py", HTTP, SIMPLE),
        pytest.param(
            "simple_grpc_model_control.py",
            GRPC,
            (*SIMPLE, "custom_identity_int32"),
        ),
    ],
    ids=[HTTP, GRPC],
)
def test_model_control_client_passes(
    tmp_path: Path, script: str, protocol: str, names: tuple[str, ...]
) -> None:
    s = Tritonserver(models(tmp_path, *names), "--model-control-mode=explicit")
    try:
        url = f"127.0.0.1:{s.http_port}" if protocol == HTTP else s.grpc_target
        passed(run(script, "-u", url), s, "PASS: model control")
        assert s.proc.poll() is None, "the server stopped"
    finally:
        s.stop()


# -- memory_growth_test.py dials Triton's default ports -------------------------------------


@pytest.fixture(scope="module")
def on_tritons_ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tritonserver]:
    busy = [p for p in TRITON_PORTS if not port_is_free(p)]
    if busy:
        pytest.fail(f"Triton's ports {busy} are taken: memory_growth_test.py dials them")
    root = models(tmp_path_factory.mktemp("growth"), "custom_identity_int32")
    s = Tritonserver(root, ports=TRITON_PORTS)
    yield s
    s.stop()


@pytest.mark.parametrize("protocol", [HTTP, GRPC])
def test_memory_growth_client_passes(on_tritons_ports: Tritonserver, protocol: str) -> None:
    passed(run("memory_growth_test.py", "-i", protocol, "-r", "100"), on_tritons_ports)
