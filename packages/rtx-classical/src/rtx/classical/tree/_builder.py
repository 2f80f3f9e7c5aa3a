"""Depth-first trees grown level by level on binned features, every node of a level at once.

Per level, one np.bincount per statistic channel builds the histograms of all (node, candidate feature, bin)
triples; cumulative sums over the bins give every left/right split's statistics, and the best split of every
node is one argmax. So the Python loop runs once per level, not once per node. Channels: the sample count (for
min_samples_leaf/split), the weight, then per class the weight (classification) or w*y, w*y^2 (regression).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

HIST_BUDGET = 1 << 23    # floats per histogram block: levels with more nodes are done in node chunks


@dataclass
class Tree:
    """scikit-learn's tree_ arrays (children_left/right = -1 at leaves)."""
    children_left: np.ndarray
    children_right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    value: np.ndarray                 # (n_nodes, n_outputs=1, n_classes or 1)
    impurity: np.ndarray
    n_node_samples: np.ndarray
    weighted_n_node_samples: np.ndarray
    max_depth: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def node_count(self):
        return len(self.feature)

    @property
    def n_leaves(self):
        return int((self.children_left == -1).sum())

    def apply(self, X):
        """The leaf index of each row of X (raw feature values)."""
        node = np.zeros(X.shape[0], dtype=np.intp)
        rows = np.arange(X.shape[0])
        for _ in range(self.max_depth):
            f = self.feature[node]
            inner = f >= 0
            if not inner.any():
                break
            go_left = X[rows, np.where(inner, f, 0)] <= self.threshold[node]
            node = np.where(inner, np.where(go_left, self.children_left[node], self.children_right[node]), node)
        return node


def _impurity(S, criterion):
    """Per-row impurity x weight (what a split minimises) from channel sums S[..., 1:] (weight, stats...).
    Class sums run as a loop over the few class channels: NumPy's reduction along a short last axis costs
    several times the arithmetic."""
    W = S[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        if criterion == "squared_error":
            r = S[..., 3] - S[..., 2] ** 2 / W
        elif criterion == "gini":
            sq = S[..., 2] ** 2
            for c in range(3, S.shape[-1]):
                sq += S[..., c] ** 2
            r = W - sq / W
        else:  # entropy / log_loss, in bits as scikit-learn reports it
            r = W * np.log2(W)
            for c in range(2, S.shape[-1]):
                Cc = S[..., c]
                r -= np.where(Cc > 0, Cc * np.log2(np.where(Cc > 0, Cc, 1)), 0)
    return np.where(W > 0, np.maximum(r, 0), 0.0)


def _level_splits(Xb, channels, samples, node_of, level_stats, depth_ok, rng, m, B, min_samples_split,
                  min_samples_leaf, min_weight_leaf, criterion):
    """The best split of every node of a level (node_of: each sample's node in level_stats' order): returns
    can (the node may split), best_gain (weighted impurity decrease, -inf for none), best_j, best_b (split
    "bin <= b" on feature j) and best_left (the left child's channel sums)."""
    L, C, p = len(level_stats), channels.shape[1], Xb.shape[1]
    imp = _impurity(level_stats, criterion)
    can = (depth_ok & (level_stats[:, 0] >= min_samples_split)
           & (level_stats[:, 0] >= 2 * min_samples_leaf)
           & (imp > 1e-7 * np.maximum(level_stats[:, 1], 1)))
    if m < p:
        cand = rng.random((L, p)).argsort(1)[:, :m]
    else:
        cand = np.broadcast_to(np.arange(p), (L, p))
    best_j = np.full(L, -1)
    best_b = np.zeros(L, dtype=np.intp)
    best_gain = np.full(L, -np.inf)
    best_left = np.zeros((L, C))
    keep = can[node_of]
    s_idx, s_node = samples[keep], node_of[keep]
    chunk = max(1, HIST_BUDGET // (m * B * C))
    if L * B > 2 * len(s_idx):
        # many small nodes: histograms would be mostly empty bins; sort the (node, feature, bin) keys instead
        _best_sorted(Xb, channels, s_idx, s_node, cand, m, B, level_stats, imp, min_samples_leaf,
                     min_weight_leaf, criterion, best_gain, best_j, best_b, best_left)
        chunk = L
    for lo in range(0, L, chunk):
        if chunk == L and L * B > 2 * len(s_idx):
            break
        hi = min(L, lo + chunk)
        if not can[lo:hi].any():
            continue
        sel = (s_node >= lo) & (s_node < hi) if (lo, hi) != (0, L) else slice(None)
        si, sn = s_idx[sel], s_node[sel] - lo
        nl = hi - lo
        bins = Xb[si[:, None], cand[sn + lo]]                               # (ns, m)
        key = ((sn[:, None] * m + np.arange(m)) * B + bins).ravel()
        H = np.empty((nl * m * B, C))
        for c in range(C):
            H[:, c] = np.bincount(key, weights=np.repeat(channels[si, c], m), minlength=nl * m * B)
        H = H.reshape(nl, m, B, C).cumsum(2)                                 # left side of "bin <= b"
        tot = level_stats[lo:hi][:, None, None, :]
        R = tot - H
        ok = ((H[..., 0] >= min_samples_leaf) & (R[..., 0] >= min_samples_leaf)
              & (H[..., 1] > min_weight_leaf) & (R[..., 1] > min_weight_leaf))
        gain = imp[lo:hi, None, None] - _impurity(H, criterion) - _impurity(R, criterion)
        gain = np.where(ok, gain, -np.inf).reshape(nl, m * B)
        arg = gain.argmax(1)
        g = gain[np.arange(nl), arg]
        jj, bb = arg // B, arg % B
        best_gain[lo:hi] = g
        best_j[lo:hi] = cand[np.arange(lo, hi), jj]
        best_b[lo:hi] = bb
        best_left[lo:hi] = H.reshape(nl, m * B, C)[np.arange(nl), arg]
    return can, best_gain, best_j, best_b, best_left


def build_tree(Xb, edges, channels, *, criterion, max_depth, min_samples_split, min_samples_leaf, max_features,
               min_impurity_decrease, rng, min_weight_leaf=0.0, max_leaf_nodes=None):
    """Grow one tree. Xb (n, p) uint8 bins; channels (n, C) float64 (count, weight, stats...). With
    max_leaf_nodes, best-first as scikit-learn (build_tree_best_first)."""
    if max_leaf_nodes is not None:
        return build_tree_best_first(
            Xb, edges, channels, criterion=criterion, max_depth=max_depth, min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf, max_features=max_features, min_impurity_decrease=min_impurity_decrease,
            rng=rng, min_weight_leaf=min_weight_leaf, max_leaf_nodes=max_leaf_nodes)
    n, p = Xb.shape
    C = channels.shape[1]
    B = max(len(e) for e in edges) + 1
    E = np.full((p, B), np.inf)                 # thresholds by (feature, bin); the last bin splits nothing off
    for f, e in enumerate(edges):
        E[f, :len(e)] = e
    max_depth = np.iinfo(np.int32).max if max_depth is None else max_depth
    m = p if max_features is None else max_features
    # growing tree (lists of per-level arrays)
    feat, thr, left, right, stats = [], [], [], [], []
    n_nodes = 1
    samples = np.arange(n)
    node_of = np.zeros(n, dtype=np.intp)        # local index in the current level
    level_stats = channels.sum(0)[None, :]
    stats.append(level_stats)
    feat.append(np.full(1, -2))
    thr.append(np.full(1, -2.0))
    left.append(np.full(1, -1))
    right.append(np.full(1, -1))
    total_imp = _impurity(channels.sum(0)[None, :], criterion)
    importances = np.zeros(p)
    depth = 0
    W_total = channels[:, 1].sum()
    while len(level_stats) and len(samples):
        can, best_gain, best_j, best_b, best_left = _level_splits(
            Xb, channels, samples, node_of, level_stats, np.full(len(level_stats), depth < max_depth), rng, m, B,
            min_samples_split, min_samples_leaf, min_weight_leaf, criterion)
        split = can & np.isfinite(best_gain) & (best_gain / W_total >= min_impurity_decrease - 1e-12) & (best_j >= 0)
        sp = np.flatnonzero(split)
        if not len(sp):
            break
        j = best_j[sp]
        thresholds = E[j, best_b[sp]]
        ids_l = n_nodes + 2 * np.arange(len(sp))
        ids_r = ids_l + 1
        n_nodes += 2 * len(sp)
        # record the split on the parents: the last per-level arrays, in level order (concatenated at the end)
        feat[-1][sp], thr[-1][sp], left[-1][sp], right[-1][sp] = j, thresholds, ids_l, ids_r
        feat.append(np.full(2 * len(sp), -2))
        thr.append(np.full(2 * len(sp), -2.0))
        left.append(np.full(2 * len(sp), -1))
        right.append(np.full(2 * len(sp), -1))
        np.add.at(importances, j, best_gain[sp])
        child_stats = np.empty((2 * len(sp), C))
        child_stats[0::2] = best_left[sp]
        child_stats[1::2] = level_stats[sp] - best_left[sp]
        stats.append(child_stats)
        # move the samples of split nodes down; the others are done
        pos = np.full(len(level_stats), -1)
        pos[sp] = np.arange(len(sp))
        k = pos[node_of]
        alive = k >= 0
        samples, node_of, k = samples[alive], node_of[alive], k[alive]
        goes_left = Xb[samples, best_j[node_of]] <= best_b[node_of]
        node_of = 2 * k + (~goes_left)
        level_stats = child_stats
        depth += 1
    S = np.concatenate(stats)
    tree = Tree(children_left=np.concatenate(left), children_right=np.concatenate(right),
                feature=np.concatenate(feat), threshold=np.concatenate(thr), value=None,
                impurity=_impurity(S, criterion) / np.where(S[:, 1] > 0, S[:, 1], 1),
                n_node_samples=S[:, 0].astype(np.intp), weighted_n_node_samples=S[:, 1], max_depth=depth)
    tree.extra["stats"] = S
    tree.extra["importances"] = importances / max(total_imp[0], 1e-300) if total_imp[0] > 0 else importances
    return tree


def build_tree_best_first(Xb, edges, channels, *, criterion, max_depth, min_samples_split, min_samples_leaf,
                          max_features, min_impurity_decrease, rng, min_weight_leaf, max_leaf_nodes):
    """scikit-learn's BestFirstTreeBuilder: a node's best split is searched when the node is made; the open
    node of largest impurity decrease is split next (ties: the older node), until max_leaf_nodes leaves.
    Node ids are in creation order (a split's children are made left then right), as scikit-learn's."""
    n, p = Xb.shape
    B = max(len(e) for e in edges) + 1
    E = np.full((p, B), np.inf)
    for f, e in enumerate(edges):
        E[f, :len(e)] = e
    max_depth = np.iinfo(np.int32).max if max_depth is None else max_depth
    m = p if max_features is None else max_features
    W_total = channels[:, 1].sum()
    feat, thr, left, right, stats, depth_of, rows_of = [], [], [], [], [], [], []
    heap = []                       # (-gain, node id, j, b, left sums)
    importances = np.zeros(p)

    def make(rows_list, stat_list, depth):
        """Add nodes (their rows, channel sums) at one depth; search their splits; push the splittable ones."""
        ids = []
        for rows, st in zip(rows_list, stat_list):
            ids.append(len(feat))
            feat.append(-2), thr.append(-2.0), left.append(-1), right.append(-1)
            stats.append(st), depth_of.append(depth), rows_of.append(rows)
        samples = np.concatenate(rows_list)
        node_of = np.repeat(np.arange(len(rows_list)), [len(r) for r in rows_list])
        can, gain, bj, bb, bl = _level_splits(Xb, channels, samples, node_of, np.array(stat_list),
                                              np.full(len(rows_list), depth < max_depth), rng, m, B,
                                              min_samples_split, min_samples_leaf, min_weight_leaf, criterion)
        for t, node in enumerate(ids):
            if can[t] and np.isfinite(gain[t]) and gain[t] / W_total >= min_impurity_decrease - 1e-12 and bj[t] >= 0:
                heapq.heappush(heap, (-gain[t], node, int(bj[t]), int(bb[t]), bl[t]))

    make([np.arange(n)], [channels.sum(0)], 0)
    n_leaves = 1
    while heap and n_leaves < max_leaf_nodes:
        neg_gain, node, j, b, st_left = heapq.heappop(heap)
        rows = rows_of[node]
        goes_left = Xb[rows, j] <= b
        feat[node], thr[node], left[node], right[node] = j, E[j, b], len(feat), len(feat) + 1
        importances[j] += -neg_gain
        make([rows[goes_left], rows[~goes_left]], [st_left, stats[node] - st_left], depth_of[node] + 1)
        rows_of[node] = None
        n_leaves += 1
    S = np.array(stats)
    total_imp = _impurity(S[:1], criterion)[0]
    tree = Tree(children_left=np.array(left), children_right=np.array(right), feature=np.array(feat),
                threshold=np.array(thr, dtype=np.float64), value=None,
                impurity=_impurity(S, criterion) / np.where(S[:, 1] > 0, S[:, 1], 1),
                n_node_samples=S[:, 0].astype(np.intp), weighted_n_node_samples=S[:, 1], max_depth=max(depth_of))
    tree.extra["stats"] = S
    tree.extra["importances"] = importances / total_imp if total_imp > 0 else importances
    return tree


def _best_sorted(Xb, channels, s_idx, s_node, cand, m, B, level_stats, imp, msl, min_w, criterion,
                 best_gain, best_j, best_b, best_left):
    """The split search of one level over the distinct (node, feature, bin) keys present (sorted), not over
    every bin: same result as the histograms, O(n log n) whatever the number of nodes. Fills the best_* arrays."""
    if not len(s_idx):
        return
    bins = Xb[s_idx[:, None], cand[s_node]]
    # int32 keys where they fit: NumPy's (AVX-512) argsort is about twice as fast on them
    kt = np.int32 if len(level_stats) * m * B < 2**31 else np.int64
    keys = ((s_node.astype(kt)[:, None] * m + np.arange(m, dtype=kt)) * B + bins).ravel()
    order = keys.argsort()
    sk = keys[order]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
    uniq = sk[starts].astype(np.intp)
    H = np.add.reduceat(channels[s_idx[order // m]], starts, axis=0)     # per distinct key, in key order
    cs = H.cumsum(0)
    seg = uniq // B                                          # node * m + feature slot
    new_seg = np.r_[True, seg[1:] != seg[:-1]]
    start = np.flatnonzero(new_seg)
    seg_id = np.cumsum(new_seg) - 1
    base = np.where(start[:, None] > 0, cs[np.maximum(start - 1, 0)], 0.0)
    Lft = cs - base[seg_id]
    node = seg // m
    R = level_stats[node] - Lft
    ok = (Lft[:, 0] >= msl) & (R[:, 0] >= msl) & (Lft[:, 1] > min_w) & (R[:, 1] > min_w)
    gain = np.where(ok, imp[node] - _impurity(Lft, criterion) - _impurity(R, criterion), -np.inf)
    # the best key of each node (keys are in node order): its maximum gain, first on ties as argmax
    node_start = np.flatnonzero(np.r_[True, node[1:] != node[:-1]])
    nd = node[node_start]
    top = np.maximum.reduceat(gain, node_start)
    hit = np.flatnonzero(gain == np.repeat(top, np.diff(np.r_[node_start, len(node)])))
    first = hit[np.r_[True, node[hit][1:] != node[hit][:-1]]]
    best_gain[nd] = gain[first]
    best_j[nd] = cand[nd, seg[first] % m]
    best_b[nd] = uniq[first] % B
    best_left[nd] = Lft[first]
