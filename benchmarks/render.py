"""Renders docs/benchmarks.md from the results the benchmark scripts wrote.

The page's prose is written by hand; its figures are not. Each block between

    <!-- results: FILE.md#SECTION -->
    ...
    <!-- /results -->

is replaced by that section of ``benchmarks/results/FILE.md`` (``#SECTION`` is a ``##``
heading there; without it, the whole file below its title; its headings are moved to one
level below the page's heading above the block), under a line saying when and
on what machine it was measured (from the file's title line, else, when the text has no
date of its own, from the file's time and this machine). A block whose results file is
absent is left as it is and named on stderr, so a partial rerun updates only what ran.
The block between ``<!-- machine -->`` and ``<!-- /machine -->`` gets the machine and
the versions.

    .venv/bin/python benchmarks/render.py [--results DIR] [--page docs/benchmarks.md]

``benchmarks/all.sh`` runs every benchmark and then this.
"""

from __future__ import annotations

import argparse
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import plots
from runtime import machine

ROOT = Path(__file__).resolve().parent.parent
# Plots the scripts draw, and where the page shows them.
PLOTS = {"runtime.svg": "img/runtime-batching.svg"}
BLOCK = re.compile(r"<!-- results: (?P<ref>[^\n]+?) -->\n.*?<!-- /results -->", re.S)
MACHINE = re.compile(r"<!-- machine -->\n.*?<!-- /machine -->", re.S)
# "# Title (2026-11-23 08:40, 2 CPUs ...)": the scripts' first line.
TITLE = re.compile(r"^# .*?\((?P<when>\d{4}-\d\d-\d\d \d\d:\d\d(?: UTC)?), (?P<machine>.*)\)\s*$")


DATE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d")


def section(text: str, name: str | None, fallback: str = "") -> tuple[str, str]:
    """(the section's text, 'measured ...' line) of a results file; ``fallback`` is the
    line for a file without a title, used when the text gives no date either."""
    lines = text.splitlines()
    measured = fallback if not DATE.search(text) else ""
    if lines and (m := TITLE.match(lines[0])):
        measured = f"*Measured {m['when']} on {m['machine']}.*"
        lines = lines[1:]
    if name is None:
        return "\n".join(lines).strip(), measured
    starts = [i for i, line in enumerate(lines) if line.strip() == f"## {name}"]
    if not starts:
        raise KeyError(name)
    body = []
    for line in lines[starts[0] + 1 :]:
        if line.startswith("## "):
            break
        body.append(line)
    return "\n".join(body).strip(), measured


HEADING = re.compile(r"^(#{1,6}) ", re.M)


def fit_headings(text: str, level: int) -> str:
    """Shifts the text's headings so that its highest becomes ``level``."""
    found = [len(h) for h in HEADING.findall(text)]
    if not found:
        return text
    shift = level - min(found)
    return HEADING.sub(lambda h: "#" * max(1, min(6, len(h[1]) + shift)) + " ", text)


def render(page: str, results: Path, warn: Callable[[str], None]) -> str:
    def block(m: re.Match[str]) -> str:
        ref = m["ref"]
        file, _, name = ref.partition("#")
        path = results / file
        if not path.exists():
            warn(f"{file}: not in {results}; the page keeps its figures for {ref}")
            return m[0]
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(path.stat().st_mtime))
        fallback = f"*Measured {when} on {machine()}.*"
        try:
            text, measured = section(path.read_text(), name or None, fallback)
        except KeyError:
            raise SystemExit(f"{path}: no section '## {name}' (the page asks for {ref})") from None
        # The block's headings go one level below the page's heading above the marker.
        above = [len(h) for h in HEADING.findall(page[: m.start()])]
        text = fit_headings(text, (above[-1] if above else 1) + 1)
        inner = f"{measured}\n\n{text}" if measured else text
        return f"<!-- results: {ref} -->\n{inner}\n<!-- /results -->"

    return BLOCK.sub(block, page)


def run(*cmd: str) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)
        return (out.stdout or out.stderr).strip().splitlines()[0] if out.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return ""


def package(venv: Path, name: str) -> str:
    python = venv / "bin" / "python"
    if not python.exists():
        return ""
    code = f"import importlib.metadata as m; print(m.version({name!r}))"
    return run(str(python), "-c", code)


def machine_block(old: str = "") -> str:
    """The machine and versions table; a tool or peer not installed here keeps its row
    from ``old`` (the page's current block), so a partial rerun does not drop it."""
    cpu = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    cores = len(re.findall(r"^processor", Path("/proc/cpuinfo").read_text(), re.M))
    mem = Path("/proc/meminfo").read_text().split()[1]
    rows = [
        ("machine", f"{cores} CPUs, {cpu}, {int(mem) / 2**20:.0f} GiB, Linux {platform.release()}"),
        ("inferwire", package(ROOT / ".venv", "inferwire")),
        ("Python", platform.python_version()),
        ("Rust", run("rustc", "--version")),
        ("vegeta", run(str(ROOT / ".tools/bin/vegeta"), "-version").removeprefix("Version: ")),
        ("ghz", run(str(ROOT / ".tools/bin/ghz"), "--version")),
        ("Seldon wrapper", package(ROOT / ".venv-seldon", "seldon-core")),
    ]
    peers = ROOT / ".tools" / "peers"
    for venv, name in [
        ("mlserver", "mlserver"),
        ("ray", "ray"),
        ("fastapi-images", "fastapi"),
        ("fastapi-images", "grpcio"),
        ("numpy-echo", "aiohttp"),
        ("pytriton", "nvidia-pytriton"),
        ("kserve", "kserve"),
        ("bentoml", "bentoml"),
        ("litserve", "litserve"),
        ("torchserve", "torchserve"),
    ]:
        rows.append((name, package(peers / venv, name)))
    before = dict(re.findall(r"^\| (.+?) \| (.+?) \|$", old, re.M))
    lines = ["| | version |", "|---|---|"]
    lines += [f"| {k} | {v or before.get(k)} |" for k, v in rows if v or before.get(k)]
    return "<!-- machine -->\n" + "\n".join(lines) + "\n<!-- /machine -->"


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    p.add_argument("--page", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = p.parse_args()
    page = args.page.read_text()
    out = render(page, args.results, lambda m: print(m, file=sys.stderr))
    out = MACHINE.sub(lambda m: machine_block(m[0]), out)
    args.page.write_text(out)
    for result, image in PLOTS.items():
        if (args.results / result).exists():
            (args.page.parent / image).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(args.results / result, args.page.parent / image)
    for path in plots.draw_all(args.page):  # from the tables just rendered
        print(f"drew {path}", file=sys.stderr)
    print(f"rendered {args.page}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
