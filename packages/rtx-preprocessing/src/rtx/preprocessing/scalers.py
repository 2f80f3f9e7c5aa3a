"""Scalers and encoders with fit/transform/inverse_transform, on arrays and tensors, matching
scikit-learn's definitions (population std; constant features scale to 0, not NaN)."""
from __future__ import annotations

import numpy as np

from rtx.preprocessing.transforms import _as_array, _back


class _Fitted:
    def _check(self):
        if not getattr(self, "fitted_", False):
            raise RuntimeError(f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with appropriate "
                               "arguments before using this estimator.")

    def fit_transform(self, x, y=None):
        return self.fit(x).transform(x)


def _2d(arr, name):
    if arr.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array (samples, features), got shape {arr.shape}")
    return arr


class StandardScaler(_Fitted):
    def __init__(self, with_mean=True, with_std=True):
        self.with_mean, self.with_std = with_mean, with_std

    def fit(self, x, y=None):
        arr = _2d(_as_array(x)[0].astype(np.float64), "StandardScaler.fit")
        self.mean_ = arr.mean(0) if self.with_mean else np.zeros(arr.shape[1])
        std = arr.std(0) if self.with_std else np.ones(arr.shape[1])
        self.scale_ = np.where(std == 0, 1.0, std)
        self.n_features_in_ = arr.shape[1]
        self.fitted_ = True
        return self

    def transform(self, x):
        self._check()
        arr, was = _as_array(x)
        if arr.shape[-1] != self.n_features_in_:
            raise ValueError(f"X has {arr.shape[-1]} features, but StandardScaler is expecting {self.n_features_in_} "
                             "features as input.")
        out = (arr - self.mean_) / self.scale_
        return _back(out.astype(arr.dtype if arr.dtype.kind == "f" else np.float64), was)

    def inverse_transform(self, x):
        self._check()
        arr, was = _as_array(x)
        return _back((arr * self.scale_ + self.mean_).astype(arr.dtype), was)


class MinMaxScaler(_Fitted):
    def __init__(self, feature_range=(0, 1), clip=False):
        lo, hi = feature_range
        if lo >= hi:
            raise ValueError(f"Minimum of desired feature range must be smaller than maximum. Got {feature_range}.")
        self.feature_range, self.clip = feature_range, clip

    def fit(self, x, y=None):
        arr = _2d(_as_array(x)[0].astype(np.float64), "MinMaxScaler.fit")
        self.data_min_, self.data_max_ = arr.min(0), arr.max(0)
        rng = self.data_max_ - self.data_min_
        rng = np.where(rng == 0, 1.0, rng)
        lo, hi = self.feature_range
        self.scale_ = (hi - lo) / rng
        self.min_ = lo - self.data_min_ * self.scale_
        self.n_features_in_ = arr.shape[1]
        self.fitted_ = True
        return self

    def transform(self, x):
        self._check()
        arr, was = _as_array(x)
        out = arr * self.scale_ + self.min_
        if self.clip:
            out = np.clip(out, *self.feature_range)
        return _back(out.astype(arr.dtype if arr.dtype.kind == "f" else np.float64), was)

    def inverse_transform(self, x):
        self._check()
        arr, was = _as_array(x)
        return _back(((arr - self.min_) / self.scale_).astype(arr.dtype), was)


class LabelEncoder(_Fitted):
    """Labels -> 0..n_classes-1 in sorted order of the classes."""

    def fit(self, y):
        self.classes_ = np.unique(_as_array(y)[0])
        self.fitted_ = True
        return self

    def transform(self, y):
        self._check()
        arr, was = _as_array(y)
        idx = np.searchsorted(self.classes_, arr)
        bad = (idx >= len(self.classes_)) | (self.classes_[np.minimum(idx, len(self.classes_) - 1)] != arr)
        if bad.any():
            raise ValueError(f"y contains previously unseen labels: {np.unique(arr[bad]).tolist()}")
        return _back(idx.astype(np.int64), was)

    def inverse_transform(self, y):
        self._check()
        arr, was = _as_array(y)
        if arr.size and (arr.min() < 0 or arr.max() >= len(self.classes_)):
            raise ValueError(f"y contains codes outside [0, {len(self.classes_)})")
        out = self.classes_[arr]
        return _back(out, was) if out.dtype.kind in "iufb" else out

    def fit_transform(self, y, _=None):
        return self.fit(y).transform(y)


class OneHotEncoder(_Fitted):
    """Each column of categories -> one-hot columns (dense float), categories sorted per column;
    handle_unknown='error' | 'ignore' (all zeros)."""

    def __init__(self, handle_unknown="error", dtype=np.float64):
        if handle_unknown not in ("error", "ignore"):
            raise ValueError(f"handle_unknown should be 'error' or 'ignore', got {handle_unknown!r}")
        self.handle_unknown, self.dtype = handle_unknown, dtype

    def fit(self, x, y=None):
        arr = _2d(_as_array(x)[0], "OneHotEncoder.fit")
        self.categories_ = [np.unique(arr[:, j]) for j in range(arr.shape[1])]
        self.fitted_ = True
        return self

    def transform(self, x):
        self._check()
        arr, was = _as_array(x)
        arr = _2d(arr, "OneHotEncoder.transform")
        blocks = []
        for j, cats in enumerate(self.categories_):
            col = arr[:, j]
            match = col[:, None] == cats[None, :]
            unknown = ~match.any(1)
            if unknown.any() and self.handle_unknown == "error":
                raise ValueError(f"Found unknown categories {np.unique(col[unknown]).tolist()} in column {j} during "
                                 "transform")
            blocks.append(match.astype(self.dtype))
        return _back(np.concatenate(blocks, axis=1), was)

    def inverse_transform(self, x):
        self._check()
        arr, _ = _as_array(x)
        cols, start = [], 0
        for cats in self.categories_:
            block = arr[:, start:start + len(cats)]
            cols.append(cats[block.argmax(1)])
            start += len(cats)
        return np.stack(cols, axis=1)
