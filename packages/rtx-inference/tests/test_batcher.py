"""DynamicBatcher: grouping, splitting, futures, asyncio, draining on close, errors."""
import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import rtx
import rtx.nn as nn
from rtx.inference import DynamicBatcher, InferenceSession


@pytest.fixture
def mlp_session(zoo):
    return InferenceSession(zoo.make_mlp(), rtx.randn(2, 64))


def test_concurrent_requests_are_batched_and_split_back(mlp_session, rng):
    xs = [rng.standard_normal((int(n), 64)).astype(np.float32) for n in rng.integers(1, 4, 60)]
    expected = [mlp_session.run(None, {"input": x})[0] for x in xs]
    with DynamicBatcher(mlp_session, max_batch_size=16, max_wait_ms=20) as b:
        with ThreadPoolExecutor(12) as pool:
            futs = list(pool.map(lambda x: b.submit({"input": x}), xs))
        results = [f.result(timeout=30) for f in futs]
        s = b.stats()
    for (out,), ref in zip(results, expected):
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    assert s["requests"] == 60 and s["rows"] == sum(len(x) for x in xs)
    assert s["batches"] < 60 and s["mean_batch_size"] > 1           # requests were grouped
    assert max(s["batch_sizes"]) <= 16                                # never above the limit
    assert s["queue_depth"] == 0 and s["latency"]["count"] == 60


def test_max_wait_bounds_a_lone_request(mlp_session):
    with DynamicBatcher(mlp_session, max_batch_size=64, max_wait_ms=5) as b:
        t0 = time.perf_counter()
        (out,) = b.submit({"input": np.zeros((1, 64), np.float32)}).result(timeout=10)
        assert time.perf_counter() - t0 < 2.0
        assert out.shape == (1, 10)
        assert b.stats()["batch_sizes"] == {1: 1}


def test_large_request_runs_alone_and_shapes_are_not_mixed(rng):
    class Seq(nn.Module):
        def forward(self, x):
            return x.sum(-1) * 2

    sess = InferenceSession(Seq(), rtx.randn(2, 5))
    with DynamicBatcher(sess, max_batch_size=4, max_wait_ms=50) as b:
        big = rng.standard_normal((9, 5)).astype(np.float32)
        small = rng.standard_normal((2, 5)).astype(np.float32)
        f1, f2 = b.submit({"x": big}), b.submit({"x": small})
        np.testing.assert_allclose(f1.result(timeout=10)[0], big.sum(-1) * 2, rtol=1e-5)
        np.testing.assert_allclose(f2.result(timeout=10)[0], small.sum(-1) * 2, rtol=1e-5)


def test_asyncio_infer(mlp_session, rng):
    xs = [rng.standard_normal((1, 64)).astype(np.float32) for _ in range(20)]

    async def main(b):
        return await asyncio.gather(*(b.infer({"input": x}) for x in xs))

    with DynamicBatcher(mlp_session, max_batch_size=8, max_wait_ms=10) as b:
        results = asyncio.run(main(b))
        assert b.stats()["batches"] < 20
    for (out,), x in zip(results, xs):
        np.testing.assert_allclose(out, mlp_session.run(None, {"input": x})[0], rtol=1e-5, atol=1e-6)


def test_close_drains_queued_requests(mlp_session):
    b = DynamicBatcher(mlp_session, max_batch_size=4, max_wait_ms=50)
    futs = [b.submit({"input": np.full((1, 64), i, np.float32)}) for i in range(30)]
    b.close()
    assert all(f.done() for f in futs)
    assert [f.result()[0].shape for f in futs] == [(1, 10)] * 30
    with pytest.raises(RuntimeError, match="closed"):
        b.submit({"input": np.zeros((1, 64), np.float32)})
    assert not b._worker.is_alive()


def test_bad_requests(mlp_session):
    with DynamicBatcher(mlp_session) as b:
        with pytest.raises(ValueError, match=r"unknown: \['x'\]"):
            b.submit({"x": np.zeros((1, 64), np.float32)})
        with pytest.raises(ValueError, match="leading batch dim"):
            b.submit({"input": np.float32(1)})
        with pytest.raises(TypeError, match="feed must be a dict"):
            b.submit([np.zeros((1, 64), np.float32)])
        # a wrong size reaches session.run: the future carries the session's ValueError
        fut = b.submit({"input": np.zeros((2, 63), np.float32)})
        with pytest.raises(ValueError, match="dim 1 must be 64"):
            fut.result(timeout=10)
        # ... and a good request after it still works
        assert b.submit({"input": np.zeros((2, 64), np.float32)}).result(timeout=10)[0].shape == (2, 10)
    with pytest.raises(ValueError, match="max_batch_size"):
        DynamicBatcher(mlp_session, max_batch_size=0)


def test_one_bad_request_fails_only_its_batch(mlp_session):
    gate = threading.Event()
    orig = mlp_session.run

    def slow_run(names, feed):
        gate.wait(5)
        return orig(names, feed)

    mlp_session.run = slow_run
    try:
        with DynamicBatcher(mlp_session, max_batch_size=8, max_wait_ms=1) as b:
            first = b.submit({"input": np.zeros((1, 64), np.float32)})   # occupies the worker
            time.sleep(0.05)
            good = b.submit({"input": np.ones((1, 64), np.float32)})
            bad = b.submit({"input": np.ones((1, 64), np.float64)})      # a different dtype: its own batch
            gate.set()
            assert first.result(timeout=10)[0].shape == (1, 10)
            assert good.result(timeout=10)[0].shape == (1, 10)
            with pytest.raises(ValueError, match="dtype float64"):
                bad.result(timeout=10)
    finally:
        mlp_session.run = orig
