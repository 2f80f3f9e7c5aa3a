"""KMeans (Lloyd) and MiniBatchKMeans. The assignment step is chunked distance GEMMs on the device, for
the rows whose rounding-safe Hamerly bounds allow a new label (the labels are plain Lloyd's); the update
moves float64 cluster sums by the rows that changed cluster, as one-hot GEMMs. k-means++ draws from the
same RandomState calls as scikit-learn's, so on the same data and seed the initial centres are the same."""
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


# Up to this many centres, labels come from the bits of a matrix-vector product (see _nearest); the sum of
# distinct powers of two below 2^24 is exact in float32.
_MAX_BIT_LABELS = 24


def _nearest(Xc, centers_m2, c_sq, xp, pow2, second=False):
    """Nearest centre (the first on ties, as argmin) of each row of a chunk and the row's minimum of
    |c|^2 - 2 x.c (its squared distance less |x|^2, which does not move the argmin); with second, also the
    second smallest (None otherwise).

    NumPy's argmin along a short last axis costs ~30 ns a row (a loop call per row), more than the GEMM. So
    the block goes centres-as-rows (one strided copy, the |c|^2 add folded in), where the minimum over centres
    is k vectorised passes; the entries equal to it become 1.0, and pow2 @ that (pow2[j] = 2^(k-1-j)) has its
    highest bit at the first minimal centre, read off by frexp. centers_m2 is -2 * centers: scaling by a
    power of two is exact, so folding it into the GEMM's input gives the same bits as scaling the product."""
    D = Xc @ centers_m2.T                      # (rows, k): OpenBLAS's fast shape for a thin product
    if pow2 is None:                           # many centres: the rows are long enough for argmin
        rows = xp.arange(D.shape[0])
        D += c_sq
        lab = D.argmin(axis=1)
        dmin = D[rows, lab]
        if not second:
            return lab, dmin, None
        D[rows, lab] = xp.inf
        return lab, dmin, D.min(axis=1)
    k = D.shape[1]
    DT = xp.empty((k, D.shape[0]), dtype=D.dtype)
    xp.add(D.T, c_sq[:, None], out=DT)
    dmin = DT.min(axis=0)
    eq = xp.empty_like(DT) if second else DT
    xp.equal(DT, dmin, out=eq, casting="unsafe")
    mant, e = xp.frexp(pow2 @ eq)
    lab = k - e
    if not second:
        return lab, dmin, None
    # the second smallest: the minimal entries pushed out of reach; where several centres tie for the
    # minimum (the bits are not a single power of two) the second smallest is the minimum itself
    eq *= np.finfo(DT.dtype).max
    DT += eq
    d2 = DT.min(axis=0)
    ties = (mant != 0.5).nonzero()[0]
    if len(ties):
        d2[ties] = dmin[ties]
    return lab, dmin, d2


def assign(X, centers, xp, x_sq=None, budget=64 << 20, need_d=True, rows=None, second=False):
    """Nearest centre and squared distance of every row of X (of X[rows] when given), in row chunks of
    bounded memory. need_d=False skips the distances (returned as None). second=True returns, instead of
    squared distances, |c|^2 - 2 x.c for the nearest and the second-nearest centre (lloyd's bounds)."""
    k = centers.shape[0]
    n = X.shape[0] if rows is None else len(rows)
    c_sq = row_norms_sq(centers, xp)
    centers_m2 = centers * -2
    pow2 = (2.0 ** xp.arange(k - 1, -1, -1)).astype(X.dtype) if k <= _MAX_BIT_LABELS else None
    labels = xp.empty(n, dtype=xp.int32)
    dmin = xp.empty(n, dtype=X.dtype) if need_d or second else None
    d2 = xp.empty(n, dtype=X.dtype) if second else None
    if need_d and not second and x_sq is None:
        x_sq = row_norms_sq(X, xp)

    def run(span):
        s, e = span
        Xc = X[s:e] if rows is None else X.take(rows[s:e], axis=0)
        lab, d, dd = _nearest(Xc, centers_m2, c_sq, xp, pow2, second)
        labels[s:e] = lab
        if second:
            dmin[s:e], d2[s:e] = d, dd
        elif need_d:
            d += x_sq[s:e] if rows is None else x_sq[rows[s:e]]
            xp.maximum(d, 0, out=dmin[s:e])

    step = _cpu_step(xp, n) or chunk_rows(n, k, X.dtype.itemsize, budget)
    spans = _chunks(n, step)
    if xp is np and len(spans) > 1:
        rt.threads.parallel_map(run, spans)
    else:
        for sp in spans:
            run(sp)
    return (labels, dmin, d2) if second else (labels, dmin)


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


def _moved_sums(X, sw, idx, new, old, k, xp, step=16384):
    """Change of the per-cluster weighted row sums (float64) when the rows idx move from clusters old to
    clusters new (old None: the rows join), as one-hot GEMMs over bounded row chunks."""
    sums = xp.zeros((k, X.shape[1]), dtype=xp.float64)
    for s in range(0, len(idx), step):
        i = idx[s:s + step]
        cols = xp.arange(len(i))
        w = sw[i].astype(xp.float64)
        M = xp.zeros((k, len(i)), dtype=xp.float64)
        M[new[s:s + step], cols] = w
        if old is not None:
            M[old[s:s + step], cols] = -w
        sums += M @ X[i].astype(xp.float64)
    return sums


class _Bounds:
    """Hamerly's bounds (2010) on each row's distance to its centre (upper) and to every other centre
    (lower), so that a Lloyd step recomputes only the rows whose label could change. They are made safe
    against rounding: a row is skipped only when its bounds put the nearest centre ahead of every other by
    more than twice the worst rounding of a GEMM distance, |x|^2 - 2 x.c + |c|^2 in X's precision (at most
    (d + 2) units of roundoff of (|x| + |c|)^2; 4 (d + 4) eps is taken, with |c| <= c_bound for every centre).
    On such a row the full computation finds the same nearest centre, so the labels are plain Lloyd's.

    One number per row is kept, gap = lower - upper - err / upper_at_reset: gap > 0 gives lower > upper and
    (lower - upper)(lower + upper) > 2 err (lower + upper > 2 upper_at_reset, as upper only grows), the test
    above, in one comparison; a step that moves the centres by delta takes delta[own] + max(delta) off it."""

    def __init__(self, X, x_sq, xp):
        self.xp = xp
        self.x_sq = x_sq.astype(xp.float64)
        self.x_norm = xp.sqrt(self.x_sq)
        self.gamma = 4 * (X.shape[1] + 4) * float(np.finfo(X.dtype).eps)
        self.gap = xp.empty(X.shape[0], dtype=xp.float64)
        self.c_bound = -1.0

    def covers(self, c_max):
        """Whether the kept gaps hold for centres within c_max of the origin; if not, c_bound is raised (with
        room to spare) and every row must be reset."""
        if c_max <= self.c_bound:
            return True
        self.c_bound = 2 * c_max
        return False

    def reset(self, rows, d1, d2):
        """Gaps from the GEMM's |c|^2 - 2 x.c of the nearest (d1) and second (d2) centres (rows None: all)."""
        xp = self.xp
        sel = slice(None) if rows is None else rows
        x_sq = self.x_sq[sel]
        err = self.gamma * (self.x_norm[sel] + self.c_bound) ** 2
        up = xp.sqrt(xp.maximum(d1 + x_sq + err, 0))
        lo = xp.sqrt(xp.maximum(d2 + x_sq - err, 0))
        with np.errstate(divide="ignore", invalid="ignore"):   # a row on its centre: never skipped (nan/-inf)
            lo -= up
            lo -= err / up
        self.gap[sel] = lo

    def move(self, labels, delta):
        """The centres moved by delta (Euclidean): Hamerly's update of both bounds."""
        self.gap -= (delta + delta.max())[labels]

    def unsure(self):
        """Rows whose label could change."""
        return (~(self.gap > 0)).nonzero()[0]


def lloyd(X, sw, centers, max_iter, tol, xp, x_sq):
    """Lloyd iterations with scikit-learn's stopping rules: labels unchanged (strict convergence) or the
    squared centre shift under tol; empty clusters take the points farthest from their centres.

    Each step gives every row the nearest centre, as plain Lloyd, but computes it only for rows whose
    rounding-safe Hamerly bounds (_Bounds) allow a change; the others provably keep theirs. The clusters'
    row sums are kept across steps in float64 and moved by the rows that changed cluster only (float64 keeps
    them at least as accurate as scikit-learn's fresh float32 sums); the weights are counted afresh."""
    k, n = centers.shape[0], X.shape[0]
    unit = bool((sw == 1).all())
    bounds = _Bounds(X, x_sq, xp)
    labels_old = None
    strict = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (n_iter is read after the loop)
        c_max = float(xp.sqrt(row_norms_sq(centers, xp).max()))
        rows = bounds.unsure() if bounds.covers(c_max) and labels_old is not None else None
        lab, d1, d2 = assign(X, centers, xp, rows=rows, second=True)
        bounds.reset(rows, d1, d2)
        if labels_old is None:
            labels = lab
            sums = _moved_sums(X, sw, xp.arange(n), labels, None, k, xp)
            moved = None
        else:
            labels = labels_old.copy()
            changed = (lab != (labels if rows is None else labels[rows])).nonzero()[0]
            moved, lab = (changed if rows is None else rows[changed]), lab[changed]
            if len(moved):
                sums += _moved_sums(X, sw, moved, lab, labels_old[moved], k, xp)
                labels[moved] = lab
        if unit:
            weights = xp.bincount(labels, minlength=k).astype(xp.float64)
        else:
            weights = xp.bincount(labels, weights=sw.astype(xp.float64), minlength=k)
        empty = to_host(weights == 0).nonzero()[0]
        sums[xp.asarray(empty)] = 0  # no residue of float64 adds and subtractions in an emptied cluster
        c_sums, c_weights = sums, weights
        if len(empty):
            # scikit-learn's relocation (same distances, same argpartition): it changes this step's centres
            # only, not the labels, so the kept sums stay those of the labels; nothing moves when every row
            # sits on its centre (more clusters than distinct rows)
            dist = ((X - centers[labels]) ** 2).sum(axis=1)
            if float(dist.max()) > 0:
                c_sums, c_weights = sums.copy(), weights.copy()
                far = to_host(xp.argpartition(dist, -len(empty))[:-len(empty) - 1:-1])
                lab_h = to_host(labels)
                for e, f in zip(empty, far):
                    old = int(lab_h[f])
                    xf = X[int(f)].astype(xp.float64) * float(sw[int(f)])
                    c_sums[old] -= xf
                    c_weights[old] -= float(sw[int(f)])
                    c_sums[e] = xf
                    c_weights[e] = float(sw[int(f)])
        new = c_sums / xp.where(c_weights > 0, c_weights, 1)[:, None]
        still = to_host(c_weights <= 0).nonzero()[0]
        if len(still):
            # scikit-learn's _average_centers puts a cluster left without weight on the heaviest cluster's
            # centre, in place: already averaged when that cluster comes earlier, still its sum when later
            big = int(to_host(xp.argmax(c_weights)))
            for j in still:
                new[j] = new[big] if big < j else c_sums[big]
        new = new.astype(X.dtype)
        shift = float(((new - centers) ** 2).sum())
        bounds.move(labels, xp.sqrt(((new.astype(xp.float64) - centers) ** 2).sum(axis=1)))
        centers = new
        if moved is not None and len(moved) == 0:
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
