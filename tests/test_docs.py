"""The documentation stays true to the code."""

from __future__ import annotations

from pathlib import Path

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


def test_relative_links_in_the_docs_resolve() -> None:
    import re

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
    import re

    for page in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        for i, block in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S)):
            compile(block, f"{page.name} sample {i + 1}", "exec")
