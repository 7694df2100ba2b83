import time

import numpy as np


class Scorer:
    """Costs a fixed 2 ms per call whatever the rows: batching spreads it over requests."""

    def predict(self, X, features_names=None):
        time.sleep(0.002)
        return np.asarray(X).sum(axis=1, keepdims=True)
