"""The notebook's vegeta and ghz command lines, run in a directory holding its request
files, with each tool's CPU time measured and its JSON report summarized.

The commands are the notebook's, word for word, except the target (host:port), the
duration, the proto path (the repository's ``proto/``, linked into the directory) and the
report format (JSON, to be parsed, where the notebook prints text).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import notebook_payloads

ROOT = Path(__file__).resolve().parents[2]
# Where scripts/install-load-tools.sh puts vegeta and ghz (same override).
TOOLS = Path(os.environ.get("LOAD_TOOLS_BIN", ROOT / ".tools" / "bin"))

VEGETA_ATTACK = (
    "vegeta attack -format=json -duration={duration} -rate=0 -max-workers=1 "
    "-targets=vegeta_{encoding}.json"
)
VEGETA_REPORT = "vegeta report -type=json"
GHZ = (
    "ghz --insecure --proto proto/prediction.proto --call seldon.protos.Seldon/Predict "
    "--data-file=./data_{encoding}.json --qps=0 --cpus=1 --concurrency=1 "
    "--duration={duration} --format json "
    """--metadata='{{"seldon": "seldon-model", "namespace": "seldon"}}' {target}"""
)
# ghz cancels the call in flight when --duration ends; the notebook shows it too.
END_OF_RUN_CODES = ("Canceled", "Unavailable")


def missing_tools() -> list[str]:
    return [str(TOOLS / t) for t in ("vegeta", "ghz") if not os.access(TOOLS / t, os.X_OK)]


def prepare(work: Path, size: int, url: str) -> None:
    """The notebook's request files for ``size`` integers, and ``proto/`` beside them."""
    notebook_payloads.write(work, size, url)
    proto = work / "proto"
    if not proto.exists():
        proto.symlink_to(ROOT / "proto", target_is_directory=True)


def argv(template: str, **values: str) -> list[str]:
    words = shlex.split(template.format(**values))
    return [str(TOOLS / words[0]), *words[1:]]


def vegeta_commands(encoding: str, duration: str) -> tuple[list[str], list[str]]:
    return argv(VEGETA_ATTACK, encoding=encoding, duration=duration), argv(VEGETA_REPORT)


def ghz_command(encoding: str, duration: str, target: str) -> list[str]:
    return argv(GHZ, encoding=encoding, duration=duration, target=target)


@dataclass
class Run:
    """One load run, summarized."""

    requests: int
    ok: int
    mean_ms: float
    p50_ms: float
    p99_ms: float
    throughput: float
    status_codes: dict[str, int]
    errors: list[str]
    tool_cpu_s: float
    command: str
    raw: dict[str, Any] = field(repr=False)

    @property
    def success(self) -> float:
        return self.ok / self.requests if self.requests else 0.0


def _cpu(rusage: Any) -> float:
    return float(rusage.ru_utime + rusage.ru_stime)


def run_pipeline(commands: list[list[str]], cwd: Path, timeout: float) -> tuple[str, list[float]]:
    """Runs ``commands[0] | commands[1] | ...`` in ``cwd``; returns the last one's stdout
    and each one's CPU seconds (from its rusage). Raises with stderr if one fails."""
    procs: list[subprocess.Popen[bytes]] = []
    errs = [tempfile.TemporaryFile() for _ in commands]
    stdin: Any = subprocess.DEVNULL
    for cmd, err in zip(commands, errs, strict=True):
        proc = subprocess.Popen(cmd, cwd=cwd, stdin=stdin, stdout=subprocess.PIPE, stderr=err)
        if stdin is not subprocess.DEVNULL:
            stdin.close()  # the new process holds the pipe now
        stdin = proc.stdout
        procs.append(proc)
    out, timed_out = _read_all(procs, timeout)
    cpu, failures = [], []
    for proc, err, cmd in zip(procs, errs, commands, strict=True):
        _, status, rusage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        cpu.append(_cpu(rusage))
        err.seek(0)
        if proc.returncode != 0:
            failures.append(f"{shlex.join(cmd)} exited {proc.returncode}: {err.read().decode()}")
        err.close()
    if timed_out:
        failures.insert(0, f"killed after {timeout:.0f} s")
    if failures:
        raise RuntimeError("\n".join(failures))
    return out, cpu


def _read_all(procs: list[subprocess.Popen[bytes]], timeout: float) -> tuple[str, bool]:
    """The last process's whole stdout; every process is killed if it takes too long."""
    expired = threading.Event()

    def kill() -> None:
        expired.set()
        for proc in procs:
            proc.kill()

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        stdout = procs[-1].stdout
        assert stdout is not None
        data = stdout.read()
        stdout.close()
    finally:
        timer.cancel()
    return data.decode(), expired.is_set()


def run_vegeta(work: Path, encoding: str, duration: str, timeout: float) -> Run:
    """``vegeta attack ... | vegeta report -type=json``; the tool CPU is the attack's."""
    commands = list(vegeta_commands(encoding, duration))
    out, (attack_cpu, _) = run_pipeline(commands, work, timeout)
    report = json.loads(out)
    lat = report["latencies"]
    codes = {str(k): int(v) for k, v in (report.get("status_codes") or {}).items()}
    return Run(
        requests=int(report["requests"]),
        ok=round(report["success"] * report["requests"]),
        mean_ms=lat["mean"] / 1e6,
        p50_ms=lat["50th"] / 1e6,
        p99_ms=lat["99th"] / 1e6,
        throughput=float(report["throughput"]),
        status_codes=codes,
        errors=list(report.get("errors") or []),
        tool_cpu_s=attack_cpu,
        command=" | ".join(shlex.join(c) for c in commands),
        raw=report,
    )


def run_ghz(work: Path, encoding: str, duration: str, target: str, timeout: float) -> Run:
    """The notebook's ghz command with ``--format json``."""
    command = ghz_command(encoding, duration, target)
    out, (cpu,) = run_pipeline([command], work, timeout)
    report = json.loads(out)
    codes = {str(k): int(v) for k, v in (report.get("statusCodeDistribution") or {}).items()}
    percentiles = {d["percentage"]: d["latency"] for d in report.get("latencyDistribution") or []}
    return Run(
        requests=int(report["count"]),
        ok=codes.get("OK", 0),
        mean_ms=report["average"] / 1e6,
        p50_ms=percentiles.get(50, 0) / 1e6,
        p99_ms=percentiles.get(99, 0) / 1e6,
        throughput=float(report["rps"]),
        status_codes=codes,
        errors=[f"{n}× {e}" for e, n in (report.get("errorDistribution") or {}).items()],
        tool_cpu_s=cpu,
        command=shlex.join(command),
        raw=report,
    )


def unexpected_ghz_failures(run: Run) -> list[str]:
    """The calls of a ghz run that did not answer OK, except the last call when ghz
    cancelled it at the end of --duration (the notebook's runs show it too)."""
    details = run.raw.get("details") or []
    failed = [i for i, d in enumerate(details) if d.get("status") != "OK"]
    if failed and failed[-1] == len(details) - 1:
        if details[-1].get("status") in END_OF_RUN_CODES:
            failed.pop()
    return [f"call {i + 1}/{len(details)}: {details[i].get('error')}" for i in failed]
