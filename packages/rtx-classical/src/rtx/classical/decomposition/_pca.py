"""PCA by full SVD, by the covariance eigendecomposition (n_samples >> n_features) or randomized SVD,
with scikit-learn's 'auto' policy, n_components as int / float / 'mle' (Minka), whiten, and its sign
convention, so components equal scikit-learn's."""
from __future__ import annotations

import numbers
from math import lgamma, log, pi

import numpy as np

from rtx.classical._base import as_output, gram, small_lapack, to_host
from rtx.classical.decomposition._base import _BasePCA, randomized_svd, svd_flip_v


def _assess_dimension(spectrum, rank, n_samples):
    """Minka's log-likelihood of a rank for PCA (scikit-learn's formula)."""
    n_features = spectrum.shape[0]
    if spectrum[rank - 1] < 1e-15:
        return -np.inf
    pu = -rank * log(2.0)
    for i in range(1, rank + 1):
        pu += lgamma((n_features - i + 1) / 2.0) - log(pi) * (n_features - i + 1) / 2.0
    pl = -np.sum(np.log(spectrum[:rank])) * n_samples / 2.0
    v = max(1e-15, np.sum(spectrum[rank:]) / (n_features - rank))
    pv = -np.log(v) * n_samples * (n_features - rank) / 2.0
    m = n_features * rank - rank * (rank + 1.0) / 2.0
    pp = log(2.0 * pi) * (m + rank) / 2.0
    s_ = spectrum.copy()
    s_[rank:] = v
    pa = 0.0
    for i in range(rank):
        j = np.arange(i + 1, n_features)
        pa += np.sum(np.log((spectrum[i] - spectrum[j]) * (1.0 / s_[j] - 1.0 / s_[i]))) + len(j) * log(n_samples)
    return pu + pl + pv + pp - pa / 2.0 - rank * log(n_samples) / 2.0


def _infer_dimension(spectrum, n_samples):
    ll = np.full(spectrum.shape[0], -np.inf)
    for rank in range(1, spectrum.shape[0]):
        ll[rank] = _assess_dimension(spectrum, rank, n_samples)
    return int(ll.argmax())


class PCA(_BasePCA):
    def __init__(self, n_components=None, *, copy=True, whiten=False, svd_solver="auto", tol=0.0,
                 iterated_power="auto", n_oversamples=10, power_iteration_normalizer="auto", random_state=None,
                 device="cpu"):
        self.n_components = n_components
        self.copy = copy
        self.whiten = whiten
        self.svd_solver = svd_solver
        self.tol = tol
        self.iterated_power = iterated_power
        self.n_oversamples = n_oversamples
        self.power_iteration_normalizer = power_iteration_normalizer
        self.random_state = random_state
        self.device = device

    def _solver(self, n, p, k):
        s = self.svd_solver
        if s not in ("auto", "full", "covariance_eigh", "randomized", "arpack"):
            raise ValueError(f"svd_solver must be one of 'auto', 'full', 'covariance_eigh', 'randomized', 'arpack'; "
                             f"got {s!r}")
        if s != "auto":
            return "randomized" if s == "arpack" else s
        if p <= 1_000 and n >= 10 * p:
            return "covariance_eigh"
        if max(n, p) <= 500 or k == "mle":
            return "full"
        if isinstance(k, numbers.Integral) and 1 <= k < 0.8 * min(n, p):
            return "randomized"
        return "full"

    def _fit(self, X, centred=False):
        """Fit; returns U, S and the centred X (None from covariance_eigh unless `centred`)."""
        # the NaN/inf scan is deferred: covariance_eigh reads it off the gram matrix's diagonal (a non-finite
        # entry makes its column's sum of squares non-finite) instead of a pass over X (~8% of the fit)
        X = self._validate(X, reset=True, ensure_min_samples=2, ensure_all_finite=False)
        xp = self._xp()
        n, p = X.shape
        k = self.n_components
        if k is None:
            k = min(n, p) - 1 if self.svd_solver == "arpack" else min(n, p)
        if isinstance(k, str):
            if k != "mle":
                raise ValueError(f"n_components={k!r} must be between 0 and min(n_samples, n_features)={min(n, p)} "
                                 "with svd_solver='full'")
            if n < p:
                raise ValueError("n_components='mle' is only supported if n_samples >= n_features")
        elif isinstance(k, numbers.Integral) and not isinstance(k, bool):
            if not 0 <= k <= min(n, p):
                raise ValueError(f"n_components={k!r} must be between 0 and min(n_samples, n_features)={min(n, p)} "
                                 f"with svd_solver='{self.svd_solver}'")
        elif isinstance(k, numbers.Real):
            if not 0 < k < 1:
                raise ValueError(f"n_components={k!r} must be between 0 and 1 when given as a float")
        else:
            raise ValueError(f"n_components must be an int, a float in (0, 1), 'mle' or None; got {k!r}")
        solver = self._solver(n, p, k)
        self._fit_svd_solver = solver
        if solver != "covariance_eigh":
            self._check_finite(X)
        mean = X.mean(axis=0)
        # covariance_eigh centres the small gram matrix instead of a copy of X (as scikit-learn does): the
        # copy cost a fifth of the fit at 100k x 256; fit_transform centres X itself when it needs it.
        Xc = None if solver == "covariance_eigh" else X - mean
        if solver == "randomized":
            if not isinstance(k, numbers.Integral):
                raise ValueError("svd_solver='randomized' needs an integer n_components")
            U, S, Vt = randomized_svd(Xc, k, xp, n_oversamples=self.n_oversamples, n_iter=self.iterated_power,
                                      random_state=self.random_state)
            U, Vt = svd_flip_v(U, Vt, xp)
            ev = S ** 2 / (n - 1)
            total_var = float(xp.var(Xc, axis=0, ddof=1).sum())
            ev_h, S_h = to_host(ev), to_host(S)
            ratio = ev_h / total_var
            n_comp = k
            noise = (total_var - ev_h.sum()) / (min(n, p) - k) if k < min(n, p) else 0.0
        else:
            if solver == "covariance_eigh":
                C = gram(X, xp)
                if not bool(xp.isfinite(xp.diagonal(C)).all()):
                    self._check_finite(X)   # raises scikit-learn's message (unless squares overflowed)
                C -= n * mean[:, None] * mean[None, :]
                C /= n - 1
                with small_lapack(xp):
                    evals, evecs = xp.linalg.eigh(C)
                evals = xp.maximum(evals[::-1], 0)
                Vt = evecs[:, ::-1].T
                U = None
                ev = evals
                S = xp.sqrt(evals * (n - 1))
            else:
                U, S, Vt = xp.linalg.svd(Xc, full_matrices=False)
                ev = S ** 2 / (n - 1)
            U, Vt = svd_flip_v(U, Vt, xp)
            ev_h, S_h = to_host(ev), to_host(S)
            ratio = ev_h / ev_h.sum()
            if k == "mle":
                n_comp = _infer_dimension(ev_h, n)
            elif isinstance(k, numbers.Real) and not isinstance(k, numbers.Integral):
                n_comp = int(np.searchsorted(np.cumsum(ratio, dtype=np.float64), k, side="right") + 1)
            else:
                n_comp = k
            noise = float(ev_h[n_comp:].mean()) if n_comp < min(n, p) else 0.0
        dt = to_host(X[:1]).dtype
        self.n_samples_ = n
        self.mean_ = to_host(mean)
        self.components_ = to_host(Vt[:n_comp]).astype(dt)
        self.n_components_ = n_comp
        self.explained_variance_ = ev_h[:n_comp].astype(dt)
        self.explained_variance_ratio_ = ratio[:n_comp].astype(dt)
        self.singular_values_ = S_h[:n_comp].astype(dt)
        self.noise_variance_ = float(noise)
        return U, S, (X - mean if Xc is None else Xc) if centred else Xc

    def _check_finite(self, X):
        from sklearn.utils.validation import _assert_all_finite
        _assert_all_finite(to_host(X), input_name="X", estimator_name=type(self).__name__)

    def fit(self, X, y=None):
        self._fit(X)
        return self

    def fit_transform(self, X, y=None):
        U, S, Xc = self._fit(X, centred=True)
        xp = self._xp()
        k = self.n_components_
        if U is None:
            Z = Xc @ xp.asarray(self.components_, dtype=Xc.dtype).T
        else:
            Z = U[:, :k] * S[:k]
        if self.whiten:
            Z = Z / xp.sqrt(xp.asarray(self.explained_variance_, dtype=Z.dtype))
        return as_output(Z, X)

    def score_samples(self, X):
        from sklearn.utils.validation import check_is_fitted
        check_is_fitted(self)
        Xd = to_host(self._validate(X, reset=False))
        Xr = Xd - self.mean_
        precision = self.get_precision()
        log_like = -0.5 * (Xr * (Xr @ precision)).sum(axis=1)
        log_like -= 0.5 * (Xd.shape[1] * log(2.0 * pi) - np.linalg.slogdet(precision)[1])
        return log_like

    def score(self, X, y=None):
        return float(np.mean(self.score_samples(X)))
