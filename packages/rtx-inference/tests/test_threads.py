"""Concurrent `run` calls: every thread gets its own buffers, results equal sequential ones."""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import rtx
from rtx.inference import InferenceSession


def test_many_threads_match_sequential_results(zoo, rng):
    sess = InferenceSession(zoo.make_bnnet(), rtx.randn(2, 3, 12, 12))
    # mixed batch sizes: threads share size keys and also hit new ones
    feeds = [rng.standard_normal((int(n), 3, 12, 12)).astype(np.float32) for n in rng.integers(1, 6, 64)]
    sequential = [sess.run(None, {"x": x})[0] for x in feeds]
    barrier = threading.Barrier(16)

    def work(i):
        if i < 16:
            barrier.wait()   # start the first wave together
        return sess.run(None, {"x": feeds[i]})[0]

    for _ in range(2):
        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(work, range(len(feeds))))
        for a, b in zip(results, sequential):
            np.testing.assert_array_equal(a, b)
    assert sess.stats()["count"] == 3 * len(feeds)


def test_workspace_pool_is_bounded(zoo, rng):
    sess = InferenceSession(zoo.make_mlp(), rtx.randn(2, 64))
    for n in range(1, 40):
        sess.run(None, {"input": rng.standard_normal((n, 64)).astype(np.float32)})
    assert len(sess._plan.pool.sizes()) == sess._plan.pool.max_keys
