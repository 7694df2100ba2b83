"""The code samples of a documentation page, run as a reader pastes them: in order, into
one shell.

A fenced ``python`` or ``bash`` block is a sample. It runs unless an HTML comment on the
line just before its fence says why not: ``<!-- no-run: needs a Kubernetes cluster -->``
(invisible on the rendered page). A block whose first line is ``# NAME.EXT`` (any
language) is a file the page has the reader save, such as ``# model.py``: the test writes
it into the page's working folder before the page's shell starts (a ``python`` one is
compiled and a ``yaml`` one parsed first, so a broken file fails the page).

Every other sample is pasted, exactly as written, into the page's one ``bash``:

- a ``bash`` block is its lines, unchanged: no port, command or path is rewritten, so a
  server a page starts runs on the port the page names (the documented defaults: 9000 and
  5000, Triton's 8000/8001/8002, TorchServe's 8080/8081/8082/7070/7071), a block that
  starts one in the background shows how it waits until it is ready and how it stops it,
  and the next block finds the port free or fails;
- a ``python`` block is a script the reader runs: it is saved as ``sample_LINE.py`` in
  the working folder and run by the page's shell as ``python sample_LINE.py``, with the
  ``python`` first on ``PATH`` (the quick start's virtualenv).

The shell starts in a fresh, empty working folder with the virtualenv's ``bin`` first on
``PATH``, as ``source .venv/bin/activate`` leaves a reader's (pages call ``inferwire`` and
``python``, not ``.venv/bin/...``). It runs with ``set -eo pipefail`` and ``set -x``, so
the first command that fails ends the page, and ``curl`` is wrapped only to fail on an
HTTP error status as a reader would see it (``--fail-with-body``, unless the sample
prints the status itself with ``-w`` / ``-i`` or asks for ``-f``) and to give up after
30 s. What the page starts in the background it must stop: the test fails a page that
leaves a process running, after killing it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

RUNNABLE = ("python", "bash")
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
MARKER = re.compile(r"<!--\s*no-?run\b(.*?)-->", re.I | re.S)
GOOD_MARKER = re.compile(r"^<!-- no-run: (\S.*?) -->$")
FILE_HEADER = re.compile(r"^# ([\w./-]+\.\w+)\s*$")
ADDRESS = re.compile(r"\b(?:127\.0\.0\.1|localhost|0\.0\.0\.0):(\d{2,5})\b")
PORT_FLAG = re.compile(r"--[\w-]*port[= ](\d{2,5})\b")
PORT_SETTING = re.compile(r"\b[\w.]*(?:port|address)\w*\s*[=:]\s*(?:[\w.:/]*:)?(\d{4,5})\b", re.I)
# The ports each server command listens on unless told otherwise.
DEFAULT_PORTS = {
    "inferwire serve": (9000, 5000),
    "inferwire start": (8080, 8081, 8082),
    "inferwire tritonserver": (8000, 8001, 8002),
    "inferwire torchserve": (8080, 8081, 8082, 7070, 7071),
}


@dataclass(frozen=True)
class Sample:
    page: str  # relative to docs/
    line: int  # the opening fence's line, from 1
    lang: str
    code: str
    no_run: str | None  # the marker's reason

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def file(self) -> str | None:
        """The file name a ``# NAME.EXT`` first line gives the block."""
        m = FILE_HEADER.match(self.code.split("\n", 1)[0])
        return m.group(1) if m else None


def samples(docs: Path) -> list[Sample]:
    """Every python and bash block, and every block that is a file, of every page."""
    out = []
    for path in sorted(docs.rglob("*.md")):
        out += page_samples(path, str(path.relative_to(docs)))
    return out


def page_samples(path: Path, page: str) -> list[Sample]:
    """The samples of one page, named ``page``."""
    out = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        code = "\n".join(line.removeprefix(indent) for line in lines[i + 1 : end]) + "\n"
        marker = MARKER.search(lines[i - 1]) if i else None
        reason = None
        if marker:
            good = GOOD_MARKER.match(lines[i - 1].strip())
            reason = good.group(1) if good else ""
        sample = Sample(page, i + 1, lang, code, reason)
        if lang in RUNNABLE or sample.file:
            out.append(sample)
        i = end + 1
    return out


def marker_problems(docs: Path) -> list[str]:
    """Markers without a reason, misspelt, or not directly before a sample's fence."""
    problems = []
    for path in [docs] if docs.is_file() else sorted(docs.rglob("*.md")):
        lines = path.read_text().splitlines()
        for n, line in enumerate(lines):
            if not MARKER.search(line):
                continue
            where = f"{path.name if docs.is_file() else path.relative_to(docs)}:{n + 1}"
            if not GOOD_MARKER.match(line.strip()):
                problems.append(f"{where}: write it as <!-- no-run: the reason -->: {line!r}")
            nxt = FENCE.match(lines[n + 1]) if n + 1 < len(lines) else None
            if not nxt or nxt.group(2) not in RUNNABLE:
                problems.append(f"{where}: a no-run marker must be the line before a sample")
    return problems


BASH_PRELUDE = r"""
set -eo pipefail
curl() {  # an HTTP error status fails the page, unless the sample shows it or asks for -f
    local - fail=--fail-with-body a
    set +x  # the call is traced where the page makes it; its options here are not
    for a in "$@"; do
        case "$a" in
            -w|--write-out|-i|--include|-f|--fail|--fail-with-body|--fail-early) fail= ;;
            --*) ;;
            -*f*) fail= ;;
        esac
    done
    command curl ${fail:+"$fail"} --max-time 30 "$@"
}
set -x
"""


def page_script(page: list[Sample]) -> str:
    """The page's runnable samples, in order, as one bash script (see the module's
    docstring); ``# NAME.EXT`` files are written by :func:`write_files`."""
    parts = [BASH_PRELUDE]
    for s in page:
        if s.no_run is not None or s.file:
            continue
        parts.append(f"# --- {s.id}")
        parts.append(f"python sample_{s.line}.py" if s.lang == "python" else s.code.rstrip())
    return "\n".join(parts) + "\n"


def write_files(page: list[Sample], folder: Path) -> None:
    """The page's ``# NAME.EXT`` blocks and its python samples, saved in ``folder``."""
    import yaml

    for s in page:
        if s.no_run is not None:
            continue
        name = s.file or (f"sample_{s.line}.py" if s.lang == "python" else None)
        if name is None:
            continue
        if s.lang == "python":
            compile(s.code, f"{s.id} ({name})", "exec")
        elif s.lang == "yaml":
            yaml.safe_load(s.code)
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(s.code)


def runs(page: list[Sample]) -> bool:
    """Whether the page has a sample that runs (not only files or no-run blocks)."""
    return any(s.no_run is None and not s.file for s in page)


def ports(page: list[Sample]) -> set[int]:
    """The local ports the page's runnable samples use: the addresses and port flags or
    settings they name, and the defaults of the servers they start."""
    found: set[int] = set()
    for s in page:
        if s.no_run is not None:
            continue
        found |= {int(p) for p in ADDRESS.findall(s.code)}
        found |= {int(p) for p in PORT_FLAG.findall(s.code)}
        if s.file:
            found |= {int(p) for p in PORT_SETTING.findall(s.code)}
        for command, defaults in DEFAULT_PORTS.items():
            if re.search(rf"\b{command}\b", s.code):
                found |= set(defaults)
    return found
