"""DecisionTreeClassifier and DecisionTreeRegressor: scikit-learn's parameters and fitted attributes, the
split search on histogram bins (tree/_builder.py). Trees run on the host: their work is integer bin counting
and gathers, not BLAS; device='cuda' input is brought to the host."""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.utils import Bunch, check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from rtx.classical._base import DeviceMixin, as_output, labels_output, sample_weight_or_ones, to_host
from rtx.classical.tree._binning import apply_bins, bin_edges
from rtx.classical.tree._builder import build_tree
from rtx.classical.tree._prune import prune, pruning_path


def resolve_max_features(max_features, p):
    if max_features is None:
        return p
    if max_features == "sqrt":
        return max(1, int(np.sqrt(p)))
    if max_features == "log2":
        return max(1, int(np.log2(p)))
    if isinstance(max_features, numbers.Integral) and not isinstance(max_features, bool):
        if not 1 <= max_features <= p:
            raise ValueError(f"max_features must be in [1, n_features={p}], got {max_features}")
        return int(max_features)
    if isinstance(max_features, numbers.Real) and 0 < max_features <= 1:
        return max(1, int(max_features * p))
    raise ValueError(f"max_features must be None, 'sqrt', 'log2', an int or a float in (0, 1], got {max_features!r}")


class BaseDecisionTree(DeviceMixin, BaseEstimator):
    _criteria: tuple = ()

    def _check(self):
        if self.criterion not in self._criteria:
            raise ValueError(f"criterion must be one of {list(self._criteria)}, got {self.criterion!r}")
        if self.max_depth is not None and (not isinstance(self.max_depth, numbers.Integral) or self.max_depth < 1):
            raise ValueError(f"max_depth must be None or an int >= 1, got {self.max_depth!r}")
        if self.splitter not in ("best",):
            raise ValueError(f"rtx.classical trees support splitter='best', got {self.splitter!r}")
        mln = self.max_leaf_nodes
        if mln is not None and (not isinstance(mln, numbers.Integral) or isinstance(mln, bool) or mln < 2):
            raise ValueError(f"The 'max_leaf_nodes' parameter of {type(self).__name__} must be an int in the range "
                             f"[2, inf) or None. Got {mln!r} instead.")
        a = self.ccp_alpha
        if not isinstance(a, numbers.Real) or isinstance(a, bool) or not a >= 0:
            raise ValueError(f"The 'ccp_alpha' parameter of {type(self).__name__} must be a float in the range "
                             f"[0.0, inf). Got {a!r} instead.")
        if not isinstance(self.max_bins, numbers.Integral) or not 2 <= self.max_bins <= 256:
            raise ValueError(f"max_bins must be an int in [2, 256], got {self.max_bins!r}")

    def _leaf_counts(self, n):
        msl = self.min_samples_leaf
        msl = int(np.ceil(msl * n)) if isinstance(msl, float) else int(msl)
        mss = self.min_samples_split
        mss = max(2, int(np.ceil(mss * n))) if isinstance(mss, float) else int(mss)
        if msl < 1 or mss < 2:
            raise ValueError("min_samples_leaf must be >= 1 and min_samples_split >= 2, got "
                             f"{self.min_samples_leaf!r}, "
                             f"{self.min_samples_split!r}")
        return msl, mss

    def _grow(self, X, channels, rng, edges=None, Xb=None):
        """Grow on host arrays; returns the Tree. X (n, p) float, channels (n, C)."""
        if edges is None:
            edges = bin_edges(X[channels[:, 1] > 0], self.max_bins)   # zero-weight rows place no threshold
            Xb = apply_bins(X, edges)
        msl, mss = self._leaf_counts(X.shape[0])
        sw = channels[:, 1]
        min_w = self.min_weight_fraction_leaf * sw.sum()
        tree = build_tree(Xb, edges, channels, criterion=self.criterion, max_depth=self.max_depth,
                          min_samples_split=mss, min_samples_leaf=msl,
                          max_features=resolve_max_features(self.max_features, X.shape[1]),
                          min_impurity_decrease=self.min_impurity_decrease, rng=rng, min_weight_leaf=min_w,
                          max_leaf_nodes=self.max_leaf_nodes)
        return prune(tree, float(self.ccp_alpha)) if self.ccp_alpha > 0 else tree

    def cost_complexity_pruning_path(self, X, y, sample_weight=None):
        """The pruning path of the unpruned tree: Bunch(ccp_alphas, impurities), as scikit-learn's."""
        est = clone(self).set_params(ccp_alpha=0.0).fit(X, y, sample_weight=sample_weight)
        return Bunch(**pruning_path(est.tree_))

    def _finish(self, tree, p):
        self.tree_ = tree
        imp = tree.extra.pop("importances")
        self.feature_importances_ = imp / imp.sum() if imp.sum() > 0 else np.zeros(p)

    def get_depth(self):
        check_is_fitted(self)
        return self.tree_.max_depth

    def get_n_leaves(self):
        check_is_fitted(self)
        return self.tree_.n_leaves

    def apply(self, X):
        check_is_fitted(self)
        return self.tree_.apply(to_host(self._validate(X, reset=False)))

    def _host_X(self, X):
        check_is_fitted(self)
        return to_host(self._validate(X, reset=False))


def classification_channels(y_idx, n_classes, sw):
    ch = np.zeros((len(y_idx), 2 + n_classes))
    ch[:, 0] = sw > 0
    ch[:, 1] = sw
    ch[np.arange(len(y_idx)), 2 + y_idx] = sw
    return ch


def regression_channels(y, sw):
    return np.stack([(sw > 0).astype(float), sw, sw * y, sw * y * y], axis=1)


class DecisionTreeClassifier(ClassifierMixin, BaseDecisionTree):
    _criteria = ("gini", "entropy", "log_loss")

    def __init__(self, *, criterion="gini", splitter="best", max_depth=None, min_samples_split=2, min_samples_leaf=1,
                 min_weight_fraction_leaf=0.0, max_features=None, random_state=None, max_leaf_nodes=None,
                 min_impurity_decrease=0.0, class_weight=None, ccp_alpha=0.0, max_bins=256, device="cpu"):
        self.criterion, self.splitter, self.max_depth = criterion, splitter, max_depth
        self.min_samples_split, self.min_samples_leaf = min_samples_split, min_samples_leaf
        self.min_weight_fraction_leaf, self.max_features = min_weight_fraction_leaf, max_features
        self.random_state, self.max_leaf_nodes = random_state, max_leaf_nodes
        self.min_impurity_decrease, self.class_weight, self.ccp_alpha = min_impurity_decrease, class_weight, ccp_alpha
        self.max_bins, self.device = max_bins, device

    def fit(self, X, y, sample_weight=None):
        self._check()
        Xd, y = self._validate_Xy(X, y)
        check_classification_targets(y)
        X = to_host(Xd).astype(np.float64)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        self.n_classes_ = len(self.classes_)
        sw = sample_weight_or_ones(sample_weight, X, np, np.float64)
        if self.class_weight is not None:
            from sklearn.utils.class_weight import compute_sample_weight
            sw = sw * compute_sample_weight(self.class_weight, y)
        tree = self._grow(X, classification_channels(y_idx, self.n_classes_, sw),
                          np.random.default_rng(check_random_state(self.random_state).randint(2**31 - 1)))
        set_class_values(tree)
        self._finish(tree, X.shape[1])
        self.max_features_ = resolve_max_features(self.max_features, X.shape[1])
        return self

    def predict_proba(self, X):
        Xh = self._host_X(X)
        return as_output(self.tree_.value[self.tree_.apply(Xh), 0], X)

    def predict_log_proba(self, X):
        with np.errstate(divide="ignore"):
            return np.log(to_host(self.predict_proba(X)))

    def predict(self, X):
        idx = to_host(self.predict_proba(X)).argmax(1)
        return labels_output(self.classes_, idx, X)


def set_class_values(tree):
    S = tree.extra.pop("stats")
    W = np.where(S[:, 1] > 0, S[:, 1], 1)
    tree.value = (S[:, 2:] / W[:, None])[:, None, :]


def set_regression_values(tree):
    S = tree.extra.pop("stats")
    W = np.where(S[:, 1] > 0, S[:, 1], 1)
    tree.value = (S[:, 2] / W)[:, None, None]


class DecisionTreeRegressor(RegressorMixin, BaseDecisionTree):
    _criteria = ("squared_error",)

    def __init__(self, *, criterion="squared_error", splitter="best", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_weight_fraction_leaf=0.0, max_features=None, random_state=None,
                 max_leaf_nodes=None, min_impurity_decrease=0.0, ccp_alpha=0.0, max_bins=256, device="cpu"):
        self.criterion, self.splitter, self.max_depth = criterion, splitter, max_depth
        self.min_samples_split, self.min_samples_leaf = min_samples_split, min_samples_leaf
        self.min_weight_fraction_leaf, self.max_features = min_weight_fraction_leaf, max_features
        self.random_state, self.max_leaf_nodes = random_state, max_leaf_nodes
        self.min_impurity_decrease, self.ccp_alpha = min_impurity_decrease, ccp_alpha
        self.max_bins, self.device = max_bins, device

    def fit(self, X, y, sample_weight=None):
        self._check()
        Xd, y = self._validate_Xy(X, y, y_numeric=True)
        X = to_host(Xd).astype(np.float64)
        y = np.asarray(y, np.float64)
        sw = sample_weight_or_ones(sample_weight, X, np, np.float64)
        tree = self._grow(X, regression_channels(y, sw),
                          np.random.default_rng(check_random_state(self.random_state).randint(2**31 - 1)))
        set_regression_values(tree)
        self._finish(tree, X.shape[1])
        self.max_features_ = resolve_max_features(self.max_features, X.shape[1])
        return self

    def predict(self, X):
        Xh = self._host_X(X)
        return as_output(self.tree_.value[self.tree_.apply(Xh), 0, 0], X)
