"""IncrementalPCA (Ross et al. 2008): each batch is stacked under the current components scaled by
their singular values, plus a mean-correction row, and re-decomposed: scikit-learn's algorithm."""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import gen_batches

from rtx.classical._base import to_host
from rtx.classical.decomposition._base import _BasePCA, svd_flip_v


class IncrementalPCA(_BasePCA):
    def __init__(self, n_components=None, *, whiten=False, copy=True, batch_size=None, device="cpu"):
        self.n_components = n_components
        self.whiten = whiten
        self.copy = copy
        self.batch_size = batch_size
        self.device = device

    def fit(self, X, y=None):
        for a in ("components_", "n_samples_seen_", "mean_", "var_"):
            self.__dict__.pop(a, None)
        Xd = self._validate(X, reset=True)
        n, p = Xd.shape
        bs = 5 * p if self.batch_size is None else self.batch_size
        for batch in gen_batches(n, bs, min_batch_size=self.n_components or 0):
            self._partial_fit(Xd[batch])
        return self

    def partial_fit(self, X, y=None, check_input=True):
        first = not hasattr(self, "components_")
        Xd = self._validate(X, reset=first)
        self._partial_fit(Xd)
        return self

    def _partial_fit(self, X):
        xp = self._xp()
        n, p = X.shape
        first = not hasattr(self, "components_")
        k = self.n_components
        if k is None:
            k = min(n, p) if first else self.components_.shape[0]
        elif not isinstance(k, numbers.Integral) or not 1 <= k <= p:
            raise ValueError(f"n_components={k!r} invalid for n_features={p}, need more rows than columns for "
                             "IncrementalPCA processing")
        if self.n_components is not None and k > n:
            raise ValueError(f"n_components={k!r} must be less or equal to the batch number of samples {n}.")
        if not first and self.components_.shape[0] != k:
            raise ValueError(f"Number of input features has changed from {self.components_.shape[0]} to {k} "
                             "between calls to partial_fit! Try setting n_components to a fixed value.")
        seen = 0 if first else self.n_samples_seen_
        last_mean = xp.zeros(p) if first else xp.asarray(self.mean_)
        last_var = xp.zeros(p) if first else xp.asarray(self.var_)
        Xf = X.astype(xp.float64)
        # Chan et al. running mean and variance, as scikit-learn's _incremental_mean_and_var
        new_sum = Xf.sum(0)
        total = seen + n
        mean = (last_mean * seen + new_sum) / total
        T = Xf - new_sum / n
        new_unnorm = (T ** 2).sum(0) - T.sum(0) ** 2 / n
        if seen:
            ratio = seen / n
            upd_unnorm = last_var * seen + new_unnorm + ratio / total * (last_mean * seen / ratio - new_sum) ** 2
        else:
            upd_unnorm = new_unnorm
        var = upd_unnorm / total
        if first:
            Xs = Xf - mean
        else:
            batch_mean = Xf.mean(0)
            corr = np.sqrt((seen / total) * n) * (last_mean - batch_mean)
            Xs = xp.concatenate([xp.asarray(self.singular_values_)[:, None] * xp.asarray(self.components_),
                                 Xf - batch_mean, corr[None, :]], axis=0)
        U, S, Vt = xp.linalg.svd(Xs, full_matrices=False)
        U, Vt = svd_flip_v(U, Vt, xp)
        S_h = to_host(S)
        ev = S_h ** 2 / (total - 1)
        ratio = S_h ** 2 / float(to_host(var * total).sum())
        self.n_samples_seen_ = total
        self.components_ = to_host(Vt[:k])
        self.singular_values_ = S_h[:k]
        self.mean_ = to_host(mean)
        self.var_ = to_host(var)
        self.explained_variance_ = ev[:k]
        self.explained_variance_ratio_ = ratio[:k]
        self.n_components_ = k
        self.noise_variance_ = float(ev[k:].mean()) if k not in (n, p) else 0.0
        if self.batch_size is None:
            self.batch_size_ = 5 * p
        else:
            self.batch_size_ = self.batch_size
