"""YAML with anchors and aliases, everywhere the server reads YAML (issue 41): a settings
file (``--settings``), a model-settings file, a Seldon graph file, ``MODEL_METADATA`` and
TorchServe's ``model-config.yaml`` all go through one loader (``inferwire.bounded_yaml``),
so an alias bomb (nine anchors of ten aliases each: a billion values from 400 bytes), an
alias to its own parent and nesting past 32 levels are refused with an error naming the
file, never a hang, a ``RecursionError`` or memory by the gigabyte; the server exits 2."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from inferwire import graph, repository, settings
from inferwire.errors import SettingsError


def bomb() -> str:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 9):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    return "\n".join(lines) + "\n"


SELF_ALIAS = "a: &a\n  b: *a\n"
DEEP = "x: " + "[" * 40 + "1" + "]" * 40 + "\n"
HUGE_DEEP = "x: " + "[" * 5000 + "1" + "]" * 5000 + "\n"

CASES = {
    "alias bomb": (bomb(), "counting what aliases repeat"),
    "alias to its own parent": (SELF_ALIAS, "nested deeper than 32 levels"),
    "nested 40 deep": (DEEP, "nested deeper than 32 levels"),
    "nested 5,000 deep": (HUGE_DEEP, "nested"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_settings_and_model_settings_files(tmp_path: Path, case: str) -> None:
    text, why = CASES[case]
    f = tmp_path / "settings.yaml"
    f.write_text(text)
    started = time.monotonic()
    with pytest.raises(SettingsError) as e:
        settings.read_file(str(f))
    assert f"settings file {f}" in str(e.value) and why in str(e.value)
    m = tmp_path / "model-settings.yaml"
    m.write_text(text)
    with pytest.raises(SettingsError) as e:
        repository._read(m)
    assert str(m) in str(e.value) and why in str(e.value)
    assert time.monotonic() - started < 15  # no hang (a loaded machine is slow)


@pytest.mark.parametrize("case", sorted(CASES))
def test_seldon_graph_files(tmp_path: Path, case: str) -> None:
    text, why = CASES[case]
    f = tmp_path / "graph.yaml"
    f.write_text("kind: SeldonDeployment\n" + text)
    with pytest.raises(SettingsError) as e:
        graph.read(str(f))
    assert str(f) in str(e.value) and why in str(e.value)


def test_model_metadata_from_the_environment_is_bounded(monkeypatch: Any, caplog: Any) -> None:
    from inferwire.seldon import SeldonAdapter

    class M:
        def predict(self, X: Any, names: Any) -> Any:
            return X

    monkeypatch.setenv("MODEL_METADATA", bomb())
    with caplog.at_level(logging.WARNING, "inferwire.model"):
        meta = SeldonAdapter(M(), "m")._init_metadata()
    assert "MODEL_METADATA: more than 100000 values" in caplog.text
    assert "a0" not in str(meta)


def test_the_server_exits_2_naming_the_file(tmp_path: Path) -> None:
    f = tmp_path / "settings.yaml"
    f.write_text(bomb())
    r = subprocess.run(
        [sys.executable, "-m", "inferwire", "serve", "noop", "--settings", str(f)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert f"settings file {f}: more than 100000 values" in r.stderr
    assert "Traceback" not in r.stderr
