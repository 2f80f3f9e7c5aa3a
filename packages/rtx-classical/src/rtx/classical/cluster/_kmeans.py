"""KMeans (Lloyd) and MiniBatchKMeans. The assignment step is chunked distance GEMMs on the device,
the update step a one-hot GEMM; k-means++ draws from the same RandomState calls as scikit-learn's, so
on the same data and seed the initial centres are the same."""
from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, ClusterMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

import rtx.runtime as rt
from rtx.classical._base import (
    DeviceMixin,
    as_output,
    chunk_rows,
    row_norms_sq,
    sample_weight_or_ones,
    sq_distances,
    to_host,
)


def _cpu_step(xp, n):
    """Row-chunk size for the CPU path. Small chunks keep each distance block in cache, and the chunks
    run side by side on rtx.runtime's pool with single-threaded BLAS (as scikit-learn's OpenMP loop does):
    OpenBLAS's own threads lose badly on these thin GEMMs (a 20k x 16 x 32 product took 6 ms with two
    threads against 0.3 ms with one here)."""
    return None if xp is not np else max(256, min(4096, -(-n // (4 * rt.threads.cpu_workers()))))


def _chunks(n, step):
    return [(s, min(n, s + step)) for s in range(0, n, step)]


def _assign_chunk(Xc, centers_m2, c_sq, xs, xp, need_d=True):
    """Nearest centre (first on ties, as argmin) and squared distance for one row chunk. centers_m2 is
    -2 * centers: scaling by a power of two is exact, so folding it into the GEMM's input gives the same
    bits as scaling the product, one pass over the block fewer."""
    D = Xc @ centers_m2.T
    D += c_sq
    lab = D.argmin(axis=1)
    if not need_d:
        return lab, None
    d = D[xp.arange(len(lab)), lab]
    d += row_norms_sq(Xc, xp) if xs is None else xs
    return lab, xp.maximum(d, 0, out=d)


def assign(X, centers, xp, x_sq=None, budget=64 << 20, sw=None, need_d=True):
    """Nearest centre and squared distance of every row of X, in row chunks of bounded memory. With sw,
    also the per-cluster weighted sums of rows and total weights (the Lloyd update), from the same chunk
    while it is in cache: X.T @ onehot (the (n, d) x (n, k) order; onehot.T @ X is many times slower in
    OpenBLAS for these shapes). need_d=False skips the distances (returned as None): a Lloyd step only
    needs the labels."""
    n, k = X.shape[0], centers.shape[0]
    c_sq = row_norms_sq(centers, xp)
    centers_m2 = centers * -2
    labels = xp.empty(n, dtype=xp.int32)
    dmin = xp.empty(n, dtype=X.dtype) if need_d else None

    def run(span):
        s, e = span
        lab, d = _assign_chunk(X[s:e], centers_m2, c_sq, None if x_sq is None else x_sq[s:e], xp, need_d)
        labels[s:e] = lab
        if need_d:
            dmin[s:e] = d
        if sw is None:
            return None
        # scattered rather than compared against every centre, and weights by bincount: the broadcast compare,
        # cast and column sums cost 20x the GEMM here
        onehot = xp.zeros((e - s, k), dtype=X.dtype)
        onehot[xp.arange(e - s), lab] = sw[s:e]
        return X[s:e].T @ onehot, xp.bincount(lab, weights=sw[s:e], minlength=k).astype(X.dtype)

    step = _cpu_step(xp, n) or chunk_rows(n, k, X.dtype.itemsize, budget)
    spans = _chunks(n, step)
    parts = rt.threads.parallel_map(run, spans) if xp is np and len(spans) > 1 else [run(sp) for sp in spans]
    if sw is None:
        return labels, dmin
    sums = xp.zeros((X.shape[1], k), dtype=X.dtype)
    weights = xp.zeros(k, dtype=X.dtype)
    for ps, pw in parts:
        sums += ps
        weights += pw
    return labels, dmin, xp.ascontiguousarray(sums.T), weights


def weighted_sums(X, labels, sw, k, xp, budget=64 << 20):
    """Per-cluster weighted sums of rows and total weights, by one-hot GEMMs in chunks."""
    n = X.shape[0]
    sums = xp.zeros((X.shape[1], k), dtype=X.dtype)
    weights = xp.zeros(k, dtype=X.dtype)
    step = chunk_rows(n, k, X.dtype.itemsize, budget)
    ks = xp.arange(k, dtype=labels.dtype)
    for s in range(0, n, step):
        onehot = (labels[s:s + step, None] == ks[None, :]).astype(X.dtype) * sw[s:s + step, None]
        sums += X[s:s + step].T @ onehot
        weights += onehot.sum(0)
    return xp.ascontiguousarray(sums.T), weights


def kmeans_plusplus_init(X, n_clusters, x_sq, random_state, sw, xp, n_local_trials=None):
    """scikit-learn's greedy k-means++ (same random draws); distances on the device."""
    n = X.shape[0]
    if n_local_trials is None:
        n_local_trials = 2 + int(np.log(n_clusters))
    sw_h = to_host(sw)
    center_id = random_state.choice(n, p=sw_h / sw_h.sum())
    indices = np.full(n_clusters, -1, dtype=int)
    centers = xp.empty((n_clusters, X.shape[1]), dtype=X.dtype)
    centers[0] = X[center_id]
    indices[0] = center_id
    closest = sq_distances(X[center_id:center_id + 1], X, xp, Y_sq=x_sq)[0]
    pot = float(closest @ sw)
    for c in range(1, n_clusters):
        rand_vals = random_state.uniform(size=n_local_trials) * pot
        cum = to_host(xp.cumsum((sw * closest).astype(xp.float64)))
        cand = np.clip(np.searchsorted(cum, rand_vals), None, n - 1)
        d_cand = sq_distances(X[xp.asarray(cand)], X, xp, Y_sq=x_sq)
        xp.minimum(closest, d_cand, out=d_cand)
        cand_pot = to_host(d_cand @ sw)
        best = int(np.argmin(cand_pot))
        pot = float(cand_pot[best])
        closest = d_cand[best]
        centers[c] = X[int(cand[best])]
        indices[c] = cand[best]
    return centers, indices


def _init_centroids(est, X, x_sq, init, random_state, sw, xp, n_centroids, init_size=None):
    n = X.shape[0]
    if init_size is not None and init_size < n:
        idx = random_state.randint(0, n, init_size)
        X, x_sq, sw = X[xp.asarray(idx)], x_sq[xp.asarray(idx)], sw[xp.asarray(idx)]
        n = init_size
    if isinstance(init, str) and init == "k-means++":
        return kmeans_plusplus_init(X, n_centroids, x_sq, random_state, sw, xp)[0]
    if isinstance(init, str) and init == "random":
        sw_h = to_host(sw)
        seeds = random_state.choice(n, size=n_centroids, replace=False, p=sw_h / sw_h.sum())
        return X[xp.asarray(seeds)]
    if callable(init):
        return xp.asarray(init(to_host(X), n_centroids, random_state=random_state), dtype=X.dtype)
    return xp.asarray(init, dtype=X.dtype)


def lloyd(X, sw, centers, max_iter, tol, xp, x_sq):
    """Lloyd iterations with scikit-learn's stopping rules: labels unchanged (strict convergence) or the
    squared centre shift under tol; empty clusters take the points farthest from their centres."""
    labels_old = None
    strict = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (n_iter is read after the loop)
        # the labels only: the distances are needed when a cluster empties (rare), and recomputed then
        labels, _, sums, weights = assign(X, centers, xp, x_sq, sw=sw, need_d=False)
        empty = to_host(weights == 0).nonzero()[0]
        if len(empty):
            dmin = assign(X, centers, xp, x_sq)[1]
            far = to_host(xp.argsort(-dmin))[: len(empty)]
            lab_h = to_host(labels)
            for e, f in zip(empty, far):
                old = int(lab_h[f])
                sums[old] -= X[int(f)] * sw[int(f)]
                weights[old] -= sw[int(f)]
                sums[e] = X[int(f)] * sw[int(f)]
                weights[e] = sw[int(f)]
        new = sums / weights[:, None]
        shift = float(((new - centers) ** 2).sum())
        centers = new
        if labels_old is not None and bool((labels == labels_old).all()):
            strict = True
            break
        if shift <= tol:
            break
        labels_old = labels
    labels, dmin = assign(X, centers, xp, x_sq)
    return labels, float(dmin @ sw), centers, n_iter, strict


def _check_common(est, X):
    if not isinstance(est.n_clusters, numbers.Integral) or est.n_clusters < 1:
        raise ValueError(f"The 'n_clusters' parameter of {type(est).__name__} must be an int in the range "
                         f"[1, inf). Got {est.n_clusters!r} instead.")
    if X.shape[0] < est.n_clusters:
        raise ValueError(f"n_samples={X.shape[0]} should be >= n_clusters={est.n_clusters}.")
    if not (isinstance(est.init, str) and est.init in ("k-means++", "random")) and not callable(est.init):
        init = np.asarray(est.init)
        if init.shape != (est.n_clusters, X.shape[1]):
            raise ValueError(f"The shape of the initial centers {init.shape} does not match the number of clusters "
                             f"{est.n_clusters} and the number of features {X.shape[1]}.")


class _KMeansBase(ClassNamePrefixFeaturesOutMixin, TransformerMixin, ClusterMixin, DeviceMixin, BaseEstimator):
    def _n_init(self, default):
        if self.n_init == "auto":
            return 1 if (isinstance(self.init, str) and self.init == "k-means++") or not isinstance(self.init, str) \
                else default
        if not isinstance(self.init, str) and not callable(self.init) and self.n_init != 1:
            warnings.warn(f"Explicit initial center position passed: performing only one init in "
                          f"{type(self).__name__} instead of n_init={self.n_init}.", RuntimeWarning, stacklevel=3)
            return 1
        return self.n_init

    def predict(self, X):
        check_is_fitted(self)
        Xd = self._validate(X, reset=False)
        xp = self._xp()
        labels, _ = assign(Xd, xp.asarray(self.cluster_centers_, dtype=Xd.dtype), xp, need_d=False)
        return as_output(labels, X)

    def fit_predict(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).labels_

    def transform(self, X):
        check_is_fitted(self)
        Xd = self._validate(X, reset=False)
        xp = self._xp()
        return as_output(xp.sqrt(sq_distances(Xd, xp.asarray(self.cluster_centers_, dtype=Xd.dtype), xp)), X)

    def fit_transform(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).transform(X)

    def score(self, X, y=None, sample_weight=None):
        check_is_fitted(self)
        Xd = self._validate(X, reset=False)
        xp = self._xp()
        sw = sample_weight_or_ones(sample_weight, Xd, xp, Xd.dtype)
        _, dmin = assign(Xd, xp.asarray(self.cluster_centers_, dtype=Xd.dtype), xp)
        return -float(dmin @ sw)

    @property
    def _n_features_out(self):
        return self.cluster_centers_.shape[0]


class KMeans(_KMeansBase):
    def __init__(self, n_clusters=8, *, init="k-means++", n_init="auto", max_iter=300, tol=1e-4, verbose=0,
                 random_state=None, copy_x=True, algorithm="lloyd", device="cpu"):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.copy_x = copy_x
        self.algorithm = algorithm
        self.device = device

    def fit(self, X, y=None, sample_weight=None):
        if self.algorithm not in ("lloyd", "elkan"):
            raise ValueError(f"algorithm must be 'lloyd' or 'elkan', got {self.algorithm!r}")
        X = self._validate(X, reset=True)
        _check_common(self, X)
        xp = self._xp()
        rs = check_random_state(self.random_state)
        sw = sample_weight_or_ones(sample_weight, X, xp, X.dtype)
        tol = float(xp.var(X, axis=0).mean()) * self.tol
        # Centre the data as scikit-learn does: smaller numbers, more accurate distances by GEMM.
        X_mean = X.mean(axis=0)
        X = X - X_mean
        init = self.init
        if not isinstance(init, str) and not callable(init):
            init = xp.asarray(np.asarray(init), dtype=X.dtype) - X_mean
        x_sq = row_norms_sq(X, xp)
        best = None
        for _ in range(self._n_init(10)):
            centers = _init_centroids(self, X, x_sq, init, rs, sw, xp, self.n_clusters)
            labels, inertia, centers, n_iter, _strict = lloyd(X, sw, centers, self.max_iter, tol, xp, x_sq)
            if best is None or inertia < best[1] * (1 - 1e-6):
                best = (labels, inertia, centers, n_iter)
        labels, inertia, centers, n_iter = best
        n_distinct = len(np.unique(to_host(labels)))
        if n_distinct < self.n_clusters:
            warnings.warn(f"Number of distinct clusters ({n_distinct}) found smaller than n_clusters "
                          f"({self.n_clusters}). Possibly due to duplicate points in X.", ConvergenceWarning,
                          stacklevel=2)
        self.cluster_centers_ = to_host(centers + X_mean)
        self.labels_ = to_host(labels)
        self.inertia_ = inertia
        self.n_iter_ = n_iter
        return self


class MiniBatchKMeans(_KMeansBase):
    """Mini-batch k-means (Sculley 2010) with scikit-learn's per-centre learning rates and its
    early stopping on the smoothed batch inertia. Low-count centre reassignment is not done."""

    def __init__(self, n_clusters=8, *, init="k-means++", max_iter=100, batch_size=1024, verbose=0,
                 compute_labels=True, random_state=None, tol=0.0, max_no_improvement=10, init_size=None,
                 n_init="auto", reassignment_ratio=0.01, device="cpu"):
        self.n_clusters = n_clusters
        self.init = init
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.verbose = verbose
        self.compute_labels = compute_labels
        self.random_state = random_state
        self.tol = tol
        self.max_no_improvement = max_no_improvement
        self.init_size = init_size
        self.n_init = n_init
        self.reassignment_ratio = reassignment_ratio
        self.device = device

    def _init_size(self, n):
        init_size = self.init_size if self.init_size is not None else 3 * self.batch_size
        init_size = max(init_size, 3 * self.n_clusters)
        return min(init_size, n)

    def _step(self, Xb, swb, xp):
        """One mini-batch update: each centre moves to the weighted mean of its old position (weighted by
        all the samples it has seen) and its new batch samples."""
        k = self.n_clusters
        labels, dmin = assign(Xb, self._centers, xp)
        sums, weights = weighted_sums(Xb, labels, swb, k, xp)
        seen = weights > 0
        total = self._counts + weights
        upd = (self._centers * self._counts[:, None] + sums) / xp.where(total > 0, total, 1)[:, None]
        new = xp.where(seen[:, None], upd, self._centers)
        shift = float(((new - self._centers) ** 2).sum())
        self._centers = new
        self._counts = total
        return float(dmin @ swb), shift

    def fit(self, X, y=None, sample_weight=None):
        X = self._validate(X, reset=True)
        _check_common(self, X)
        xp = self._xp()
        n = X.shape[0]
        rs = check_random_state(self.random_state)
        sw = sample_weight_or_ones(sample_weight, X, xp, X.dtype)
        bs = min(self.batch_size, n)
        x_sq = row_norms_sq(X, xp)
        init = self.init if isinstance(self.init, str) or callable(self.init) else np.asarray(self.init)
        init_size = self._init_size(n)
        val_idx = xp.asarray(rs.randint(0, n, init_size))
        Xv, swv = X[val_idx], sw[val_idx]
        best = None
        for _ in range(self._n_init(3)):
            c = _init_centroids(self, X, x_sq, init, rs, sw, xp, self.n_clusters, init_size=init_size)
            _, d = assign(Xv, c, xp)
            inertia = float(d @ swv)
            if best is None or inertia < best[1]:
                best = (c, inertia)
        self._centers = best[0]
        self._counts = xp.zeros(self.n_clusters, dtype=X.dtype)
        tol = float(xp.var(X, axis=0).mean()) * self.tol
        n_steps = (self.max_iter * n) // bs
        ewa, ewa_min, no_improve = None, None, 0
        i = 0
        for i in range(n_steps):  # noqa: B007 (i is read after the loop)
            idx = xp.asarray(rs.randint(0, n, bs))
            inertia, shift = self._step(X[idx], sw[idx], xp)
            inertia /= bs
            alpha = min(1.0, bs * 2.0 / (n + 1))
            ewa = inertia if ewa is None else ewa * (1 - alpha) + inertia * alpha
            if tol > 0 and shift <= tol:
                break
            if ewa_min is None or ewa < ewa_min:
                no_improve, ewa_min = 0, ewa
            else:
                no_improve += 1
            if self.max_no_improvement is not None and no_improve >= self.max_no_improvement:
                break
        self.n_steps_ = i + 1
        self.n_iter_ = int(np.ceil(((i + 1) * bs) / n))
        self.cluster_centers_ = to_host(self._centers)
        if self.compute_labels:
            labels, dmin = assign(X, self._centers, xp, x_sq)
            self.labels_, self.inertia_ = to_host(labels), float(dmin @ sw)
        self._finish()
        return self

    def partial_fit(self, X, y=None, sample_weight=None):
        first = not hasattr(self, "cluster_centers_")
        X = self._validate(X, reset=first)
        xp = self._xp()
        sw = sample_weight_or_ones(sample_weight, X, xp, X.dtype)
        if first:
            _check_common(self, X)
            self._random_state = check_random_state(self.random_state)
            init = self.init if isinstance(self.init, str) or callable(self.init) else np.asarray(self.init)
            self._centers = _init_centroids(self, X, row_norms_sq(X, xp), init, self._random_state, sw, xp,
                                            self.n_clusters, init_size=self._init_size(X.shape[0]))
            self._counts = xp.zeros(self.n_clusters, dtype=X.dtype)
            self.n_steps_ = 0
        else:
            self._centers = xp.asarray(self.cluster_centers_, dtype=X.dtype)
            self._counts = xp.asarray(self._counts_h, dtype=X.dtype)
        self._step(X, sw, xp)
        self.n_steps_ += 1
        self.n_iter_ = self.n_steps_
        self.cluster_centers_ = to_host(self._centers)
        if self.compute_labels:
            labels, dmin = assign(X, self._centers, xp)
            self.labels_, self.inertia_ = to_host(labels), float(dmin @ sw)
        self._finish()
        return self

    def _finish(self):
        # Device arrays are not kept on the estimator (pickling, clone); the counts go to the host.
        self._counts_h = to_host(self._counts)
        del self._centers, self._counts
