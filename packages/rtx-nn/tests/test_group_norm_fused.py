"""group_norm's one-op CPU form (NativeGroupNorm: the per-channel affine fused, a backward from two sums per
(sample, channel)): values against a NumPy float64 reference, gradients and double backward by finite
differences in float64, float32 to rounding, and the cases that keep the composed form (no affine, a graph
being traced for rtx.graph / rtx.onnx)."""
import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.autograd import gradcheck, gradgradcheck
from rtx.nn._functional import normalization as NM
from rtx.testing import assert_close

rng = np.random.default_rng(3)


def ref_group_norm(x, G, w, b, eps=1e-5):
    N, C = x.shape[:2]
    x3 = x.reshape(N, G, -1)
    y = (x3 - x3.mean(2, keepdims=True)) / np.sqrt(x3.var(2, keepdims=True) + eps)
    shape = (1, C) + (1,) * (x.ndim - 2)
    return y.reshape(x.shape) * w.reshape(shape) + b.reshape(shape)


@pytest.fixture
def fused(monkeypatch):
    calls = []
    real = NM.NativeGroupNorm.apply
    monkeypatch.setattr(NM.NativeGroupNorm, "apply", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


@pytest.mark.parametrize("shape,G", [((2, 6, 4, 5), 3), ((3, 4, 5), 1), ((2, 4, 3, 2, 2), 4), ((1, 8, 3, 3), 2)])
def test_values_and_gradients_float64(fused, shape, G):
    x, w, b = rng.standard_normal(shape) * 3 + 2, rng.standard_normal(shape[1]), rng.standard_normal(shape[1])
    xt, wt, bt = (rtx.tensor(a, requires_grad=True) for a in (x, w, b))
    assert_close(F.group_norm(xt, G, wt, bt), ref_group_norm(x, G, w, b), rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda x, w, b: F.group_norm(x, G, w, b), [xt, wt, bt])
    assert gradgradcheck(lambda x, w, b: F.group_norm(x, G, w, b), [xt, wt, bt])
    assert fused


def test_only_some_gradients(fused):
    x, w, b = rng.standard_normal((2, 4, 3, 3)), rng.standard_normal(4), rng.standard_normal(4)
    xt, wt = rtx.tensor(x, requires_grad=True), rtx.tensor(w)
    g = rng.standard_normal(x.shape)
    F.group_norm(xt, 2, wt, rtx.tensor(b)).backward(rtx.tensor(g))
    xr = rtx.tensor(x, requires_grad=True)
    (F.group_norm(xr, 2) * rtx.tensor(w).reshape(1, 4, 1, 1)).backward(rtx.tensor(g))   # the composed form
    assert_close(xt.grad, xr.grad, rtol=1e-12, atol=1e-12)


def test_float32_matches_float64_reference_at_unet_size(fused):
    x, w, b = rng.standard_normal((4, 32, 16, 16)) + 1, rng.standard_normal(32), rng.standard_normal(32)
    g = rng.standard_normal(x.shape)
    grads = []
    for dt in (np.float32, np.float64):
        ts = [rtx.tensor(a.astype(dt), requires_grad=True) for a in (x, w, b)]
        y = F.group_norm(*ts[:1], 8, *ts[1:])
        assert y.dtype == (rtx.float32 if dt is np.float32 else rtx.float64)
        y.backward(rtx.tensor(g.astype(dt)))
        grads.append([y.detach().numpy()] + [t.grad.numpy() for t in ts])
    for a, c in zip(*grads):
        np.testing.assert_allclose(a, c, rtol=2e-4, atol=2e-4 * np.abs(c).max())


def test_composed_form_without_affine_and_while_tracing(fused):
    x = rtx.randn(2, 4, 3, 3)
    F.group_norm(x, 2)
    assert not fused                       # no affine: layer_norm's op alone
    from rtx.graph import trace
    gn = nn.GroupNorm(2, 4)
    graph = trace(gn, (x,))
    ops = [n.op for n in graph.nodes]
    assert "native_layer_norm" in ops and "native_group_norm" not in ops and not fused
    assert_close(gn(x), graph(x)[0] if isinstance(graph(x), (tuple, list)) else graph(x), rtol=1e-6, atol=1e-6)
    assert fused                           # the eager call fused


def test_gradients_come_back_in_the_inputs_dtype(fused):
    # a float64 output gradient into a float32 group_norm: x/w/b grads stay float32, as the composed ops give
    x = rtx.tensor(rng.standard_normal((2, 4, 3)).astype(np.float32), requires_grad=True)
    w, b = rtx.ones(4, requires_grad=True), rtx.zeros(4, requires_grad=True)
    F.group_norm(x, 2, w, b).backward(rtx.ones(2, 4, 3, dtype=rtx.float64))
    assert fused and x.grad.dtype == w.grad.dtype == b.grad.dtype == rtx.float32


def test_empty_batch_gives_an_empty_result_and_zero_affine_grads():
    # as PyTorch: N = 0 is allowed; weight and bias get zero gradients
    x = rtx.randn(0, 4, 3, requires_grad=True)
    w, b = rtx.ones(4, requires_grad=True), rtx.zeros(4, requires_grad=True)
    y = F.group_norm(x, 2, w, b)
    assert tuple(y.shape) == (0, 4, 3)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 4, 3)
    assert np.array_equal(w.grad.numpy(), np.zeros(4)) and np.array_equal(b.grad.numpy(), np.zeros(4))
