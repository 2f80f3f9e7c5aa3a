"""Splitting a labelled data set across clients: IID, and non-IID by a Dirichlet prior over labels."""
from __future__ import annotations

import numpy as np

__all__ = ["dirichlet_partition", "iid_partition"]


def _labels(labels) -> np.ndarray:
    y = np.asarray(labels.numpy() if hasattr(labels, "numpy") else labels)
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"labels: expected a 1-D array of integer class labels, got shape {y.shape} dtype {y.dtype}")
    return y


def iid_partition(num_samples: int, num_clients: int, seed: int = 0) -> list[np.ndarray]:
    """Shuffle 0..num_samples-1 and deal it into num_clients near-equal shares."""
    if not 1 <= num_clients <= num_samples:
        raise ValueError(f"num_clients: expected 1..{num_samples} (one sample each at least), got {num_clients}")
    order = np.random.default_rng(seed).permutation(num_samples)
    return [np.sort(part) for part in np.array_split(order, num_clients)]


def dirichlet_partition(labels, num_clients: int, alpha: float, seed: int = 0, min_size: int = 2,
                        max_tries: int = 1000) -> list[np.ndarray]:
    """Non-IID split (Hsu et al. 2019; the NIID-Bench procedure of Li et al. 2022).

    For each class, the share of its samples given to each client is drawn from Dir(alpha * 1):
    small alpha (0.1) gives each client one or two classes, large alpha (100) is close to IID. A
    client already holding its fair share (N / num_clients) gets no more, which keeps sizes in
    check. The draw is repeated until every client has at least `min_size` samples.
    Returns one sorted index array per client; together they cover every sample exactly once.
    """
    y = _labels(labels)
    if alpha <= 0:
        raise ValueError(f"alpha: expected a positive Dirichlet concentration, got {alpha}")
    if not 1 <= num_clients or num_clients * min_size > len(y):
        raise ValueError(f"num_clients: {num_clients} clients with min_size {min_size} need at least "
                         f"{num_clients * min_size} samples; the data set has {len(y)}")
    rng = np.random.default_rng(seed)
    classes = np.unique(y)
    fair = len(y) / num_clients
    for _ in range(max_tries):
        parts: list[list[int]] = [[] for _ in range(num_clients)]
        for c in classes:
            idx = rng.permutation(np.flatnonzero(y == c))
            p = rng.dirichlet(np.full(num_clients, alpha))
            p = p * np.array([len(part) < fair for part in parts])
            p = p / p.sum()
            cuts = (np.cumsum(p) * len(idx)).astype(int)[:-1]
            for part, chunk in zip(parts, np.split(idx, cuts)):
                part.extend(chunk.tolist())
        if min(len(part) for part in parts) >= min_size:
            return [np.sort(np.asarray(part, dtype=np.int64)) for part in parts]
    raise RuntimeError(f"dirichlet_partition: no draw in {max_tries} gave every one of {num_clients} clients "
                       f"{min_size} samples (alpha={alpha}); lower min_size or num_clients, or raise alpha")
