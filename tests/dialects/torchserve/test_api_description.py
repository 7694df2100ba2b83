"""TorchServe's API description as its users ask for it (`curl -X OPTIONS
http://localhost:8080`, `/api-description`, `OPTIONS /predictions/{model}` and
`OPTIONS /models/{model}` on the management port): OpenAPI 3.0.1 documents of what each
port serves, without a key, and the paths they list answered by the server."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from torchserve_archives import VENDOR, archive
from torchserve_server import TorchServe


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TorchServe]:
    store = tmp_path_factory.mktemp("ts-openapi") / "store"
    store.mkdir()
    archive(store, "echo", VENDOR / "echo" / "handler.py")
    # Token authorization on: the description needs no key, as in TorchServe.
    s = TorchServe(store, "echo.mar", tokens=True)
    yield s
    s.stop()


def _document(r: httpx.Response) -> dict[str, object]:
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    doc = r.json()
    assert doc["openapi"] == "3.0.1"
    assert set(doc) == {"openapi", "info", "paths"}
    return doc  # type: ignore[no-any-return]


def test_options_on_the_inference_port_lists_the_inference_api(server: TorchServe) -> None:
    doc = _document(httpx.request("OPTIONS", server.url + "/"))
    assert doc["info"]["title"] == "TorchServe APIs"  # type: ignore[index]
    assert doc["info"]["version"] == "0.12.0"  # type: ignore[index]
    paths = doc["paths"]
    assert isinstance(paths, dict)
    for path, methods in {
        "/": {"options"},
        "/api-description": {"get"},
        "/ping": {"get"},
        "/predictions/{model_name}": {"post", "put"},
        "/predictions/{model_name}/{model_version}": {"post", "put"},
        "/explanations/{model_name}": {"post"},
        "/v1/models/{model_name}:predict": {"post"},
        "/v2/models/{model_name}/infer": {"post"},
    }.items():
        assert set(paths[path]) == methods, path
        for op in paths[path].values():
            assert op["operationId"] and "200" in op["responses"]
    # The management API has a port of its own here: not listed on this one.
    assert "/models" not in paths
    # The same document at /api-description, with any method.
    assert _document(httpx.get(server.url + "/api-description")) == doc


def test_options_on_the_management_port_lists_the_management_api(server: TorchServe) -> None:
    mgmt = f"http://127.0.0.1:{server.mgmt}"
    doc = _document(httpx.request("OPTIONS", mgmt + "/"))
    paths = doc["paths"]
    assert isinstance(paths, dict)
    assert set(paths["/models"]) == {"get", "post"}
    assert set(paths["/models/{model_name}"]) == {"get", "put", "delete"}
    assert set(paths["/models/{model_name}/{model_version}/set-default"]) == {"put"}
    register = {p["name"] for p in paths["/models"]["post"]["parameters"]}
    assert {"url", "model_name", "initial_workers", "synchronous"} <= register
    assert "/predictions/{model_name}" not in paths
    assert _document(httpx.get(mgmt + "/api-description")) == doc


def test_a_model_s_own_descriptions(server: TorchServe) -> None:
    doc = _document(httpx.request("OPTIONS", server.url + "/predictions/echo"))
    assert doc["info"]["title"] == "RESTful API for: echo"  # type: ignore[index]
    assert set(doc["paths"]) == {"/predictions/echo"}  # type: ignore[arg-type]
    mgmt = f"http://127.0.0.1:{server.mgmt}"
    doc = _document(httpx.request("OPTIONS", mgmt + "/models/echo"))
    assert doc["info"]["title"] == "RESTful Management API for: echo"  # type: ignore[index]
    assert set(doc["paths"]["/models/echo"]) == {"get", "put", "delete"}  # type: ignore[index]
    # An unknown model: TorchServe's 404, in its error body.
    r = httpx.request("OPTIONS", server.url + "/predictions/nothere")
    assert r.status_code == 404
    assert r.json()["type"] == "ModelNotFoundException"


def test_other_methods_on_the_root_are_not_allowed(server: TorchServe) -> None:
    r = httpx.get(server.url + "/")
    assert r.status_code == 405
    assert r.json()["message"] == "Requested method is not allowed, please refer to API document."
    # The listed inference calls still need the key.
    url, query = server.url + "/predictions/echo", {"data": "hello"}
    assert httpx.post(url, params=query).status_code == 400
    r = httpx.post(url, params=query, headers=server.headers)
    assert (r.status_code, r.text) == (200, "hello")
