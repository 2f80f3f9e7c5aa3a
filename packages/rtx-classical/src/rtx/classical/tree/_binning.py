"""Feature binning shared by the trees, forests and histogram gradient boosting: each feature's values are cut
at (at most) max_bins - 1 thresholds, midpoints between distinct values or quantiles when there are more
(scikit-learn's _BinMapper does the same for HistGradientBoosting). A split "bin <= b" is then the split
"x <= edges[b]" on the raw value, so fitted trees predict on raw features."""
from __future__ import annotations

import numpy as np


def bin_edges(X, max_bins=256, subsample=200_000, rng=None):
    """A list, per feature, of increasing thresholds (len <= max_bins - 1)."""
    if X.shape[0] > subsample:
        rng = np.random.default_rng(0) if rng is None else rng
        X = X[rng.choice(X.shape[0], subsample, replace=False)]
    edges = []
    for j in range(X.shape[1]):
        u = np.unique(X[:, j])
        if len(u) <= max_bins:
            e = (u[:-1] + u[1:]) / 2
        else:
            q = np.percentile(X[:, j], np.linspace(0, 100, max_bins + 1)[1:-1], method="midpoint")
            e = np.unique(q)
        edges.append(e.astype(np.float64))
    return edges


def apply_bins(X, edges):
    """uint8 bin codes (bin = number of thresholds below the value), column-major for fast per-feature reads."""
    out = np.empty(X.shape, dtype=np.uint8, order="F")
    for j, e in enumerate(edges):
        out[:, j] = np.searchsorted(e, X[:, j], side="left")
    return out
