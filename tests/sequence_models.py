"""A stateful model for the tests of sequences across workers
(tests/server/security/test_forwarded_replies.py): it answers a sequence's request with
``reply_elements`` FP64 values (a request parameter), and the pid of its worker."""

from __future__ import annotations

import os
from typing import Any

import numpy as np


class SizedReply:
    def predict(self, X: Any, features_names: list[str] | None = None, meta: Any = None) -> Any:
        params = (meta or {}).get("parameters") or {}
        n = int(params.get("reply_elements", 1))
        return {
            "values": np.ones(n, np.float64),
            "pid": np.array([os.getpid()], np.int64),
        }
