"""The code samples in docs/, found and made runnable against servers on free local ports.

A fenced ``python`` or ``bash`` block is a sample. It runs unless an HTML comment on the
line just before its fence says why not: ``<!-- no-run: needs a Kubernetes cluster -->``
(invisible on the rendered page). A block whose first line is ``# NAME.EXT`` (any
language) is a file the page's later samples use, such as ``# model.py``: it is written
into the page's working folder instead of being run.

Samples address the server as the docs do (``127.0.0.1:9000`` for REST, ``:5000`` for
gRPC); these are rewritten to the ports of the server the test started, and any other
local address is an error. In a bash sample:

- ``inferwire serve ...`` starts that sample's own server on free ports, in the background
  (with or without ``&``), waited for until ready and stopped when the sample ends;
  samples without one use the shared server;
- ``inferwire predict`` and ``inferwire publish`` get the server's URL if they name none;
- it runs with ``set -euo pipefail``, and ``curl`` fails on an HTTP error status unless
  the sample prints the status itself (``-w``, ``-i``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

RUNNABLE = ("python", "bash")
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
MARKER = re.compile(r"<!--\s*no-?run\b(.*?)-->", re.I | re.S)
GOOD_MARKER = re.compile(r"^<!-- no-run: (\S.*?) -->$")
FILE_HEADER = re.compile(r"^# ([\w./-]+\.\w+)\s*$")
ADDRESS = re.compile(r"\b(?:127\.0\.0\.1|localhost):(\d{2,5})\b")
DEFAULT_HTTP, DEFAULT_GRPC = 9000, 5000


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


def rewrite_addresses(code: str, ports: dict[int, int]) -> str:
    """``127.0.0.1:9000`` / ``localhost:9000`` → the port the test serves on. A port the
    test does not serve is an error: the sample would reach nothing."""

    def sub(m: re.Match[str]) -> str:
        port = int(m.group(1))
        if port not in ports:
            raise ValueError(f"{m.group(0)}: no server the test starts listens there")
        return f"127.0.0.1:{ports[port]}"

    return ADDRESS.sub(sub, code)


BASH_PRELUDE = r"""
set -euo pipefail
curl() {  # an HTTP error fails the sample, unless the sample prints the status itself
    local fail=--fail-with-body
    for a in "$@"; do case "$a" in -w|--write-out|-i|--include) fail=--no-fail ;; esac; done
    command curl "$fail" --silent --show-error --max-time 30 "$@"
}
_served=()
_stop() {
    local rc=$?
    for pid in "${_served[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait
    exit "$rc"
}
trap _stop EXIT
_ready() {  # PID URL LOG: wait for the server's /ready
    for _ in $(seq 600); do
        if ! kill -0 "$1" 2>/dev/null; then cat "$3" >&2; echo "inferwire serve exited" >&2; return 1; fi
        if command curl -fsk -o /dev/null "$2/ready"; then return 0; fi
        sleep 0.05
    done
    cat "$3" >&2; echo "inferwire serve was not ready in 30 s" >&2; return 1
}
set -x
"""


def bash_script(code: str, shared: tuple[str, int, int], free_port: Callable[[], int]) -> str:
    """The sample as a script: continuation lines joined, ``.venv/bin/`` dropped (the
    venv's bin is first on PATH), ``inferwire serve`` started in the background on free ports,
    ``inferwire predict`` / ``publish`` given the server's URL when they name none, and
    addresses rewritten to the server the sample uses (its own, else the shared one)."""
    code = code.replace("\\\n", " ").replace(".venv/bin/", "")
    lines = code.splitlines()
    scheme, http, grpc = shared
    ports = {DEFAULT_HTTP: http, DEFAULT_GRPC: grpc}
    served = [n for n, line in enumerate(lines) if re.match(r"\s*inferwire serve\b", line)]
    if len(served) > 1:
        raise ValueError("a sample may start one server")
    for n in served:
        args = shlex.split(lines[n], comments=True)[2:]
        if args and args[-1] == "&":
            args.pop()
        elif args and args[-1].endswith("&"):
            args[-1] = args[-1][:-1]
        redirects = [a for a in args if re.match(r"^[12]?>>?[^&]", a)]
        args = [a for a in args if a not in redirects]
        stderr = [a for a in redirects if a.startswith("2>")]
        http, grpc = free_port(), free_port()
        ports = {DEFAULT_HTTP: http, DEFAULT_GRPC: grpc}
        for flag, port in (("--http-port", http), ("--grpc-port", grpc)):
            if flag in args:
                ports[int(args[args.index(flag) + 1])] = port
        scheme = "https" if "--tls-cert" in args else "http"
        log = re.sub(r"^2>>?", "", stderr[0]) if stderr else f"serve-{http}.log"
        lines[n] = (
            f"inferwire serve {shlex.join(args)} --host 127.0.0.1 --http-port {http} "
            f"--grpc-port {grpc} >{log} 2>&1 & _served+=($!); "
            f"_ready $! {scheme}://127.0.0.1:{http} {log}"
        )
    url = f"{scheme}://127.0.0.1:{http}"
    for n, line in enumerate(lines):
        if n in served:
            continue
        line = rewrite_addresses(line, ports)
        line = re.sub(r"\binferwire predict\b(?!.*--url)", f"inferwire predict --url {url}", line)
        lines[n] = re.sub(
            r"\binferwire publish\b(?!.*--server)", f"inferwire publish --server {url}", line
        )
    return BASH_PRELUDE + "\n".join(lines) + "\n"
