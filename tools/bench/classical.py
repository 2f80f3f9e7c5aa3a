"""rtx.classical next to scikit-learn, in one run: fit times and the ratio rtx / scikit-learn (< 1 is faster).

    .venv/bin/python tools/bench/classical.py [--scale 1.0] [--only kmeans,knn,...] [--repeat 3]

Interleaved and warm: each round runs rtx then scikit-learn (the order swaps every round), and the
table gives each side's best round (the first round pays imports and first-touch costs). Wall-clock and
process CPU seconds are both reported: on a shared, loaded machine the wall clock measures the share of the
cores a run got as much as the run; with one thread per side (OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1, which
rtx.runtime's pool follows) the CPU seconds are the work done.

Sizes are the issue's (KMeans 200k x 32 k=16; kNN 20k queries against 200k x 64; PCA 100k x 256 -> 32;
LogisticRegression 100k x 100; RandomForest (100 trees) and HistGradientBoosting 100k x 20; SVC RBF 5k x 20),
every row count times --scale."""
from __future__ import annotations

import argparse
import time

import numpy as np


def _time(fn):
    t, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t, time.process_time() - c


def cases(scale):
    rng = np.random.default_rng(0)

    def n(k):
        return max(100, int(k * scale))

    from sklearn import cluster, decomposition, ensemble, linear_model, neighbors, svm

    import rtx.classical.cluster as rc
    import rtx.classical.decomposition as rd
    import rtx.classical.ensemble as re_
    import rtx.classical.linear_model as rl
    import rtx.classical.neighbors as rn
    import rtx.classical.svm as rs
    X = rng.normal(size=(n(200_000), 32)).astype(np.float32)
    yield ("KMeans 200k x 32, k=16", lambda: cluster.KMeans(16, n_init=1, random_state=0).fit(X),
           lambda: rc.KMeans(16, n_init=1, random_state=0).fit(X))
    F = rng.normal(size=(n(200_000), 64)).astype(np.float32)
    Q = rng.normal(size=(n(20_000), 64)).astype(np.float32)
    yield ("kNN 20k queries vs 200k x 64, k=5", lambda: neighbors.NearestNeighbors(n_neighbors=5).fit(F).kneighbors(Q),
           lambda: rn.NearestNeighbors(n_neighbors=5).fit(F).kneighbors(Q))
    P = rng.normal(size=(n(100_000), 256)).astype(np.float32)
    yield ("PCA 100k x 256 -> 32", lambda: decomposition.PCA(32, random_state=0).fit(P),
           lambda: rd.PCA(32, random_state=0).fit(P))
    L = rng.normal(size=(n(100_000), 100))
    yl = (L[:, :5].sum(1) + rng.normal(size=len(L)) > 0).astype(int)
    yield ("LogisticRegression 100k x 100", lambda: linear_model.LogisticRegression().fit(L, yl),
           lambda: rl.LogisticRegression().fit(L, yl))
    T = rng.normal(size=(n(100_000), 20))
    yt = (T[:, 0] + T[:, 1] * T[:, 2] + rng.normal(size=len(T)) > 0).astype(int)
    yield ("RandomForest 100 trees, 100k x 20", lambda: ensemble.RandomForestClassifier(100, random_state=0).fit(T, yt),
           lambda: re_.RandomForestClassifier(100, random_state=0).fit(T, yt))
    yield ("HistGradientBoosting 100k x 20", lambda: ensemble.HistGradientBoostingClassifier(random_state=0).fit(T, yt),
           lambda: re_.HistGradientBoostingClassifier(random_state=0).fit(T, yt))
    S = rng.normal(size=(n(5_000), 20))
    ys = (S[:, 0] * S[:, 1] + S[:, 2] > 0).astype(int)
    yield ("SVC RBF 5k x 20", lambda: svm.SVC().fit(S, ys), lambda: rs.SVC().fit(S, ys))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every row count (default 1.0)")
    ap.add_argument("--only", default="", help="comma-separated name prefixes to run (e.g. KMeans,kNN)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds per case, rtx and scikit-learn alternating")
    a = ap.parse_args()
    only = [s.strip().lower() for s in a.only.split(",") if s.strip()]
    print(f"scale {a.scale}\n| case | scikit-learn s | rtx s | ratio | scikit-learn CPU s | rtx CPU s | CPU ratio |\n"
          "| --- | --- | --- | --- | --- | --- | --- |")
    for name, sk, rx in cases(a.scale):
        if only and not any(name.lower().startswith(o) for o in only):
            continue
        t_rx, t_sk = [], []
        for r in range(a.repeat):
            if r % 2 == 0:
                t_rx.append(_time(rx))
                t_sk.append(_time(sk))
            else:
                t_sk.append(_time(sk))
                t_rx.append(_time(rx))
        (w_rx, c_rx), (w_sk, c_sk) = min(t_rx), min(t_sk)      # the round with the best wall time
        print(f"| {name} | {w_sk:.2f} | {w_rx:.2f} | {w_rx / w_sk:.2f}x | {c_sk:.2f} | {c_rx:.2f} "
              f"| {c_rx / c_sk:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
