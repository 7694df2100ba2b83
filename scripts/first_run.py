"""The README's two commands measured as a newcomer meets them, and the figures the README
and the quick start give, read from what was measured.

    python3 scripts/first_run.py measure [--ci]   # about 45 minutes (60 with --ci), 2 cores
    python3 scripts/first_run.py table            # the README's table from docs/first-run.json

``measure`` clones this checkout's HEAD into a new folder and, with empty caches (Cargo's
registry, pip's, Go's and inferwire's own: ``CARGO_HOME``, ``PIP_CACHE_DIR``, ``GOPATH``,
``GOMODCACHE`` and ``XDG_CACHE_HOME`` pointed into that folder), runs exactly
``bash scripts/quickstart.sh`` until it says it serves (then Ctrl-C, as a terminal sends it
to the whole process group), the same again, and ``bash scripts/test.sh``; with ``--ci``
also ``bash .ci/run`` on a second fresh clone as CI runs it (``CI=true``, the caches the
first run filled). Wall time, CPU time (user + system, children included) and disk are
written to docs/first-run.json; docs/first-run.md keeps the runs. Run it again whenever a
dependency or a crate is added: tests/docs checks that the README's table is this file's.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "first-run.json"
SERVING = "Ctrl-C stops"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _size(*paths: Path) -> int:
    total = 0
    for p in paths:
        if p.is_file():
            total += p.stat().st_size
        for dirpath, _, files in os.walk(p):
            for f in files:
                fp = Path(dirpath, f)
                if not fp.is_symlink():
                    total += fp.stat().st_size
    return total


def _default_sigint() -> None:
    # A terminal's Ctrl-C reaches the whole process group; a child started from a script
    # in the background would inherit SIGINT ignored.
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def quickstart(clone: Path, env: dict[str, str], log: Path) -> dict[str, Any]:
    """Seconds until the quick start serves, its CPU time, and how Ctrl-C ended it."""
    cpu0, t0 = _children_cpu(), time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(
            ["bash", "scripts/quickstart.sh"],
            cwd=clone,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_default_sigint,
        )
        served = None
        while proc.poll() is None and time.monotonic() - t0 < 3600:
            if SERVING in log.read_text(errors="replace"):
                served = time.monotonic() - t0
                break
            time.sleep(0.2)
        if served is None:
            proc.kill()
            raise SystemExit(f"the quick start did not serve: {log}")
        os.killpg(proc.pid, signal.SIGINT)
        status = proc.wait(timeout=60)
    return {
        "seconds": round(served, 1),
        "cpu_seconds": round(_children_cpu() - cpu0, 1),
        "ctrl_c_status": status,
    }


def run(cmd: list[str], clone: Path, env: dict[str, str], log: Path) -> dict[str, Any]:
    """Seconds, CPU seconds and pytest's counts of one command run to its end."""
    cpu0, t0 = _children_cpu(), time.monotonic()
    with log.open("w") as out:
        status = subprocess.run(cmd, cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT)
    summary = [
        line
        for line in log.read_text(errors="replace").splitlines()
        # pytest's summaries, not cargo's "test result: ok. N passed; ... finished in".
        if re.search(r"\d+ passed.* in [\d.]+s", line) and "test result" not in line
    ]
    # The test command runs pytest twice side by side: each prints its own summary.
    counts: dict[str, int] = {}
    for line in summary:
        for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|warnings?)\b", line):
            counts[k] = counts.get(k, 0) + int(n)
    return {
        "seconds": round(time.monotonic() - t0),
        "cpu_seconds": round(_children_cpu() - cpu0),
        "status": status.returncode,
        "pytest": counts,
    }


def measure(ci: bool) -> dict[str, Any]:
    work = Path(os.environ.get("FIRST_RUN_DIR", "/tmp/inferwire-first-run"))
    shutil.rmtree(work, ignore_errors=True)
    cache, logs, clone = work / "cache", work / "logs", work / "clone"
    logs.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True
    ).stdout.strip()
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "VIRTUAL_ENV")}
    env |= {
        "CARGO_HOME": str(cache / "cargo"),
        "PIP_CACHE_DIR": str(cache / "pip"),
        "XDG_CACHE_HOME": str(cache / "xdg"),
        "GOPATH": str(cache / "go"),
        "GOMODCACHE": str(cache / "go" / "pkg" / "mod"),
        # The toolchain stays where rustup put it: only the crates' registry is emptied.
        "PATH": f"{Path.home() / '.cargo' / 'bin'}:{env.get('PATH', '')}",
    }
    out: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "commit": commit,
        "cores": os.cpu_count(),
    }
    print(f"==> quick start, empty caches ({clone})", file=sys.stderr)
    out["quickstart"] = quickstart(clone, env, logs / "quickstart.log")
    out["quickstart"]["disk_bytes"] = {
        ".venv": _size(clone / ".venv"),
        "target": _size(clone / "target"),
        "caches": _size(cache),
    }
    print("==> quick start again", file=sys.stderr)
    out["quickstart"]["again_seconds"] = quickstart(clone, env, logs / "quickstart-again.log")[
        "seconds"
    ]
    print("==> bash scripts/test.sh", file=sys.stderr)
    out["test"] = run(["bash", "scripts/test.sh"], clone, env, logs / "test.log")
    out["test"]["disk_bytes"] = {
        ".venv": _size(clone / ".venv"),
        "target": _size(clone / "target"),
        "fuzz/target": _size(clone / "fuzz" / "target"),
        ".tools": _size(clone / ".tools"),
        "caches": _size(cache),
    }
    if ci:
        ci_clone = work / "ci-clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(ci_clone)], check=True)
        print("==> CI=true bash .ci/run (a fresh clone, the caches kept)", file=sys.stderr)
        out["ci"] = run(["bash", ".ci/run"], ci_clone, env | {"CI": "true"}, logs / "ci.log")
    FIGURES.write_text(json.dumps(out, indent=2) + "\n")
    return out


def _minutes(seconds: float) -> str:
    m = seconds / 60
    return f"{m:.0f} minutes" if m >= 10 else f"{m:.1f} minutes"


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def table(fig: dict[str, Any] | None = None) -> str:
    """The README's table of what the two commands take."""
    fig = fig or json.loads(FIGURES.read_text())
    qs, test = fig["quickstart"], fig["test"]
    qs_disk = qs["disk_bytes"][".venv"] + qs["disk_bytes"]["target"]
    test_disk = sum(v for k, v in test["disk_bytes"].items() if k != "caches")
    return "\n".join(
        [
            "| | first run | again | disk | root |",
            "|---|---|---|---|---|",
            f"| `quickstart.sh` | {_minutes(qs['seconds'])} ({qs['cpu_seconds']:.0f} s of CPU), "
            f"most of it the release build (it counts the crates as it goes) "
            f"| {qs['again_seconds']:.0f} s | {_gb(qs_disk)} | no |",
            f"| `test.sh` | {_minutes(test['seconds'])} ({test['cpu_seconds']:.0f} s of CPU) "
            f"| | {_gb(test_disk)} in the clone with the quick start's, "
            f"{_gb(test['disk_bytes']['caches'])} of caches "
            f"| for `apt-get install chromium nginx` (or passwordless sudo), unless both "
            f"are installed |",
        ]
    )


def release_build_estimate(fig: dict[str, Any] | None = None) -> str:
    """What the quick start says of its build while it runs."""
    fig = fig or json.loads(FIGURES.read_text())
    return (
        f"about {_minutes(fig['quickstart']['seconds'])} on {fig['cores']} cores the first "
        f"time (measured {fig['date']}, docs/first-run.md), seconds after"
    )


def main() -> None:
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "measure":
        fig = measure("--ci" in sys.argv[2:])
        print(json.dumps(fig, indent=2))
        print(table(fig))
    elif what == "table":
        print(table())
    elif what == "estimate":
        print(release_build_estimate())
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
