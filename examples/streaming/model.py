"""Triton's decoupled "repeat" model, as a generator: for each value of ``IN`` one reply
``{OUT: [value], IDX: [index]}``, ``DELAY[i]`` ms before reply ``i``, then ``WAIT`` ms
before the stream ends. Triton's example clients for decoupled models
(``simple_grpc_custom_repeat.py``) call a model of this shape, named ``repeat_int32``."""

import time

import numpy as np


class Repeat:
    def predict_stream(self, X, names):
        values = np.asarray(X["IN"], dtype=np.int32).reshape(-1)
        delays = np.asarray(X.get("DELAY", np.zeros(len(values))), dtype=np.uint32).reshape(-1)
        wait = int(np.asarray(X.get("WAIT", [0])).reshape(-1)[0])
        for i, value in enumerate(values):
            time.sleep(int(delays[i]) / 1000 if i < len(delays) else 0)
            yield {"OUT": np.array([value], dtype=np.int32), "IDX": np.array([i], dtype=np.uint32)}
        time.sleep(wait / 1000)
