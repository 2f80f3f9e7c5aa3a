"""Brute-force neighbours on BLAS: squared distances by GEMM in row chunks (memory stays bounded),
k smallest by argpartition then a sort of the k; the same answers as scikit-learn's brute force."""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from rtx.classical._base import DeviceMixin, as_output, chunk_rows, row_norms_sq, sq_distances, to_host


def kneighbors_brute(Q, F, k, xp, exclude_self=False, budget=64 << 20):
    """Distances and indices of the k nearest rows of F for every row of Q (sorted by distance)."""
    n = Q.shape[0]
    f_sq = row_norms_sq(F, xp)
    dist = xp.empty((n, k), dtype=Q.dtype)
    ind = xp.empty((n, k), dtype=xp.int64)
    step = chunk_rows(n, F.shape[0], Q.dtype.itemsize, budget)
    kk = k + 1 if exclude_self else k
    for s in range(0, n, step):
        D = sq_distances(Q[s:s + step], F, xp, Y_sq=f_sq)
        if exclude_self:
            D[xp.arange(D.shape[0]), xp.arange(s, s + D.shape[0])] = xp.inf
        if kk < D.shape[1]:
            part = xp.argpartition(D, kk - 1, axis=1)[:, :kk]
        else:
            part = xp.broadcast_to(xp.arange(D.shape[1]), D.shape)
        dpart = xp.take_along_axis(D, part, axis=1)
        order = xp.argsort(dpart, axis=1, kind="stable")[:, :k]
        ind[s:s + step] = xp.take_along_axis(part, order, axis=1)
        dist[s:s + step] = xp.sqrt(xp.take_along_axis(dpart, order, axis=1))
    return dist, ind


class NeighborsBase(DeviceMixin, BaseEstimator):
    def _check_params(self):
        if self.metric not in ("minkowski", "euclidean", "l2") or (self.metric == "minkowski" and self.p != 2):
            raise ValueError(f"rtx.classical computes Euclidean neighbours only (metric='minkowski' with p=2 or "
                             f"'euclidean'); got metric={self.metric!r}, p={self.p!r}")
        if self.n_neighbors is not None and (not isinstance(self.n_neighbors, numbers.Integral)
                                             or self.n_neighbors <= 0):
            raise ValueError(f"Expected n_neighbors > 0. Got {self.n_neighbors}")

    def _fit(self, X, y=None, **kw):
        self._check_params()
        if y is None:
            X = self._validate(X, reset=True)
        else:
            X, y = self._validate_Xy(X, y, **kw)
        self._fit_X = to_host(X)
        self.n_samples_fit_ = X.shape[0]
        self.effective_metric_ = "euclidean"
        self.effective_metric_params_ = {}
        return X, y

    def kneighbors(self, X=None, n_neighbors=None, return_distance=True):
        check_is_fitted(self)
        k = self.n_neighbors if n_neighbors is None else n_neighbors
        if not isinstance(k, numbers.Integral) or k <= 0:
            raise ValueError(f"Expected n_neighbors > 0. Got {k}")
        xp = self._xp()
        F = self._to_dev(self._fit_X)
        if X is None:
            Q, X_in, self_query = F, self._fit_X, True
        else:
            Q, X_in, self_query = self._validate(X, reset=False), X, False
        n_fit = F.shape[0] - int(self_query)
        if k > n_fit:
            raise ValueError(f"Expected n_neighbors <= n_samples_fit, but n_neighbors = {k}, "
                             f"n_samples_fit = {F.shape[0]}, n_samples = {Q.shape[0]}")
        dist, ind = kneighbors_brute(Q, F.astype(Q.dtype, copy=False), k, xp, exclude_self=self_query)
        if return_distance:
            return as_output(dist, X_in), as_output(ind, X_in)
        return as_output(ind, X_in)


class NearestNeighbors(NeighborsBase):
    def __init__(self, *, n_neighbors=5, radius=1.0, algorithm="auto", leaf_size=30, metric="minkowski", p=2,
                 metric_params=None, n_jobs=None, device="cpu"):
        self.n_neighbors = n_neighbors
        self.radius = radius
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.device = device

    def fit(self, X, y=None):
        self._fit(X)
        return self

    def radius_neighbors(self, X=None, radius=None, return_distance=True, sort_results=False):
        """Per query, the distances and indices of the fitted points within radius (object arrays)."""
        check_is_fitted(self)
        r = self.radius if radius is None else radius
        xp = self._xp()
        F = self._to_dev(self._fit_X)
        Q = F if X is None else self._validate(X, reset=False)
        dists, inds = [], []
        step = chunk_rows(Q.shape[0], F.shape[0], Q.dtype.itemsize)
        for s in range(0, Q.shape[0], step):
            D = to_host(xp.sqrt(sq_distances(Q[s:s + step], F.astype(Q.dtype, copy=False), xp)))
            for i, row in enumerate(D):
                idx = np.flatnonzero(row <= r)
                if X is None:
                    idx = idx[idx != s + i]
                if sort_results:
                    idx = idx[np.argsort(row[idx], kind="stable")]
                inds.append(idx)
                dists.append(row[idx])
        out_i = np.empty(len(inds), dtype=object)
        out_i[:] = inds
        if not return_distance:
            return out_i
        out_d = np.empty(len(dists), dtype=object)
        out_d[:] = dists
        return out_d, out_i
