"""TruncatedSVD (LSA): randomized SVD of the uncentred data, or scipy's ARPACK on the host."""
from __future__ import annotations

import numbers

from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from rtx.classical._base import DeviceMixin, as_output, to_host
from rtx.classical.decomposition._base import randomized_svd, svd_flip_v


class TruncatedSVD(ClassNamePrefixFeaturesOutMixin, TransformerMixin, DeviceMixin, BaseEstimator):
    def __init__(self, n_components=2, *, algorithm="randomized", n_iter=5, n_oversamples=10,
                 power_iteration_normalizer="auto", random_state=None, tol=0.0, device="cpu"):
        self.n_components = n_components
        self.algorithm = algorithm
        self.n_iter = n_iter
        self.n_oversamples = n_oversamples
        self.power_iteration_normalizer = power_iteration_normalizer
        self.random_state = random_state
        self.tol = tol
        self.device = device

    def fit(self, X, y=None):
        self.fit_transform(X)
        return self

    def fit_transform(self, X, y=None):
        Xd = self._validate(X, reset=True, ensure_min_features=2)
        xp = self._xp()
        k = self.n_components
        if not isinstance(k, numbers.Integral) or not 1 <= k < Xd.shape[1] + (self.algorithm == "randomized"):
            raise ValueError(f"n_components must be < n_features; got {k!r} >= {Xd.shape[1]}")
        if self.algorithm == "arpack":
            from scipy.sparse.linalg import svds
            from sklearn.utils import check_random_state
            Xh = to_host(Xd)
            v0 = check_random_state(self.random_state).uniform(-1, 1, size=min(Xh.shape))
            U, S, Vt = svds(Xh, k=k, tol=self.tol, v0=v0)
            S = S[::-1]
            U, Vt = U[:, ::-1], Vt[::-1]
            U, Vt, S = xp.asarray(U), xp.asarray(Vt), xp.asarray(S)
        elif self.algorithm == "randomized":
            U, S, Vt = randomized_svd(Xd, k, xp, n_oversamples=self.n_oversamples, n_iter=self.n_iter,
                                      random_state=self.random_state)
        else:
            raise ValueError(f"algorithm must be 'arpack' or 'randomized', got {self.algorithm!r}")
        U, Vt = svd_flip_v(U, Vt, xp)
        Z = U * S
        dt = to_host(Xd[:1]).dtype
        self.components_ = to_host(Vt).astype(dt)
        ev = to_host(xp.var(Z, axis=0))
        full_var = float(xp.var(Xd, axis=0).sum())
        self.explained_variance_ = ev.astype(dt)
        self.explained_variance_ratio_ = (ev / full_var).astype(dt)
        self.singular_values_ = to_host(S).astype(dt)
        return as_output(Z, X)

    def transform(self, X):
        check_is_fitted(self)
        Xd = self._validate(X, reset=False)
        xp = self._xp()
        return as_output(Xd @ xp.asarray(self.components_, dtype=Xd.dtype).T, X)

    def inverse_transform(self, X):
        check_is_fitted(self)
        xp = self._xp()
        Z = self._to_dev(X)
        return as_output(Z @ xp.asarray(self.components_, dtype=Z.dtype), X)

    @property
    def _n_features_out(self):
        return self.components_.shape[0]
