"""DBSCAN: eps-neighbourhoods by chunked distance GEMMs on the device, then scikit-learn's own
expansion order (so border points shared by two clusters get the same label as scikit-learn's)."""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

from rtx.classical._base import DeviceMixin, chunk_rows, row_norms_sq, sample_weight_or_ones, sq_distances, to_host


def radius_neighborhoods(X, eps, xp, budget=64 << 20):
    """For each row, the indices of rows within eps (itself included), as a list of host arrays."""
    n = X.shape[0]
    x_sq = row_norms_sq(X, xp)
    out = []
    step = chunk_rows(n, n, X.dtype.itemsize, budget)
    eps2 = eps * eps
    for s in range(0, n, step):
        D = sq_distances(X[s:s + step], X, xp, X_sq=x_sq[s:s + step], Y_sq=x_sq)
        rows, cols = (to_host(a) for a in xp.nonzero(D <= eps2))
        cuts = np.searchsorted(rows, np.arange(1, D.shape[0]))
        out += np.split(cols, cuts)
    return out


class DBSCAN(ClusterMixin, DeviceMixin, BaseEstimator):
    def __init__(self, eps=0.5, *, min_samples=5, metric="euclidean", metric_params=None, algorithm="auto",
                 leaf_size=30, p=None, n_jobs=None, device="cpu"):
        self.eps = eps
        self.min_samples = min_samples
        self.metric = metric
        self.metric_params = metric_params
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.p = p
        self.n_jobs = n_jobs
        self.device = device

    def fit(self, X, y=None, sample_weight=None):
        if not isinstance(self.eps, numbers.Real) or self.eps <= 0:
            raise ValueError(f"The 'eps' parameter of DBSCAN must be a float in the range (0.0, inf). "
                             f"Got {self.eps!r} instead.")
        if self.metric not in ("euclidean", "minkowski") or (self.metric == "minkowski" and self.p not in (None, 2)):
            raise ValueError(f"rtx.classical's DBSCAN supports the euclidean metric only, got {self.metric!r}")
        X = self._validate(X, reset=True)
        xp = self._xp()
        neigh = radius_neighborhoods(X, float(self.eps), xp)
        sw = to_host(sample_weight_or_ones(sample_weight, X, xp, np.float64)) if sample_weight is not None else None
        if sw is None:
            n_neighbors = np.array([len(nb) for nb in neigh])
        else:
            n_neighbors = np.array([sw[nb].sum() for nb in neigh])
        core = n_neighbors >= self.min_samples
        labels = np.full(X.shape[0], -1, dtype=np.intp)
        label = 0
        for i in range(X.shape[0]):
            if labels[i] != -1 or not core[i]:
                continue
            stack = []
            while True:  # scikit-learn's dbscan_inner, depth first
                if labels[i] == -1:
                    labels[i] = label
                    if core[i]:
                        stack.extend(j for j in neigh[i] if labels[j] == -1)
                if not stack:
                    break
                i = stack.pop()
            label += 1
        self.core_sample_indices_ = np.where(core)[0]
        self.labels_ = labels
        self.components_ = to_host(X)[core].copy() if len(self.core_sample_indices_) else np.empty((0, X.shape[1]))
        return self

    def fit_predict(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).labels_
