"""Lasso and ElasticNet by cyclic (or random) coordinate descent on the Gram matrix, stopped by
scikit-learn's duality-gap test, so the same tol gives the same solution.

Objective (scikit-learn's): 1/(2 n) ||y - Xw||^2 + alpha * l1_ratio * ||w||_1
                             + 0.5 * alpha * (1 - l1_ratio) * ||w||^2
The Gram form (G = X^T X, q = X^T y) makes each coordinate update a length-p vector operation,
which is what a GPU or BLAS does well; X itself is touched twice per fit."""
from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from rtx.classical._base import DeviceMixin, sample_weight_or_ones, to_host
from rtx.classical.linear_model._base import LinearPredictMixin, center_data, set_intercept


def enet_cd_gram(w, G, q, y_norm2, alpha, beta, max_iter, tol, positive, rng, random):
    """Minimise 0.5 w'Gw - q'w + alpha |w|_1 + 0.5 beta |w|^2 (host NumPy, float64). Returns w, gap, n_iter."""
    d_w_tol = tol
    p = len(w)
    Gw = G @ w
    diag = np.diag(G).copy()
    tol = tol * y_norm2
    gap = tol + 1.0
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        w_max = d_w_max = 0.0
        for jj in range(p):
            j = rng.randint(p) if random else jj
            if diag[j] == 0.0:
                continue
            w_j = w[j]
            tmp = q[j] - Gw[j] + diag[j] * w_j
            if positive and tmp < 0:
                new = 0.0
            else:
                new = np.sign(tmp) * max(abs(tmp) - alpha, 0.0) / (diag[j] + beta)
            if new != w_j:
                Gw += G[:, j] * (new - w_j)
                w[j] = new
            d_w_max = max(d_w_max, abs(new - w_j))
            w_max = max(w_max, abs(new))
        # scikit-learn checks the gap only once the largest update is small relative to the weights.
        if w_max == 0.0 or d_w_max / w_max <= d_w_tol or n_iter == max_iter:
            gap = _gap(w, G, q, Gw, y_norm2, alpha, beta, positive)
            if gap <= tol:
                break
    return w, gap, n_iter


def _gap(w, G, q, Gw, y_norm2, alpha, beta, positive):
    q_dot_w = q @ w
    R_norm2 = y_norm2 + w @ Gw - 2.0 * q_dot_w
    XtA = q - Gw - beta * w
    dual_norm = XtA.max() if positive else np.abs(XtA).max()
    w_norm2 = w @ w
    if dual_norm > alpha:
        const = alpha / dual_norm
        gap = 0.5 * (R_norm2 + R_norm2 * const ** 2)
    else:
        const = 1.0
        gap = R_norm2
    gap += alpha * np.abs(w).sum() - const * (y_norm2 - q_dot_w) + 0.5 * beta * (1 + const ** 2) * w_norm2
    return gap


class ElasticNet(LinearPredictMixin, RegressorMixin, DeviceMixin, BaseEstimator):
    def __init__(self, alpha=1.0, *, l1_ratio=0.5, fit_intercept=True, precompute=False, max_iter=1000,
                 copy_X=True, tol=1e-4, warm_start=False, positive=False, random_state=None, selection="cyclic",
                 device="cpu"):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.precompute = precompute
        self.max_iter = max_iter
        self.copy_X = copy_X
        self.tol = tol
        self.warm_start = warm_start
        self.positive = positive
        self.random_state = random_state
        self.selection = selection
        self.device = device

    def _check_params(self):
        if not isinstance(self.alpha, numbers.Real) or self.alpha < 0:
            raise ValueError(f"The 'alpha' parameter of {type(self).__name__} must be a float in the range "
                             f"[0.0, inf). Got {self.alpha!r} instead.")
        if not isinstance(self.l1_ratio, numbers.Real) or not 0 <= self.l1_ratio <= 1:
            raise ValueError(f"The 'l1_ratio' parameter must be a float in the range [0.0, 1.0]. "
                             f"Got {self.l1_ratio!r} instead.")
        if self.selection not in ("cyclic", "random"):
            raise ValueError(f"selection should be either random or cyclic, got {self.selection!r}")
        if not isinstance(self.max_iter, numbers.Integral) or self.max_iter < 1:
            raise ValueError(f"max_iter must be an int >= 1, got {self.max_iter!r}")

    def fit(self, X, y, sample_weight=None, check_input=True):
        self._check_params()
        X, y = self._validate_Xy(X, y, y_numeric=True, multi_output=True)
        xp = self._xp()
        n = X.shape[0]
        y = xp.asarray(y, dtype=X.dtype)
        sw = sample_weight_or_ones(sample_weight, X, xp, X.dtype)
        sw = sw * (n / sw.sum())  # scikit-learn rescales the weights to sum to n_samples
        Xc, yc, X_off, y_off = center_data(X, y, sw, self.fit_intercept, xp)
        s = xp.sqrt(sw)
        Xs, ys = Xc * s[:, None], yc * (s[:, None] if yc.ndim > 1 else s)
        # The Gram system is small (p x p): it is formed on the device by BLAS, solved on the host.
        G = to_host(Xs.T @ Xs).astype(np.float64)
        Y = to_host(ys).astype(np.float64)
        Y2 = Y[:, None] if Y.ndim == 1 else Y
        Q = to_host(Xs.T @ xp.asarray(Y2, dtype=Xs.dtype)).astype(np.float64)
        alpha = self.alpha * self.l1_ratio * n
        beta = self.alpha * (1.0 - self.l1_ratio) * n
        if self.alpha == 0:
            warnings.warn("With alpha=0, this algorithm does not converge well. You are advised to use the "
                          "LinearRegression estimator", stacklevel=2)
        k = Y2.shape[1]
        if self.warm_start and hasattr(self, "coef_") and np.shape(self.coef_)[-1] == G.shape[0]:
            W0 = np.array(self.coef_, dtype=np.float64).reshape(k, -1)
        else:
            W0 = np.zeros((k, G.shape[0]))
        rng = check_random_state(self.random_state)
        coefs, gaps, iters = [], [], []
        for j in range(k):
            w, gap, it = enet_cd_gram(W0[j].copy(), G, Q[:, j], float(Y2[:, j] @ Y2[:, j]), alpha, beta,
                                      self.max_iter, self.tol, self.positive, rng, self.selection == "random")
            coefs.append(w), gaps.append(gap), iters.append(it)
            if gap > self.tol * float(Y2[:, j] @ Y2[:, j]):
                warnings.warn(f"Objective did not converge. You might want to increase the number of iterations. "
                              f"Duality gap: {gap:.3e}, tolerance: {self.tol * float(Y2[:, j] @ Y2[:, j]):.3e}",
                              ConvergenceWarning, stacklevel=2)
        coef = np.stack(coefs) if Y.ndim > 1 else coefs[0]
        self.n_iter_ = iters[0] if Y.ndim == 1 else iters
        self.dual_gap_ = gaps[0] / n if Y.ndim == 1 else np.array(gaps) / n
        set_intercept(self, coef.astype(to_host(X[:1]).dtype), X_off, to_host(y_off), self.fit_intercept)
        return self

    @property
    def sparse_coef_(self):
        from scipy import sparse
        return sparse.csr_matrix(np.atleast_2d(self.coef_))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class Lasso(ElasticNet):
    def __init__(self, alpha=1.0, *, fit_intercept=True, precompute=False, copy_X=True, max_iter=1000, tol=1e-4,
                 warm_start=False, positive=False, random_state=None, selection="cyclic", device="cpu"):
        super().__init__(alpha=alpha, l1_ratio=1.0, fit_intercept=fit_intercept, precompute=precompute,
                         max_iter=max_iter, copy_X=copy_X, tol=tol, warm_start=warm_start, positive=positive,
                         random_state=random_state, selection=selection, device=device)
