"""Duplicate removal: exact row keys (DuckDB's 64-bit hash over the key columns, for streaming and Dask)
and near duplicates of a text column by MinHash LSH (Broder 1997; banding as in Leskovec et al., MMDS ch. 3).
"""
from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa

from rtx.etl import _duckdb


def row_keys(table: pa.Table, columns: list[str]) -> np.ndarray:
    """uint64 hash of each row's key columns. Equal rows get equal keys (NULLs equal each other); two
    different rows share a key with probability ~2^-64 per pair (about 1e-5 over 20 million rows)."""
    cols = ", ".join(f'"{c}"' for c in columns)
    h = _duckdb.query(f"SELECT hash({cols}) AS h FROM t", t=table.select(columns))["h"].combine_chunks()
    # from the buffer: pyarrow's to_numpy() would import pandas; a hash is never NULL
    return np.frombuffer(h.buffers()[1], np.uint64, len(h), h.offset)


class SeenKeys:
    """The keys met so far, 8 bytes a key: 256 sorted uint64 runs, one per top byte of the key (the keys
    are hashes, so the runs fill evenly). Membership is a binary search in one run; adding a batch
    inserts into each run, so memory never needs a second copy of the whole set (one sorted array
    would need two or three while merging) and each search touches a run 1/256 of the size."""

    BITS = 8

    def __init__(self):
        self.runs = [np.empty(0, np.uint64) for _ in range(1 << self.BITS)]

    def __len__(self):
        return sum(len(r) for r in self.runs)

    def first_new(self, keys: np.ndarray) -> np.ndarray:
        """Mask of the keys that are neither seen before nor repeated earlier in this batch; records them."""
        uniq, first = np.unique(keys, return_index=True)  # sorted, so each run's keys are one slice
        edges = np.searchsorted(uniq >> np.uint64(64 - self.BITS), np.arange((1 << self.BITS) + 1))
        new = np.ones(len(uniq), bool)
        for b in np.flatnonzero(np.diff(edges)):
            lo, hi = edges[b], edges[b + 1]
            u, run = uniq[lo:hi], self.runs[b]
            if len(run):
                pos = np.searchsorted(run, u)
                seen = run[np.minimum(pos, len(run) - 1)] == u
                new[lo:hi] = ~seen
                u, pos = u[~seen], pos[~seen]
                self.runs[b] = np.insert(run, pos, u)
            else:
                self.runs[b] = u.copy()
        mask = np.zeros(len(keys), bool)
        mask[first[new]] = True
        return mask


def _shingles(text: str, k: int) -> np.ndarray:
    b = text.encode("utf-8")
    if len(b) <= k:
        return np.array([zlib.crc32(b)], np.uint64)
    return np.unique(np.fromiter((zlib.crc32(b[i:i + k]) for i in range(len(b) - k + 1)), np.uint64))


def minhash(texts: list[str], num_perm: int = 128, ngram: int = 5, seed: int = 0) -> np.ndarray:
    """(n, num_perm) signatures: min over shingles of (a*x + b) mod p with a universal hash family."""
    p = np.uint64((1 << 61) - 1)
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 1 << 32, num_perm, dtype=np.uint64)
    b = rng.integers(0, 1 << 32, num_perm, dtype=np.uint64)
    sig = np.empty((len(texts), num_perm), np.uint64)
    for i, t in enumerate(texts):
        s = _shingles(t or "", ngram)
        # a < 2^32 and x < 2^32: the product fits in 64 bits before the modulus
        sig[i] = ((s[:, None] * a[None, :] + b[None, :]) % p).min(axis=0)
    return sig


def bands_for(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) with bands*rows <= num_perm whose S-curve midpoint (1/b)^(1/r) is nearest the threshold."""
    best = None
    for r in range(1, num_perm + 1):
        b = num_perm // r
        mid = (1 / b) ** (1 / r)
        if best is None or abs(mid - threshold) < best[0]:
            best = (abs(mid - threshold), b, r)
    return best[1], best[2]


def near_duplicates(texts: list[str], threshold: float = 0.8, num_perm: int = 128, ngram: int = 5,
                    seed: int = 0) -> np.ndarray:
    """Mask of rows to keep: the first row of each group whose estimated Jaccard similarity of character
    n-gram sets is >= threshold. LSH finds candidate pairs; each is confirmed on the signatures."""
    n = len(texts)
    sig = minhash(texts, num_perm, ngram, seed)
    b, r = bands_for(threshold, num_perm)
    parent = np.arange(n)

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for band in range(b):
        buckets: dict[bytes, int] = {}
        chunk = np.ascontiguousarray(sig[:, band * r:(band + 1) * r])
        for i in range(n):
            key = chunk[i].tobytes()
            j = buckets.setdefault(key, i)
            if j != i and np.mean(sig[i] == sig[j]) >= threshold:
                ri, rj = find(i), find(j)
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)  # the earliest row stays the group's root
    roots = np.array([find(i) for i in range(n)])
    return roots == np.arange(n)
