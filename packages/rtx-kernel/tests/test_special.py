"""erf, erfc, erfinv, lgamma, digamma against Python's math module (digamma, which math lacks,
against exact values and identities) in float64."""
import math

import numpy as np
import pytest

import rtx.kernel as K

EULER_GAMMA = 0.5772156649015329
N = 100_000


def relative_error(got, want):
    return np.abs(got - want) / np.maximum(np.abs(want), np.finfo(np.float64).tiny)


def test_erf_matches_math_erf_on_1e5_points():
    x = np.random.default_rng(0).uniform(-6.5, 6.5, N)
    want = np.array([math.erf(v) for v in x])
    assert relative_error(K.erf(x), want).max() < 1e-15


def test_erf_is_odd_and_keeps_tiny_arguments():
    x = 10.0 ** np.arange(-300, 0, 7.5)
    np.testing.assert_array_equal(K.erf(-x), -K.erf(x))
    np.testing.assert_allclose(K.erf(x), [math.erf(v) for v in x], rtol=1e-15, atol=0)


def test_erfc_matches_math_erfc_on_1e5_points_down_to_underflow():
    x = np.random.default_rng(1).uniform(-6, 26.5, N)   # erfc(26.5) is about 1e-307
    want = np.array([math.erfc(v) for v in x])
    assert relative_error(K.erfc(x), want).max() < 5e-15


@pytest.mark.parametrize("fn,x,want", [
    (K.erf, [np.inf, -np.inf, 0.0, 30.0], [1.0, -1.0, 0.0, 1.0]),
    (K.erfc, [np.inf, -np.inf, 0.0, 30.0, -30.0], [0.0, 2.0, 1.0, 0.0, 2.0]),
    (K.erfinv, [1.0, -1.0, 0.0, 1.5, -1.5], [np.inf, -np.inf, 0.0, np.nan, np.nan]),
    (K.lgamma, [0.0, -0.0, -1.0, -7.0, 1.0, 2.0, np.inf, -np.inf], [np.inf, np.inf, np.inf, np.inf, 0.0, 0.0,
                                                                    np.inf, np.inf]),
    (K.digamma, [0.0, -1.0, -3.0, np.inf, -np.inf], [-np.inf, np.nan, np.nan, np.inf, np.nan]),
])
def test_edge_values_follow_pytorch(fn, x, want):
    np.testing.assert_array_equal(fn(np.array(x)), np.array(want))
    assert np.isnan(fn(np.array([np.nan]))[0])


def test_erfinv_inverts_erf():
    rng = np.random.default_rng(2)
    y = rng.uniform(-1, 1, N)
    np.testing.assert_allclose(K.erf(K.erfinv(y)), y, rtol=2e-15, atol=1e-300)
    x = rng.uniform(-2, 2, N)   # further out, rounding erf(x) to a double costs erfinv digits
    np.testing.assert_allclose(K.erfinv(K.erf(x)), x, rtol=1e-13, atol=1e-300)
    # Close to +-1 the argument is best given as 1 - tiny, where erfc keeps the precision.
    y = 1 - 10.0 ** -np.arange(1, 16.0)
    np.testing.assert_allclose([math.erfc(v) for v in K.erfinv(y)], 1 - y, rtol=1e-13)


def test_lgamma_matches_math_lgamma_on_1e5_points():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(0, 12, N // 2), 10 ** rng.uniform(-300, 300, N // 4), rng.uniform(-60, 0, N // 4)])
    x = x[x != np.round(x)]
    want = np.array([math.lgamma(v) for v in x])
    np.testing.assert_allclose(K.lgamma(x), want, rtol=1e-13, atol=1e-13)


def test_lgamma_keeps_relative_accuracy_at_its_zeros():
    # Values from mpmath.loggamma at 40 digits. (CPython's math.lgamma is a Lanczos sum that
    # loses relative accuracy here: it gives -5.7759e-13 for the first point.)
    offsets = np.array([1e-12, -1e-9, 1e-6, -1e-3])
    np.testing.assert_allclose(K.lgamma(1 + offsets), [-5.772669797094564e-13, 5.77215649399226e-10,
                                                       -5.772148423874147e-07, 0.0005780385328913802], rtol=1e-15)
    np.testing.assert_allclose(K.lgamma(2 + offsets), [4.2282192087238456e-13, -4.227843697573328e-10,
                                                       4.2278465762452923e-07, -0.0004224618006921073], rtol=1e-15)


def test_digamma_exact_values():
    n = np.arange(1, 40)
    harmonic = np.concatenate([[0.0], np.cumsum(1 / n[:-1])])
    np.testing.assert_allclose(K.digamma(n.astype(float)), -EULER_GAMMA + harmonic, rtol=1e-15, atol=1e-16)
    half = n - 0.5   # digamma(n + 1/2) = -gamma - 2 log 2 + sum_{k=1..n} 2 / (2k - 1)
    odd = np.concatenate([[0.0], np.cumsum(2 / (2 * n[:-1] - 1))])
    np.testing.assert_allclose(K.digamma(half), -EULER_GAMMA - 2 * math.log(2) + odd, rtol=1e-15, atol=1e-16)
    assert abs(K.digamma(np.array([1.4616321449683622]))[0]) < 1e-16


def test_digamma_identities():
    rng = np.random.default_rng(4)
    x = rng.uniform(0.05, 60, N)
    np.testing.assert_allclose(K.digamma(x + 1) - K.digamma(x), 1 / x, rtol=1e-12, atol=1e-14)
    x = rng.uniform(-20, 20, N)
    x = x[np.abs(x - np.round(x)) > 1e-3]
    np.testing.assert_allclose(K.digamma(1 - x) - K.digamma(x), math.pi / np.tan(math.pi * x), rtol=1e-11, atol=1e-11)


def test_digamma_is_the_derivative_of_lgamma():
    x = np.random.default_rng(5).uniform(-10, 30, 2000)
    x = x[np.abs(x - np.round(x)) > 0.05]
    h = 1e-5
    numeric = np.array([(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v in x])
    np.testing.assert_allclose(K.digamma(x), numeric, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("fn", [K.erf, K.erfc, K.erfinv, K.lgamma, K.digamma])
def test_dtypes(fn):
    x = np.array([0.25, 0.5], dtype=np.float32)
    assert fn(x).dtype == np.float32
    assert fn(np.array([0, 1])).dtype == np.float64          # integers compute in float64
    assert fn(np.zeros((2, 0, 3))).shape == (2, 0, 3)
