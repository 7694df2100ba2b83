"""The deployment files (deploy/), checked offline: the Helm chart rendered by Helm's own
engine and every object decoded strictly into the Kubernetes API's Go types, KServe's
kinds against KServe's published CRD schemas (deploy/validate, a Go test); the
SeldonDeployment against the types of Seldon's own SDK; and the Dockerfile's shape. No
cluster and no Docker engine run here, so nothing is deployed: a misspelled field, a
wrong type or a broken template fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"


@pytest.mark.skipif(shutil.which("go") is None, reason="Go is not installed")
def test_chart_and_manifests_decode_into_the_kubernetes_types() -> None:
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly"}
    r = subprocess.run(
        ["go", "test", "-count=1", "-v", "./..."],
        cwd=DEPLOY / "validate",
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-5000:]
    for name in (
        "TestChartRendersIntoValidObjects/defaults",
        "TestChartRendersIntoValidObjects/everything",
        "TestChartRendersIntoValidObjects/mutual-tls-configmap",
        "TestPlainManifestsDecodeStrictly",
        "TestTyposAreCaught",
    ):
        assert f"--- PASS: {name} " in r.stdout, r.stdout[-3000:]


def _sdk_type(name: str) -> Any:
    import seldon_deploy_sdk.models as models

    return getattr(models, name, None)


def check_seldon(obj: Any, type_name: str, path: str = "") -> list[str]:
    """Walks ``obj`` against the Seldon Deploy SDK's generated types (swagger_types and
    attribute_map, made from Seldon Core's CRD): unknown keys and wrong types are
    errors. Types the SDK leaves open (quantities, enums, maps) take any scalar."""
    where = path.lstrip(".") or "(top)"
    if obj is None:
        return []
    if m := re.fullmatch(r"list\[(.+)\]", type_name):
        if not isinstance(obj, list):
            return [f"{where}: want a list, got {obj!r}"]
        return [e for i, v in enumerate(obj) for e in check_seldon(v, m[1], f"{path}[{i}]")]
    if m := re.fullmatch(r"dict\(str, (.+)\)", type_name):
        if not isinstance(obj, dict):
            return [f"{where}: want a mapping, got {obj!r}"]
        return [e for k, v in obj.items() for e in check_seldon(v, m[1], f"{path}.{k}")]
    scalars: dict[str, tuple[type, ...]] = {
        "str": (str,),
        "int": (int,),
        "float": (int, float),
        "bool": (bool,),
        "datetime": (str,),
        "object": (object,),
    }
    if type_name in scalars:
        ok = isinstance(obj, scalars[type_name]) and not (
            type_name == "int" and isinstance(obj, bool)
        )
        return [] if ok else [f"{where}: want {type_name}, got {obj!r}"]
    cls = _sdk_type(type_name)
    if cls is None:
        return [f"{where}: the SDK has no type {type_name}"]
    if not cls.swagger_types:  # an open type: a quantity, an enum, a map of them
        return []
    if not isinstance(obj, dict):
        return [f"{where}: want an object ({type_name}), got {obj!r}"]
    by_key = {key: attr for attr, key in cls.attribute_map.items()}
    errors = []
    for key, value in obj.items():
        if key not in by_key:
            errors.append(f"{where}: {type_name} has no field {key!r}")
            continue
        errors += check_seldon(value, cls.swagger_types[by_key[key]], f"{path}.{key}")
    return errors


def test_the_seldon_deployment_matches_seldons_types() -> None:
    pytest.importorskip("seldon_deploy_sdk")
    docs = list(yaml.safe_load_all((DEPLOY / "seldon/seldondeployment.yaml").read_text()))
    assert len(docs) == 1
    doc = docs[0]
    assert (doc["apiVersion"], doc["kind"]) == ("machinelearning.seldon.io/v1", "SeldonDeployment")
    assert check_seldon(doc, "SeldonDeployment") == []
    container = doc["spec"]["predictors"][0]["componentSpecs"][0]["spec"]["containers"][0]
    assert container["args"][0] == "serve"
    assert doc["spec"]["protocol"] == "seldon"
    # The walker catches what a typo makes.
    typo = {**doc, "spec": {**doc["spec"], "predictor": doc["spec"]["predictors"]}}
    assert check_seldon(typo, "SeldonDeployment") == [
        "spec: SeldonDeploymentSpec has no field 'predictor'"
    ]
    wrong = {**doc, "spec": {**doc["spec"], "replicas": "two"}}
    assert check_seldon(wrong, "SeldonDeployment") == ["spec.replicas: want int, got 'two'"]


def _dockerfile_stages(text: str) -> list[list[tuple[str, str]]]:
    """(INSTRUCTION, arguments) per stage, continuation lines joined."""
    joined = re.sub(r"\\\n", " ", text)
    stages: list[list[tuple[str, str]]] = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        if word.upper() == "FROM":
            stages.append([])
        if stages:  # what comes before the first FROM (global ARGs) is not a stage's
            stages[-1].append((word.upper(), rest.strip()))
    return stages


def test_the_dockerfile_builds_a_slim_non_root_image_from_the_sources() -> None:
    text = (DEPLOY / "docker/Dockerfile").read_text()
    build, runtime = _dockerfile_stages(text)
    assert build[0] == ("FROM", "python:${PYTHON_VERSION}-slim-bookworm AS build")
    assert any(i == "RUN" and "maturin build --release --locked" in a for i, a in build)
    # Everything the build copies exists in the repository, and the runtime stage gets
    # only the wheel from it.
    for i, args in build:
        if i == "COPY":
            for src in args.split()[:-1]:
                assert (ROOT / src).exists(), src
    assert runtime[0] == ("FROM", "python:${PYTHON_VERSION}-slim-bookworm AS runtime")
    copies = [a for i, a in runtime if i == "COPY"]
    assert copies[0] == "--from=build /wheels /wheels"
    assert (ROOT / "deploy/docker/empty-models").is_dir()
    user = [a for i, a in runtime if i == "USER"]
    assert user == ["10001"]  # numeric: runAsNonRoot can check it
    assert ("EXPOSE", "9000 5000") in runtime
    assert ("ENTRYPOINT", '["inferwire"]') in runtime
    # The build context leaves out build outputs and virtualenvs.
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"target", ".venv*", ".tools"} <= set(ignored)
