"""Support vector machines, mirroring sklearn.svm.

- LinearSVC: liblinear's dual coordinate descent (Hsieh et al. 2008) for the L2-regularised squared hinge
  (or hinge) loss, one-vs-rest; the intercept is a constant feature of value intercept_scaling, penalised
  with the weights, as liblinear does. The primal optimum is unique, so the coefficients are liblinear's.
- SVC: libsvm's SMO with its second-order working-set selection (WSS3, Fan, Chen and Lin 2005), the same
  two-variable update and the same rho rule, kernels rbf/poly/linear/sigmoid with gamma 'scale'/'auto',
  one-vs-one for several classes (libsvm's vote, first class on ties), decision_function_shape 'ovr' as
  scikit-learn builds it. No shrinking (it changes the path, not the optimum) and no probability outputs.
SMO runs on the host: it computes kernel rows as it needs them (one pair of samples per step, too small for
a GPU); prediction's kernel block runs on the estimator's device."""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import _ovr_decision_function, check_classification_targets
from sklearn.utils.validation import check_is_fitted

from rtx.classical._base import DeviceMixin, as_output, labels_output, sample_weight_or_ones, sq_distances, to_host

__all__ = ["SVC", "LinearSVC"]

_TAU = 1e-12  # libsvm's TAU


def _dual_cd(X, y, C, loss, tol, max_iter, rng):
    """liblinear's solve_l2r_l1l2_svc without shrinking: alpha-space coordinate descent, samples visited in a
    random order each pass, stopped when the projected gradient's spread is under tol."""
    n = X.shape[0]
    if loss == "squared_hinge":
        diag, upper = 0.5 / C, np.full(n, np.inf)
    else:
        diag, upper = np.zeros(n), C
    qd = np.einsum("ij,ij->i", X, X) + diag
    alpha = np.zeros(n)
    w = np.zeros(X.shape[1])
    for it in range(max_iter):
        pg_max, pg_min = -np.inf, np.inf
        for i in rng.permutation(n):
            g = y[i] * (X[i] @ w) - 1 + diag[i] * alpha[i]
            pg = min(g, 0.0) if alpha[i] == 0 else (max(g, 0.0) if alpha[i] >= upper[i] else g)
            pg_max, pg_min = max(pg_max, pg), min(pg_min, pg)
            if pg != 0:
                old = alpha[i]
                alpha[i] = min(max(old - g / qd[i], 0.0), upper[i])
                w += (alpha[i] - old) * y[i] * X[i]
        if pg_max - pg_min <= tol:
            return w, it + 1
    return w, max_iter


class LinearSVC(ClassifierMixin, DeviceMixin, BaseEstimator):
    def __init__(self, penalty="l2", loss="squared_hinge", *, dual="auto", tol=1e-4, C=1.0, multi_class="ovr",
                 fit_intercept=True, intercept_scaling=1, class_weight=None, verbose=0, random_state=None,
                 max_iter=1000, device="cpu"):
        self.penalty = penalty
        self.loss = loss
        self.dual = dual
        self.tol = tol
        self.C = C
        self.multi_class = multi_class
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.verbose = verbose
        self.random_state = random_state
        self.max_iter = max_iter
        self.device = device

    def fit(self, X, y, sample_weight=None):
        if self.penalty != "l2" or self.loss not in ("squared_hinge", "hinge") or self.multi_class != "ovr":
            raise ValueError(f"rtx.classical's LinearSVC supports penalty='l2', loss='squared_hinge' or 'hinge', "
                             f"multi_class='ovr'; got penalty={self.penalty!r}, loss={self.loss!r}, "
                             f"multi_class={self.multi_class!r}")
        if not isinstance(self.C, numbers.Real) or self.C <= 0:
            raise ValueError(f"The 'C' parameter of LinearSVC must be a float in the range (0.0, inf). "
                             f"Got {self.C!r} instead.")
        X, y = self._validate_Xy(X, y)
        check_classification_targets(y)
        Xh = to_host(X).astype(np.float64)
        self.classes_, idx = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"The number of classes has to be greater than one; got {len(self.classes_)} class")
        sw = to_host(sample_weight_or_ones(sample_weight, X, np, np.float64))
        if self.class_weight is not None:
            from sklearn.utils.class_weight import compute_class_weight
            sw = sw * compute_class_weight(self.class_weight, classes=self.classes_, y=y)[idx]
        keep = sw > 0  # a zero weight is a zero upper bound: the sample never enters w
        if self.fit_intercept:
            Xh = np.hstack([Xh, np.full((len(Xh), 1), float(self.intercept_scaling))])
        rng = np.random.default_rng(0 if self.random_state is None else self.random_state)
        targets = [1] if len(self.classes_) == 2 else range(len(self.classes_))
        W, iters = [], []
        for c in targets:
            yc = np.where(idx == c, 1.0, -1.0)
            w, it = _dual_cd(Xh[keep], yc[keep], self.C * sw[keep], self.loss, self.tol, self.max_iter, rng)
            W.append(w)
            iters.append(it)
        W = np.array(W)
        if max(iters) >= self.max_iter:
            import warnings
            warnings.warn("Liblinear failed to converge, increase the number of iterations.", ConvergenceWarning,
                          stacklevel=2)
        dt = to_host(X[:1]).dtype
        p = X.shape[1]
        self.coef_ = W[:, :p].astype(dt)
        self.intercept_ = (W[:, p] * self.intercept_scaling if self.fit_intercept else np.zeros(len(W))).astype(dt)
        self.n_iter_ = max(iters)
        return self

    def decision_function(self, X):
        check_is_fitted(self)
        Xd = self._validate(X, reset=False)
        xp = self._xp()
        Z = Xd @ xp.asarray(self.coef_, dtype=Xd.dtype).T + xp.asarray(self.intercept_, dtype=Xd.dtype)
        return as_output(Z[:, 0] if Z.shape[1] == 1 else Z, X)

    def predict(self, X):
        Z = to_host(self.decision_function(X))
        idx = (Z > 0).astype(int) if Z.ndim == 1 else Z.argmax(1)
        return labels_output(self.classes_, idx, X)


class _KRows:
    """Kernel rows K[i, :] computed when SMO first asks for them and kept (libsvm's kernel cache): SMO touches
    only the rows of its working sets, usually far fewer than n, so the n x n matrix is never formed. The
    cache holds at most cache_mb megabytes (oldest rows dropped first, as a bound rather than libsvm's LRU).
    Each row is one GEMV against X plus the kernel's map; the squared norms for rbf are computed once."""

    def __init__(self, svc, X, cache_mb):
        self.svc, self.X, self.rows = svc, X, {}
        self.xx = np.einsum("ij,ij->i", X, X)
        self.max_rows = max(2, int(cache_mb * 2**20 // max(8 * len(X), 1)))

    def __getitem__(self, i):
        r = self.rows.get(i)
        if r is None:
            if len(self.rows) >= self.max_rows:
                del self.rows[next(iter(self.rows))]
            r = self.rows[i] = self.svc._kernel_row(self.X, i, self.xx)
        return r


def _smo(K, KD, y, C, tol, max_iter):
    """libsvm's Solver::Solve (no shrinking) for min 0.5 a'Qa - e'a, 0 <= a <= C, y'a = 0, Q = yy' * K
    (K[i] gives a kernel row; KD is K's diagonal). Returns alpha and rho (the decision is
    sum a_i y_i K(x_i, x) - rho) and the iteration count.

    The walk is libsvm's step for step; per step it costs a dozen NumPy passes over n: it keeps -y*G (what
    both selections compare) rather than G, the index sets I_up/I_low as 0/-inf penalties changed only at
    the two updated entries, and the second-order denominators of a row i (libsvm's quad_coef) with the
    row. Multiplying by y = +-1 is exact, so the values are those of the plain formulas."""
    n = len(y)
    alpha = np.zeros(n)
    yG = y.astype(np.float64).copy()                   # -y * G with G = -1 at alpha = 0
    ninf = -np.inf
    # I_up = {alpha < C, y = +1} | {alpha > 0, y = -1}; I_low the reverse; as penalties 0 (in) / -inf (out)
    pen_up = np.where(y > 0, 0.0, ninf)
    pen_low = np.where(y < 0, 0.0, ninf)
    quad = {}                                          # i -> max-clamped (KD_i + KD - 2 K_i), libsvm's TAU rule
    buf, obj = np.empty(n), np.empty(n)
    it = 0
    while max_iter < 0 or it < max_iter:
        np.add(yG, pen_up, out=buf)
        i = int(buf.argmax())
        gmax = buf[i]
        np.subtract(pen_low, yG, out=buf)              # -(yG) on I_low, -inf elsewhere: its max is -gmin
        if gmax == ninf or gmax + buf.max() < tol:     # an empty I_up or I_low, or the KKT gap below tol
            break
        Ki = K[i]
        a = quad.get(i)
        if a is None:
            a = (KD[i] + KD) - 2 * Ki
            a = quad[i] = np.where(a > 0, a, _TAU)
            if len(quad) > K.max_rows:
                del quad[next(iter(quad))]
        # WSS3: j in I_low with b = gmax - yG_j > 0 maximising b^2 / a_ij (libsvm: minimising -b^2 / a)
        np.subtract(gmax, yG, out=buf)
        np.maximum(buf, 0.0, out=buf)                  # b <= 0 scores 0 and loses to any b > 0
        np.multiply(buf, buf, out=buf)
        np.divide(buf, a, out=obj)
        obj += pen_low
        j = int(obj.argmax())
        Kj = K[j]
        yi, yj = y[i], y[j]
        Ci, Cj = C[i], C[j]
        ai, aj = alpha[i], alpha[j]
        Gi, Gj = -yi * yG[i], -yj * yG[j]
        if yi != yj:
            q = max(KD[i] + KD[j] + 2 * (yi * yj * Ki[j]), _TAU)
            delta = (-Gi - Gj) / q
            diff = ai - aj
            ai += delta
            aj += delta
            if diff > 0:
                if aj < 0:
                    aj, ai = 0.0, diff
            elif ai < 0:
                ai, aj = 0.0, -diff
            if diff > Ci - Cj:
                if ai > Ci:
                    ai, aj = Ci, Ci - diff
            elif aj > Cj:
                aj, ai = Cj, Cj + diff
        else:
            q = max(KD[i] + KD[j] - 2 * (yi * yj * Ki[j]), _TAU)
            delta = (Gi - Gj) / q
            s = ai + aj
            ai -= delta
            aj += delta
            if s > Ci:
                if ai > Ci:
                    ai, aj = Ci, s - Ci
            elif aj < 0:
                aj, ai = 0.0, s
            if s > Cj:
                if aj > Cj:
                    aj, ai = Cj, s - Cj
            elif ai < 0:
                ai, aj = 0.0, s
        # G += Q_i d_i + Q_j d_j, i.e. yG -= K_i (y_i d_i) + K_j (y_j d_j)
        np.multiply(Ki, yi * (ai - alpha[i]), out=buf)
        buf += Kj * (yj * (aj - alpha[j]))
        yG -= buf
        alpha[i], alpha[j] = ai, aj
        for t, at in ((i, ai), (j, aj)):
            pos = y[t] > 0
            pen_up[t] = 0.0 if ((at < C[t]) if pos else (at > 0)) else ninf
            pen_low[t] = 0.0 if ((at > 0) if pos else (at < C[t])) else ninf
        it += 1
    # libsvm's calculate_rho: the mean of y*G over free alphas, else the middle of the feasible interval
    yG = -yG
    at_up, at_low = alpha >= C, alpha <= 0
    free = ~at_up & ~at_low
    if free.any():
        rho = float(yG[free].mean())
    else:
        ub_mask = (at_up & (y < 0)) | (at_low & (y > 0))
        lb_mask = (at_up & (y > 0)) | (at_low & (y < 0))
        ub = yG[ub_mask].min() if ub_mask.any() else np.inf
        lb = yG[lb_mask].max() if lb_mask.any() else -np.inf
        rho = float((ub + lb) / 2)
    return alpha, rho, it


class SVC(ClassifierMixin, DeviceMixin, BaseEstimator):
    def __init__(self, *, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0, shrinking=True,
                 probability=False, tol=1e-3, cache_size=200, class_weight=None, verbose=False, max_iter=-1,
                 decision_function_shape="ovr", break_ties=False, random_state=None, device="cpu"):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.probability = probability
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.verbose = verbose
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.device = device

    def _kernel(self, A, B, xp):
        if self.kernel == "linear":
            return A @ B.T
        if self.kernel == "rbf":
            return xp.exp(-self._gamma * sq_distances(A, B, xp))
        if self.kernel == "poly":
            return (self._gamma * (A @ B.T) + self.coef0) ** self.degree
        return xp.tanh(self._gamma * (A @ B.T) + self.coef0)

    def _kernel_row(self, X, i, xx):
        """K(x_i, X) as a 1-D row, by the same operations as _kernel (rbf: norms precomputed once)."""
        if self.kernel == "rbf":
            D = X[i:i + 1] @ X.T
            D *= -2
            D += xx[i]
            D += xx[None, :]
            np.maximum(D, 0, out=D)
            return np.exp(-self._gamma * D)[0]
        return self._kernel(X[i:i + 1], X, np)[0]

    def fit(self, X, y, sample_weight=None):
        if self.kernel not in ("rbf", "poly", "linear", "sigmoid"):
            raise ValueError(f"rtx.classical's SVC supports kernel 'rbf', 'poly', 'linear' or 'sigmoid'; got "
                             f"{self.kernel!r}")
        if self.probability:
            raise ValueError("rtx.classical's SVC has no probability estimates (probability=False only)")
        if self.decision_function_shape not in ("ovr", "ovo"):
            raise ValueError(f"decision_function_shape must be 'ovr' or 'ovo', got {self.decision_function_shape!r}")
        if not isinstance(self.C, numbers.Real) or self.C <= 0:
            raise ValueError(f"The 'C' parameter of SVC must be a float in the range (0.0, inf). Got {self.C!r} "
                             f"instead.")
        X, y = self._validate_Xy(X, y)
        check_classification_targets(y)
        xp = self._xp()
        self.classes_, idx = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"The number of classes has to be greater than one; got {len(self.classes_)} class")
        sw = to_host(sample_weight_or_ones(sample_weight, X, np, np.float64))
        if self.class_weight is not None:
            from sklearn.utils.class_weight import compute_class_weight
            sw = sw * compute_class_weight(self.class_weight, classes=self.classes_, y=y)[idx]
        g = self.gamma
        if isinstance(g, str):
            if g not in ("scale", "auto"):
                raise ValueError(f"When 'gamma' is a string, it should be either 'scale' or 'auto'. Got {g!r} "
                                 f"instead.")
            var = float(xp.var(X))
            g = (1.0 / (X.shape[1] * var) if var != 0 else 1.0) if g == "scale" else 1.0 / X.shape[1]
        elif g <= 0:
            raise ValueError(f"gamma must be > 0, got {g!r}")
        self._gamma = float(g)
        # SMO asks for one kernel row at a time: too small a step for a GPU, so it runs on the host
        Xf = to_host(X).astype(np.float64)
        if self.kernel == "rbf":
            kdiag = np.ones(len(Xf))
        else:
            xx = np.einsum("ij,ij->i", Xf, Xf)
            kdiag = xx if self.kernel == "linear" else (
                (self._gamma * xx + self.coef0) ** self.degree if self.kernel == "poly"
                else np.tanh(self._gamma * xx + self.coef0))
        # libsvm's one-vs-one: a binary problem per pair (i < j), class i as +1; zero-weight samples left out
        pairs, used = [], np.zeros(len(idx), dtype=bool)
        n_iter = []
        k = len(self.classes_)
        for a in range(k):
            for b in range(a + 1, k):
                rows = np.flatnonzero(((idx == a) | (idx == b)) & (sw > 0))
                yy = np.where(idx[rows] == a, 1.0, -1.0)
                K = _KRows(self, Xf[rows], self.cache_size)
                alpha, rho, it = _smo(K, kdiag[rows], yy, self.C * sw[rows], self.tol, self.max_iter)
                sv = alpha > 0
                pairs.append((rows[sv], alpha[sv] * yy[sv], rho))
                used[rows[sv]] = True
                n_iter.append(it)
        self.support_ = np.flatnonzero(used)
        order = np.argsort(idx[self.support_], kind="stable")  # scikit-learn groups support vectors by class
        self.support_ = self.support_[order]
        self.support_vectors_ = to_host(X)[self.support_]
        self.n_support_ = np.bincount(idx[self.support_], minlength=k).astype(np.int32)
        pos = {s: t for t, s in enumerate(self.support_)}
        self._pairs = [(np.array([pos[s] for s in r], dtype=np.int64), c, rho) for r, c, rho in pairs]
        self.intercept_ = np.array([-rho for _, _, rho in pairs])
        if k == 2:  # scikit-learn flips the binary problem so that a positive decision means classes_[1]
            self.intercept_ = -self.intercept_
        self.n_iter_ = np.array(n_iter, dtype=np.int32)
        self.fit_status_ = 0
        self.shape_fit_ = X.shape
        return self

    def _ovo(self, X):
        check_is_fitted(self)
        Xd = self._validate(X, reset=False)
        xp = self._xp()
        Ks = to_host(self._kernel(Xd.astype(xp.float64), xp.asarray(self.support_vectors_, dtype=xp.float64), xp))
        return np.stack([Ks[:, r] @ c - rho for r, c, rho in self._pairs], axis=1)

    def decision_function(self, X):
        D = self._ovo(X)
        k = len(self.classes_)
        if k == 2:
            return as_output(-D[:, 0], X)
        if self.decision_function_shape == "ovr":
            D = _ovr_decision_function(D < 0, -D, k)
        return as_output(D, X)

    def predict(self, X):
        D = self._ovo(X)
        k = len(self.classes_)
        votes = np.zeros((D.shape[0], k), dtype=np.int64)
        t = 0
        for a in range(k):
            for b in range(a + 1, k):
                win = D[:, t] > 0
                votes[:, a] += win
                votes[:, b] += ~win
                t += 1
        if self.break_ties and self.decision_function_shape == "ovr" and k > 2:
            idx = np.argmax(_ovr_decision_function(D < 0, -D, k), axis=1)
        else:
            idx = votes.argmax(1)  # the first class with the most votes, as libsvm
        return labels_output(self.classes_, idx, X)
