"""Ridge regression: the normal equations by Cholesky (primal or dual, whichever system is smaller)
or by the SVD, as scikit-learn's 'cholesky' and 'svd' solvers."""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from rtx.classical._base import DeviceMixin, sample_weight_or_ones, to_host
from rtx.classical.linear_model._base import LinearPredictMixin, center_data, set_intercept

SOLVERS = ("auto", "cholesky", "svd")


def _solve_cholesky(X, y, alpha, xp):
    """(X^T X + a I) w = X^T y, or through the n x n kernel when n_features > n_samples."""
    n, p = X.shape
    alpha = xp.asarray(alpha, dtype=X.dtype)
    if p <= n:
        A = X.T @ X
        B = X.T @ y
        if alpha.size == 1:
            A[xp.diag_indices(p)] += alpha
            return _posv(A, B, xp)
        return xp.stack([_posv(A + a * xp.eye(p, dtype=X.dtype), B[:, j], xp) for j, a in enumerate(alpha)], 1)
    K = X @ X.T
    if alpha.size == 1:
        K[xp.diag_indices(n)] += alpha
        return X.T @ _posv(K, y, xp)
    return xp.stack([X.T @ _posv(K + a * xp.eye(n, dtype=X.dtype), y[:, j], xp) for j, a in enumerate(alpha)], 1)


def _posv(A, B, xp):
    """Solve a symmetric positive definite system (a singular one falls back to lstsq, as sklearn does)."""
    try:
        L = xp.linalg.cholesky(A)
        if not bool(xp.isfinite(L).all()):  # CuPy returns NaNs instead of raising
            raise np.linalg.LinAlgError
    except np.linalg.LinAlgError:
        return xp.linalg.lstsq(A, B, rcond=None)[0]
    if xp is np:
        from scipy.linalg import cho_solve
        return cho_solve((L, True), B)
    from cupyx.scipy.linalg import solve_triangular
    return solve_triangular(L.T, solve_triangular(L, B, lower=True), lower=False)


def _solve_svd(X, y, alpha, xp):
    U, s, Vt = xp.linalg.svd(X, full_matrices=False)
    keep = s > 1e-15
    s, U, Vt = s[keep], U[:, keep], Vt[keep]
    Uty = U.T @ y
    alpha = xp.asarray(alpha, dtype=X.dtype)
    if y.ndim == 1:
        return Vt.T @ (s / (s ** 2 + alpha) * Uty)
    d = s[:, None] / (s[:, None] ** 2 + alpha.reshape(1, -1))
    return Vt.T @ (d * Uty)


class Ridge(LinearPredictMixin, RegressorMixin, DeviceMixin, BaseEstimator):
    def __init__(self, alpha=1.0, *, fit_intercept=True, copy_X=True, max_iter=None, tol=1e-4, solver="auto",
                 positive=False, random_state=None, device="cpu"):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.copy_X = copy_X
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.positive = positive
        self.random_state = random_state
        self.device = device

    def fit(self, X, y, sample_weight=None):
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS} in rtx.classical, got {self.solver!r}")
        if self.positive:
            raise ValueError("positive=True is not supported by rtx.classical's Ridge (scikit-learn needs the "
                             "'lbfgs' solver for it)")
        alpha = np.asarray(self.alpha, dtype=np.float64).ravel()
        if isinstance(self.alpha, numbers.Real) and not isinstance(self.alpha, bool):
            if self.alpha < 0:
                raise ValueError(f"The 'alpha' parameter of Ridge must be a float in the range [0.0, inf). "
                                 f"Got {self.alpha!r} instead.")
        elif (alpha < 0).any():
            raise ValueError("alpha values must be non-negative")
        X, y = self._validate_Xy(X, y, y_numeric=True, multi_output=True)
        xp = self._xp()
        y = xp.asarray(y, dtype=X.dtype)
        if alpha.size not in (1, 1 if y.ndim == 1 else y.shape[1]):
            raise ValueError(f"Number of targets and number of penalties do not correspond: "
                             f"{1 if y.ndim == 1 else y.shape[1]} != {alpha.size}")
        sw = sample_weight_or_ones(sample_weight, X, xp, X.dtype)
        Xc, yc, X_off, y_off = center_data(X, y, sw, self.fit_intercept, xp)
        s = xp.sqrt(sw)
        Xs, ys = Xc * s[:, None], yc * (s[:, None] if yc.ndim > 1 else s)
        a = alpha if alpha.size > 1 else alpha[0]
        if self.solver == "svd":
            coef = _solve_svd(Xs, ys, a, xp)
        else:
            coef = _solve_cholesky(Xs, ys, a, xp)
        self.solver_ = "cholesky" if self.solver == "auto" else self.solver
        set_intercept(self, coef.T, X_off, to_host(y_off), self.fit_intercept)
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags
