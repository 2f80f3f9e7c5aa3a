"""Minimal cost-complexity pruning (Breiman et al. 1984, ch. 3), as scikit-learn's _cost_complexity_prune:
repeatedly collapse the inner node of the smallest effective alpha, (R(t) - R(T_t)) / (|leaves(T_t)| - 1)
with R(t) = weighted node impurity / total weight, until the root is a leaf (the path) or the smallest alpha
exceeds ccp_alpha (the pruned tree). Node ids only order equal alphas, so a tree equal to scikit-learn's
up to node numbering prunes to the same tree and the same path."""
from __future__ import annotations

import numpy as np

from rtx.classical.tree._builder import Tree


def _weakest_links(tree, ccp_alpha=None):
    """Walk the pruning sequence. Returns (in_subtree, leaf mask of the pruned tree, path alphas, path
    impurities); with ccp_alpha, stops before the first alpha above it."""
    left, right = tree.children_left, tree.children_right
    n = len(left)
    W = tree.weighted_n_node_samples
    r_node = W * tree.impurity / W[0]
    leaf = left == -1
    parent = np.full(n, -1)
    inner = np.flatnonzero(~leaf)
    parent[left[inner]] = inner
    parent[right[inner]] = inner
    # subtree sums bottom-up: children have larger ids than their parent (both builders number so)
    r_branch = np.where(leaf, r_node, 0.0)
    n_leaves = leaf.astype(np.intp)
    for i in range(n - 1, 0, -1):
        r_branch[parent[i]] += r_branch[i]
        n_leaves[parent[i]] += n_leaves[i]
    candidate = ~leaf
    in_subtree = np.ones(n, dtype=bool)
    alphas, impurities = [0.0], [r_branch[0]]
    while candidate[0]:
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha = np.where(candidate, (r_node - r_branch) / (n_leaves - 1), np.inf)
        t = int(alpha.argmin())
        if ccp_alpha is not None and ccp_alpha < alpha[t]:
            break
        stack = [left[t], right[t]]                     # the branch below t leaves the subtree
        while stack:
            i = stack.pop()
            if in_subtree[i]:
                in_subtree[i] = candidate[i] = False
                if left[i] != -1:
                    stack += [left[i], right[i]]
        candidate[t] = False
        leaf[t] = True
        n_pruned, r_diff = n_leaves[t] - 1, r_node[t] - r_branch[t]
        n_leaves[t], r_branch[t] = 1, r_node[t]
        a = parent[t]
        while a != -1:
            n_leaves[a] -= n_pruned
            r_branch[a] += r_diff
            a = parent[a]
        alphas.append(float(alpha[t]))
        impurities.append(float(r_branch[0]))
    return in_subtree, leaf, np.array(alphas), np.array(impurities)


def pruning_path(tree):
    """scikit-learn's ccp_pruning_path: the effective alphas and the total leaf impurity after each step."""
    _, _, alphas, impurities = _weakest_links(tree)
    return {"ccp_alphas": alphas, "impurities": impurities}


def prune(tree, ccp_alpha):
    """The pruned tree for ccp_alpha: the same nodes in the same order, less the collapsed branches. Per-node
    arrays in tree.extra (the channel sums) follow; feature gains for the importances are recomputed."""
    keep, leaf, _, _ = _weakest_links(tree, ccp_alpha)
    if keep.all():
        return tree
    new_id = np.cumsum(keep) - 1
    leaf = leaf[keep]
    left = np.where(leaf, -1, new_id[np.maximum(tree.children_left[keep], 0)])
    right = np.where(leaf, -1, new_id[np.maximum(tree.children_right[keep], 0)])
    depth = np.zeros(len(left), dtype=np.intp)
    for i in np.flatnonzero(~leaf):                      # parents come before their children
        depth[left[i]] = depth[right[i]] = depth[i] + 1
    out = Tree(children_left=left, children_right=right, feature=np.where(leaf, -2, tree.feature[keep]),
               threshold=np.where(leaf, -2.0, tree.threshold[keep]),
               value=None if tree.value is None else tree.value[keep], impurity=tree.impurity[keep],
               n_node_samples=tree.n_node_samples[keep], weighted_n_node_samples=tree.weighted_n_node_samples[keep],
               max_depth=int(depth.max()))
    out.extra = dict(tree.extra)
    if "stats" in out.extra:
        out.extra["stats"] = out.extra["stats"][keep]
    # impurity decrease per feature over the kept splits (scikit-learn's compute_feature_importances)
    wi = out.weighted_n_node_samples * out.impurity
    inner = np.flatnonzero(~leaf)
    gains = wi[inner] - wi[left[inner]] - wi[right[inner]]
    out.extra["importances"] = np.bincount(out.feature[inner], weights=gains,
                                           minlength=len(tree.extra.get("importances", ())))
    return out
