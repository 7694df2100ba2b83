"""Publishing trained models to a running server, as ML Server's ``publishService`` does:
``inferwire publish`` and ``inferwire.publish`` upload a model, the server validates and
converts it, stores it in its repository (it survives a restart), and serves it on
``/api/NAME/VERSION`` and V2; a corrupt upload is refused and the old version keeps
serving; versions are listed and deleted (rolling back); only publish-scoped tokens may."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import inferwire
import joblib
import numpy as np
import pandas as pd
import pytest
from lib.kyphosis import kyphosis
from sklearn.ensemble import AdaBoostClassifier
from sklearn.tree import DecisionTreeClassifier


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "inferwire", *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("publish")
    repo = d / "repo"
    repo.mkdir()
    tokens = d / "tokens"
    ops = cli("auth", "token", "ops", "--scopes", "predict,publish", "--file", str(tokens))
    bot = cli("auth", "token", "bot", "--scopes", "predict", "--file", str(tokens))
    X, y = kyphosis()
    v1 = DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, y)
    v2 = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X, y)
    joblib.dump(v1, d / "v1.joblib")
    joblib.dump(v2, d / "v2.joblib")
    (d / "corrupt.joblib").write_bytes(b"\x80\x04 this is not a model")
    return {
        "dir": d,
        "repo": repo,
        "tokens": tokens,
        "ops": ops.stdout.strip(),
        "bot": bot.stdout.strip(),
        "v1": v1,
        "v2": v2,
    }


def start(serve: Any, setup: dict[str, Any]) -> Any:
    return serve("", "--model-repository", str(setup["repo"]), "--auth-tokens",
                 str(setup["tokens"]))  # fmt: skip


def frame() -> tuple[dict[str, list[float]], pd.DataFrame]:
    X, _ = kyphosis(50, seed=3)
    return {c: X[c].tolist() for c in X.columns}, X


def test_publish_predict_restart_roll_back(serve: Any, setup: dict[str, Any]) -> None:
    s = start(serve, setup)
    ops, bot = setup["ops"], setup["bot"]
    auth = {"Authorization": f"Bearer {bot}"}
    body, X = frame()
    # Nothing published yet: the Seldon route says what to do.
    r = httpx.post(s.url + "/api/v1.0/predictions", json=body, headers=auth)
    assert r.status_code == 400 and "publish one" in r.json()["status"]["info"]

    out = cli("publish", str(setup["dir"] / "v1.joblib"), "--name", "rtService",
              "--version", "1.0", "--server", s.url, "--token", ops)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "/api/rtService/1.0" in out.stdout
    r = httpx.post(s.url + "/api/rtService/1.0", json=body, headers=auth)
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(r.json()["present"], setup["v1"].predict_proba(X)[:, 1])
    assert "native tree runtime" in s.log()

    # A predict token cannot publish; a corrupt upload changes nothing.
    out = cli("publish", str(setup["dir"] / "v2.joblib"), "--name", "rtService",
              "--version", "2.0", "--server", s.url, "--token", bot)  # fmt: skip
    assert out.returncode == 1 and "publish scope" in out.stderr
    out = cli("publish", str(setup["dir"] / "corrupt.joblib"), "--name", "rtService",
              "--version", "2.0", "--server", s.url, "--token", ops)  # fmt: skip
    assert out.returncode == 1
    assert 'model "rtService" version "2.0" was not published' in out.stderr
    assert "cannot read the model" in out.stderr
    r = httpx.post(s.url + "/api/rtService/1.0", json=body, headers=auth)
    assert r.status_code == 200
    assert not (setup["repo"] / "rtService" / "versions" / "2.0").exists()

    out = cli("publish", str(setup["dir"] / "v2.joblib"), "--name", "rtService",
              "--version", "2.0", "--server", s.url, "--token", ops)  # fmt: skip
    assert out.returncode == 0, out.stderr
    r = httpx.post(s.url + "/api/rtService/2.0", json=body, headers=auth)
    np.testing.assert_allclose(r.json()["present"], setup["v2"].predict_proba(X)[:, 1])
    r = httpx.post(s.url + "/api/rtService/1.0", json=body, headers=auth)
    assert r.status_code == 404 and 'it serves version "2.0"' in r.json()["status"]["info"]
    v2_infer = {"inputs": [{"name": c, "shape": [50], "datatype": "FP64", "data": v}
                           for c, v in body.items()]}  # fmt: skip
    r = httpx.post(s.url + "/v2/models/rtService/versions/2.0/infer", json=v2_infer, headers=auth)
    assert r.status_code == 200, r.text
    listed = cli("publish", "--list", "--server", s.url, "--token", ops)
    assert listed.stdout.strip() == "rtService: 1.0, 2.0 (serving)"

    # It survives a restart.
    s.stop()
    s = start(serve, setup)
    r = httpx.post(s.url + "/api/rtService/2.0", json=body, headers=auth)
    assert r.status_code == 200, r.text

    # Deleting the serving version rolls back; deleting the last removes the model.
    out = cli("publish", "--delete", "--name", "rtService", "--version", "2.0",
              "--server", s.url, "--token", ops)  # fmt: skip
    assert out.returncode == 0, out.stderr
    r = httpx.post(s.url + "/api/rtService/1.0", json=body, headers=auth)
    np.testing.assert_allclose(r.json()["present"], setup["v1"].predict_proba(X)[:, 1])
    out = cli("publish", "--delete", "--name", "rtService", "--version", "1.0",
              "--server", s.url, "--token", ops)  # fmt: skip
    assert out.returncode == 0, out.stderr
    r = httpx.post(s.url + "/api/rtService/1.0", json=body, headers=auth)
    assert r.status_code == 404
    out = cli("publish", "--delete", "--name", "rtService", "--version", "1.0",
              "--server", s.url, "--token", ops)  # fmt: skip
    assert out.returncode == 1 and "has no published version" in out.stderr


def test_publish_from_python(serve: Any, setup: dict[str, Any], tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    s = serve("", "--model-repository", str(repo), "--allow-unauthenticated-repository")
    X, y = kyphosis()
    tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    out = inferwire.publish(tree, "tree", "1", server=s.url)
    assert out["routes"][0] == "/api/tree/1"
    assert (repo / "tree" / "versions" / "1" / "model.json").is_file()  # plain data, no pickle
    ada = AdaBoostClassifier(n_estimators=3, random_state=0).fit(X, y)
    inferwire.publish(ada, "ada", "1", server=s.url)
    assert (repo / "ada" / "versions" / "1" / "model.joblib").is_file()
    assert "Python runtime for sklearn" in s.log()
    _, Xq = frame()
    for name, model in (("tree", tree), ("ada", ada)):
        r = httpx.post(f"{s.url}/api/{name}/1", json={"data": {"ndarray": Xq.values.tolist()}})
        assert r.status_code == 200, r.text
        np.testing.assert_allclose(r.json()["data"]["ndarray"], model.predict_proba(Xq), atol=1e-9)
    with pytest.raises(inferwire.PublishError, match=r"was not published: name .*letters, digits"):
        inferwire.publish(tree, "../x", "1", server=s.url)
    with pytest.raises(inferwire.PublishError, match="not a model file"):
        inferwire.publish(str(setup["tokens"]), "t", "1", server=s.url)


def test_publishing_needs_a_repository(serve: Any, setup: dict[str, Any]) -> None:
    s = serve("models:Echo", "--allow-unauthenticated-repository")
    with pytest.raises(inferwire.PublishError, match="no model repository"):
        inferwire.publish(setup["v1"], "x", "1", server=s.url)


def test_publishing_reaches_every_worker(serve: Any, setup: dict[str, Any], tmp_path: Path) -> None:
    """With two workers, a publish or a delete through one is answered once both serve
    the change: every new connection (the kernel spreads them) gets the same answer."""
    repo = tmp_path / "repo"
    repo.mkdir()
    s = serve("", "--model-repository", str(repo), "--workers", "2",
              "--allow-unauthenticated-repository")  # fmt: skip
    body, X = frame()

    def answers(version: str) -> set[Any]:
        seen: set[Any] = set()
        for _ in range(30):  # a new connection each time
            r = httpx.post(f"{s.url}/api/rtService/{version}", json=body)
            seen.add(round(sum(r.json()["present"]), 6) if r.status_code == 200 else r.status_code)
        return seen

    for version in ("1.0", "2.0"):
        out = cli("publish", str(setup["dir"] / f"v{version[0]}.joblib"), "--name", "rtService",
                  "--version", version, "--server", s.url)  # fmt: skip
        assert out.returncode == 0, out.stderr
    v1, v2 = (round(sum(setup[v].predict_proba(X)[:, 1]), 6) for v in ("v1", "v2"))
    assert answers("2.0") == {v2} and answers("1.0") == {404}
    out = cli("publish", "--delete", "--name", "rtService", "--version", "2.0", "--server", s.url)
    assert out.returncode == 0, out.stderr
    assert answers("1.0") == {v1} and answers("2.0") == {404}
