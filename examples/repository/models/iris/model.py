import numpy as np


class Iris:
    """A stand-in classifier: probabilities from the first feature."""

    class_names = ["setosa", "versicolor", "virginica"]

    def predict(self, X, features_names=None):
        X = np.atleast_2d(np.asarray(X, dtype=float))
        scores = np.stack([7 - X[:, 0], np.full(len(X), 1.0), X[:, 0] - 5], axis=1).clip(0.01)
        return scores / scores.sum(axis=1, keepdims=True)
