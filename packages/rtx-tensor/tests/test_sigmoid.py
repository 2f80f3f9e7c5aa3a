"""Tensor.sigmoid's branch-free stable form (rtx._tensor.ops.unary._sigmoid): the same values, bit for bit,
as the masked-select definition where(x >= 0, 1 / (1 + e), e / (1 + e)) with e = exp(-|x|), over every float
dtype, extreme and special values and 0-d tensors; against the closed form in float64; and its gradient."""
import math

import numpy as np
import pytest

import rtx
from rtx.autograd import gradcheck, gradgradcheck


def masked_sigmoid(a):
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype, copy=False)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_same_values_as_the_masked_form(dtype):
    a = (np.random.default_rng(0).standard_normal(5000) * 30).astype(dtype)
    a[:7] = [np.inf, -np.inf, np.nan, 0.0, -0.0, np.finfo(dtype).max, np.finfo(dtype).min]
    got = rtx.tensor(a).sigmoid().numpy()
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got, masked_sigmoid(a))
    assert got[0] == 1 and got[1] == 0 and np.isnan(got[2]) and got[3] == 0.5


def test_bfloat16_and_0d_and_integers():
    b = rtx.tensor([-3.0, 0.0, 2.5], dtype=rtx.bfloat16).sigmoid()
    assert b.dtype is rtx.bfloat16
    np.testing.assert_allclose(b.float().numpy(), [1 / (1 + math.exp(3)), 0.5, 1 / (1 + math.exp(-2.5))], rtol=1e-2)
    z = rtx.tensor(-2.0, dtype=rtx.float64).sigmoid()
    assert z.shape == () and z.item() == pytest.approx(1 / (1 + math.exp(2)), rel=1e-15)
    i = rtx.tensor([0, 3]).sigmoid()           # integers promote to the default float dtype, as PyTorch
    assert i.dtype is rtx.float32
    np.testing.assert_allclose(i.numpy(), [0.5, 1 / (1 + math.exp(-3))], rtol=1e-7)


def test_closed_form_float64_and_gradients():
    x = np.linspace(-40, 40, 801)
    np.testing.assert_allclose(rtx.tensor(x).sigmoid().numpy(), [1 / (1 + math.exp(-v)) for v in x], rtol=1e-15,
                               atol=0)
    t = rtx.tensor(np.random.default_rng(1).standard_normal(6) * 3, requires_grad=True)
    assert gradcheck(lambda t: t.sigmoid(), [t])
    assert gradgradcheck(lambda t: t.sigmoid(), [t])
