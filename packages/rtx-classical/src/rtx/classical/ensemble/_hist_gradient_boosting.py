"""HistGradientBoostingClassifier and HistGradientBoostingRegressor: scikit-learn's algorithm (LightGBM's).
Features are binned once with the trees' binning (tree/_binning.py, up to 255 bins); each iteration fits one
tree per class to the loss's gradients and hessians, grown best-first (the leaf with the largest gain splits
next) up to max_leaf_nodes / max_depth. A node's histograms of gradient, hessian and count are one bincount
over (feature, bin); a sibling's come by subtraction from its parent's. Gain and leaf values are
scikit-learn's: G^2 / (H + l2_regularization), leaf value -learning_rate * G / (H + l2_regularization).
The work runs on the host (NumPy): the per-node steps are small and sequential."""
from __future__ import annotations

import numbers

import numpy as np
from scipy.special import expit, logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from rtx.classical._base import DeviceMixin, as_output, labels_output, sample_weight_or_ones, to_host
from rtx.classical.tree._binning import apply_bins, bin_edges

_MIN_HESSIAN = 1e-3  # scikit-learn's min_hessian_to_split


class _Codes:
    """A fit's bin codes in the two layouts the histograms want, made once: `flat` (rows x features,
    code + feature * n_bins as intp, bincount's index type) for small nodes, one bincount per channel; and
    `by_feature` (features x rows) for large nodes, one bincount per feature and channel on the node's
    gradients as they are (no repeated copy of the weights). Both add each bin's rows in row order, so
    they give the same sums. The root's count histogram is the same every iteration and is kept."""

    BIG = 2048  # rows from which the per-feature bincounts win here (measured: 2000-4000 rows)

    def __init__(self, codes, n_bins):
        self.n_feat, self.n_bins = codes.shape[1], n_bins
        self.by_feature = np.ascontiguousarray(codes.T)   # uint8: a node's gather moves 1/8 of intp's bytes
        self.root_by_feature = self.by_feature.astype(np.intp)   # the root's: no cast inside each bincount
        self.flat = codes.astype(np.intp) + np.arange(codes.shape[1], dtype=np.intp) * n_bins
        self.root_count = self.hist(None, None, None)[2]

    def hist(self, rows, g, h, counts=True):
        """(3, features, bins) sums of gradient, hessian and count over `rows` (None: every row; g and h are
        the node's, already taken at `rows`; None: counts only). counts=False leaves the count channel NaN
        (unknown): a third of the work, and most nodes' best split is settled without it (_best_splits)."""
        nf, nb = self.n_feat, self.n_bins
        chans = [] if g is None else [g, h]
        if rows is None or len(rows) >= self.BIG:
            # uint8 gathered, then cast once: bincount would cast its input on every call
            sub = self.root_by_feature if rows is None else np.take(self.by_feature, rows, axis=1).astype(np.intp)
            out = np.empty((3, nf, nb))
            for j in range(nf):
                for c, v in enumerate(chans):
                    out[c, j] = np.bincount(sub[j], weights=v, minlength=nb)
                if counts and (rows is not None or g is None):
                    out[2, j] = np.bincount(sub[j], minlength=nb)
            if rows is None and g is not None:
                out[2] = self.root_count
            elif not counts:
                out[2] = np.nan
            return out
        flat = self.flat[rows].ravel()
        size = nf * nb
        out = np.empty((3, nf, nb))
        for c, v in enumerate(chans):
            out[c] = np.bincount(flat, weights=np.repeat(v, nf), minlength=size).reshape(nf, nb)
        out[2] = np.bincount(flat, minlength=size).reshape(nf, nb) if counts else np.nan
        return out


def _best_splits(hists, l2, min_samples_leaf, h_max, rows=None):
    """For each node of hists (nodes x 3 x features x bins): its best split (gain, feature, bin) "bin <= b"
    or None. Ties go to the first feature and bin, as scikit-learn's scan does. A split's two children go in
    one call.

    A node's counts may be unknown (NaN; _Codes.hist(counts=False) saves a third of the histogram work). A
    side's count is at least its hessian sum over the largest row hessian h_max, so sides with
    H >= min_samples_leaf * h_max surely hold enough rows. The best split the hessians allow is taken if it
    is such a sure one, or if counting the node's rows that go left (rows: the codes by feature and each
    node's rows) shows it allowed: it is allowed and beats a superset of the allowed splits, in the same tie
    order. Otherwise it and, as counts only grow with the bin, the bins on its too-small side are ruled out,
    and the next best is tried."""
    known = ~np.isnan(hists[:, 2, 0, 0])
    nc = 3 if known.any() else 2       # the count channel only where some node has its counts
    GHC = hists[:, :nc, 0, :].sum(-1)  # per node and channel: the sums over feature 0's bins
    # The same arithmetic as GL ** 2 / (HL + l2) + GR ** 2 / (HR + l2) - G ** 2 / (H + l2) where both sides
    # are allowed, done in place on a few contiguous arrays. The last bin is kept (it is never allowed: its
    # right side is empty) so that no array is a strided slice: strided passes cost twice as much here.
    left = np.cumsum(hists[:, :nc], axis=3)
    right = GHC[:, :, None, None] - left
    GL, HL, CL = left[:, 0], left[:, 1], left[:, nc - 1]
    GR, HR, CR = right[:, 0], right[:, 1], right[:, nc - 1]
    h_min = np.minimum(HL, HR)
    allowed = h_min >= _MIN_HESSIAN
    if known.all():
        allowed &= np.minimum(CL, CR) >= min_samples_leaf
        sure = allowed
    else:
        sure = h_min >= min_samples_leaf * h_max / (1 - 1e-12)    # read only where allowed
        if known.any():
            allowed[known] &= np.minimum(CL[known], CR[known]) >= min_samples_leaf
            sure[known] = allowed[known]
    G, H = GHC[:, 0], GHC[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):  # empty sides (H = 0) are masked out by allowed
        gain = np.square(GL, out=GL)
        if l2:
            HL += l2
            HR += l2
        gain /= HL
        np.square(GR, out=GR)
        GR /= HR
        gain += GR
        gain -= (G ** 2 / (H + l2))[:, None, None]
    np.copyto(gain, -np.inf, where=~allowed)
    n_b = gain.shape[2]
    flat = gain.reshape(len(gain), -1)
    sure = sure.reshape(len(gain), -1)
    out = []
    for i in range(len(flat)):
        row = flat[i]
        while True:
            j = int(row.argmax())
            if not row[j] > 0:           # nothing allowed (-inf), or no gain
                out.append(None)
                break
            f, b = divmod(j, n_b)
            if not sure[i, j]:
                codes, node_rows = rows
                cl, n = int(np.count_nonzero(codes[f][node_rows[i]] <= b)), len(node_rows[i])
                if cl < min_samples_leaf:
                    row[f * n_b:j + 1] = -np.inf
                if n - cl < min_samples_leaf:
                    row[j:(f + 1) * n_b] = -np.inf
                if not row[j] > -np.inf:
                    continue
            out.append((float(row[j]), f, b))
            break
    return out


def _grow_tree(cd, g, h, edges, est):
    """One tree, best-first; returns (feature, threshold, left, right, value) arrays (leaves: feature -1)
    and the tree's value for every training row (from the leaves' rows, as scikit-learn updates its raw
    predictions, instead of walking the rows down the tree again)."""
    l2, msl = est.l2_regularization, est.min_samples_leaf
    feature, threshold, left, right, value = [-1], [0.0], [-1], [-1], [0.0]
    rows0 = np.arange(len(g))
    hist0 = cd.hist(None, g, h)
    h_max = float(h.max())
    leaves = {0: (rows0, hist0, 0, _best_splits(hist0[None], l2, msl, h_max)[0] if len(g) >= 2 * msl else None)}
    n_leaves = 1
    while n_leaves < (est.max_leaf_nodes or np.inf):
        cand = [(v[3][0], k) for k, v in leaves.items() if v[3] is not None]
        if not cand:
            break
        _, node = max(cand, key=lambda t: (t[0], -t[1]))
        rows, hist, depth, (_, f, b) = leaves.pop(node)
        go_left = cd.by_feature[f][rows] <= b
        kids = []
        for _ in range(2):
            kids.append(len(feature))
            feature.append(-1), threshold.append(0.0), left.append(-1), right.append(-1), value.append(0.0)
        feature[node], threshold[node], left[node], right[node] = f, float(edges[f][b]), kids[0], kids[1]
        n_left = int(np.count_nonzero(go_left))
        small, big = (0, 1) if n_left <= len(rows) - n_left else (1, 0)
        parts = (rows[go_left], rows[~go_left])
        hists = [None, None]
        hists[small] = cd.hist(parts[small], g[parts[small]], h[parts[small]], counts=False)
        hists[big] = hist - hists[small]
        n_leaves += 1
        d = depth + 1
        # the kids' splits are candidates for the next split; after the last split there is none
        can = [n_leaves < (est.max_leaf_nodes or np.inf) and (est.max_depth is None or d < est.max_depth)
               and len(parts[i]) >= 2 * msl for i in (0, 1)]
        searched = [i for i in (0, 1) if can[i]]
        found = iter(_best_splits(np.stack([hists[i] for i in searched]), l2, msl, h_max,
                                  (cd.by_feature, [parts[i] for i in searched])) if searched else [])
        for i in (0, 1):
            leaves[kids[i]] = (parts[i], hists[i], d, next(found) if can[i] else None)
    row_value = np.empty(len(g))
    for node, (rows, hist, _, _) in leaves.items():
        G, H = hist[0].sum(1)[0], hist[1].sum(1)[0]
        value[node] = -est.learning_rate * G / (H + l2)
        row_value[rows] = value[node]
    return (np.array(feature), np.array(threshold), np.array(left), np.array(right), np.array(value)), row_value


def _predict_tree(tree, X):
    feature, threshold, left, right, value = tree
    node = np.zeros(X.shape[0], dtype=np.int64)
    active = np.flatnonzero(feature[node] >= 0)
    while len(active):
        nd = node[active]
        go_left = X[active, feature[nd]] <= threshold[nd]
        node[active] = np.where(go_left, left[nd], right[nd])
        active = active[feature[node[active]] >= 0]
    return value[node]


class _BaseHGB(DeviceMixin, BaseEstimator):
    def _check_params(self):
        for name, lo in (("max_iter", 1), ("min_samples_leaf", 1), ("n_iter_no_change", 1)):
            v = getattr(self, name)
            if not isinstance(v, numbers.Integral) or v < lo:
                raise ValueError(f"The '{name}' parameter of {type(self).__name__} must be an int in the range "
                                 f"[{lo}, inf). Got {v!r} instead.")
        if self.max_leaf_nodes is not None and (not isinstance(self.max_leaf_nodes, numbers.Integral)
                                                or self.max_leaf_nodes < 2):
            raise ValueError(f"max_leaf_nodes must be None or an int >= 2, got {self.max_leaf_nodes!r}")
        if self.max_depth is not None and (not isinstance(self.max_depth, numbers.Integral) or self.max_depth < 1):
            raise ValueError(f"max_depth must be None or an int >= 1, got {self.max_depth!r}")
        if not (isinstance(self.max_bins, numbers.Integral) and 2 <= self.max_bins <= 255):
            raise ValueError(f"max_bins must be an int in [2, 255], got {self.max_bins!r}")
        if self.learning_rate <= 0 or self.l2_regularization < 0:
            raise ValueError("learning_rate must be > 0 and l2_regularization >= 0")
        if self.scoring not in ("loss", None):
            raise ValueError(f"rtx.classical's HistGradientBoosting supports scoring='loss' only, got "
                             f"{self.scoring!r}")
        if self.early_stopping not in ("auto", True, False):
            raise ValueError(f"early_stopping must be 'auto', True or False, got {self.early_stopping!r}")

    def _boost(self, X, T, sw, stratify):
        """Fit the trees; T is the (n, k) target in the loss's terms (one-hot for the multinomial loss)."""
        self._check_params()
        n = X.shape[0]
        rs = check_random_state(self.random_state)
        es = self.early_stopping == "auto" and n > 10_000 or self.early_stopping is True
        self.do_early_stopping_ = es
        if es and self.validation_fraction is not None:
            seed = rs.randint(np.iinfo(np.uint32).max, dtype="u8")
            X, Xv, T, Tv, sw, swv = train_test_split(X, T, sw, test_size=self.validation_fraction,
                                                     stratify=stratify, random_state=int(seed))
        else:
            Xv, Tv, swv = X, T, sw
        self._baseline = self._init_raw(T, sw)
        edges = bin_edges(X, self.max_bins, rng=np.random.default_rng(rs.randint(np.iinfo(np.int32).max)))
        codes = np.ascontiguousarray(apply_bins(X, edges))
        n_bins = max(len(e) for e in edges) + 1
        cd = _Codes(codes, n_bins)
        raw = np.tile(self._baseline, (X.shape[0], 1))
        raw_v = np.tile(self._baseline, (Xv.shape[0], 1))
        self._predictors = []
        self.train_score_, self.validation_score_ = [-self._loss(raw, T, sw)], []
        if es:
            self.validation_score_.append(-self._loss(raw_v, Tv, swv))
        for _ in range(self.max_iter):
            G, Hs = self._grad_hess(raw, T)
            trees = []
            for c in range(T.shape[1]):
                tree, row_value = _grow_tree(cd, G[:, c] * sw, Hs[:, c] * sw, edges, self)
                raw[:, c] += row_value
                if es:
                    raw_v[:, c] += _predict_tree(tree, Xv)
                trees.append(tree)
            self._predictors.append(trees)
            self.train_score_.append(-self._loss(raw, T, sw))
            if es:
                self.validation_score_.append(-self._loss(raw_v, Tv, swv))
                if self._should_stop(self.validation_score_):
                    break
        self.n_iter_ = len(self._predictors)
        self.n_trees_per_iteration_ = T.shape[1]
        self.train_score_ = np.asarray(self.train_score_)
        self.validation_score_ = np.asarray(self.validation_score_)
        return self

    def _should_stop(self, scores):
        """scikit-learn's rule: stop when none of the last n_iter_no_change scores beats the one before them
        by more than tol."""
        ref = self.n_iter_no_change + 1
        if len(scores) < ref:
            return False
        return not any(s > scores[-ref] + self.tol for s in scores[-ref + 1:])

    def _raw_predict(self, X):
        check_is_fitted(self)
        X = to_host(self._validate(X, reset=False))
        raw = np.tile(self._baseline, (X.shape[0], 1))
        for trees in self._predictors:
            for c, tree in enumerate(trees):
                raw[:, c] += _predict_tree(tree, X)
        return raw


class HistGradientBoostingRegressor(RegressorMixin, _BaseHGB):
    """Squared error (scikit-learn's half squared error: gradient raw - y, hessian 1)."""

    def __init__(self, loss="squared_error", *, learning_rate=0.1, max_iter=100, max_leaf_nodes=31, max_depth=None,
                 min_samples_leaf=20, l2_regularization=0.0, max_bins=255, early_stopping="auto", scoring="loss",
                 validation_fraction=0.1, n_iter_no_change=10, tol=1e-7, verbose=0, random_state=None,
                 device="cpu"):
        self.loss = loss
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.max_leaf_nodes = max_leaf_nodes
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.l2_regularization = l2_regularization
        self.max_bins = max_bins
        self.early_stopping = early_stopping
        self.scoring = scoring
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.device = device

    def _init_raw(self, T, sw):
        return np.average(T, axis=0, weights=sw)

    def _grad_hess(self, raw, T):
        return raw - T, np.ones_like(raw)

    def _loss(self, raw, T, sw):
        return float(np.average(0.5 * ((raw - T) ** 2).sum(1), weights=sw))

    def fit(self, X, y, sample_weight=None):
        if self.loss != "squared_error":
            raise ValueError(f"rtx.classical's HistGradientBoostingRegressor supports loss='squared_error', got "
                             f"{self.loss!r}")
        X, y = self._validate_Xy(X, y, y_numeric=True)
        sw = to_host(sample_weight_or_ones(sample_weight, X, np, np.float64))
        return self._boost(to_host(X).astype(np.float64), np.asarray(y, dtype=np.float64)[:, None], sw, None)

    def predict(self, X):
        return as_output(self._raw_predict(X)[:, 0], X)


class HistGradientBoostingClassifier(ClassifierMixin, _BaseHGB):
    """Log loss: binary (one tree per iteration on the log-odds) or multinomial (one tree per class)."""

    def __init__(self, loss="log_loss", *, learning_rate=0.1, max_iter=100, max_leaf_nodes=31, max_depth=None,
                 min_samples_leaf=20, l2_regularization=0.0, max_bins=255, early_stopping="auto", scoring="loss",
                 validation_fraction=0.1, n_iter_no_change=10, tol=1e-7, verbose=0, random_state=None,
                 class_weight=None, device="cpu"):
        self.loss = loss
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.max_leaf_nodes = max_leaf_nodes
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.l2_regularization = l2_regularization
        self.max_bins = max_bins
        self.early_stopping = early_stopping
        self.scoring = scoring
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.class_weight = class_weight
        self.device = device

    def _init_raw(self, T, sw):
        p = np.clip(np.average(T, axis=0, weights=sw), np.finfo(float).eps, 1 - np.finfo(float).eps)
        if T.shape[1] == 1:
            return np.log(p / (1 - p))
        return np.log(p) - np.log(p).mean()

    def _proba(self, raw):
        if raw.shape[1] == 1:
            return expit(raw)
        return np.exp(raw - logsumexp(raw, axis=1, keepdims=True))

    def _grad_hess(self, raw, T):
        P = self._proba(raw)
        return P - T, P * (1 - P)

    def _loss(self, raw, T, sw):
        if raw.shape[1] == 1:
            # np.logaddexp(0, r)'s own formula, max(r, 0) + log1p(exp(-|r|)), in vectorised passes (half the time)
            r = raw[:, 0]
            per = np.log1p(np.exp(-np.abs(r)))
            per += np.maximum(r, 0)
            per -= T[:, 0] * r
        else:
            per = logsumexp(raw, axis=1) - (T * raw).sum(1)
        return float(np.average(per, weights=sw))

    def fit(self, X, y, sample_weight=None):
        if self.loss != "log_loss":
            raise ValueError(f"rtx.classical's HistGradientBoostingClassifier supports loss='log_loss', got "
                             f"{self.loss!r}")
        X, y = self._validate_Xy(X, y)
        check_classification_targets(y)
        self.classes_, idx = np.unique(y, return_inverse=True)
        k = len(self.classes_)
        sw = to_host(sample_weight_or_ones(sample_weight, X, np, np.float64))
        if self.class_weight is not None:
            from sklearn.utils.class_weight import compute_class_weight
            sw = sw * compute_class_weight(self.class_weight, classes=self.classes_, y=y)[idx]
        T = idx[:, None].astype(np.float64) if k <= 2 else np.eye(k)[idx]
        return self._boost(to_host(X).astype(np.float64), T, sw, idx)

    def decision_function(self, X):
        raw = self._raw_predict(X)
        return as_output(raw[:, 0] if raw.shape[1] == 1 else raw, X)

    def predict_proba(self, X):
        P = self._proba(self._raw_predict(X))
        return as_output(np.hstack([1 - P, P]) if P.shape[1] == 1 else P, X)

    def predict(self, X):
        raw = self._raw_predict(X)
        idx = (raw[:, 0] > 0).astype(int) if raw.shape[1] == 1 else raw.argmax(1)
        return labels_output(self.classes_, idx, X)
