"""The deployment files (deploy/), checked offline. No cluster and no Docker engine run
here, so nothing is deployed or built; deploy/validate, a Go test, renders the Helm chart
with Helm's own engine for several sets of values and decodes every object, and every
plain manifest, strictly into the Go type of its kind (Kubernetes', the Prometheus
Operator's, Seldon's) or against KServe's CRD schemas, parses the Dockerfile with
BuildKit's parser, and checks what matters to users: probes, the drain, named ports, a
non-root user. A misspelled field, a wrong type or a broken template fails. Beside it,
the SeldonDeployment is also walked against the types of Seldon's own SDK."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
# scripts/env.sh puts Go here; a shell that did not source it may lack it on PATH.
GO = shutil.which("go") or shutil.which("go", path="/usr/local/go/bin")

# Every test function in deploy/validate, so that one that stopped running is noticed.
GO_TESTS = (
    "TestChartRendersIntoValidObjects",
    "TestChartRefusesBadValues",
    "TestChartTypoFails",
    "TestDockerfile",
    "TestDockerignore",
    "TestPlainManifestsDecodeStrictly",
    "TestSeldonDeploymentServesTheSeldonProtocol",
    "TestKServeRuntimeServesV2",
    "TestKServeMLServerRuntimeWithOnlyTheImageChanged",
    "TestMLServerDockerfile",
    "TestKServeTritonRuntimeWithOnlyTheImageChanged",
    "TestKServeTorchServeRuntimeWithOnlyTheImageChanged",
    "TestTyposFail",
    "TestTypoFixturesAreOtherwiseValid",
)


@pytest.mark.skipif(GO is None, reason="Go is not installed (deploy/validate is a Go test)")
def test_chart_manifests_and_dockerfile_validate() -> None:
    assert GO is not None
    # The module's go.sum is committed: -mod=readonly fails rather than change it, and
    # GOTOOLCHAIN=local never fetches another Go.
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly"}
    env["PATH"] = f"{Path(GO).parent}{os.pathsep}{env.get('PATH', '')}"
    r = subprocess.run(
        [GO, "test", "-count=1", "-v", "./..."],
        cwd=DEPLOY / "validate",
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,  # a first run compiles Helm and the Kubernetes types: minutes
    )
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-4000:]
    passed = set(re.findall(r"^--- PASS: (\w+) ", r.stdout, re.M))
    assert set(GO_TESTS) <= passed, f"not run: {set(GO_TESTS) - passed}\n{r.stdout[-3000:]}"
    ran = set(re.findall(r"^=== RUN   (\w+)$", r.stdout, re.M))
    assert ran == set(GO_TESTS), f"add new Go tests to GO_TESTS: {ran - set(GO_TESTS)}"


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


def test_the_seldon_deployment_matches_the_seldon_sdks_types() -> None:
    """A second opinion on deploy/seldon, from types Seldon generated itself (the Go
    test's are transcribed by hand from Seldon's source)."""
    pytest.importorskip("seldon_deploy_sdk")
    docs = list(yaml.safe_load_all((DEPLOY / "seldon/seldondeployment.yaml").read_text()))
    assert len(docs) == 1
    doc = docs[0]
    assert (doc["apiVersion"], doc["kind"]) == ("machinelearning.seldon.io/v1", "SeldonDeployment")
    assert check_seldon(doc, "SeldonDeployment") == []
    # The walker catches what a typo makes.
    typo = {**doc, "spec": {**doc["spec"], "predictor": doc["spec"]["predictors"]}}
    assert check_seldon(typo, "SeldonDeployment") == [
        "spec: SeldonDeploymentSpec has no field 'predictor'"
    ]
    wrong = {**doc, "spec": {**doc["spec"], "replicas": "two"}}
    assert check_seldon(wrong, "SeldonDeployment") == ["spec.replicas: want int, got 'two'"]
