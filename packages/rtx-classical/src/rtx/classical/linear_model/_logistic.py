"""LogisticRegression: binary or multinomial, L2 or no penalty, minimised by L-BFGS (scipy's driver on
the host; the loss and gradient are two GEMMs on the device). Objective, scaling and stopping are
scikit-learn's, so the same C and tol give the same coefficients."""
from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.optimize
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

import rtx.runtime as rt
from rtx.classical._base import (
    DeviceMixin,
    as_output,
    labels_output,
    sample_weight_or_ones,
    small_lapack,
    to_host,
)


def _log_softmax(Z, xp):
    Z = Z - Z.max(axis=1, keepdims=True)
    return Z - xp.log(xp.exp(Z).sum(axis=1, keepdims=True))


def _loss_grad_multinomial(w, X, Y, sw, l2, fit_intercept, xp):
    """Mean weighted cross-entropy + 0.5 * l2 * ||W||^2 and its gradient; w packs W (k x p) then b (k)."""
    k, p = Y.shape[1], X.shape[1]
    wd = xp.asarray(w)
    W = wd[:k * p].reshape(k, p)
    Z = X @ W.T
    if fit_intercept:
        Z += wd[k * p:]
    logP = _log_softmax(Z, xp)
    loss = -(sw * (Y * logP).sum(1)).sum()
    R = (xp.exp(logP) - Y) * sw[:, None]
    gW = R.T @ X + l2 * W
    loss = float(loss) + 0.5 * l2 * float((W * W).sum())
    g = xp.concatenate([gW.ravel(), R.sum(0)]) if fit_intercept else gW.ravel()
    return loss, to_host(g).astype(np.float64)


def _loss_grad_binary(w, X, y, sw, l2, fit_intercept, xp):
    p = X.shape[1]
    wd = xp.asarray(w)
    z = X @ wd[:p]
    if fit_intercept:
        z += wd[p]
    # log(1 + exp(-z)) for y=1, log(1 + exp(z)) for y=0, computed stably
    loss = (sw * (xp.logaddexp(0, z) - y * z)).sum()
    r = sw * (1 / (1 + xp.exp(-z)) - y)
    g = X.T @ r + l2 * wd[:p]
    loss = float(loss) + 0.5 * l2 * float(wd[:p] @ wd[:p])
    g = xp.concatenate([g, r.sum()[None]]) if fit_intercept else g
    return loss, to_host(g).astype(np.float64)


def _by_row_blocks(fn, w, X, T, sw, l2, fit_intercept, xp):
    """fn's loss and gradient summed over row blocks run side by side on rtx.runtime's pool, each with
    single-threaded BLAS (the GEMVs here took ~50 ms with OpenBLAS's two threads on this loaded machine
    against ~1 ms with one); the penalty is added once. The GPU and small inputs take fn whole."""
    n = X.shape[0]
    workers = rt.threads.cpu_workers() if xp is np else 1
    if workers <= 1 or n < 8192:
        return fn(w, X, T, sw, l2, fit_intercept, xp)
    step = -(-n // workers)
    parts = rt.threads.parallel_map(
        lambda s: fn(w, X[s:s + step], T[s:s + step], sw[s:s + step], 0.0, fit_intercept, xp), range(0, n, step))
    loss = sum(q[0] for q in parts)
    g = np.sum([q[1] for q in parts], axis=0)
    nw = X.shape[1] * (T.shape[1] if T.ndim == 2 else 1)
    loss += 0.5 * l2 * float(w[:nw] @ w[:nw])
    g[:nw] += l2 * w[:nw]
    return loss, g


class LogisticRegression(ClassifierMixin, DeviceMixin, BaseEstimator):
    def __init__(self, penalty="deprecated", *, C=1.0, l1_ratio=0.0, dual=False, tol=1e-4, fit_intercept=True,
                 intercept_scaling=1, class_weight=None, random_state=None, solver="lbfgs", max_iter=100,
                 verbose=0, warm_start=False, n_jobs=None, device="cpu"):
        self.penalty = penalty
        self.C = C
        self.l1_ratio = l1_ratio
        self.dual = dual
        self.tol = tol
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.random_state = random_state
        self.solver = solver
        self.max_iter = max_iter
        self.verbose = verbose
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.device = device

    def _l2_strength(self, sw_sum):
        penalty = self.penalty
        if penalty not in ("deprecated", "l2", None):
            raise ValueError(f"rtx.classical's LogisticRegression supports penalty='l2' or None, got {penalty!r}")
        if self.l1_ratio not in (0, 0.0, None):
            raise ValueError(f"rtx.classical's LogisticRegression supports only l1_ratio=0 (L2), got {self.l1_ratio!r}")
        if self.solver != "lbfgs":
            raise ValueError(f"rtx.classical's LogisticRegression supports solver='lbfgs', got {self.solver!r}")
        if not isinstance(self.C, numbers.Real) or self.C <= 0:
            raise ValueError(f"The 'C' parameter of LogisticRegression must be a float in the range (0.0, inf]. "
                             f"Got {self.C!r} instead.")
        if penalty is None or np.isinf(self.C):
            return 0.0
        return 1.0 / (self.C * sw_sum)

    def fit(self, X, y, sample_weight=None):
        X, y = self._validate_Xy(X, y, accept_sparse=False)
        check_classification_targets(y)
        xp = self._xp()
        self.classes_ = np.unique(y)
        k = len(self.classes_)
        if k < 2:
            raise ValueError(f"This solver needs samples of at least 2 classes in the data, but the data contains "
                             f"only one class: {self.classes_[0]!r}")
        sw = sample_weight_or_ones(sample_weight, X, xp, np.float64)
        if self.class_weight is not None:
            cw = compute_class_weight(self.class_weight, classes=self.classes_, y=y, sample_weight=to_host(sw))
            sw = sw * xp.asarray(cw[np.searchsorted(self.classes_, y)])
        # scikit-learn's objective: mean of the (class-)weighted losses + ||w||^2 / (2 C sum(weights))
        sw_sum = float(sw.sum())
        l2 = self._l2_strength(sw_sum)
        sw = sw / sw_sum
        sw = sw.astype(X.dtype)
        idx = np.searchsorted(self.classes_, y)
        p = X.shape[1]
        if k == 2:
            yd = xp.asarray(idx, dtype=X.dtype)
            n_w = p + int(self.fit_intercept)
            fun = lambda w: _by_row_blocks(_loss_grad_binary, w, X, yd, sw, l2, self.fit_intercept, xp)  # noqa: E731
        else:
            Y = xp.zeros((X.shape[0], k), dtype=X.dtype)
            Y[xp.arange(X.shape[0]), xp.asarray(idx)] = 1
            n_w = k * p + (k if self.fit_intercept else 0)
            fun = lambda w: _by_row_blocks(_loss_grad_multinomial, w, X, Y, sw, l2, self.fit_intercept,  # noqa: E731
                                            xp)
        w0 = np.zeros(n_w)
        if self.warm_start and hasattr(self, "coef_") and self.coef_.shape == ((1 if k == 2 else k), p):
            w0[: self.coef_.size] = self.coef_.ravel()
            if self.fit_intercept:
                w0[self.coef_.size:] = self.intercept_
        with small_lapack(xp):  # the L-BFGS-B driver's own BLAS calls are tiny
            res = scipy.optimize.minimize(
                fun, w0, method="L-BFGS-B", jac=True,
                options={"maxiter": self.max_iter, "maxls": 50, "gtol": self.tol, "ftol": 64 * np.finfo(float).eps})
        if res.status == 1 or (not res.success and self.max_iter > 0):
            warnings.warn("lbfgs failed to converge after %d iteration(s) (status=%d): %s. Increase the number of "
                          "iterations or scale the data." % (res.nit, res.status, res.message),
                          ConvergenceWarning, stacklevel=2)
        w = res.x
        m = 1 if k == 2 else k
        dt = to_host(X[:1]).dtype
        self.coef_ = w[: m * p].reshape(m, p).astype(dt)
        self.intercept_ = (w[m * p:] if self.fit_intercept else np.zeros(m)).astype(dt)
        self.n_iter_ = np.array([res.nit], dtype=np.int32)
        return self

    def decision_function(self, X):
        check_is_fitted(self)
        Xd = self._validate(X, reset=False, accept_sparse=False)
        xp = self._xp()
        Z = Xd @ xp.asarray(self.coef_, dtype=Xd.dtype).T + xp.asarray(self.intercept_, dtype=Xd.dtype)
        return as_output(Z[:, 0] if Z.shape[1] == 1 else Z, X)

    def predict(self, X):
        Z = to_host(self.decision_function(X))
        idx = (Z > 0).astype(int) if Z.ndim == 1 else Z.argmax(1)
        return labels_output(self.classes_, idx, X)

    def predict_proba(self, X):
        Z = self.decision_function(X)
        xp = np if not hasattr(Z, "device") or isinstance(Z, np.ndarray) else self._xp()
        if Z.ndim == 1:
            p1 = 1 / (1 + xp.exp(-Z))
            return xp.stack([1 - p1, p1], axis=1)
        return xp.exp(_log_softmax(Z, xp))

    def predict_log_proba(self, X):
        P = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            return (np if isinstance(P, np.ndarray) else self._xp()).log(P)
