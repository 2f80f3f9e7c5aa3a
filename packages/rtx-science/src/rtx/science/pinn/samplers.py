"""Collocation points in a box: uniform random, Latin hypercube, Sobol (SciPy's qmc, if present)."""
from __future__ import annotations

import numpy as np

import rtx


def _box(bounds):
    b = np.asarray(bounds, dtype=np.float64)
    if b.ndim != 2 or b.shape[1] != 2 or np.any(b[:, 1] <= b[:, 0]):
        raise ValueError(f"bounds must be [(low, high), ...] with low < high per dimension, got {bounds!r}")
    return b


def _out(unit, b, dtype):
    return rtx.tensor(b[:, 0] + unit * (b[:, 1] - b[:, 0]), dtype=dtype or rtx.get_default_dtype())


def uniform(n, bounds, seed=None, dtype=None):
    """n points drawn uniformly in the box `bounds` = [(low, high), ...] -> (n, d)."""
    b = _box(bounds)
    return _out(np.random.default_rng(seed).random((n, len(b))), b, dtype)


def latin_hypercube(n, bounds, seed=None, dtype=None):
    """Latin hypercube: each dimension's n strata hold exactly one point (McKay et al. 1979)."""
    b = _box(bounds)
    rng = np.random.default_rng(seed)
    d = len(b)
    strata = np.stack([rng.permutation(n) for _ in range(d)], axis=1)
    return _out((strata + rng.random((n, d))) / n, b, dtype)


def sobol(n, bounds, seed=None, scramble=True, dtype=None):
    """Scrambled Sobol points (scipy.stats.qmc); n should be a power of two for balance."""
    try:
        from scipy.stats import qmc
    except ImportError as e:  # optional dependency: pip install rtx-science[qmc]
        raise ImportError("sobol sampling needs SciPy: pip install 'rtx-science[qmc]' (or scipy)") from e
    b = _box(bounds)
    return _out(qmc.Sobol(d=len(b), scramble=scramble, seed=seed).random(n), b, dtype)
