"""Plots drawn from docs/benchmarks.md's own result tables, so that a plot always shows
the figures printed beside it. ``benchmarks/render.py`` calls ``draw_all`` after it has
put the latest results into the page; the guide to choosing a protocol shows them.

    .venv/bin/python benchmarks/plots.py      # redraws docs/img/*.svg from the page
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLORS = ["#1f77b4", "#d62728", "#7f7f7f"]


def block(page: str, ref: str) -> str:
    """The text of one results block of the page."""
    start = page.index(f"<!-- results: {ref} -->")
    return page[start : page.index("<!-- /results -->", start)]


def rows(text: str) -> list[list[str]]:
    """A markdown table's rows (the header first), cells stripped."""
    return [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|") and not line.startswith("|---")
    ]


def ms(cell: str) -> float | None:
    """'1.49 ms', '636 µs', '**0.117** (74 µs)' as milliseconds; None for '-' or text."""
    m = re.search(r"([\d.,]+)\s*(ms|µs|s)?", cell.replace("*", ""))
    if not m:
        return None
    value = float(m[1].replace(",", ""))
    return value * {"µs": 1e-3, "s": 1e3}.get(m[2] or "ms", 1.0)


def svg_bars(title: str, groups: list[tuple[str, list[float | None]]], series: list[str]) -> str:
    """Horizontal bars: one group per label, one bar per series, values in ms."""
    bar, gap, left, right, top = 16, 14, 190, 90, 50
    h = top + len(groups) * (len(series) * bar + gap) + 30
    w = 720
    peak = max(v for _, vs in groups for v in vs if v) * 1.05

    def width(v: float) -> float:
        return v / peak * (w - left - right)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
    ]
    for k, name in enumerate(series):
        x = left + k * 170
        parts.append(
            f'<rect x="{x}" y="30" width="12" height="12" fill="{COLORS[k]}"/>'
            f'<text x="{x + 16}" y="40">{name}</text>'
        )
    y = top
    for label, values in groups:
        parts.append(
            f'<text x="{left - 8}" y="{y + len(series) * bar / 2 + 4}" text-anchor="end">'
            f"{label}</text>"
        )
        for k, v in enumerate(values):
            if v is not None:
                shown = f"{v * 1000:.0f} µs" if v < 1 else f"{v:.2f} ms"
                parts.append(
                    f'<rect x="{left}" y="{y}" width="{max(width(v), 1):.1f}" '
                    f'height="{bar - 2}" fill="{COLORS[k]}"/>'
                    f'<text x="{left + width(v) + 4:.1f}" y="{y + bar - 5}">{shown}</text>'
                )
            else:
                parts.append(f'<text x="{left + 4}" y="{y + bar - 5}" fill="#777">n/a</text>')
            y += bar
        y += gap
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def v2_large(page: str) -> str:
    """Mean latency of one 100,000-element INT64 request, per protocol, against MLServer."""
    table = rows(block(page, "v2_mlserver.md"))
    head = table[0]
    ours, theirs = head.index("inferwire req/s") + 1, head.index("MLServer pw=0 req/s") + 1
    groups = [
        (r[0], [ms(r[ours]), ms(r[theirs]) if r[theirs] != "-" else None])
        for r in table[1:]
        if r[1] == "100,000" and r[2] == "1"
    ]
    return svg_bars(
        "V2, 100,000 INT64 elements, one client: mean latency (lower is better)",
        groups,
        ["inferwire", "MLServer (parallel_workers=0)"],
    )


def numpy_echo(page: str) -> str:
    """Milliseconds per 8,192-point echo, per encoding, against the seed's servers."""
    table = rows(block(page, "images_numpy.md#Seed 003: numpy echo"))
    head = table[0]
    ours = head.index("8,192 pt: inferwire")
    groups = [(r[0], [ms(r[ours]), ms(r[ours + 1])]) for r in table[1:]]
    return svg_bars(
        "numpy echo of 8,192 points, 100 in flight: ms per request (lower is better)",
        groups,
        ["inferwire", "aiohttp / grpcio"],
    )


PLOTS = {"encodings-v2.svg": v2_large, "encodings-numpy.svg": numpy_echo}


def draw_all(page: Path) -> list[Path]:
    text = page.read_text()
    written = []
    for name, draw in PLOTS.items():
        try:
            svg = draw(text)
        except ValueError:
            continue  # the page has no such table (docs/reliability.md, say)
        out = page.parent / "img" / name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(svg)
        written.append(out)
    return written


if __name__ == "__main__":
    for path in draw_all(ROOT / "docs" / "benchmarks.md"):
        print(path)
