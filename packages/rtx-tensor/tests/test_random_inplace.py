"""In-place random fills: moments against the distributions' closed forms (fixed seeds, a few
standard errors), reproducibility under rtx.manual_seed, PyTorch's in-place rules and errors."""
import math

import numpy as np
import pytest

import rtx

N = 40_000


def _moments(t):
    a = t.numpy().astype(np.float64)
    return a.mean(), a.var()


@pytest.mark.parametrize("method,args,mean,var", [
    ("uniform_", (2.0, 5.0), 3.5, 9 / 12),
    ("normal_", (1.5, 0.5), 1.5, 0.25),
    ("exponential_", (4.0,), 0.25, 1 / 16),
    ("log_normal_", (0.0, 0.5), math.exp(0.125), (math.exp(0.25) - 1) * math.exp(0.25)),
    ("geometric_", (0.3,), 1 / 0.3, 0.7 / 0.09),
    ("bernoulli_", (0.2,), 0.2, 0.16),
])
def test_moments(method, args, mean, var):
    rtx.manual_seed(0)
    t = getattr(rtx.empty(N, dtype=rtx.float64), method)(*args)
    m, v = _moments(t)
    assert abs(m - mean) < 5 * math.sqrt(var / N)
    assert abs(v - var) < 0.1 * var


def test_cauchy_median_and_quartiles():
    rtx.manual_seed(1)
    a = rtx.empty(N, dtype=rtx.float64).cauchy_(2.0, 3.0).numpy()
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    assert abs(med - 2.0) < 0.1 and abs(q1 - (2.0 - 3.0)) < 0.15 and abs(q3 - (2.0 + 3.0)) < 0.15


def test_random_integers_and_ranges():
    rtx.manual_seed(2)
    a = rtx.empty(N, dtype=rtx.int64).random_(3, 7).numpy()
    assert set(np.unique(a)) == {3, 4, 5, 6}
    b = rtx.empty(1000, dtype=rtx.int64).random_(5).numpy()
    assert b.min() == 0 and b.max() == 4
    c = rtx.empty(1000, dtype=rtx.uint8).random_().numpy()
    assert c.max() > 200
    f = rtx.empty(1000).random_().numpy()
    assert f.min() >= 0 and f.max() <= 2 ** 24 and np.all(f == np.round(f))
    with pytest.raises(RuntimeError, match="expects 'from' to be less than 'to'"):
        rtx.empty(2).random_(5, 5)


def test_bernoulli_with_tensor_probabilities():
    p = rtx.tensor([0.0, 1.0, 0.0, 1.0])
    assert rtx.empty(4).bernoulli_(p).tolist() == [0.0, 1.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\]"):
        rtx.empty(2).bernoulli_(1.5)


def test_reproducible_and_in_place():
    rtx.manual_seed(7)
    a = rtx.empty(5)
    out = a.normal_()
    rtx.manual_seed(7)
    b = rtx.empty(5).normal_()
    assert out is a and rtx.equal(a, b)
    base = rtx.zeros(4, 4)
    base[1].uniform_(1.0, 2.0)  # a view: the base sees the values
    assert bool((base[1] >= 1).all()) and float(base[0].abs().sum()) == 0.0


def test_in_place_rules_and_errors():
    w = rtx.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.uniform_()
    with rtx.no_grad():
        w.uniform_(-1, 1)
    assert w.requires_grad and bool((w.abs() <= 1).all())
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        rtx.empty(2).normal_(0, -1)
    with pytest.raises(RuntimeError, match="uniform_ expects to return a"):
        rtx.empty(2).uniform_(3, 1)
    with pytest.raises(RuntimeError, match="floating point"):
        rtx.empty(2, dtype=rtx.int64).normal_()


def test_softmax_methods():
    x = rtx.tensor([[1.0, 2.0, 3.0]], dtype=rtx.float64)
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(x.softmax(1).numpy()[0], e / e.sum())
    np.testing.assert_allclose(x.log_softmax(dim=1).numpy()[0], np.log(e / e.sum()))
