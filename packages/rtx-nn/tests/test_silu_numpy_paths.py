"""F.silu's NumPy fast paths (a sigmoid without masked selects, a NumPy first-order backward) against
closed forms in float64 and against the Tensor-op backward it replaces (rtx-diffuse's UNet bench)."""
import numpy as np
import pytest

import rtx
import rtx.nn.functional as F
from rtx.nn._functional.activation import _sigmoid_into


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_sigmoid_into_matches_closed_form(dt):
    a = (np.random.default_rng(0).standard_normal(5000) * 20).astype(dt)
    a[:6] = [0.0, -0.0, 1e4, -1e4, np.inf, -np.inf]
    with np.errstate(over="ignore"):
        ref = 1 / (1 + np.exp(-a.astype(np.float64)))
    got = _sigmoid_into(a)
    assert got.dtype == dt
    tol = {np.float16: 2e-3, np.float32: 2e-7, np.float64: 1e-15}[dt]
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    assert np.isnan(_sigmoid_into(np.array([np.nan], dt)))[0]


def test_silu_backward_matches_tensor_ops_and_closed_form():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 8, 5, 5)).astype(np.float32) * 4
    g = rng.standard_normal(a.shape).astype(np.float32)
    x = rtx.tensor(a, requires_grad=True)
    F.silu(x).backward(rtx.tensor(g))
    s = 1 / (1 + np.exp(-a.astype(np.float64)))
    np.testing.assert_allclose(x.grad.numpy(), g * s * (1 + a * (1 - s)), rtol=1e-5, atol=1e-6)
    # under create_graph the Tensor-op path runs: the same numbers, and differentiable again
    x2 = rtx.tensor(a, requires_grad=True)
    (gx,) = rtx.autograd.grad(F.silu(x2), x2, rtx.tensor(g), create_graph=True)
    np.testing.assert_array_equal(gx.detach().numpy(), x.grad.numpy())
    xd = rtx.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    assert rtx.autograd.gradcheck(F.silu, (xd,)) and rtx.autograd.gradgradcheck(F.silu, (xd,))
