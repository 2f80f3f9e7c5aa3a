"""Convolution (rtx-nn's chunk pool) and flash attention (this package's block pool) called from
two threads at once: both go through rtx.runtime.threads, so they give the single-threaded
results and leave BLAS's thread count as it was (each kernel used to save and restore it on
its own, and overlapping kernels left BLAS at one thread)."""
import math
import threading

import numpy as np
import pytest

import rtx
import rtx.nn.functional as F
from rtx.flash_attn.sdpa import CPU_MIN_SCORES
from rtx.runtime import threads

threadpoolctl = pytest.importorskip("threadpoolctl")


def _blas_counts():
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def _conv(x, w, gy):
    xt, wt = rtx.tensor(x, requires_grad=True), rtx.tensor(w, requires_grad=True)
    y = F.conv2d(xt, wt, padding=1)
    y.backward(rtx.tensor(gy))
    return y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()


def _attention(q, k, v, go):
    qt, kt, vt = (rtx.tensor(a, requires_grad=True) for a in (q, k, v))
    out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
    assert type(out.grad_fn).__name__ == "FlashAttention"  # long enough for the flash path
    out.backward(rtx.tensor(go))
    return out.detach().numpy(), qt.grad.numpy(), kt.grad.numpy(), vt.grad.numpy()


@pytest.fixture
def two_blas_threads():
    if not threads._libs():
        pytest.skip("threadpoolctl found no BLAS to control")
    before = rtx.get_num_threads()
    rtx.set_num_threads(2)
    if _blas_counts() != [2] * len(_blas_counts()):
        rtx.set_num_threads(before)
        pytest.skip("this BLAS cannot run 2 threads")
    yield
    rtx.set_num_threads(before)


def test_conv_and_attention_from_two_threads(two_blas_threads):
    rng = np.random.default_rng(0)
    conv_in = (rng.standard_normal((6, 8, 12, 12)), rng.standard_normal((8, 8, 3, 3)),
               rng.standard_normal((6, 8, 12, 12)))
    L = math.isqrt(CPU_MIN_SCORES) * 2
    attn_in = tuple(rng.standard_normal((1, 2, L, 16)) for _ in range(4))

    with threads.limit_threads(1):  # the single-threaded results: no pool, BLAS on one thread
        assert threads.cpu_workers() == 1
        want_conv, want_attn = _conv(*conv_in), _attention(*attn_in)
    assert _blas_counts() == [2] * len(_blas_counts())

    start, results, errors = threading.Barrier(2), {"conv": [], "attn": []}, []

    def run(name, fn, args):
        try:
            start.wait()
            for _ in range(3):
                results[name].append(fn(*args))
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    # the main thread is threadpoolctl's controlling thread, as after a user's threadpool_limits:
    # the kernels' own switches, made from the two other threads, must still take effect
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        pair = [threading.Thread(target=run, args=("conv", _conv, conv_in)),
                threading.Thread(target=run, args=("attn", _attention, attn_in))]
        for t in pair:
            t.start()
        for t in pair:
            t.join()
        assert not errors, errors
        assert _blas_counts() == [2] * len(_blas_counts())
    assert _blas_counts() == [2] * len(_blas_counts()) and rtx.get_num_threads() == 2
    assert threads._scope == {"depth": 0, "saved": None}
    for got in results["conv"]:
        for g, w in zip(got, want_conv):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    for got in results["attn"]:
        for g, w in zip(got, want_attn):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    assert len(results["conv"]) == len(results["attn"]) == 3


def test_kernels_run_their_pieces_on_single_threaded_blas(two_blas_threads, monkeypatch):
    # inside the kernels' pool work, BLAS is on one thread, also when called from a second thread
    seen = []
    real = threads.parallel_map

    def spy(fn, items, workers=None):
        def wrapped(x):
            seen.append(max(lib.num_threads for lib in threads._libs()))
            return fn(x)
        return real(wrapped, items, workers)

    monkeypatch.setattr(threads, "parallel_map", spy)
    rng = np.random.default_rng(1)
    L = math.isqrt(CPU_MIN_SCORES) * 2

    def work():
        _conv(rng.standard_normal((4, 3, 8, 8)), rng.standard_normal((5, 3, 3, 3)), rng.standard_normal((4, 5, 8, 8)))
        _attention(*(rng.standard_normal((1, 2, L, 8)) for _ in range(4)))

    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):  # main: threadpoolctl's controller
        t = threading.Thread(target=work)
        t.start()
        t.join()
    assert len(seen) >= 4 and set(seen) == {1}
    assert _blas_counts() == [2] * len(_blas_counts())
