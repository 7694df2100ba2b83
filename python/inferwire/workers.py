"""Workers: the model is loaded once and both ports are bound once, then ``--workers``
processes (one by default) are forked from the loaded process (its memory shared
copy-on-write). They inherit the listening sockets and take connections from one shared
accept queue, so what a dying or draining worker has not accepted yet stays there for
the others (or for its replacement). This process stays behind as the supervisor: it
restarts a worker that dies, with backoff and a log line saying why; replaces at once a
worker that exits 0 on its own (recycled after ``max_requests`` or ``max_worker_memory``);
and forwards SIGTERM/SIGINT so that every worker drains."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from .error_log import errors

log = logging.getLogger("inferwire.workers")

# A worker that lived less than this before dying is restarted after a growing pause,
# so that a model that crashes at once does not make the supervisor spin.
_HEALTHY_AFTER = 10.0
_FIRST_PAUSE = 0.1
_LONGEST_PAUSE = 10.0
_POLL = 0.05
_SAME_STOP = 1.0


def _drain_when_orphaned(supervisor: int) -> None:
    """Asks the kernel for SIGTERM (a drain) when the supervisor dies: a supervisor
    killed with SIGKILL cannot pass a signal on, and an orphaned worker would go on
    serving on the shared sockets with no one to restart or stop it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the supervisor's own signals only
        return
    if os.getppid() != supervisor:  # it died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


_PR_SET_PDEATHSIG = 1


def describe_status(status: int) -> str:
    """Why a worker ended, in words."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"was killed by {name}"
    if os.WIFEXITED(status):
        return f"exited with status {os.WEXITSTATUS(status)}"
    return f"ended (status {status})"


@dataclass
class _Worker:
    index: int
    pid: int
    started: float
    pause: float = _FIRST_PAUSE
    recycled: bool = False


@dataclass
class Supervisor:
    """Forks and watches the workers. ``serve_worker(index, restarted)`` runs in each
    child and serves until told to stop; ``on_restart()`` counts a restart in the shared
    metrics."""

    serve_worker: Callable[[int, bool], None]
    workers: int
    grace_period: float
    on_restart: Callable[[], None]
    on_exit: Callable[[int], None]
    on_recycle: Callable[[], None] = lambda: None
    # At SIGTERM, after the workers are told: lets go of the supervisor's own listening
    # sockets, so that once the workers have drained, new connections are refused.
    on_stop: Callable[[], None] = lambda: None
    _live: dict[int, _Worker] = field(default_factory=dict)
    _stopping: float | None = None
    _forced: bool = False

    def run(self) -> None:
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            for i in range(self.workers):
                self._spawn(i)
            self._watch()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self._stopping is None:
            self._stopping = time.monotonic()
            log.info(
                "%s: stopping %d workers (grace %.1fs)",
                signal.Signals(signum).name,
                len(self._live),
                self.grace_period,
            )
            self._signal_all(signal.SIGTERM)
            self.on_stop()
        elif not self._forced and time.monotonic() - self._stopping >= _SAME_STOP:
            # A second Ctrl-C: do not wait for the drain. (One at once is the same stop
            # said twice: a terminal's SIGINT to the group and a wrapper's SIGTERM.)
            self._forced = True
            log.warning("stopping now: killing the workers")
            self._signal_all(signal.SIGKILL)

    def _signal_all(self, sig: int) -> None:
        for w in self._live.values():
            try:
                os.kill(w.pid, sig)
            except ProcessLookupError:
                pass

    def _spawn(self, index: int, pause: float = _FIRST_PAUSE, restarted: bool = False) -> None:
        supervisor = os.getpid()
        pid = os.fork()
        if pid == 0:
            _drain_when_orphaned(supervisor)
            self._child(index, restarted)
        self._live[pid] = _Worker(index, pid, time.monotonic(), pause)
        log.debug("worker %d started (pid %d)", index, pid)

    def _child(self, index: int, restarted: bool) -> None:
        # The worker's own server handles SIGTERM/SIGINT (it drains); never return into
        # the supervisor's code, whatever happens.
        code = 0
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            self.serve_worker(index, restarted)
        except BaseException as e:
            log.error("worker %d failed: %s", index, e)
            code = 1
        finally:
            errors.flush()  # the repeats counted since the last summary
            logging.shutdown()
            os._exit(code)

    def _watch(self) -> None:
        pending: list[tuple[float, _Worker]] = []  # restarts waiting out their pause
        while self._live or (pending and self._stopping is None):
            self._reap(pending)
            now = time.monotonic()
            if self._stopping is None:
                for due, w in [p for p in pending if p[0] <= now]:
                    pending.remove((due, w))
                    self._spawn(w.index, w.pause, restarted=True)
                    if not w.recycled:
                        self.on_restart()
            elif self._live and now - self._stopping > self.grace_period + 5.0:
                log.warning("workers still running after the grace period: killing them")
                self._signal_all(signal.SIGKILL)
                self._stopping = now  # give the kernel a moment before trying again
            time.sleep(_POLL)

    def _reap(self, pending: list[tuple[float, _Worker]]) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            w = self._live.pop(pid, None)
            if w is None:
                continue
            self.on_exit(w.index)
            if self._stopping is not None:
                log.debug("worker %d (pid %d) %s", w.index, pid, describe_status(status))
                continue
            lived = time.monotonic() - w.started
            if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
                # It drained and left on its own (max_requests, max_worker_memory): its
                # connections wait in the shared queue for the new one, started at once.
                log.info(
                    "worker %d (pid %d) recycled after %.1fs; starting a new one",
                    w.index,
                    pid,
                    lived,
                )
                self.on_recycle()
                pending.append((time.monotonic(), _Worker(w.index, pid, w.started, recycled=True)))
                continue
            pause = _FIRST_PAUSE if lived >= _HEALTHY_AFTER else min(w.pause * 2, _LONGEST_PAUSE)
            log.error(
                "worker %d (pid %d) %s after %.1fs; restarting it in %.1fs",
                w.index,
                pid,
                describe_status(status),
                lived,
                pause,
            )
            w.pause = pause
            pending.append((time.monotonic() + pause, w))


def run_workers(
    server: Any,
    workers: int,
    grace_period: float,
    on_bound: Callable[[int, int], None],
    on_stopped: Callable[[], None] | None = None,
) -> None:
    """Serves ``server`` (an ``inferwire._core.Server`` built before the fork) from
    ``workers`` processes until SIGTERM/SIGINT. Its ports are bound here, once: the workers
    inherit the sockets and share one accept queue. ``on_stopped`` runs in each worker
    once it has drained."""
    # Said here, before any worker accepts: a client's first answer can come from any
    # worker, and whoever reads the log then finds the line.
    on_bound(*server.listen())

    def serve_worker(index: int, restarted: bool) -> None:
        def bound(http_port: int, grpc_port: int) -> None:
            log.debug("worker %d (pid %d) listening", index, os.getpid())

        server.serve(bound, index, workers)
        if on_stopped is not None:
            on_stopped()

    try:
        Supervisor(
            serve_worker,
            workers,
            grace_period,
            server.worker_restarted,
            server.worker_exited,
            server.worker_recycled,
            server.unlisten,
        ).run()
    finally:
        # The folder where the workers' sequence sockets were (named after this process
        # by the core's sequences.rs); each worker removed its own socket.
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(tempfile.gettempdir(), f"inferwire-sequences-{os.getpid()}"))
