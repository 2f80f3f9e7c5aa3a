"""LinearDiscriminantAnalysis with scikit-learn's 'svd' solver (no covariance matrix is formed):
the whitened within-class SVD, then the SVD of the class means in that space."""
from __future__ import annotations

import numbers

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from rtx.classical._base import DeviceMixin, as_output, to_host


class LinearDiscriminantAnalysis(ClassNamePrefixFeaturesOutMixin, ClassifierMixin, TransformerMixin, DeviceMixin,
                                 BaseEstimator):
    def __init__(self, solver="svd", shrinkage=None, priors=None, n_components=None, store_covariance=False,
                 tol=1e-4, covariance_estimator=None, device="cpu"):
        self.solver = solver
        self.shrinkage = shrinkage
        self.priors = priors
        self.n_components = n_components
        self.store_covariance = store_covariance
        self.tol = tol
        self.covariance_estimator = covariance_estimator
        self.device = device

    def fit(self, X, y):
        if self.solver != "svd" or self.shrinkage is not None or self.covariance_estimator is not None:
            raise ValueError("rtx.classical's LinearDiscriminantAnalysis has the 'svd' solver only (no shrinkage, "
                             f"no covariance_estimator); got solver={self.solver!r}, shrinkage={self.shrinkage!r}")
        X, y = self._validate_Xy(X, y, ensure_min_samples=2)
        check_classification_targets(y)
        xp = self._xp()
        self.classes_, yi = np.unique(y, return_inverse=True)
        n, p = X.shape
        k = len(self.classes_)
        if n == k:
            raise ValueError("The number of samples must be more than the number of classes.")
        if k < 2:
            raise ValueError(f"The number of classes has to be greater than one; got {k} class")
        counts = np.bincount(yi)
        if self.priors is None:
            self.priors_ = counts / n
        else:
            self.priors_ = np.asarray(self.priors, dtype=float)
            if (self.priors_ < 0).any():
                raise ValueError("priors must be non-negative")
            self.priors_ = self.priors_ / self.priors_.sum()
        max_comp = min(k - 1, p)
        if self.n_components is not None:
            if not isinstance(self.n_components, numbers.Integral) or self.n_components > max_comp:
                raise ValueError("n_components cannot be larger than min(n_features, n_classes - 1).")
            max_comp = self.n_components
        self._max_components = max_comp
        Xf = X.astype(xp.float64)
        Y = xp.zeros((n, k))
        Y[xp.arange(n), xp.asarray(yi)] = 1
        means = (Y.T @ Xf) / xp.asarray(counts, dtype=xp.float64)[:, None]
        Xc = Xf - Y @ means
        if self.store_covariance:
            cov = xp.zeros((p, p))
            for c in range(k):
                Xg = Xc[xp.asarray(yi == c)]
                cov += self.priors_[c] * (Xg.T @ Xg) / Xg.shape[0]
            self.covariance_ = to_host(cov)
        xbar = xp.asarray(self.priors_) @ means
        std = Xc.std(axis=0)
        std[std == 0] = 1.0
        Xw = np.sqrt(1.0 / n) * (Xc / std)  # scikit-learn >= 1.6 scales by 1/n
        _, S, Vt = xp.linalg.svd(Xw, full_matrices=False)
        rank = int((S > self.tol).sum())
        scalings = (Vt[:rank] / std).T / S[:rank]
        fac = 1.0 / (k - 1)
        M = ((xp.sqrt((n * xp.asarray(self.priors_)) * fac)) * (means - xbar).T).T @ scalings
        _, S2, Vt2 = xp.linalg.svd(M, full_matrices=False)
        S2h = to_host(S2)
        self.explained_variance_ratio_ = (S2h ** 2 / np.sum(S2h ** 2))[:max_comp]
        rank2 = int((S2h > self.tol * S2h[0]).sum())
        scal = scalings @ Vt2.T[:, :rank2]
        coef = (means - xbar) @ scal
        intercept = -0.5 * (coef ** 2).sum(axis=1) + xp.log(xp.asarray(self.priors_))
        coef = coef @ scal.T
        intercept = intercept - xbar @ coef.T
        self.means_, self.xbar_, self.scalings_ = to_host(means), to_host(xbar), to_host(scal)
        coef, intercept = to_host(coef), to_host(intercept)
        if k == 2:
            coef = np.array(coef[1] - coef[0], ndmin=2)
            intercept = np.array(intercept[1] - intercept[0], ndmin=1)
        dt = to_host(X[:1]).dtype
        self.coef_, self.intercept_ = coef.astype(dt), intercept.astype(dt)
        return self

    def decision_function(self, X):
        check_is_fitted(self)
        Xd = self._validate(X, reset=False)
        xp = self._xp()
        Z = Xd @ xp.asarray(self.coef_, dtype=Xd.dtype).T + xp.asarray(self.intercept_, dtype=Xd.dtype)
        return as_output(Z[:, 0] if Z.shape[1] == 1 else Z, X)

    def predict(self, X):
        Z = to_host(self.decision_function(X))
        return self.classes_[(Z > 0).astype(int) if Z.ndim == 1 else Z.argmax(axis=1)]

    def predict_proba(self, X):
        Z = to_host(self.decision_function(X))
        if Z.ndim == 1:
            p1 = expit(Z)
            return np.stack([1 - p1, p1], axis=1)
        return softmax(Z, axis=1)

    def predict_log_proba(self, X):
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def transform(self, X):
        check_is_fitted(self)
        Xd = self._validate(X, reset=False)
        xp = self._xp()
        Z = (Xd - xp.asarray(self.xbar_, dtype=Xd.dtype)) @ xp.asarray(self.scalings_, dtype=Xd.dtype)
        return as_output(Z[:, : self._max_components], X)

    @property
    def _n_features_out(self):
        return self._max_components


__all__ = ["LinearDiscriminantAnalysis"]
