"""Streamed answers: a model method that yields (a generator, or an async generator),
each piece encoded and sent as it comes.

A plain generator is advanced by the core on a thread of its own, one ``next()`` per
piece with the GIL held only for that call. An async generator runs on one event loop
per worker process (started on first use), and hands each piece to the core's ``sink``;
when the reader is slow the sink is full and the generator waits (``await``) until the
core has sent a piece. Either way a reader that goes away stops the generator at its
next piece: ``close()`` / ``aclose()`` raise ``GeneratorExit`` at its ``yield``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import numpy as np

from . import content_types
from .error_log import errors

# Pieces an unstreamed call (``/infer``, ``predict``) gathers from a streaming model
# before it joins them; a stream is bounded by the server's stream limits instead.
MAX_JOINED_PIECES = 65_536


def is_stream(out: Any) -> bool:
    return inspect.isgenerator(out) or inspect.isasyncgen(out)


def streams(fn: Any) -> bool:
    """Whether calling ``fn`` gives a generator (sync or async)."""
    fn = getattr(fn, "__func__", fn)
    return inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)


def encoded(
    pieces: Iterator[Any], requested: list[str], call: str
) -> Iterator[list[tuple[str, Any]]]:
    """A sync generator's pieces as V2 outputs; closing this closes the model's."""
    try:
        for piece in pieces:
            yield content_types.encode_outputs(piece, requested)
    except Exception as e:
        errors.error(call, e)
        raise
    finally:
        close = getattr(pieces, "close", None)
        if callable(close):
            close()


# -- async generators: one event loop per worker process -------------------------------

_loop_lock = threading.Lock()
_loop: tuple[int, asyncio.AbstractEventLoop] | None = None


def event_loop() -> asyncio.AbstractEventLoop:
    """This process's stream loop, started on first use (a worker forked from a process
    that had one starts its own)."""
    global _loop
    with _loop_lock:
        if _loop is not None and _loop[0] == os.getpid():
            return _loop[1]
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="inferwire-streams", daemon=True).start()
        _loop = (os.getpid(), loop)
        return loop


Encode = Callable[[Any, list[str]], list[tuple[Any, ...]]]


def start_async(
    pieces: AsyncIterator[Any],
    requested: list[str],
    call: str,
    sink: Any,
    patience: float,
    *,
    loop: asyncio.AbstractEventLoop | None = None,
    encode: Encode = content_types.encode_outputs,
) -> None:
    """Runs ``pieces`` on the stream loop (or ``loop``, the model's own), sending each,
    as ``encode`` makes it outputs, into ``sink`` (called by the core with the GIL, from
    the thread that admitted the stream)."""
    loop = loop or event_loop()
    driver = _drive(pieces, requested, call, sink, patience, encode)
    loop.call_soon_threadsafe(_spawn, driver)


# The loop keeps only weak references to its tasks.
_tasks: set[asyncio.Task[None]] = set()


def _spawn(driver: Any) -> None:
    task = asyncio.get_running_loop().create_task(driver)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def _drive(
    pieces: AsyncIterator[Any],
    requested: list[str],
    call: str,
    sink: Any,
    patience: float,
    encode: Encode,
) -> None:
    loop = asyncio.get_running_loop()
    try:
        async for piece in pieces:
            if not sink.has_room():
                room: asyncio.Future[None] = loop.create_future()
                sink.when_room(functools.partial(loop.call_soon_threadsafe, _wake, room))
                try:
                    await asyncio.wait_for(room, patience)
                except TimeoutError:
                    sink.give_up()  # the reader took nothing for the idle limit
                    return
            if not sink.send(encode(piece, requested)):
                return  # the reader has gone
    except Exception as e:  # the model's error ends its stream, with its message
        errors.error(call, e)
        sink.fail(e)
    finally:
        try:
            aclose: Callable[[], Any] | None = getattr(pieces, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            sink.close()


# -- unstreamed calls on a streaming model ----------------------------------------------


def gather(out: Any, resolve: Callable[[Any], Any]) -> Any:
    """A generator's pieces joined into one answer, for the unstreamed routes: each
    output's pieces concatenated along the first axis (dicts key by key)."""
    if inspect.isasyncgen(out):
        pieces = resolve(_collect_async(out))
    else:
        pieces = []
        for piece in out:
            pieces.append(piece)
            if len(pieces) > MAX_JOINED_PIECES:
                out.close()
                raise ValueError(
                    f"the model yielded more than {MAX_JOINED_PIECES} pieces for an "
                    "unstreamed request: ask for a stream instead"
                )
    return join(pieces)


async def _collect_async(out: AsyncIterator[Any]) -> list[Any]:
    pieces = []
    async for piece in out:
        pieces.append(piece)
        if len(pieces) > MAX_JOINED_PIECES:
            raise ValueError(
                f"the model yielded more than {MAX_JOINED_PIECES} pieces for an "
                "unstreamed request: ask for a stream instead"
            )
    return pieces


def join(pieces: list[Any]) -> Any:
    if not pieces:
        raise ValueError("the model yielded no piece")
    if len(pieces) == 1:
        return pieces[0]
    if all(isinstance(p, dict) for p in pieces):
        keys = list(pieces[0])
        return {k: _concat([p[k] for p in pieces if k in p]) for k in keys}
    return _concat(pieces)


def _concat(values: list[Any]) -> Any:
    arrays = []
    for v in values:
        if isinstance(v, (str, bytes)):
            arrays.append(np.array([v], dtype=object))
        else:
            arrays.append(np.atleast_1d(np.asarray(v)))
    return np.concatenate(arrays)
