"""benchmarks/render.py: the figures in docs/benchmarks.md come from the results files,
block by block; prose around them stays; a missing result keeps the old figures."""

from __future__ import annotations

from pathlib import Path

import pytest
import render
from conftest import ROOT

PAGE = """# Page

Prose stays.

<!-- results: a.md#First -->
old first
<!-- /results -->

Between.

<!-- results: a.md -->
old whole
<!-- /results -->

<!-- results: undated.md -->
old undated
<!-- /results -->

<!-- results: missing.md -->
kept as it was
<!-- /results -->
"""

A = """# Some benchmark (2026-11-23 08:40, 2 cores (AMD EPYC), Linux 6)

## First

| x | y |
|---|---|
| 1 | 2 |

## Second

second text
"""


def test_blocks_are_replaced_and_missing_ones_kept(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(A)
    (tmp_path / "undated.md").write_text("| only | a table |\n")
    warnings: list[str] = []
    out = render.render(PAGE, tmp_path, warnings.append)
    first = out.split("<!-- results: a.md#First -->\n")[1].split("<!-- /results -->")[0]
    assert first == (
        "*Measured 2026-11-23 08:40 on 2 cores (AMD EPYC), Linux 6.*\n\n"
        "| x | y |\n|---|---|\n| 1 | 2 |\n"
    )
    whole = out.split("<!-- results: a.md -->\n")[1].split("<!-- /results -->")[0]
    # Under the page's "# Page", the file's "## First" stays a second-level heading.
    assert "\n## First\n" in whole and "second text" in whole and "# Some" not in whole
    undated = out.split("<!-- results: undated.md -->\n")[1].split("<!-- /results -->")[0]
    assert undated.startswith("*Measured 20") and "| only | a table |" in undated
    assert "kept as it was" in out and "Prose stays." in out and "Between." in out
    assert warnings == [f"missing.md: not in {tmp_path}; the page keeps its figures for missing.md"]
    # Rendering again gives the same page: the markers survive.
    assert render.render(out, tmp_path, warnings.append) == out


def test_headings_fit_under_the_page_heading(tmp_path: Path) -> None:
    (tmp_path / "m.md").write_text("## Top\n\ntext\n\n### table one\n\n| a |\n")
    page = "# P\n\n### Results\n\n<!-- results: m.md#Top -->\nold\n<!-- /results -->\n"
    out = render.render(page, tmp_path, print)
    assert "\n#### table one\n" in out


def test_an_unknown_section_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(A)
    with pytest.raises(SystemExit, match="no section '## Third'"):
        render.render("<!-- results: a.md#Third -->\nx\n<!-- /results -->\n", tmp_path, print)


def test_the_page_names_only_results_the_scripts_write() -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    refs = {m["ref"].partition("#")[0] for m in render.BLOCK.finditer(page)}
    assert refs, "docs/benchmarks.md has no results blocks"
    all_sh = (ROOT / "benchmarks" / "all.sh").read_text()
    for ref in refs:
        assert ref.removesuffix(".md") in all_sh, f"{ref}: no benchmark in all.sh writes it"
    assert "<!-- machine -->" in page


def test_plots_are_drawn_from_the_pages_tables(tmp_path: Path) -> None:
    import plots

    page = (ROOT / "docs" / "benchmarks.md").read_text()
    (tmp_path / "benchmarks.md").write_text(page)
    written = plots.draw_all(tmp_path / "benchmarks.md")
    assert {p.name for p in written} == {"encodings-v2.svg", "encodings-numpy.svg"}
    v2 = (tmp_path / "img" / "encodings-v2.svg").read_text()
    # The REST binary cell's inferwire mean, as the page's V2 table prints it.
    row = next(r for r in plots.rows(plots.block(page, "v2_mlserver.md")) if r[0] == "REST binary")
    assert plots.ms(row[4]) is not None and "REST binary" in v2
    assert v2.count("<rect") >= 8 and v2.rstrip().endswith("</svg>")
    # The committed images are what the page's tables give.
    for p in written:
        assert (ROOT / "docs" / "img" / p.name).read_text() == p.read_text(), p.name
    assert plots.ms("**0.117** (74 µs)") == 0.117 and plots.ms("636 µs") == 0.636
    assert plots.ms("1.49 ms") == 1.49 and plots.ms("-") is None
