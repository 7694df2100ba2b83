"""CPU time of a process tree, from /proc (Linux).

A server's CPU per request is measured as the change of this sum over a load run. The
Seldon wrapper is a tree (gunicorn master and worker for REST, a multiprocessing child
for gRPC, another gunicorn for metrics); inferwire may fork workers. Per process,
``utime + stime`` in /proc/PID/stat already covers all its threads; ``cutime + cstime``
adds the children it has reaped, so a worker that exits mid-run is not lost.
"""

from __future__ import annotations

import os
from pathlib import Path

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (field 3 onwards)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may contain spaces or parentheses.
    return raw[raw.rindex(")") + 2 :].split()


def descendants(root: int) -> list[int]:
    """``root`` and every live process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields:
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def cpu_seconds(root: int) -> float:
    """User + system CPU seconds of ``root``, its threads and its descendants."""
    ticks = 0
    for pid in descendants(root):
        fields = _stat_fields(pid)
        if fields:
            # utime, stime, cutime, cstime are fields 14-17 of /proc/PID/stat.
            ticks += sum(int(f) for f in fields[11:15])
    return ticks / TICKS_PER_SECOND
