"""RandomForestClassifier and RandomForestRegressor: bootstrap draws as sample-weight counts (as scikit-learn
does), features binned once for the whole forest, trees grown by tree/_builder.py on rtx.runtime's worker pool
(`n_jobs` threads; NumPy's bincount/sort release the GIL only in part, so threads give less than cores)."""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

import rtx.runtime as rt
from rtx.classical._base import DeviceMixin, as_output, labels_output, sample_weight_or_ones, to_host
from rtx.classical.tree._binning import apply_bins, bin_edges
from rtx.classical.tree._classes import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    classification_channels,
    regression_channels,
    set_class_values,
    set_regression_values,
)

MAX_INT = np.iinfo(np.int32).max
_TREE_PARAMS = ("criterion", "max_depth", "min_samples_split", "min_samples_leaf", "min_weight_fraction_leaf",
                "max_features", "max_leaf_nodes", "min_impurity_decrease", "ccp_alpha", "max_bins")


class _BaseForest(DeviceMixin, BaseEstimator):
    _tree_cls = None

    def _fit_forest(self, X, channels, finish_values):
        if not isinstance(self.n_estimators, numbers.Integral) or self.n_estimators < 1:
            raise ValueError(f"n_estimators must be an int >= 1, got {self.n_estimators!r}")
        if not self.bootstrap and self.max_samples is not None:
            raise ValueError("`max_sample` cannot be set if `bootstrap=False`. Either switch to `bootstrap=True` or "
                             "set `max_sample=None`.")
        n, p = X.shape
        rs = check_random_state(self.random_state)
        seeds = rs.randint(MAX_INT, size=self.n_estimators)
        edges = bin_edges(X[channels[:, 1] > 0], self.max_bins)
        Xb = apply_bins(X, edges)
        n_draw = n
        if self.max_samples is not None:
            ms = self.max_samples
            n_draw = max(1, round(ms * n)) if isinstance(ms, float) else int(ms)
        template = self._tree_cls(**{k: getattr(self, k) for k in _TREE_PARAMS}, random_state=None)
        template._check()                  # the tree parameters' errors, as a single tree gives them

        def grow(seed):
            rng = np.random.default_rng(seed)
            ch = channels
            rows = None
            if self.bootstrap:
                counts = np.bincount(rng.integers(0, n, n_draw), minlength=n).astype(np.float64)
                rows = np.flatnonzero(counts)
                ch = channels[rows].copy()
                ch[:, 1:] *= counts[rows, None]
            tree = template._grow(X, ch, rng, edges=edges, Xb=Xb if rows is None else Xb[rows])
            est = self._tree_cls(**template.get_params())
            est.random_state = int(seed)
            finish_values(tree)
            est._finish(tree, p)
            est.n_features_in_ = p
            return est

        workers = None if self.n_jobs in (None,) else (rt.threads.cpu_workers() if self.n_jobs < 0 else self.n_jobs)
        self.estimators_ = rt.threads.parallel_map(grow, list(seeds), workers=workers or 1)
        imp = np.mean([e.feature_importances_ for e in self.estimators_], axis=0)
        self.feature_importances_ = imp / imp.sum() if imp.sum() > 0 else imp
        self.estimator_ = template

    def _host_X(self, X):
        check_is_fitted(self)
        return to_host(self._validate(X, reset=False)).astype(np.float64)

    def apply(self, X):
        Xh = self._host_X(X)
        return np.stack([e.tree_.apply(Xh) for e in self.estimators_], axis=1)


def _init_forest(self, kw):
    for k, v in kw.items():
        setattr(self, k, v)


class RandomForestClassifier(ClassifierMixin, _BaseForest):
    _tree_cls = DecisionTreeClassifier

    def __init__(self, n_estimators=100, *, criterion="gini", max_depth=None, min_samples_split=2, min_samples_leaf=1,
                 min_weight_fraction_leaf=0.0, max_features="sqrt", max_leaf_nodes=None, min_impurity_decrease=0.0,
                 bootstrap=True, oob_score=False, n_jobs=None, random_state=None, verbose=0, warm_start=False,
                 class_weight=None, ccp_alpha=0.0, max_samples=None, max_bins=256, device="cpu"):
        _init_forest(self, {k: v for k, v in locals().items() if k not in ("self", "__class__")})

    def fit(self, X, y, sample_weight=None):
        Xd, y = self._validate_Xy(X, y)
        check_classification_targets(y)
        X = to_host(Xd).astype(np.float64)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        self.n_classes_ = len(self.classes_)
        sw = sample_weight_or_ones(sample_weight, X, np, np.float64)
        if self.class_weight is not None:
            from sklearn.utils.class_weight import compute_sample_weight
            sw = sw * compute_sample_weight(self.class_weight, y)
        self._fit_forest(X, classification_channels(y_idx, self.n_classes_, sw), set_class_values)
        return self

    def predict_proba(self, X):
        Xh = self._host_X(X)
        P = sum(e.tree_.value[e.tree_.apply(Xh), 0] for e in self.estimators_) / len(self.estimators_)
        return as_output(P, X)

    def predict_log_proba(self, X):
        with np.errstate(divide="ignore"):
            return np.log(to_host(self.predict_proba(X)))

    def predict(self, X):
        idx = to_host(self.predict_proba(X)).argmax(1)
        return labels_output(self.classes_, idx, X)


class RandomForestRegressor(RegressorMixin, _BaseForest):
    _tree_cls = DecisionTreeRegressor

    def __init__(self, n_estimators=100, *, criterion="squared_error", max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_weight_fraction_leaf=0.0, max_features=1.0, max_leaf_nodes=None,
                 min_impurity_decrease=0.0, bootstrap=True, oob_score=False, n_jobs=None, random_state=None, verbose=0,
                 warm_start=False, ccp_alpha=0.0, max_samples=None, max_bins=256, device="cpu"):
        _init_forest(self, {k: v for k, v in locals().items() if k not in ("self", "__class__")})

    def fit(self, X, y, sample_weight=None):
        Xd, y = self._validate_Xy(X, y, y_numeric=True)
        X = to_host(Xd).astype(np.float64)
        sw = sample_weight_or_ones(sample_weight, X, np, np.float64)
        self._fit_forest(X, regression_channels(np.asarray(y, np.float64), sw), set_regression_values)
        return self

    def predict(self, X):
        Xh = self._host_X(X)
        out = sum(e.tree_.value[e.tree_.apply(Xh), 0, 0] for e in self.estimators_) / len(self.estimators_)
        return as_output(out, X)
