"""LinearRegression and what the linear models share: centring with sample weights, the intercept,
and the linear decision function."""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from rtx.classical._base import DeviceMixin, as_output, sample_weight_or_ones, to_host


def center_data(X, y, sw, fit_intercept, xp):
    """Weighted means of X and y (zeros without an intercept) and the centred copies."""
    if not fit_intercept:
        X_off = xp.zeros(X.shape[1], dtype=X.dtype)
        y_off = xp.zeros(y.shape[1:], dtype=X.dtype) if y.ndim > 1 else X.dtype.type(0)
        return X, y, X_off, y_off
    w = sw / sw.sum()
    X_off = w @ X
    y_off = w @ y
    return X - X_off, y - y_off, X_off, y_off


def set_intercept(est, coef, X_off, y_off, fit_intercept):
    """coef_ (n_features,) or (n_targets, n_features) and intercept_ as scikit-learn stores them."""
    coef = to_host(coef)
    est.coef_ = coef
    if fit_intercept:
        est.intercept_ = to_host(y_off - (coef @ to_host(X_off) if coef.ndim == 1 else coef @ to_host(X_off)))
        if est.intercept_.ndim == 0:
            est.intercept_ = float(est.intercept_)
    else:
        est.intercept_ = 0.0 if coef.ndim == 1 else np.zeros(coef.shape[0])


class LinearPredictMixin:
    def _decision(self, X):
        check_is_fitted(self)
        Xd = self._validate(X, reset=False, accept_sparse=False)
        xp = self._xp()
        coef = xp.asarray(self.coef_, dtype=Xd.dtype)
        return Xd @ coef.T + xp.asarray(self.intercept_, dtype=Xd.dtype), X

    def predict(self, X):
        out, X0 = self._decision(X)
        return as_output(out, X0)


class LinearRegression(LinearPredictMixin, RegressorMixin, DeviceMixin, BaseEstimator):
    """Ordinary least squares by an SVD-based least-squares solve (scikit-learn uses scipy's lstsq)."""

    def __init__(self, *, fit_intercept=True, copy_X=True, tol=1e-6, n_jobs=None, positive=False, device="cpu"):
        self.fit_intercept = fit_intercept
        self.copy_X = copy_X
        self.tol = tol
        self.n_jobs = n_jobs
        self.positive = positive
        self.device = device

    def fit(self, X, y, sample_weight=None):
        X, y = self._validate_Xy(X, y, y_numeric=True, multi_output=True)
        xp = self._xp()
        y = xp.asarray(y, dtype=X.dtype)
        sw = sample_weight_or_ones(sample_weight, X, xp, X.dtype)
        Xc, yc, X_off, y_off = center_data(X, y, sw, self.fit_intercept, xp)
        s = xp.sqrt(sw)
        Xs = Xc * s[:, None]
        ys = yc * (s[:, None] if yc.ndim > 1 else s)
        if self.positive:
            from scipy.optimize import nnls
            Xh, yh = to_host(Xs), to_host(ys)
            if yh.ndim == 1:
                coef = nnls(Xh, yh)[0]
            else:
                coef = np.stack([nnls(Xh, yh[:, j])[0] for j in range(yh.shape[1])])
            self.rank_, self.singular_ = None, None
        else:
            coef, _, rank, sing = xp.linalg.lstsq(Xs, ys, rcond=None)
            coef = coef.T
            self.rank_, self.singular_ = int(rank), to_host(sing)
        set_intercept(self, coef, X_off, to_host(y_off), self.fit_intercept)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
