"""The documentation stays true to the code."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import doc_samples
import pytest
from conftest import ROOT
from inferwire.settings import markdown_table


def test_configuration_reference_matches_the_settings() -> None:
    doc = (ROOT / "docs/reference/configuration.md").read_text()
    assert markdown_table() in doc, "regenerate the table with inferwire.settings.markdown_table()"


def test_readme_quick_start_is_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line for line in block.strip().splitlines() if line.strip()]
    assert [c.split()[:2] for c in commands] == [
        ["bash", "scripts/quickstart.sh"],
        ["bash", "scripts/test.sh"],
    ]
    ci = (ROOT / ".ci/run").read_text()
    assert "scripts/test.sh" in ci


def test_readme_first_run_figures_are_the_measured_ones() -> None:
    """The README's times and sizes are docs/first-run.json's, which scripts/first_run.py
    measures on a clean clone with empty caches: a figure cannot be edited by hand."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("first_run", ROOT / "scripts/first_run.py")
    assert spec and spec.loader
    first_run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(first_run)
    figures = json.loads((ROOT / "docs/first-run.json").read_text())
    assert figures["quickstart"]["ctrl_c_status"] == 0
    readme = (ROOT / "README.md").read_text()
    assert first_run.table(figures) in readme, "paste `python3 scripts/first_run.py table`"
    assert figures["commit"] in (ROOT / "docs/first-run.md").read_text()


def test_relative_links_in_the_docs_resolve() -> None:

    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_documentation_builds_without_warnings(tmp_path: Path) -> None:
    """mkdocs.yml's site, built as CI builds it: strict, so a broken link, a missing
    page or a page left out of the navigation fails."""
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "reference" / "client" / "index.html").is_file()
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    nav = (ROOT / "mkdocs.yml").read_text()
    assert not [p for p in pages if p not in nav], "every page is in the navigation"


def test_python_samples_in_the_docs_compile() -> None:
    """Every python block, no-run ones included (indented ones, in a list, too)."""
    for page, samples in PAGES.items():
        for s in samples:
            if s.lang == "python":
                compile(s.code, f"{page}:{s.line}", "exec")


# -- Every page's samples run as pasted: in order, into one shell ------------------------

README = doc_samples.page_samples(ROOT / "README.md", "README.md")
PAGES = {"README.md": README} | {
    page: [s for s in doc_samples.samples(ROOT / "docs") if s.page == page]
    for page in sorted({s.page for s in doc_samples.samples(ROOT / "docs")})
}


def test_no_run_markers_say_why() -> None:
    """``<!-- no-run: reason -->``, directly before a python or bash fence."""
    problems = doc_samples.marker_problems(ROOT / "docs")
    problems += doc_samples.marker_problems(ROOT / "README.md")
    assert not problems, "\n".join(problems)
    assert doc_samples.runs(README), "the README has samples that run"


def test_a_no_run_marker_is_the_line_before_the_fence(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text(
        "<!-- no-run: needs a cluster -->\n```bash\nkubectl apply -f x.yaml\n```\n\n"
        "<!-- no-run -->\n```python\nprint(1)\n```\n\n"
        "<!-- no-run: too far from its fence -->\n\n```bash\necho\n```\n"
    )
    found = [(s.line, s.no_run) for s in doc_samples.samples(tmp_path)]
    assert found == [(2, "needs a cluster"), (7, ""), (13, None)]
    problems = doc_samples.marker_problems(tmp_path)
    assert [p.split(":", 2)[1] for p in problems] == ["6", "11"], problems


RUN_PAGES = [page for page, samples in PAGES.items() if doc_samples.runs(samples)]
# A success ratio a sample prints: inferwire bench's ``Success [ratio] 100.00%`` and its
# suites' ``ok 100.0%``. Below 100% fails the page: no example shows failures by accident.
SUCCESS = re.compile(r"(?:Success\s+\[ratio\]\s+|\bok )(\d+(?:\.\d+)?)%")


@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_runs_as_pasted(page: str, tmp_path: Path) -> None:
    """The page's samples, in order, in one ``bash`` in a fresh folder (how, in
    ``tests/doc_samples.py``): it exits 0 and leaves nothing running. The page's servers
    use its documented ports, so each must be free before it starts: the docs tier runs
    its pages one at a time."""
    import os
    import signal
    import subprocess
    import sys
    import time

    samples = PAGES[page]
    taken = sorted(p for p in doc_samples.ports(samples) if not port_free(p))
    assert not taken, (
        f"{page}: port(s) {taken} taken before the page started (by something else on this "
        "machine, or a server an earlier test left running); its samples use them as written"
    )
    doc_samples.write_files(samples, tmp_path)
    script = tmp_path / "page.sh"
    script.write_text(doc_samples.page_script(samples))
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFERWIRE_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)
    log = tmp_path / "page.log"  # a file, not a pipe: a server left running holds no pipe open
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["bash", script.name],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own session: what it leaves behind can be found
        )
        try:
            proc.wait(timeout=PAGE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            pytest.fail(f"{page}: not done in {PAGE_TIMEOUT_S} s\n{tail(log, 8000)}")
    text = tail(log, 12000)
    left = session_processes(proc.pid)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while session_processes(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in session_processes(proc.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 0, f"{page} failed ({proc.returncode}):\n{text}"
    assert not left, f"{page} left running: {left}\n{text[-4000:]}"
    whole = log.read_text(errors="replace")
    failing = [m.group(0) for m in SUCCESS.finditer(whole) if float(m.group(1)) < 100]
    assert not failing, f"{page}: a sample shows failed requests: {failing}\n{text[-8000:]}"


PAGE_TIMEOUT_S = 150


def tail(path: Path, n: int) -> str:
    """The last ``n`` characters of a log."""
    return path.read_text(errors="replace")[-n:]


def port_free(port: int) -> bool:
    """Nothing listens on ``port`` (on any address, as ``inferwire serve``'s default
    host 0.0.0.0 binds)."""
    import socket

    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def session_processes(sid: int) -> dict[int, str]:
    """The live processes of session ``sid``, with their command lines."""
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[3]) != sid or fields[0] == "Z":
                continue
            found[int(d.name)] = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
    return found


def test_mlserver_settings_table_matches_the_code() -> None:
    from inferwire.mlserver.settings import markdown_table as mlserver_table

    doc = (ROOT / "docs/guides/migrating-from-mlserver.md").read_text()
    assert mlserver_table() in doc, (
        "regenerate the table with inferwire.mlserver.settings.markdown_table()"
    )


# -- The TorchServe guide's tables, generated from the code -------------------------------

TORCHSERVE_GUIDE = ROOT / "docs/guides/migrating-from-torchserve.md"


def test_torchserve_options_table_matches_the_code() -> None:
    from inferwire.torchserve.cli import markdown_table as options_table

    assert options_table() in TORCHSERVE_GUIDE.read_text(), (
        "regenerate the table with inferwire.torchserve.cli.markdown_table()"
    )


def test_torchserve_context_and_model_config_tables_match_the_code() -> None:
    from inferwire.torchserve import context, model_config

    guide = TORCHSERVE_GUIDE.read_text()
    assert context.markdown_table() in guide, (
        "regenerate the table with inferwire.torchserve.context.markdown_table()"
    )
    assert model_config.markdown_table() in guide, (
        "regenerate the table with inferwire.torchserve.model_config.markdown_table()"
    )
    # Every part of the context a handler can reach is in the table.
    names = {*vars(context.Context), *vars(context.Context("m", ".", {}, 1, None))}
    assert {n for n in names if not n.startswith("_")} <= set(context.CONTEXT)
    for cls, row in (
        (context.RequestProcessor, "RequestProcessor"),
        (context.Metrics, "Metrics"),
        (context.Metric, "Metrics"),
    ):
        for name in vars(cls):
            if not name.startswith("_") and name != "samples":  # samples: the dialect's
                assert f"`{name}`" in context.CONTEXT[row], (cls.__name__, name)


def test_torchserve_properties_table_matches_the_code() -> None:
    from inferwire.torchserve.properties import markdown_table as keys_table

    assert keys_table() in TORCHSERVE_GUIDE.read_text(), (
        "regenerate the table with inferwire.torchserve.properties.markdown_table()"
    )


# -- The Triton guide's tables, generated from the code -----------------------------------

TRITON_GUIDE = ROOT / "docs/guides/migrating-from-triton.md"


def test_tritonserver_options_table_matches_the_code() -> None:
    from inferwire.triton.cli import markdown_table as options_table

    assert options_table() in TRITON_GUIDE.read_text(), (
        "regenerate the table with inferwire.triton.cli.markdown_table()"
    )


def test_triton_config_fields_table_matches_the_code() -> None:
    from inferwire.triton.config import markdown_table as fields_table

    assert fields_table() in TRITON_GUIDE.read_text(), (
        "regenerate the table with inferwire.triton.config.markdown_table()"
    )


def test_pb_utils_names_table_matches_the_code() -> None:
    from inferwire.triton.pb_names import markdown_table as names_table

    assert names_table() in TRITON_GUIDE.read_text(), (
        "regenerate the table with inferwire.triton.pb_names.markdown_table()"
    )


def test_every_public_name_of_pb_utils_is_in_the_names_table() -> None:
    """What a Triton model can reach in ``pb_utils``: ``__all__``, and anything public
    that inferwire's modules define there without listing it; each entry of ``NAMES``
    is a name ``pb_utils`` has (a dotted one, a method of its class)."""
    import inspect

    from inferwire.triton import pb_names, pb_utils

    public = set(pb_utils.__all__) | {
        name
        for name, value in vars(pb_utils).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and str(getattr(value, "__module__", "") or "").startswith("inferwire.")
    }
    missing = sorted(public - set(pb_names.NAMES))
    assert not missing, f"say what inferwire does with these in pb_names.NAMES: {missing}"
    for name, how in pb_names.NAMES.items():
        found: Any = pb_utils
        for part in name.split("."):
            assert hasattr(found, part), f"NAMES[{name!r}]: pb_utils has no such name"
            found = getattr(found, part)
        assert how.partition(": ")[0] in pb_names.STATUSES, f"NAMES[{name!r}]: {how!r}"


def test_the_triton_walk_through_serves_tritons_own_add_sub() -> None:
    """The guide's add_sub is Triton's example as vendored: the same configuration, and
    the same model.py but for its comments and docstrings."""
    import ast

    from inferwire.triton.config_schema import parse

    files = {
        s.file: s.code
        for s in doc_samples.page_samples(TRITON_GUIDE, "guides/migrating-from-triton.md")
        if s.file
    }
    vendored = ROOT / "tests/vendor/triton_python_backend/repository/add_sub"
    config = "models/add_sub/config.pbtxt"
    assert parse(files[config], config) == parse(
        (vendored / "config.pbtxt").read_text(), "config.pbtxt"
    )

    def code(source: str) -> str:
        tree = ast.parse(source)
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (
                isinstance(body, list)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
        return ast.dump(tree)

    model = "models/add_sub/1/model.py"
    assert code(files[model]) == code((vendored / "1/model.py").read_text())
