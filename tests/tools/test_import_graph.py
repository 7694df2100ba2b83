"""The server crate's modules name only those below them: scripts/import_graph.py finds
no circle (docs/concepts/architecture.md shows the layers)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "import_graph.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60
    )


def test_inferwire_server_has_no_import_circle() -> None:
    done = run("--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "no import circles"


def test_the_graph_names_the_layers_below_each_module() -> None:
    lines = dict(line.split(" -> ", 1) for line in run().stdout.splitlines() if " -> " in line)
    assert "app" in lines["dataplane"].split(", ")
    assert "dataplane" not in lines["app"].split(", "), "the state names the protocol above it"
    assert "dataplane" in lines["rest"].split(", ")
    assert "grpc" not in lines["rest"].split(", "), "a transport names the other"
    assert lines["error"] == "(nothing)"


def test_a_circle_is_found(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.rs").write_text("use crate::b::B;\n")
    (src / "b.rs").write_text("// crate::a is only named in a comment here\nuse crate::{c, a};\n")
    (src / "c.rs").write_text("pub struct C;\n")
    done = run("--check", str(src))
    assert done.returncode == 1
    assert "circle: a <-> b" in done.stdout
