"""F.linear's backward has two spellings: on the arrays when no double backward is asked for
(create_graph=False, float32/float64), in Tensor ops otherwise. Both must give NumPy's gradients."""
import numpy as np
import pytest

import rtx
import rtx.nn.functional as F


def _numpy_grads(x, w, b, g):
    x2, g2 = x.reshape(-1, x.shape[-1]), g.reshape(-1, g.shape[-1])
    return g @ w, g2.T @ x2, (g2.sum(0) if b is not None else None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (3,)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("create_graph", [False, True])
def test_linear_grads_match_numpy(dtype, shape, bias, create_graph):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(shape).astype(dtype)
    w_np = rng.standard_normal((4, 3)).astype(dtype)
    b_np = rng.standard_normal(4).astype(dtype) if bias else None
    g_np = rng.standard_normal(shape[:-1] + (4,)).astype(dtype)
    x = rtx.tensor(x_np, requires_grad=True)
    w = rtx.tensor(w_np, requires_grad=True)
    b = rtx.tensor(b_np, requires_grad=True) if bias else None
    out = F.linear(x, w, b)
    inputs = [x, w] + ([b] if bias else [])
    grads = rtx.autograd.grad(out, inputs, rtx.tensor(g_np), create_graph=create_graph)
    want = _numpy_grads(x_np, w_np, b_np, g_np)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for got, ref in zip(grads, want):
        assert got.dtype == x.dtype
        np.testing.assert_allclose(got.detach().numpy(), ref, rtol=tol, atol=tol)
    # only the create_graph spelling records a graph (grad_x depends on w, grad_w on x; grad_b on
    # the constant output gradient alone)
    assert grads[0].requires_grad == grads[1].requires_grad == create_graph


def test_double_backward_through_linear_still_flows():
    # d/dx of sum(grad_w^2), grad_w = g^T x: needs the Tensor spelling's graph.
    x = rtx.randn(5, 3, dtype=rtx.float64, requires_grad=True)
    w = rtx.randn(4, 3, dtype=rtx.float64, requires_grad=True)
    assert rtx.autograd.gradgradcheck(lambda a, b: F.linear(a, b), (x, w))


def test_only_needed_grads_are_computed(monkeypatch):
    # x needs no gradient: the array path (the backward wraps its arrays itself) makes w's gradient alone
    import rtx.nn._functional.linear as L
    x = rtx.randn(5, 3)
    w = rtx.randn(4, 3, requires_grad=True)
    y = F.linear(x, w).sum()
    wrapped = []
    real = L.wrap
    monkeypatch.setattr(L, "wrap", lambda a, *r: wrapped.append(a.shape) or real(a, *r))
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), np.ones((5, 4), np.float32).T @ x.numpy(), rtol=1e-6)
    assert x.grad is None and wrapped == [(4, 3)]  # the array path ran and made no (5, 3) input gradient
