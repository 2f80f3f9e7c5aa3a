"""KNeighborsClassifier and KNeighborsRegressor over the brute-force search."""
from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from rtx.classical._base import to_host
from rtx.classical.neighbors._base import NeighborsBase


def _weights(dist, weights):
    """None for uniform; 1/d for 'distance' (a query with a zero distance takes those neighbours only,
    as scikit-learn does); or the user's callable."""
    if weights in (None, "uniform"):
        return None
    if weights == "distance":
        with np.errstate(divide="ignore"):
            w = 1.0 / dist
        inf_rows = np.isinf(w).any(axis=1)
        w[inf_rows] = np.isinf(w[inf_rows]).astype(float)
        return w
    if callable(weights):
        return weights(dist)
    raise ValueError("weights not recognized: should be 'uniform', 'distance', or a callable function; "
                     f"got {weights!r}")


class _KNeighborsSupervised(NeighborsBase):
    def __init__(self, n_neighbors=5, *, weights="uniform", algorithm="auto", leaf_size=30, p=2,
                 metric="minkowski", metric_params=None, n_jobs=None, device="cpu"):
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.p = p
        self.metric = metric
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.device = device

    def _neigh(self, X):
        check_is_fitted(self)
        dist, ind = self.kneighbors(X)
        dist, ind = to_host(dist), to_host(ind)
        return _weights(dist, self.weights), ind


class KNeighborsClassifier(ClassifierMixin, _KNeighborsSupervised):
    def fit(self, X, y):
        _weights(np.ones((1, 1)), self.weights)
        _, y = self._fit(X, y)
        check_classification_targets(y)
        self.classes_, self._y = np.unique(y, return_inverse=True)
        self.outputs_2d_ = False
        return self

    def predict_proba(self, X):
        check_is_fitted(self)
        w, ind = self._neigh(X)
        labels = self._y[ind]
        k = len(self.classes_)
        P = np.zeros((ind.shape[0], k))
        ww = np.ones(ind.shape) if w is None else w
        np.add.at(P, (np.repeat(np.arange(ind.shape[0]), ind.shape[1]), labels.ravel()), ww.ravel())
        norm = P.sum(axis=1, keepdims=True)
        norm[norm == 0] = 1.0
        return P / norm

    def predict(self, X):
        check_is_fitted(self)
        return self.classes_[self.predict_proba(X).argmax(axis=1)]


class KNeighborsRegressor(RegressorMixin, _KNeighborsSupervised):
    def fit(self, X, y):
        _weights(np.ones((1, 1)), self.weights)
        _, y = self._fit(X, y, y_numeric=True, multi_output=True)
        self._y = np.asarray(y)
        return self

    def predict(self, X):
        w, ind = self._neigh(X)
        Y = self._y[ind]
        if w is None:
            return Y.mean(axis=1)
        w = w if Y.ndim == 2 else w[:, :, None]
        return (Y * w).sum(axis=1) / w.sum(axis=1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
