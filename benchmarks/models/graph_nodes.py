"""The nodes of the graph benchmark (benchmarks/graph.py): cheap on purpose, so that what
is measured is the cost of passing the message between nodes.

``Hop`` serves one node as its own server the way a Seldon graph runs it: the node's step,
then the message sent on over HTTP as JSON to the next node's server (NEXT_URL), whose
reply is the answer; each hop decodes and encodes the message again, as Seldon's executor
and wrappers do."""

from __future__ import annotations

import http.client
import json
import os
import threading
import urllib.parse
from typing import Any

import numpy as np


class Scale:
    """Transformer: X / 2."""

    def transform_input(self, X: Any, names: list[str]) -> Any:
        return np.asarray(X, dtype=np.float64) * 0.5


class Offset:
    """Model: X + 1."""

    def predict(self, X: Any, names: list[str]) -> Any:
        return np.asarray(X, dtype=np.float64) + 1.0


class Clip:
    """Output transformer: X clipped to [0, 1e9]."""

    def transform_output(self, X: Any, names: list[str]) -> Any:
        return np.clip(np.asarray(X, dtype=np.float64), 0.0, 1e9)


STEPS = {
    "scale": lambda x: Scale().transform_input(x, []),
    "offset": lambda x: Offset().predict(x, []),
    "clip": lambda x: Clip().transform_output(x, []),
}


class Hop:
    """One node of the chained deployment: STEP (scale, offset or clip) on the message's
    ndarray, then the message forwarded to NEXT_URL (if set) with one keep-alive
    connection per model thread."""

    def __init__(self) -> None:
        self.step = STEPS[os.environ["STEP"]]
        nxt = os.environ.get("NEXT_URL", "")
        self.next = urllib.parse.urlsplit(nxt) if nxt else None
        self.local = threading.local()

    def _send(self, msg: dict[str, Any]) -> dict[str, Any]:
        assert self.next is not None
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPConnection(
                self.next.hostname, self.next.port, timeout=30
            )
        body = json.dumps(msg)
        conn.request("POST", self.next.path, body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        reply = json.loads(r.read())
        if r.status != 200:
            raise RuntimeError(f"next hop answered {r.status}: {reply}")
        return reply  # type: ignore[no-any-return]

    def predict_raw(self, msg: dict[str, Any]) -> dict[str, Any]:
        x = self.step(np.asarray(msg["data"]["ndarray"]))
        out = {"data": {"names": [], "ndarray": x.tolist()}, "meta": msg.get("meta", {})}
        return self._send(out) if self.next is not None else out
