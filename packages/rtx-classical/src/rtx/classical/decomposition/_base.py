"""What PCA, IncrementalPCA and TruncatedSVD share: sign convention, randomized SVD, transforms."""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from rtx.classical._base import DeviceMixin, as_output, to_host


def svd_flip_v(U, Vt, xp):
    """scikit-learn's svd_flip(u_based_decision=False): the largest |entry| of each row of Vt is positive."""
    rows = xp.argmax(xp.abs(Vt), axis=1)
    signs = xp.sign(Vt[xp.arange(Vt.shape[0]), rows])
    signs = xp.where(signs == 0, 1, signs)
    if U is not None:
        U = U * signs[None, : U.shape[1]]
    return U, Vt * signs[:, None]


def randomized_svd(M, n_components, xp, *, n_oversamples=10, n_iter="auto", random_state=None):
    """Halko et al. randomized SVD with QR-normalised power iterations; the Gaussian test matrix is drawn
    from the same RandomState as scikit-learn's (on the host), the products run on the device."""
    rs = check_random_state(random_state)
    n_random = n_components + n_oversamples
    n, p = M.shape
    if n_iter == "auto":
        n_iter = 7 if n_components < 0.1 * min(M.shape) else 4
    transpose = n < p
    if transpose:
        M = M.T
    Q = xp.asarray(rs.normal(size=(M.shape[1], n_random)).astype(M.dtype, copy=False))
    Q = M @ Q
    for _ in range(n_iter):
        Q, _ = xp.linalg.qr(Q)
        Q, _ = xp.linalg.qr(M.T @ Q)
        Q = M @ Q
    Q, _ = xp.linalg.qr(Q)
    B = Q.T @ M
    Uh, s, Vt = xp.linalg.svd(B, full_matrices=False)
    U = Q @ Uh
    if transpose:
        return Vt[:n_components].T, s[:n_components], U[:, :n_components].T
    return U[:, :n_components], s[:n_components], Vt[:n_components]


class _BasePCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, DeviceMixin, BaseEstimator):
    def transform(self, X):
        check_is_fitted(self)
        Xd = self._validate(X, reset=False)
        xp = self._xp()
        Z = (Xd - xp.asarray(self.mean_, dtype=Xd.dtype)) @ xp.asarray(self.components_, dtype=Xd.dtype).T
        if getattr(self, "whiten", False):
            Z /= xp.sqrt(xp.asarray(self.explained_variance_, dtype=Xd.dtype))
        return as_output(Z, X)

    def inverse_transform(self, X):
        check_is_fitted(self)
        xp = self._xp()
        Z = self._to_dev(to_host(X) if not hasattr(X, "device") else X)
        C = xp.asarray(self.components_, dtype=Z.dtype)
        if getattr(self, "whiten", False):
            C = xp.sqrt(xp.asarray(self.explained_variance_, dtype=Z.dtype))[:, None] * C
        return as_output(Z @ C + xp.asarray(self.mean_, dtype=Z.dtype), X)

    def get_covariance(self):
        check_is_fitted(self)
        C = self.components_
        ev = self.explained_variance_
        if self.whiten:
            C = C * np.sqrt(ev[:, None])
        diff = np.maximum(ev - self.noise_variance_, 0.0)
        cov = (C.T * diff) @ C
        cov.flat[:: len(cov) + 1] += self.noise_variance_
        return cov

    def get_precision(self):
        return np.linalg.inv(self.get_covariance())

    @property
    def _n_features_out(self):
        return self.components_.shape[0]
