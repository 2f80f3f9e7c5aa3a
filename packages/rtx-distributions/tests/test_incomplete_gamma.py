"""The regularised incomplete gamma functions behind Gamma.cdf and Chi2.cdf: against SciPy over a
wide range, against 50-digit mpmath values where SciPy itself loses digits (large a), PyTorch's
edge values, and the derivative in x by finite differences."""
import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st

import rtx
import rtx.distributions as D
from rtx.distributions._special import gammainc, gammaincc


def t(a):
    return rtx.tensor(np.asarray(a, dtype=np.float64))


def test_against_scipy_over_six_decades_of_a():
    r = np.random.default_rng(0)
    a = np.exp(r.uniform(-5, 9, 4000))
    # half near the bulk (x ~ a, where the series and the fraction need the most terms), half anywhere
    x = np.where(r.uniform(size=4000) < 0.5, a * np.exp(r.normal(0, 0.3, 4000)), np.exp(r.uniform(-8, 9, 4000)))
    for mine, ref in ((gammainc(t(a), t(x)).numpy(), sp.gammainc(a, x)),
                      (gammaincc(t(a), t(x)).numpy(), sp.gammaincc(a, x))):
        big = ref > 1e-30  # below, both are exp(-hundreds) and SciPy's own last digits differ
        np.testing.assert_allclose(mine[big], ref[big], rtol=2e-12)
        np.testing.assert_allclose(mine, ref, rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(gammainc(t(a), t(x)).numpy() + gammaincc(t(a), t(x)).numpy(), 1.0, rtol=1e-15)


# (a, x, P, Q) by mpmath at 50 digits:
#   mpmath.mp.dps = 50; P = mpmath.gammainc(a, 0, x, regularized=True); Q = mpmath.gammainc(a, x, mpmath.inf, ...)
# At a = 1e6 SciPy 1.17 and PyTorch 2.13 are off by 4e-6 relative in the first row.
MPMATH = [
    (1000000.0, 995000.0, 2.749580359270071e-07, 0.9999997250419641),
    (1000000.0, 1003000.0, 0.9986382593537824, 0.0013617406462175915),
    (65.25, 0.001, 7.567870521349578e-288, 1.0),
    (0.01, 1e-05, 0.8963367982671973, 0.1036632017328028),
    (2500.0, 2500.0, 0.5026596211076548, 0.4973403788923451),
    (12.5, 30.0, 0.9998954451386848, 0.00010455486131526473),
    (3.5, 400.0, 1.0, 1.8556541193816082e-168),
]


def test_against_mpmath_where_scipy_loses_digits():
    a, x, p, q = (np.array(c) for c in zip(*MPMATH))
    np.testing.assert_allclose(gammainc(t(a), t(x)).numpy(), p, rtol=1e-13)
    np.testing.assert_allclose(gammaincc(t(a), t(x)).numpy(), q, rtol=1e-13)


def test_edges_as_pytorch():
    nan, inf = float("nan"), float("inf")
    a = t([0.0, 0.0, 1.0, 2.0, -1.0, 2.0, inf, 2.0, nan])
    x = t([0.0, 1.0, 0.0, inf, 1.0, -1.0, 1.0, nan, 1.0])
    # torch.special.gammainc / gammaincc 2.13 on these inputs
    np.testing.assert_array_equal(gammainc(a, x).numpy(), [nan, 1.0, 0.0, 1.0, nan, nan, 0.0, nan, nan])
    np.testing.assert_array_equal(gammaincc(a, x).numpy(), [nan, 0.0, 1.0, 0.0, nan, nan, 1.0, nan, nan])


def test_shapes_dtypes_and_scalars():
    assert gammainc(t(2.0), t(1.5)).shape == ()
    assert gammainc(t([[1.0], [2.0]]), t([0.5, 1.0, 3.0])).shape == (2, 3)
    assert gammainc(rtx.tensor([2.0]), rtx.tensor([1.0])).dtype == rtx.float32
    assert abs(gammainc(2, 1.5).item() - sp.gammainc(2, 1.5)) < 1e-7


def test_derivative_in_x_and_refusal_in_a():
    x = t([0.3, 2.0, 9.0]).requires_grad_()
    a = t([0.7, 2.5, 8.0])
    assert rtx.autograd.gradcheck(lambda x: gammainc(a, x), (x,))
    assert rtx.autograd.gradgradcheck(lambda x: gammaincc(a, x), (x,))
    with pytest.raises(NotImplementedError, match="with respect to a is not implemented"):
        gammainc(a.clone().requires_grad_(), x).sum().backward()


def test_gamma_and_chi2_cdf():
    A, B = np.array([[0.3], [2.0], [40.0]]), np.array([0.5, 1.0, 3.0, 7.0])
    v = np.random.default_rng(1).uniform(0.01, 30, (2, 3, 4))
    np.testing.assert_allclose(D.Gamma(t(A), t(B)).cdf(t(v)).numpy(), st.gamma(A, scale=1 / B).cdf(v), rtol=1e-12)
    np.testing.assert_allclose(D.Chi2(t(A * B)).cdf(t(v)).numpy(), st.chi2(A * B).cdf(v), rtol=1e-12)
    # gradients reach the value and the rate (the concentration's is refused, as in PyTorch)
    rate = t(B).requires_grad_()
    val = t(v[0]).requires_grad_()
    assert rtx.autograd.gradcheck(lambda r, y: D.Gamma(t(A), r).cdf(y), (rate, val))
    with pytest.raises(ValueError, match="support"):
        D.Gamma(t(A), t(B)).cdf(t(-np.ones((3, 4))))
