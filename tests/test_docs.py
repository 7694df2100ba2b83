"""The documentation stays true to the code."""

from __future__ import annotations

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
