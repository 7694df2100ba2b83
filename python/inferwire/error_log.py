"""Model errors in the log without a flood: a client that sends the same bad request
over and over must not fill a disk with tracebacks. The first error of a kind (the same
call, exception type and raising line) is logged with its traceback; repeats are only
counted, and summed up in one line per kind at most every ``log_repeats_every`` seconds."""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass

log = logging.getLogger("inferwire.model")

# Kinds remembered per process; past it, new kinds are counted together (a model whose
# errors come from endless distinct lines is rare, and memory stays bounded).
MAX_KINDS = 256
OTHER = ("", "", "")


@dataclass
class _Kind:
    repeats: int = 0  # since the last summary
    total: int = 1
    last_message: str = ""


class ErrorLog:
    def __init__(self, every: float = 60.0) -> None:
        self.every = every
        self._kinds: dict[tuple[str, str, str], _Kind] = {}
        self._lock = threading.Lock()
        self._flusher_pid = 0
        self._wake = threading.Event()

    def configure(self, every: float) -> None:
        self.every = every
        self._wake.set()  # a running flusher picks up the new interval

    def error(self, call: str, exc: BaseException) -> None:
        """Logs ``call``'s exception: in full the first time of its kind, else counted."""
        if self.every <= 0:
            log.error("%s raised", call, exc_info=exc)
            return
        key = (call, type(exc).__qualname__, _raised_at(exc))
        with self._lock:
            kind = self._kinds.get(key)
            if kind is None and len(self._kinds) >= MAX_KINDS:
                key = OTHER
                kind = self._kinds.setdefault(key, _Kind(total=0))
            if kind is None:
                self._kinds[key] = _Kind()
            else:
                kind.repeats += 1
                kind.total += 1
                kind.last_message = _one_line(exc)
                self._start_flusher()
                return
        log.error(
            "%s raised (repeats of this error are counted, summed up every %g s)",
            call,
            self.every,
            exc_info=exc,
        )

    def flush(self) -> None:
        """One line per kind that repeated since the last summary."""
        with self._lock:
            due = [(k, v.repeats, v.total, v.last_message) for k, v in self._kinds.items()]
            for v in self._kinds.values():
                v.repeats = 0
        for (call, exc_type, where), repeats, total, message in due:
            if not repeats:
                continue
            if not call:
                log.error(
                    "%d more model errors of kinds past the first %d (%d in all; their "
                    "tracebacks are not logged); the last: %s",
                    repeats,
                    MAX_KINDS,
                    total,
                    message,
                )
                continue
            log.error(
                "%s raised %s%s again %d times (%d in all; traceback logged the first time): %s",
                call,
                exc_type,
                f" at {where}" if where else "",
                repeats,
                total,
                message,
            )

    def _start_flusher(self) -> None:
        # Per process: workers are forked after the model loads, and threads do not
        # survive a fork.
        if self._flusher_pid == os.getpid():
            return
        self._flusher_pid = os.getpid()
        threading.Thread(target=self._run, name="inferwire-error-log", daemon=True).start()

    def _run(self) -> None:
        last = time.monotonic()
        while True:
            self._wake.wait(max(0.05, last + self.every - time.monotonic()))
            self._wake.clear()
            if time.monotonic() - last >= self.every:
                last = time.monotonic()
                self.flush()


def _raised_at(exc: BaseException) -> str:
    """The innermost frame of the traceback, as ``file:line``."""
    tb = exc.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:299] + "…"


# The one per process, configured by the server from its settings.
errors = ErrorLog()
