"""Seeded train/val/test splitting of arrays, tensors or datasets (optionally stratified)."""
from __future__ import annotations

import numpy as np

from rtx.extend import Tensor


def _index(x, idx):
    if type(x) is Tensor:
        import rtx
        return x[rtx.as_tensor(idx)]
    if isinstance(x, np.ndarray):
        return x[idx]
    from rtx.data import Subset
    return Subset(x, idx.tolist())


def _counts(n, fractions):
    if any(f < 0 for f in fractions) or not np.isclose(sum(fractions), 1.0):
        raise ValueError(f"split fractions must be non-negative and sum to 1, got {fractions}")
    counts = [int(np.floor(n * f)) for f in fractions]
    for i in range(n - sum(counts)):
        counts[i % len(counts)] += 1
    return counts


def train_val_test_split(*arrays, fractions=(0.8, 0.1, 0.1), seed=0, stratify=None):
    """Split each of `arrays` (same first dimension) into len(fractions) parts with one seeded
    permutation; with `stratify` (labels), every part keeps the label proportions. Returns a flat
    list: [a_part0, a_part1, ..., b_part0, ...] like scikit-learn's train_test_split."""
    if not arrays:
        raise ValueError("train_val_test_split needs at least one array")
    n = len(arrays[0])
    for i, a in enumerate(arrays):
        if len(a) != n:
            raise ValueError(f"Found input variables with inconsistent numbers of samples: {[len(x) for x in arrays]}"
                             f" (argument {i})")
    rng = np.random.default_rng(seed)
    parts = [[] for _ in fractions]
    if stratify is None:
        perm = rng.permutation(n)
        start = 0
        for k, c in enumerate(_counts(n, fractions)):
            parts[k] = perm[start:start + c]
            start += c
    else:
        labels = stratify.detach().cpu().numpy() if type(stratify) is Tensor else np.asarray(stratify)
        for label in np.unique(labels):
            members = rng.permutation(np.flatnonzero(labels == label))
            start = 0
            for k, c in enumerate(_counts(len(members), fractions)):
                parts[k] = np.concatenate([parts[k], members[start:start + c]]).astype(np.int64)
                start += c
        parts = [rng.permutation(p) for p in parts]
    out = []
    for a in arrays:
        for p in parts:
            out.append(_index(a, np.asarray(p, dtype=np.int64)))
    return out


def train_test_split(*arrays, test_size=0.25, seed=0, stratify=None):
    return train_val_test_split(*arrays, fractions=(1 - test_size, test_size), seed=seed, stratify=stratify)
