"""CPU time of a process and all its descendants, from /proc (Linux)."""

from __future__ import annotations

import os
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may contain spaces: split after its closing parenthesis.
    return raw[raw.rindex(")") + 2 :].split()


def tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def cpu_seconds(root: int) -> float:
    """utime + stime of ``root`` and its live descendants, in seconds."""
    total = 0
    for pid in tree(root):
        fields = _stat(pid)
        if fields:
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICK
