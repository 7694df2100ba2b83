"""A pytest plugin (``-p wrapper_shim``) that runs seldon-core 1.18.2's own wrapper tests
(tests/vendor/seldon_core_tests) against a running inferwire instead of the wrapper's
Flask app and gRPC servicer in process.

Those tests build the wrapper around a user object (``get_rest_microservice(user_object,
seldon_metrics).test_client()``, ``SeldonModelGRPC(user_object, seldon_metrics)``) and
call it in process. Here each of those builds starts ``inferwire serve`` on 127.0.0.1
for that very object (pickled with cloudpickle, as the test left it, and unpickled by
the server), and returns a stand-in that sends the test's calls as real requests:

- REST: a Flask app whose every route forwards the request (method, path, query,
  headers, body) over HTTP and hands back the reply's status, headers and body, so the
  test's ``test_client()`` and its responses are Flask's own;
- gRPC: an object with the servicer's methods, each a call on seldon-core's own stubs
  (``prediction_pb2_grpc``) over a channel to the server; an error status is raised as
  the ``grpc.RpcError`` it is.

What the wrapper reads from its process at build time is passed to the server as the
environment the wrapper reads it from: the unit's name and image (``get_model_name`` and
``get_image_name``, which some tests patch) as PREDICTIVE_UNIT_ID and
PREDICTIVE_UNIT_IMAGE, and INCLUDE_METRICS_IN_CLIENT_RESPONSE. Servers are stopped when their test ends."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import flask
import grpc
import pytest
import seldon_core.seldon_methods
import seldon_core.utils
import seldon_core.wrapper
from google.protobuf import empty_pb2
from seldon_core.env_utils import NONIMPLEMENTED_MSG
from seldon_core.proto import prediction_pb2_grpc

_started: list[_Server] = []

# The wrapper's gRPC servicer's methods, and the seldon.protos service each is on.
_SERVICES = {
    "Predict": "Model",
    "SendFeedback": "Model",
    "Metadata": "Model",
    "TransformInput": "Generic",
    "TransformOutput": "Generic",
    "Route": "Generic",
    "Aggregate": "Generic",
    "ModelMetadata": "Seldon",
    "GraphMetadata": "Seldon",
}


def _free_port() -> int:
    """As inferwire.local picks ports (INFERWIRE_LOCAL_PORTS' range when set); this shim
    runs in the wrapper's own environment, which may lack inferwire's package."""
    import os
    import random
    import socket

    lo, _, hi = os.environ.get("INFERWIRE_LOCAL_PORTS", "").partition("-")
    while True:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", random.randrange(int(lo), int(hi)) if hi else 0))
            except OSError:
                continue
            port: int = s.getsockname()[1]
            return port


def _pickled(user_object: Any) -> bytes:
    """The object with the test module's classes by value where they pickle so: as the
    test left them (a test may change a class attribute before building the wrapper),
    not as a fresh import makes them; else by reference (an annotation that holds an
    unpicklable object)."""
    module = sys.modules.get(type(user_object).__module__)
    if module is None or not module.__name__.startswith("tests."):
        return cloudpickle.dumps(user_object)
    cloudpickle.register_pickle_by_value(module)
    try:
        return cloudpickle.dumps(user_object)
    except TypeError:
        pass
    finally:
        cloudpickle.unregister_pickle_by_value(module)
    return cloudpickle.dumps(user_object)


class _Server:
    """``inferwire serve`` for one user object."""

    def __init__(self, user_object: Any) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="seldon-wrapper-tests-"))
        (self.dir / "user.pkl").write_bytes(_pickled(user_object))
        (self.dir / "served_user.py").write_text(
            "import pickle, pathlib\n\n"
            "def user():\n"
            "    return pickle.loads(pathlib.Path(__file__).with_name('user.pkl').read_bytes())\n"
        )
        self.http_port, self.grpc_port = _free_port(), _free_port()
        env = {**os.environ, "PYTHONPATH": os.getcwd()}
        # Whether replies carry the model's metrics (a fixture of the tests patches it).
        include = seldon_core.seldon_methods.INCLUDE_METRICS_IN_CLIENT_RESPONSE
        env["INCLUDE_METRICS_IN_CLIENT_RESPONSE"] = "true" if include else "false"
        name = seldon_core.utils.get_model_name()
        if name != NONIMPLEMENTED_MSG:
            env["PREDICTIVE_UNIT_ID"] = name
            env["PREDICTIVE_UNIT_IMAGE"] = seldon_core.utils.get_image_name()
        self.log = self.dir / "server.log"
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "inferwire",
                    "serve",
                    f"{self.dir / 'served_user.py'}:user",
                    "--host",
                    "127.0.0.1",
                    "--http-port",
                    str(self.http_port),
                    "--grpc-port",
                    str(self.grpc_port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        _started.append(self)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"inferwire exited:\n{self.log.read_text()}")
            try:
                status, _, _ = self.http("GET", "/health/ping", b"", {})
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"inferwire did not start in {timeout}s:\n{self.log.read_text()}")

    def http(
        self, method: str, target: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=60)
        try:
            conn.request(method, target, body=body, headers=headers)
            r = conn.getresponse()
            return r.status, r.getheaders(), r.read()
        finally:
            conn.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_URL_SAFE = "!#$%&'()*+,/:;=?@[]~"
# Hop-by-hop and framing headers: the forwarding request and reply make their own.
_DROP = {"host", "content-length", "transfer-encoding", "connection"}


def get_rest_microservice(user_model: Any, seldon_metrics: Any = None) -> flask.Flask:
    server = _Server(user_model)
    app = flask.Flask("inferwire_wrapper_shim")
    methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]

    @app.route("/", defaults={"path": ""}, methods=methods)
    @app.route("/<path:path>", methods=methods)
    def forward(path: str) -> flask.Response:
        environ = flask.request.environ
        target = urllib.parse.quote(environ.get("PATH_INFO", "/"))
        if environ.get("QUERY_STRING"):
            # Quoted as an HTTP client (requests) quotes what a URL may not hold raw.
            target += "?" + urllib.parse.quote(environ["QUERY_STRING"], safe=_URL_SAFE)
        headers = {k: v for k, v in flask.request.headers.items() if k.lower() not in _DROP}
        status, reply_headers, body = server.http(
            flask.request.method, target, flask.request.get_data(), headers
        )
        response = flask.Response(body, status=status)
        response.headers.clear()
        for k, v in reply_headers:
            if k.lower() not in _DROP:
                response.headers.add(k, v)
        return response

    return app


class SeldonModelGRPC:
    """The wrapper's servicer, each method a call to the server."""

    def __init__(self, user_model: Any, seldon_metrics: Any = None) -> None:
        self._server = _Server(user_model)
        self._channel = grpc.insecure_channel(f"127.0.0.1:{self._server.grpc_port}")

    def __getattr__(self, method: str) -> Any:
        service = _SERVICES.get(method)
        if service is None:
            raise AttributeError(method)
        stub = getattr(prediction_pb2_grpc, f"{service}Stub")(self._channel)

        def call(request: Any, context: Any = None) -> Any:
            # The servicer's metadata methods ignore their request (tests pass None); on
            # the wire it is an Empty.
            message = request if request is not None else empty_pb2.Empty()
            return getattr(stub, method)(message, timeout=60)

        return call


seldon_core.wrapper.get_rest_microservice = get_rest_microservice  # type: ignore[assignment]
seldon_core.wrapper.SeldonModelGRPC = SeldonModelGRPC  # type: ignore[misc,assignment]


# Per test: how many servers it started (0: it ran only seldon-core's own code in
# process), and its outcome; written as JSON to $WRAPPER_SHIM_REPORT at the end.
_report: dict[str, dict[str, Any]] = {}


@pytest.fixture(autouse=True)
def _stop_servers(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    _report.setdefault(request.node.nodeid, {})["servers"] = len(_started)
    while _started:
        _started.pop().stop()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _report.setdefault(report.nodeid, {"servers": 0})
    if report.when == "call" or report.outcome != "passed":
        entry["outcome"] = report.outcome
        if report.outcome == "failed":
            entry["error"] = str(report.longrepr)[-3000:]


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("WRAPPER_SHIM_REPORT")
    if path:
        Path(path).write_text(json.dumps(_report, indent=1, sort_keys=True))
