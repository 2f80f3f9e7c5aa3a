"""rtx.special against scipy.special (values, float64) and finite differences (gradients)."""
import math

import numpy as np
import pytest

import rtx
import rtx.special as S

ss = pytest.importorskip("scipy.special")

X = np.array([-40.0, -7.5, -3.0, -1.0, -0.2, 0.3, 1.0, 2.5, 6.0, 9.0])
P = np.array([1e-10, 1e-4, 0.02, 0.3, 0.5, 0.77, 0.999, 1 - 1e-9])
POS = np.array([0.05, 0.5, 1.0, 3.3, 12.0, 150.0])

CASES = [
    ("ndtr", S.ndtr, ss.ndtr, X),
    ("log_ndtr", S.log_ndtr, ss.log_ndtr, np.concatenate([X, [-300.0, 12.0, 30.0]])),
    ("ndtri", S.ndtri, ss.ndtri, P),
    ("erfcx", S.erfcx, ss.erfcx, np.array([-3.0, -0.5, 0.0, 0.7, 4.9, 5.1, 12.0, 300.0])),
    ("entr", S.entr, ss.entr, np.array([0.0, 1e-300, 0.2, 1.0, 7.0, -1.0])),
    ("expit", S.expit, ss.expit, X),
    ("logit", S.logit, ss.logit, P),
    ("gammaln", S.gammaln, ss.gammaln, POS),
    ("digamma", S.digamma, ss.digamma, POS),
    ("erf", S.erf, ss.erf, X),
    ("erfinv", S.erfinv, ss.erfinv, 2 * P - 1),
]


@pytest.mark.parametrize("name,fn,ref,x", CASES, ids=[c[0] for c in CASES])
def test_values_match_scipy(name, fn, ref, x):
    with np.errstate(all="ignore"):
        got = fn(rtx.tensor(x, dtype=rtx.float64)).numpy()
    np.testing.assert_allclose(got, ref(x), rtol=1e-12 if name != "erfinv" else 1e-9, atol=0)


def test_two_argument_functions():
    x = np.array([0.0, 0.0, 1.5, 2.0, -1.0])
    y = np.array([-1.0, np.nan, 0.3, 4.0, 2.0])
    np.testing.assert_allclose(S.xlog1py(rtx.tensor(x), rtx.tensor(y)).numpy(), ss.xlog1py(x, y))
    np.testing.assert_allclose(S.xlogy(rtx.tensor(x), rtx.tensor(np.abs(y))).numpy(), ss.xlogy(x, np.abs(y)))
    for p in (1, 3):
        a = np.array([2.0, 5.5])
        np.testing.assert_allclose(S.multigammaln(rtx.tensor(a), p).numpy(), [ss.multigammaln(v, p) for v in a])
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        S.multigammaln(rtx.tensor([2.0]), 0)


@pytest.mark.parametrize("fn,x", [(S.ndtr, [-2.0, 0.3, 1.5]), (S.log_ndtr, [-8.0, -1.0, 0.5, 3.0]),
                                  (S.ndtri, [0.1, 0.6]), (S.entr, [0.2, 1.7]), (S.erfcx, [-1.0, 0.5, 7.0]),
                                  (lambda t: S.xlog1py(t, t), [0.3, 2.0])])
def test_gradients(fn, x):
    t = rtx.tensor(x, dtype=rtx.float64, requires_grad=True)
    assert rtx.autograd.gradcheck(fn, (t,))
    assert rtx.autograd.gradgradcheck(fn, (t,))


def test_multigammaln_gradient():
    # first order only: lgamma's derivative is digamma, which has no derivative in rtx yet
    t = rtx.tensor([2.5, 4.0], dtype=rtx.float64, requires_grad=True)
    assert rtx.autograd.gradcheck(lambda v: S.multigammaln(v, 3), (t,))


def test_softmax_family_and_exposure():
    x = rtx.tensor([[1.0, 2.0, 3.0]], dtype=rtx.float64)
    np.testing.assert_allclose(S.softmax(x, 1).numpy(), ss.softmax(x.numpy(), axis=1))
    np.testing.assert_allclose(S.log_softmax(x, 1).numpy(), ss.log_softmax(x.numpy(), axis=1))
    assert S.softmax(x, 1, dtype=rtx.float32).dtype == rtx.float32
    assert rtx.special is S and math.isclose(S.logsumexp(x, 1).item(), ss.logsumexp(x.numpy()))
