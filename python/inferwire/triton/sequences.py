"""What Triton's sequence batcher does for a Python-backend model, done here:

* ``Instances``: every request of a sequence runs on the model instance that ran the
  sequence's first request, until its last (Triton gives a sequence a slot on one
  instance), so a model may keep a sequence's state in ``self``, as Triton's own QA
  models do (``qa/python_models/sequence_py``, the ``dyna_sequence`` test backend).
* ``Controls``: the control inputs the config's ``sequence_batching.control_input``
  names (START, END, READY, CORRID), added to each request's inputs as Triton's
  sequence batcher adds them (``sequence_batch_scheduler.cc``: shape [1], [1, 1] with a
  batch dimension; the false/true value the config gives; READY true on every request
  that reaches the model; CORRID the correlation id in the config's data type)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..errors import BadRequest
from .config import ModelConfig

START, END = 1, 2  # TRITONSERVER_REQUEST_FLAG_SEQUENCE_START / _END

# Each control kind's tensor from the request's flags; the type by the config's field.
_BOOLEAN = {
    "CONTROL_SEQUENCE_START": lambda flags: bool(flags & START),
    "CONTROL_SEQUENCE_END": lambda flags: bool(flags & END),
    "CONTROL_SEQUENCE_READY": lambda flags: True,
}
_VALUES = {"int32_false_true": np.int32, "fp32_false_true": np.float32, "bool_false_true": np.bool_}
_CORRID = {
    "TYPE_UINT64": np.uint64,
    "TYPE_INT64": np.int64,
    "TYPE_UINT32": np.uint32,
    "TYPE_INT32": np.int32,
    "TYPE_STRING": np.object_,
}
_PROTOCOL = {np.uint64: "UINT64", np.int64: "INT64", np.uint32: "UINT32", np.int32: "INT32"}
_PROTOCOL[np.object_] = "BYTES"


class Instances:
    """A model's instances, each running one ``execute`` at a time. ``take(sequence)``
    waits for the instance the sequence is on (one with the fewest sequences, for its
    first request); a request of no sequence takes any free instance. A sequence leaves
    its instance at its END, or after ``idle_s`` without a request (Triton's
    ``max_sequence_idle_microseconds``, after which it frees the slot too)."""

    def __init__(self, instances: list[Any], idle_s: float = 1.0) -> None:
        self.all = instances
        self._busy = [False] * len(instances)
        self._idle_s = idle_s
        self._cond = threading.Condition()
        # correlation id -> (instance index, last request's time)
        self._on: dict[int | str, tuple[int, float]] = {}

    def check(self, sequence: int | str, flags: int, model: str) -> None:
        """Refuses, in Triton's words, a request its sequence batcher refuses: one with
        no correlation id, or one that does not START a sequence that is not going on
        (never begun, ended, or idle past its timeout)."""
        if sequence in (0, ""):
            raise BadRequest(
                f"inference request to model '{model}' must specify a non-zero or non-empty "
                "correlation ID"
            )
        if flags & START:
            return
        with self._cond:
            placed = self._on.get(sequence)
            if placed is None or time.monotonic() - placed[1] > self._idle_s:
                raise BadRequest(
                    f"inference request for sequence {sequence} to model '{model}' must "
                    "specify the START flag on the first request of the sequence"
                )

    @contextmanager
    def take(self, sequence: int | str = 0, flags: int = 0) -> Iterator[Any]:
        with self._cond:
            i = self._place(sequence, flags) if sequence not in (0, "") else None
            while self._busy[i] if i is not None else all(self._busy):
                self._cond.wait()
            if i is None:
                i = self._busy.index(False)
            self._busy[i] = True
        try:
            yield self.all[i]
        finally:
            with self._cond:
                self._busy[i] = False
                if flags & END:
                    self._on.pop(sequence, None)
                self._cond.notify_all()

    def _place(self, sequence: int | str, flags: int) -> int:
        now = time.monotonic()
        for key, (_, seen) in list(self._on.items()):
            if now - seen > self._idle_s:
                del self._on[key]
        placed = self._on.get(sequence)
        if placed is None or flags & START:
            load = [0] * len(self.all)
            for index, _ in self._on.values():
                load[index] += 1
            index = min(range(len(self.all)), key=lambda k: (load[k], k))
        else:
            index = placed[0]
        self._on[sequence] = (index, now)
        return index


class Controls:
    """The control tensors of one model: ``tensors(flags, correlation_id)`` gives them
    as (name, array) pairs, none for a model without ``control_input``."""

    def __init__(self, config: ModelConfig) -> None:
        self._shape = (1, 1) if config.max_batch_size > 0 else (1,)
        self._controls: list[tuple[str, str, Any]] = []
        for control_input in (config.sequence_batching or {}).get("control_input", []):
            for control in control_input.get("control", []):
                kind = control.get("kind", "CONTROL_SEQUENCE_START")
                if kind == "CONTROL_SEQUENCE_CORRID":
                    spec: Any = _CORRID[control.get("data_type", "TYPE_UINT64")]
                else:
                    field = next(f for f in _VALUES if control.get(f))
                    spec = [_VALUES[field](v) for v in control[field]]
                self._controls.append((control_input["name"], kind, spec))

    def tensors(
        self, flags: int, correlation_id: int | str, *, model: str = "", request_id: str = ""
    ) -> list[tuple[str, Any]]:
        out = []
        for name, kind, spec in self._controls:
            if kind == "CONTROL_SEQUENCE_CORRID":
                if isinstance(correlation_id, str) != (spec is np.object_):
                    raise BadRequest(
                        f"[request id: {request_id or '<id_unknown>'}] sequence batching "
                        f"control '{name}' data-type is "
                        f"'{'BYTES' if isinstance(correlation_id, str) else 'UINT64'}', but "
                        f"model '{model}' expects '{_PROTOCOL[spec]}'"
                    )
                value: Any = str(correlation_id).encode() if spec is np.object_ else correlation_id
                array = np.full(self._shape, value, dtype=spec)
            else:
                false, true = spec
                value = true if _BOOLEAN[kind](flags) else false  # type: ignore[no-untyped-call]
                array = np.full(self._shape, value, dtype=type(value))
            out.append((name, array))
        return out
