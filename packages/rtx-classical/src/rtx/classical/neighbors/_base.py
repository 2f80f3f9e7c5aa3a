"""Brute-force neighbours on BLAS: squared distances by GEMM in row chunks (memory stays bounded),
k smallest by argpartition then a sort of the k; the same answers as scikit-learn's brute force."""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

import rtx.runtime as rt
from rtx.classical._base import DeviceMixin, as_output, chunk_rows, row_norms_sq, sq_distances, to_host


def _select_by_block_min(D, kk, xp):
    """Column indices of the kk smallest entries of every row of D, unsorted; None when the cut below keeps
    too many. A full argpartition of each long row is most of the cost here, so a cheaper cut comes first:
    the kk-th smallest of the rows' block minima bounds the kk-th smallest entry from above (kk blocks each
    hold an entry at or below it), and only the entries at or below that bound (about kk for real data)
    are sorted."""
    m, n = D.shape
    b = 64
    nb = n // b
    if nb < 4 * kk:
        return None
    bm = D[:, :nb * b].reshape(m, nb, b).min(axis=2)
    if nb * b < n:
        bm = xp.concatenate([bm, D[:, nb * b:].min(axis=1, keepdims=True)], axis=1)
    tau = xp.partition(bm, kk - 1, axis=1)[:, kk - 1]
    r, c = xp.nonzero(D <= tau[:, None])
    if len(r) > 8 * kk * m:  # many equal distances: the cut kept too much
        return None
    order = xp.lexsort((c, D[r, c], r))
    starts = xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(xp.bincount(r, minlength=m))[:-1]])
    return c[order][starts[:, None] + xp.arange(kk)]


_TILE, _GROUPS = 2048, 64  # columns of F per GEMM tile; each tile's columns fall in 64 strided groups of 32


def _kneighbors_tiled(Q, F, f_sq, q_sq, k, kk, exclude_self):
    """The CPU path for a large F: `kneighbors_brute`'s answer with GEMMs of 256 queries x 2048 samples
    (a thin GEMM of a few queries against all of F reads F from memory for every few queries: 4x the
    time per distance here) and nothing kept of each tile but its group minima.

    Pass 1, per tile: -2 q.y + |y|^2, then the minimum of each of its 64 groups (columns j, j + 64, ...),
    folded in halves in place (five elementwise minimums over long rows: a reduction over short groups
    costs several times more here). The kk-th smallest group minimum tau bounds the kk-th smallest
    distance from above, so the kk nearest lie in the groups whose minimum is <= tau: kk of them unless
    minima tie (those rows are done whole, as before). Pass 2 computes the distances of those kk x 32
    candidates only and keeps the kk smallest (ties to the smaller index)."""
    n, nf, d = Q.shape[0], F.shape[0], F.shape[1]
    nt = -(-nf // _TILE)
    pad = nt * _TILE - nf
    # padding rows sit at infinite distance (never candidates: a row with fewer finite groups than kk ties
    # at inf and is done whole)
    Fp = np.concatenate([F, np.zeros((pad, d), F.dtype)]) if pad else F
    fp = np.concatenate([f_sq, np.full(pad, np.inf, f_sq.dtype)]) if pad else f_sq
    r_per = _TILE // _GROUPS
    Fg = Fp.reshape(nt, r_per, _GROUPS, d)      # [t, r, j] is row t * TILE + r * GROUPS + j
    fg = fp.reshape(nt, r_per, _GROUPS)
    col_of = (np.arange(r_per)[:, None] * _GROUPS)   # r * GROUPS, added to t * TILE + j
    Qm2 = Q * -2
    dist = np.empty((n, k), dtype=Q.dtype)
    ind = np.empty((n, k), dtype=np.int64)

    def run(span):
        s, e = span
        m = e - s
        q = Qm2[s:e]
        rows = np.arange(s, e)
        bm = np.empty((m, nt, _GROUPS), dtype=Q.dtype)
        for t in range(nt):
            D = q @ Fp[t * _TILE:(t + 1) * _TILE].T
            D += fp[t * _TILE:(t + 1) * _TILE]
            if exclude_self:
                inside = np.flatnonzero((rows >= t * _TILE) & (rows < (t + 1) * _TILE))
                D[inside, rows[inside] - t * _TILE] = np.inf
            w = _TILE
            while w > _GROUPS:
                w //= 2
                np.minimum(D[:, :w], D[:, w:2 * w], out=D[:, :w])
            bm[:, t] = D[:, :_GROUPS]
        bm = bm.reshape(m, nt * _GROUPS)
        sel = np.argpartition(bm, kk - 1, axis=1)[:, :kk]
        tau = np.take_along_axis(bm, sel, axis=1).max(axis=1)
        whole = np.flatnonzero(((bm <= tau[:, None]).sum(axis=1) > kk) | ~np.isfinite(tau))
        t_i, j_i = sel // _GROUPS, sel % _GROUPS
        cand = np.matmul(Fg[t_i, :, j_i, :], q[:, None, :, None])[..., 0]   # (m, kk, r_per)
        cand += fg[t_i, :, j_i]
        cols = (t_i * _TILE + j_i)[:, :, None] + col_of[:, 0]
        cand, cols = cand.reshape(m, -1), cols.reshape(m, -1)
        if exclude_self:
            cand[cols == rows[:, None]] = np.inf
        order = np.lexsort((cols, cand), axis=1)[:, :kk]
        part, dpart = np.take_along_axis(cols, order, axis=1), np.take_along_axis(cand, order, axis=1)
        for i in whole:   # tied group minima: this row whole, as the untiled path does
            Dr = q[i:i + 1] @ F.T
            Dr += f_sq
            if exclude_self:
                Dr[0, s + i] = np.inf
            pr = _select_by_block_min(Dr, kk, np)
            if pr is None:
                pr = np.argpartition(Dr, kk - 1, axis=1)[:, :kk]
            part[i], dpart[i] = pr[0], Dr[0, pr[0]]
        dpart += q_sq[s:e, None]
        np.maximum(dpart, 0, out=dpart)
        order = np.argsort(dpart, axis=1, kind="stable")[:, :k]
        ind[s:e] = np.take_along_axis(part, order, axis=1)
        dist[s:e] = np.sqrt(np.take_along_axis(dpart, order, axis=1))

    rt.threads.parallel_map(run, [(s, min(n, s + 256)) for s in range(0, n, 256)])
    return dist, ind


def kneighbors_brute(Q, F, k, xp, exclude_self=False, budget=64 << 20):
    """Distances and indices of the k nearest rows of F for every row of Q (sorted by distance).
    On the CPU, row chunks small enough for cache run side by side on rtx.runtime's pool, each with
    single-threaded BLAS (OpenBLAS's own threads do worse on these shapes on a busy machine)."""
    n = Q.shape[0]
    f_sq = row_norms_sq(F, xp)
    q_sq = row_norms_sq(Q, xp)
    dist = xp.empty((n, k), dtype=Q.dtype)
    ind = xp.empty((n, k), dtype=xp.int64)
    kk = k + 1 if exclude_self else k
    if xp is np and F.shape[0] >= 8 * _TILE and 4 * kk <= F.shape[0] // 64:
        return _kneighbors_tiled(Q, F, f_sq, q_sq, k, kk, exclude_self)
    Qm2 = Q * -2  # exact: -2 x.y is formed by the GEMM itself, one pass over the distance block fewer

    def run(span):
        s, e = span
        # The row's own |q|^2 does not change its ranking: it is added to the kk kept entries only.
        D = Qm2[s:e] @ F.T
        D += f_sq
        if exclude_self:
            D[xp.arange(e - s), xp.arange(s, e)] = xp.inf
        part = _select_by_block_min(D, kk, xp) if kk < D.shape[1] else None
        if part is None:
            part = (xp.argpartition(D, kk - 1, axis=1)[:, :kk] if kk < D.shape[1]
                    else xp.broadcast_to(xp.arange(D.shape[1]), D.shape))
        dpart = xp.take_along_axis(D, part, axis=1)
        dpart += q_sq[s:e, None]
        xp.maximum(dpart, 0, out=dpart)
        order = xp.argsort(dpart, axis=1, kind="stable")[:, :k]
        ind[s:e] = xp.take_along_axis(part, order, axis=1)
        dist[s:e] = xp.sqrt(xp.take_along_axis(dpart, order, axis=1))

    if xp is np:
        step = chunk_rows(n, F.shape[0], Q.dtype.itemsize, 8 << 20)
        spans = [(s, min(n, s + step)) for s in range(0, n, step)]
        rt.threads.parallel_map(run, spans)
    else:
        step = chunk_rows(n, F.shape[0], Q.dtype.itemsize, budget)
        for s in range(0, n, step):
            run((s, min(n, s + step)))
    return dist, ind


class NeighborsBase(DeviceMixin, BaseEstimator):
    def _check_params(self):
        if self.metric not in ("minkowski", "euclidean", "l2") or (self.metric == "minkowski" and self.p != 2):
            raise ValueError(f"rtx.classical computes Euclidean neighbours only (metric='minkowski' with p=2 or "
                             f"'euclidean'); got metric={self.metric!r}, p={self.p!r}")
        if self.n_neighbors is not None and (not isinstance(self.n_neighbors, numbers.Integral)
                                             or self.n_neighbors <= 0):
            raise ValueError(f"Expected n_neighbors > 0. Got {self.n_neighbors}")

    def _fit(self, X, y=None, **kw):
        self._check_params()
        if y is None:
            X = self._validate(X, reset=True)
        else:
            X, y = self._validate_Xy(X, y, **kw)
        self._fit_X = to_host(X)
        self.n_samples_fit_ = X.shape[0]
        self.effective_metric_ = "euclidean"
        self.effective_metric_params_ = {}
        return X, y

    def kneighbors(self, X=None, n_neighbors=None, return_distance=True):
        check_is_fitted(self)
        k = self.n_neighbors if n_neighbors is None else n_neighbors
        if not isinstance(k, numbers.Integral) or k <= 0:
            raise ValueError(f"Expected n_neighbors > 0. Got {k}")
        xp = self._xp()
        F = self._to_dev(self._fit_X)
        if X is None:
            Q, X_in, self_query = F, self._fit_X, True
        else:
            Q, X_in, self_query = self._validate(X, reset=False), X, False
        n_fit = F.shape[0] - int(self_query)
        if k > n_fit:
            raise ValueError(f"Expected n_neighbors <= n_samples_fit, but n_neighbors = {k}, "
                             f"n_samples_fit = {F.shape[0]}, n_samples = {Q.shape[0]}")
        dist, ind = kneighbors_brute(Q, F.astype(Q.dtype, copy=False), k, xp, exclude_self=self_query)
        if return_distance:
            return as_output(dist, X_in), as_output(ind, X_in)
        return as_output(ind, X_in)


class NearestNeighbors(NeighborsBase):
    def __init__(self, *, n_neighbors=5, radius=1.0, algorithm="auto", leaf_size=30, metric="minkowski", p=2,
                 metric_params=None, n_jobs=None, device="cpu"):
        self.n_neighbors = n_neighbors
        self.radius = radius
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.n_jobs = n_jobs
        self.device = device

    def fit(self, X, y=None):
        self._fit(X)
        return self

    def radius_neighbors(self, X=None, radius=None, return_distance=True, sort_results=False):
        """Per query, the distances and indices of the fitted points within radius (object arrays)."""
        check_is_fitted(self)
        r = self.radius if radius is None else radius
        xp = self._xp()
        F = self._to_dev(self._fit_X)
        Q = F if X is None else self._validate(X, reset=False)
        dists, inds = [], []
        step = chunk_rows(Q.shape[0], F.shape[0], Q.dtype.itemsize)
        for s in range(0, Q.shape[0], step):
            D = to_host(xp.sqrt(sq_distances(Q[s:s + step], F.astype(Q.dtype, copy=False), xp)))
            for i, row in enumerate(D):
                idx = np.flatnonzero(row <= r)
                if X is None:
                    idx = idx[idx != s + i]
                if sort_results:
                    idx = idx[np.argsort(row[idx], kind="stable")]
                inds.append(idx)
                dists.append(row[idx])
        out_i = np.empty(len(inds), dtype=object)
        out_i[:] = inds
        if not return_distance:
            return out_i
        out_d = np.empty(len(dists), dtype=object)
        out_d[:] = dists
        return out_d, out_i
