"""SGDClassifier and SGDRegressor: scikit-learn's plain SGD (sklearn/linear_model/_sgd_fast.pyx), step for step.

The same losses, learning-rate schedules ('optimal', 'invscaling', 'constant', 'adaptive'), L2/L1/elastic-net
penalties (L1 by the cumulative-penalty clipping of Tsuruoka et al.), averaging, stopping rule (objective or
validation score, `n_iter_no_change`) and even the same sample order: the per-epoch Fisher-Yates shuffle is
scikit-learn's xorshift generator seeded from `random_state` in the same order of draws. So for the same
hyper-parameters the coefficients agree to rounding, with or without shuffling.

SGD is a sequential walk over samples, one small update after each: it runs on the host with NumPy even for
device='cuda' (a GPU launch per sample would be far slower); prediction is one GEMM on the device. One-vs-rest
runs all the binary problems in the same walk (a (n_classes, n_features) update per step), not one after another.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np
import scipy.special
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._available_if import available_if
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from rtx.classical._base import DeviceMixin, as_output, labels_output, sample_weight_or_ones, to_host

MAX_INT = np.iinfo(np.int32).max
_LR = ("constant", "optimal", "invscaling", "adaptive")
_UNBOUNDED = ("squared_hinge", "squared_error", "squared_epsilon_insensitive")   # gradients clipped at 1e12


# ---- losses: (loss(y, p), dloss/dp(y, p)), vectorised over classes ------------------------------------------

def _hinge(threshold):
    return (lambda y, p: np.where(p * y <= threshold, threshold - p * y, 0.0),
            lambda y, p: -y * (p * y <= threshold))


def _squared_hinge(y, p):
    z = 1.0 - p * y
    return np.where(z > 0, z * z, 0.0)


def _log1pexp(x):
    return np.logaddexp(0.0, x)


_expit = scipy.special.expit


def _modified_huber(y, p):
    z = p * y
    return np.where(z >= 1, 0.0, np.where(z >= -1, (1 - z) ** 2, -4 * z))


def _modified_huber_grad(y, p):
    z = p * y
    return np.where(z >= 1, 0.0, np.where(z >= -1, 2 * (1 - z) * -y, -4 * y))


def _huber(eps):
    return (lambda y, p: np.where(np.abs(y - p) <= eps, 0.5 * (y - p) ** 2, eps * (np.abs(y - p) - 0.5 * eps)),
            lambda y, p: np.where(np.abs(p - y) <= eps, p - y, np.where(p - y >= 0, eps, -eps)))


def _eps_insensitive(eps):
    return (lambda y, p: np.maximum(np.abs(y - p) - eps, 0.0),
            lambda y, p: np.where(y - p > eps, -1.0, np.where(p - y > eps, 1.0, 0.0)))


def _sq_eps_insensitive(eps):
    return (lambda y, p: np.maximum(np.abs(y - p) - eps, 0.0) ** 2,
            lambda y, p: np.where(y - p > eps, -2 * (y - p - eps), np.where(p - y > eps, 2 * (p - y - eps), 0.0)))


def _loss_functions(loss, epsilon):
    table = {
        "hinge": _hinge(1.0),
        "perceptron": _hinge(0.0),
        "squared_hinge": (_squared_hinge, lambda y, p: np.where(1 - p * y > 0, -2 * y * (1 - p * y), 0.0)),
        "log_loss": (lambda y, p: _log1pexp(p) - y * p, lambda y, p: _expit(p) - y),
        "modified_huber": (_modified_huber, _modified_huber_grad),
        "squared_error": (lambda y, p: 0.5 * (p - y) ** 2, lambda y, p: p - y),
        "huber": _huber(epsilon),
        "epsilon_insensitive": _eps_insensitive(epsilon),
        "squared_epsilon_insensitive": _sq_eps_insensitive(epsilon),
    }
    return table[loss]


# ---- scikit-learn's sample order ---------------------------------------------------------------------------

def _xorshift_permute(ind, seed):
    """sklearn.utils._seq_dataset's shuffle: Fisher-Yates driven by a 32-bit xorshift (our_rand_r), in place."""
    s = int(seed) & 0xFFFFFFFF or 1
    n = len(ind)
    for i in range(n - 1):
        s ^= (s << 13) & 0xFFFFFFFF
        s ^= s >> 17
        s ^= (s << 5) & 0xFFFFFFFF
        j = i + (s % 0x80000000) % (n - i)
        ind[i], ind[j] = ind[j], ind[i]


def _sgd_seed(random_state, regressor=False):
    """The two draws scikit-learn makes: make_dataset's dataset seed (unused by the walk) and the walk's seed;
    fit_binary draws the dataset's first, _fit_regressor the walk's first."""
    rs = check_random_state(random_state)
    if regressor:
        return rs.randint(0, MAX_INT)
    rs.randint(1, MAX_INT)
    return rs.randint(MAX_INT)


def _advance_wscale(ws, shrink):
    """scikit-learn keeps w as w_data * wscale; each L2 step multiplies wscale, which resets to 1 (folding into
    w_data) once below 1e-9. Returns wscale after the steps in `shrink` (n_steps, k)."""
    ws = ws.copy()
    for c in range(len(ws)):
        f = shrink[:, c]
        while len(f):
            cp = ws[c] * np.cumprod(f)
            low = np.flatnonzero(cp < 1e-9)
            if not len(low):
                ws[c] = cp[-1]
                break
            ws[c] = 1.0
            f = f[low[0] + 1:]
    return ws


# ---- the walk ----------------------------------------------------------------------------------------------

def plain_sgd(W, b, avgW, avgb, Y, X, sw, cw_pos, cw_neg, seeds, *, loss, epsilon, penalty, alpha, l1_ratio,
              val_mask, score_cb, n_iter_no_change, max_iter, tol, fit_intercept, shuffle, learning_rate, eta0,
              power_t, t0, average):
    """k independent binary/regression problems walked side by side. W (k, p), b (k,), Y (k, n) targets.
    Returns W, b, avgW, avgb, n_iter per problem. Mirrors _plain_sgd line by line (see the module docstring)."""
    k, p = W.shape
    n = X.shape[0]
    loss_fn, dloss_fn = _loss_functions(loss, epsilon)
    l1_ratio = {"l2": 0.0, "l1": 1.0, None: 0.0}.get(penalty, l1_ratio)
    use_l2 = penalty in ("l2", "elasticnet")
    use_l1 = penalty in ("l1", "elasticnet")
    Q = np.zeros_like(W) if use_l1 else None
    u = np.zeros(k)
    eta = np.full(k, float(eta0))
    optimal_init = 0.0
    if learning_rate == "optimal":
        typw = np.sqrt(1.0 / np.sqrt(alpha))
        initial_eta0 = typw / max(1.0, float(dloss_fn(np.array([1.0]), np.array([-typw]))[0]))
        optimal_init = 1.0 / (initial_eta0 * alpha)
    orders = np.tile(np.arange(n), (k, 1))
    train = ~val_mask
    n_train = int(train.sum())
    live = np.ones(k, bool)
    n_iter = np.zeros(k, int)
    no_improve = np.zeros(k, int)
    best = np.full(k, np.inf if score_cb is None else -np.inf)
    rows = np.arange(k)[:, None]
    cw = np.where(Y > 0, cw_pos[:, None], cw_neg[:, None]) * sw[None, :]   # class weight x sample weight
    # the intercept rides along as a last column of ones (it takes the same update, but no L2 shrink)
    Xa = np.concatenate([X, np.ones((n, 1)) if fit_intercept else np.zeros((n, 1))], axis=1)
    Wb = np.concatenate([W, b[:, None]], axis=1)
    aWb = np.concatenate([avgW, avgb[:, None]], axis=1)
    Wv = Wb[:, :p]
    want_obj = score_cb is None and penalty is not None
    sq, l1 = np.einsum("ij,ij->i", W, W), np.abs(W).sum(1)   # the norms the objective uses (see below)
    ws = np.ones(k)                   # scikit-learn's wscale (see score_cb below)
    t = float(t0)
    for epoch in range(max_iter):
        if shuffle:
            for c in range(k):
                _xorshift_permute(orders[c], seeds[c])
        # the validation samples are skipped (t does not advance on them): walk the training ones only
        walk = np.stack([o[train[o]] for o in orders])                      # (k, n_train)
        same = k == 1 or not shuffle                                          # one sample per step for all
        Xs = Xa[walk[0]] if same else Xa[walk.T]                              # (n_train, p+1) or (n_train, k, p+1)
        Ys, CWs = Y[rows, walk].T.copy(), cw[rows, walk].T.copy()             # (n_train, k)
        ts = t + np.arange(n_train)
        if learning_rate == "optimal":
            etas = np.repeat((1.0 / (alpha * (optimal_init + ts - 1)))[:, None], k, 1)
        elif learning_rate == "invscaling":
            etas = np.repeat((eta0 / ts ** power_t)[:, None], k, 1)
        else:
            etas = np.repeat(eta[None, :], n_train, 0)
        shrink = np.maximum(0.0, 1.0 - (1.0 - l1_ratio) * etas * alpha) if use_l2 else None
        if use_l2:
            shrink[:, ~live] = 1.0
        steps = -etas * (CWs * live)                                           # update = steps * dloss
        P = np.empty((n_train, k))
        R = np.zeros((n_train, k))        # the penalty term of the objective, before each step
        avg_on = 0 < average
        unbounded = loss in _UNBOUNDED
        for s in range(n_train):
            x = Xs[s]
            pv = Wb @ x if same else np.einsum("ij,ij->i", Wb, x)
            P[s] = pv
            if want_obj:
                R[s] = (1 - l1_ratio) * 0.5 * sq + l1_ratio * l1
            g = dloss_fn(Ys[s], pv)
            update = steps[s] * (np.clip(g, -1e12, 1e12) if unbounded else g)
            if use_l2:
                Wv *= shrink[s][:, None]
                if want_obj:
                    sq *= shrink[s] ** 2
                    l1 *= shrink[s]
            Wb += update[:, None] * x
            if want_obj:
                # scikit-learn's WeightVector recomputes its norms in add() only (not after the L1 clipping)
                nz = update != 0
                sq = np.where(nz, np.einsum("ij,ij->i", Wv, Wv), sq)
                if use_l1:
                    l1 = np.where(nz, np.abs(Wv).sum(1), l1)
            if avg_on and average <= ts[s]:
                m = ts[s] - average + 1
                aWb += (Wb - aWb) * (live / m)[:, None]
            if use_l1:
                u += l1_ratio * etas[s] * alpha * live
                z = Wv.copy()
                Wv[:] = np.where(z > 0, np.maximum(0.0, Wv - (u[:, None] + Q)),
                                 np.where(z < 0, np.minimum(0.0, Wv + (u[:, None] - Q)), Wv))
                Q += (Wv - z) * live[:, None]
                Wv[:] = np.where(live[:, None], Wv, z)
        R *= alpha
        t += n_train
        W, b = Wb[:, :p], Wb[:, p]
        n_iter += live
        if not (np.isfinite(W).all() and np.isfinite(b).all()):
            raise ValueError(f"Floating-point under-/overflow occurred at epoch #{epoch + 1}. Scaling input data with "
                             "StandardScaler or MinMaxScaler might help.")
        if score_cb is not None:
            # scikit-learn scores the validation set with its raw w_data, i.e. w / wscale (intercept unscaled)
            if use_l2:
                ws = _advance_wscale(ws, shrink)
            score = score_cb(W / ws[:, None], b)
            worse = score < best + tol
            best = np.maximum(best, score)
        else:
            obj = (loss_fn(Ys, P) + R).sum(0) / n_train
            worse = obj > best - tol
            best = np.minimum(best, obj)
        no_improve = np.where(live & worse, no_improve + 1, np.where(live, 0, no_improve))
        for c in np.flatnonzero(live & (no_improve >= n_iter_no_change)):  # noqa: B007
            if learning_rate == "adaptive" and eta[c] > 1e-6:
                eta[c] /= 5
                no_improve[c] = 0
            else:
                live[c] = False
        if not live.any():
            break
    return Wb[:, :p].copy(), Wb[:, p].copy(), aWb[:, :p].copy(), aWb[:, p].copy(), n_iter


class _BaseSGD(DeviceMixin, BaseEstimator):
    _losses: tuple = ()

    def _check_params(self):
        if self.loss not in self._losses:
            raise ValueError(f"The loss {self.loss!r} is not supported; expected one of {list(self._losses)}")
        if self.penalty not in ("l2", "l1", "elasticnet", None):
            raise ValueError(f"penalty must be 'l2', 'l1', 'elasticnet' or None, got {self.penalty!r}")
        if self.learning_rate not in _LR:
            raise ValueError(f"learning_rate must be one of {list(_LR)}, got {self.learning_rate!r}")
        if self.learning_rate == "optimal" and self.alpha == 0:
            raise ValueError("alpha must be > 0 since learning_rate is 'optimal'. alpha is used to compute the "
                             "optimal learning rate.")
        if self.learning_rate != "optimal" and self.eta0 <= 0:
            raise ValueError(f"eta0 must be > 0, got {self.eta0!r}")
        if self.early_stopping and not 0 < self.validation_fraction < 1:
            raise ValueError(f"validation_fraction must be in range (0, 1), got {self.validation_fraction!r}")
        if not isinstance(self.max_iter, numbers.Integral) or self.max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}")

    def _validation_mask(self, y, sample_weight, classifier):
        mask = np.zeros(len(y), bool)
        if not self.early_stopping:
            return mask
        from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit
        cv = (StratifiedShuffleSplit if classifier else ShuffleSplit)(
            test_size=self.validation_fraction, random_state=self.random_state)
        tr, va = next(cv.split(np.zeros((len(y), 1)), y))
        if not np.any(sample_weight[va] > 0):
            raise ValueError("The sample weights for validation set are all zero, consider using a different "
                             "random state.")
        mask[va] = True
        return mask

    def _walk(self, W, b, avgW, avgb, Y, X, sw, cw_pos, cw_neg, seeds, val_mask, score_cb, max_iter):
        lr = self.learning_rate
        return plain_sgd(
            W, b, avgW, avgb, Y, X, sw, cw_pos, cw_neg, seeds, loss=self.loss, epsilon=self.epsilon,
            penalty=self.penalty, alpha=float(self.alpha), l1_ratio=float(self.l1_ratio), val_mask=val_mask,
            score_cb=score_cb, n_iter_no_change=int(self.n_iter_no_change), max_iter=max_iter,
            tol=self.tol if self.tol is not None else -np.inf, fit_intercept=bool(self.fit_intercept),
            shuffle=bool(self.shuffle), learning_rate=lr, eta0=float(self.eta0), power_t=float(self.power_t),
            t0=self.t_, average=int(self.average))

    def _set_coef(self, W, b, avgW, avgb, dtype):
        self._standard_coef, self._standard_intercept = W, b
        self._average_coef, self._average_intercept = avgW, avgb
        use_avg = self.average > 0 and self.average <= self.t_ - 1
        self.coef_ = (avgW if use_avg else W).astype(dtype)
        self.intercept_ = (avgb if use_avg else b).astype(dtype)

    def _state(self, k, p, coef_init, intercept_init, fresh):
        if not fresh and hasattr(self, "_standard_coef") and self._standard_coef.shape == (k, p):
            return (self._standard_coef.copy(), self._standard_intercept.copy(), self._average_coef.copy(),
                    self._average_intercept.copy())
        W = np.zeros((k, p)) if coef_init is None else np.array(coef_init, float).reshape(k, p)
        b = np.zeros(k) if intercept_init is None else np.array(intercept_init, float).reshape(k)
        return W, b, W.copy() if coef_init is not None else np.zeros((k, p)), b.copy() * 0

    def _warn_max_iter(self):
        if self.tol is not None and self.tol > -np.inf and self.n_iter_ == self.max_iter:
            warnings.warn("Maximum number of iteration reached before convergence. Consider increasing max_iter to "
                          "improve the fit.", ConvergenceWarning, stacklevel=3)

    def _decision(self, X):
        check_is_fitted(self)
        Xd = self._validate(X, reset=False, accept_sparse=False)
        xp = self._xp()
        Z = Xd @ xp.asarray(self.coef_, dtype=Xd.dtype).T + xp.asarray(self.intercept_, dtype=Xd.dtype)
        return Z


class SGDClassifier(ClassifierMixin, _BaseSGD):
    """Linear classifiers (SVM, logistic regression, ...) by SGD; one-vs-rest for more than two classes."""
    _losses = ("hinge", "log_loss", "modified_huber", "squared_hinge", "perceptron", "squared_error", "huber",
               "epsilon_insensitive", "squared_epsilon_insensitive")

    def __init__(self, loss="hinge", *, penalty="l2", alpha=0.0001, l1_ratio=0.15, fit_intercept=True,
                 max_iter=1000, tol=1e-3, shuffle=True, verbose=0, epsilon=0.1, n_jobs=None, random_state=None,
                 learning_rate="optimal", eta0=0.01, power_t=0.5, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=5, class_weight=None, warm_start=False, average=False, device="cpu"):
        self.loss, self.penalty, self.alpha, self.l1_ratio = loss, penalty, alpha, l1_ratio
        self.fit_intercept, self.max_iter, self.tol, self.shuffle = fit_intercept, max_iter, tol, shuffle
        self.verbose, self.epsilon, self.n_jobs, self.random_state = verbose, epsilon, n_jobs, random_state
        self.learning_rate, self.eta0, self.power_t = learning_rate, eta0, power_t
        self.early_stopping, self.validation_fraction = early_stopping, validation_fraction
        self.n_iter_no_change, self.class_weight = n_iter_no_change, class_weight
        self.warm_start, self.average, self.device = warm_start, average, device

    def fit(self, X, y, coef_init=None, intercept_init=None, sample_weight=None):
        self._check_params()
        fresh = not (self.warm_start and hasattr(self, "coef_"))
        if not fresh:
            coef_init = self.coef_ if coef_init is None else coef_init
            intercept_init = self.intercept_ if intercept_init is None else intercept_init
        for a in ("classes_", "_standard_coef"):
            if hasattr(self, a):
                delattr(self, a)
        self.t_ = 1.0
        Xd, y = self._validate_Xy(X, y, accept_sparse=False)
        check_classification_targets(y)
        self._fit_walk(Xd, y, np.unique(y), sample_weight, self.max_iter, coef_init, intercept_init, True)
        self._warn_max_iter()
        return self

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        self._check_params()
        first = not hasattr(self, "classes_")
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit.")
            self.t_ = 1.0
            Xd, y = self._validate_Xy(X, y, accept_sparse=False)
            check_classification_targets(y)
        else:
            if classes is not None and not np.array_equal(self.classes_, np.unique(classes)):
                raise ValueError(f"`classes={classes!r}` is not the same as on last call to partial_fit, was: "
                                 f"{self.classes_!r}")
            Xd, y = self._validate(X, y, reset=False, accept_sparse=False)
        self._fit_walk(Xd, y, self.classes_ if not first else np.unique(classes), sample_weight, 1, None, None, first)
        return self

    def _fit_walk(self, Xd, y, classes, sample_weight, max_iter, coef_init, intercept_init, fresh):
        self.classes_ = np.asarray(classes)
        if not np.isin(y, self.classes_).all():
            raise ValueError(f"y contains labels not in classes {self.classes_!r}")
        nc = len(self.classes_)
        if nc < 2:
            raise ValueError(f"The number of classes has to be greater than one; got {nc} class")
        X = to_host(Xd).astype(np.float64)
        sw = to_host(sample_weight_or_ones(sample_weight, X, np, np.float64))
        cw = compute_class_weight(self.class_weight, classes=self.classes_, y=y)
        k = 1 if nc == 2 else nc
        pos = [1] if nc == 2 else list(range(nc))
        label01 = self.loss == "log_loss"
        Y = np.stack([np.where(y == self.classes_[i], 1.0, 0.0 if label01 else -1.0) for i in pos])
        cw_pos = np.array([cw[i] for i in pos], float)
        cw_neg = np.array([cw[0] if nc == 2 else 1.0 for _ in pos], float)
        val = self._validation_mask(y, sw, True)
        if nc == 2:
            seeds = [_sgd_seed(self.random_state)]
        else:
            seeds = [_sgd_seed(int(s)) for s in check_random_state(self.random_state).randint(MAX_INT, size=nc)]
        score_cb = None
        if self.early_stopping:
            Xv, Yv, swv = X[val], Y[:, val], sw[val]

            def score_cb(W, b):
                # scikit-learn scores a binary clone whose classes_ are [-1, 1] (even with 0/1 log-loss targets)
                pred = np.where(Xv @ W.T + b > 0, 1.0, -1.0).T
                return ((pred == Yv) * swv).sum(1) / swv.sum()
        W, b, aW, ab = self._state(k, X.shape[1], coef_init, intercept_init, fresh)
        W, b, aW, ab, n_iter = self._walk(W, b, aW, ab, Y, X, sw, cw_pos, cw_neg, seeds, val, score_cb, max_iter)
        self.n_iter_ = int(n_iter.max())
        self.t_ += self.n_iter_ * X.shape[0]
        self._set_coef(W, b, aW, ab, to_host(Xd[:1]).dtype)

    def decision_function(self, X):
        Z = self._decision(X)
        return as_output(Z[:, 0] if Z.shape[1] == 1 else Z, X)

    def predict(self, X):
        Z = to_host(self.decision_function(X))
        idx = (Z > 0).astype(int) if Z.ndim == 1 else Z.argmax(1)
        return labels_output(self.classes_, idx, X)

    def _check_proba(self):
        if self.loss not in ("log_loss", "modified_huber"):
            raise AttributeError(f"probability estimates are not available for loss={self.loss!r}")
        return True

    # predict_proba exists only for the probabilistic losses (hasattr(est, "predict_proba") is how scikit-learn asks)
    @available_if(_check_proba)
    def predict_proba(self, X):
        Z = to_host(self.decision_function(X))
        if self.loss == "log_loss":
            P = _expit(Z)
        else:
            P = (np.clip(Z, -1, 1) + 1) / 2
        if P.ndim == 1:
            return np.stack([1 - P, P], axis=1)
        s = P.sum(1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(s == 0, 1.0 / P.shape[1], P / s)

    @available_if(_check_proba)
    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        return tags


class SGDRegressor(RegressorMixin, _BaseSGD):
    """Linear regression (squared error, Huber, epsilon-insensitive) by SGD."""
    _losses = ("squared_error", "huber", "epsilon_insensitive", "squared_epsilon_insensitive")

    def __init__(self, loss="squared_error", *, penalty="l2", alpha=0.0001, l1_ratio=0.15, fit_intercept=True,
                 max_iter=1000, tol=1e-3, shuffle=True, verbose=0, epsilon=0.1, random_state=None,
                 learning_rate="invscaling", eta0=0.01, power_t=0.25, early_stopping=False, validation_fraction=0.1,
                 n_iter_no_change=5, warm_start=False, average=False, device="cpu"):
        self.loss, self.penalty, self.alpha, self.l1_ratio = loss, penalty, alpha, l1_ratio
        self.fit_intercept, self.max_iter, self.tol, self.shuffle = fit_intercept, max_iter, tol, shuffle
        self.verbose, self.epsilon, self.random_state = verbose, epsilon, random_state
        self.learning_rate, self.eta0, self.power_t = learning_rate, eta0, power_t
        self.early_stopping, self.validation_fraction = early_stopping, validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.warm_start, self.average, self.device = warm_start, average, device

    def fit(self, X, y, coef_init=None, intercept_init=None, sample_weight=None):
        self._check_params()
        fresh = not (self.warm_start and hasattr(self, "coef_"))
        if not fresh:
            coef_init = self.coef_ if coef_init is None else coef_init
            intercept_init = self.intercept_ if intercept_init is None else intercept_init
        if hasattr(self, "_standard_coef"):
            del self._standard_coef
        self.t_ = 1.0
        Xd, y = self._validate_Xy(X, y, accept_sparse=False, y_numeric=True)
        self._fit_walk(Xd, y, sample_weight, self.max_iter, coef_init, intercept_init, True)
        self._warn_max_iter()
        return self

    def partial_fit(self, X, y, sample_weight=None):
        self._check_params()
        first = not hasattr(self, "coef_")
        if first:
            self.t_ = 1.0
        Xd, y = (self._validate_Xy(X, y, accept_sparse=False, y_numeric=True) if first else
                 self._validate(X, y, reset=False, accept_sparse=False, y_numeric=True))
        self._fit_walk(Xd, y, sample_weight, 1, None, None, first)
        return self

    def _fit_walk(self, Xd, y, sample_weight, max_iter, coef_init, intercept_init, fresh):
        X = to_host(Xd).astype(np.float64)
        y = np.asarray(y, np.float64)
        sw = to_host(sample_weight_or_ones(sample_weight, X, np, np.float64))
        val = self._validation_mask(y, sw, False)
        seeds = [_sgd_seed(self.random_state, regressor=True)]
        score_cb = None
        if self.early_stopping:
            Xv, yv, swv = X[val], y[val], sw[val]

            def score_cb(W, b):
                from sklearn.metrics import r2_score
                return np.array([r2_score(yv, Xv @ W[0] + b[0], sample_weight=swv)])
        W, b, aW, ab = self._state(1, X.shape[1], coef_init, intercept_init, fresh)
        one = np.ones(1)
        W, b, aW, ab, n_iter = self._walk(W, b, aW, ab, y[None, :], X, sw, one, one, seeds, val, score_cb, max_iter)
        self.n_iter_ = int(n_iter.max())
        self.t_ += self.n_iter_ * X.shape[0]
        self._set_coef(W, b, aW, ab, to_host(Xd[:1]).dtype)
        self.coef_ = self.coef_[0]

    def predict(self, X):
        return as_output(self._decision(X), X)
