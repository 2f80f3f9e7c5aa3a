"""rtx.nn.functional ops under autocast, as PyTorch's op lists: linear, prelu and
scaled_dot_product_attention compute in the lower dtype; layer_norm, group_norm and softmax stay
in their input dtype on the CPU (PyTorch's CPU float32 list leaves them out) and go to float32
for a device type whose list has them (CUDA's)."""
from __future__ import annotations

import contextlib
import math

import ml_dtypes
import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.extend import autocast as ac

TOL = {rtx.float16: 2.0 ** -10, rtx.bfloat16: 2.0 ** -7}
NP = {rtx.float16: np.float16, rtx.bfloat16: ml_dtypes.bfloat16}


@contextlib.contextmanager
def autocast(dtype, device_type="cpu"):
    # rtx.autocast lives in rtx-optim, a layer above; the state it sets lives in rtx-tensor.
    prev = ac.set_autocast_dtype(device_type, dtype)
    try:
        yield
    finally:
        ac.set_autocast_dtype(device_type, prev)


def _r(a, dtype):
    return np.asarray(a, np.float32).astype(NP[dtype]).astype(np.float64)


def _close(got, want, dtype, k=1.0):
    got = got.float().numpy().astype(np.float64)
    scale = np.abs(want).max() + 1e-30
    np.testing.assert_allclose(got, want, rtol=k * TOL[dtype], atol=k * TOL[dtype] * scale)


@pytest.mark.parametrize("dtype", [rtx.bfloat16, rtx.float16])
def test_linear_computes_in_the_autocast_dtype(dtype):
    g = np.random.default_rng(0)
    x, w, b = (g.standard_normal(s).astype(np.float32) for s in ((3, 5, 16), (8, 16), (8,)))
    with autocast(dtype):
        y = F.linear(rtx.tensor(x), rtx.tensor(w), rtx.tensor(b))
        y_nobias = F.linear(rtx.tensor(x), rtx.tensor(w))
    assert y.dtype is dtype and y_nobias.dtype is dtype
    # the output is rounded once to dtype; the bias add (in dtype) may round once more
    _close(y, _r(x, dtype) @ _r(w, dtype).T + _r(b, dtype), dtype, k=2)
    _close(y_nobias, _r(x, dtype) @ _r(w, dtype).T, dtype)


def test_linear_module_gradients_come_back_float32():
    lin = nn.Linear(4, 3)
    x = rtx.randn(5, 4)
    with autocast(rtx.bfloat16):
        y = lin(x)
    assert y.dtype is rtx.bfloat16
    y.float().pow(2).sum().backward()
    assert lin.weight.grad.dtype is rtx.float32 and lin.bias.grad.dtype is rtx.float32
    # reference: the same loss in float64 from the bfloat16-rounded operands
    xr, wr, br = _r(x.numpy(), rtx.bfloat16), _r(lin.weight.detach().numpy(), rtx.bfloat16), \
        _r(lin.bias.detach().numpy(), rtx.bfloat16)
    gy = 2 * (xr @ wr.T + br)
    np.testing.assert_allclose(lin.weight.grad.numpy(), gy.T @ xr, rtol=0.05, atol=0.05)
    np.testing.assert_allclose(lin.bias.grad.numpy(), gy.sum(0), rtol=0.05, atol=0.05)


def test_linear_float64_and_other_device_types_are_left_alone():
    x, w = rtx.randn(2, 3, dtype=rtx.float64), rtx.randn(4, 3, dtype=rtx.float64)
    with autocast(rtx.bfloat16):
        assert F.linear(x, w).dtype is rtx.float64
    with autocast(rtx.float16, "cuda"):
        assert F.linear(x.float(), w.float()).dtype is rtx.float32


def test_sdpa_computes_in_the_autocast_dtype():
    g = np.random.default_rng(2)
    q, k, v = (g.standard_normal((2, 3, 4, 8)).astype(np.float32) for _ in range(3))
    mask = g.standard_normal((4, 4)).astype(np.float32)
    with autocast(rtx.bfloat16):
        out = F.scaled_dot_product_attention(rtx.tensor(q), rtx.tensor(k), rtx.tensor(v), attn_mask=rtx.tensor(mask))
        causal = F.scaled_dot_product_attention(rtx.tensor(q), rtx.tensor(k), rtx.tensor(v), is_causal=True)
    assert out.dtype is rtx.bfloat16 and causal.dtype is rtx.bfloat16
    qr, kr, vr, mr = (_r(a, rtx.bfloat16) for a in (q, k, v, mask))
    s = qr @ kr.swapaxes(-1, -2) / math.sqrt(8) + mr
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    # a chain of bfloat16 ops (scores, softmax, product) rounds several times
    _close(out, p @ vr, rtx.bfloat16, k=8)


def test_prelu_is_on_the_lower_precision_list():
    x = rtx.tensor([[-2.0, 3.0], [1.0, -0.5]])
    w = rtx.tensor([0.25])
    with autocast(rtx.bfloat16):
        y = F.prelu(x, w)
    assert y.dtype is rtx.bfloat16
    np.testing.assert_array_equal(y.float().numpy(), [[-0.5, 3.0], [1.0, -0.125]])


def test_normalisation_and_softmax_stay_in_the_input_dtype_on_cpu():
    x = rtx.randn(2, 4, 3, dtype=rtx.bfloat16)
    with autocast(rtx.bfloat16):
        assert F.layer_norm(x, (3,)).dtype is rtx.bfloat16
        assert F.group_norm(x, 2).dtype is rtx.bfloat16
        assert F.softmax(x, -1).dtype is rtx.bfloat16
        assert F.log_softmax(x, -1).dtype is rtx.bfloat16


def test_float32_list_ops_cast_where_the_device_list_has_them(monkeypatch):
    # CUDA's float32 list holds layer_norm, group_norm, softmax...; run that policy on the CPU.
    monkeypatch.setitem(ac.FP32_OPS, "cpu", ac.FP32_OPS["cuda"])
    g = np.random.default_rng(3)
    x = rtx.tensor(g.standard_normal((2, 4, 3)).astype(np.float32)).to(rtx.bfloat16)
    w = rtx.randn(3, requires_grad=True)
    with autocast(rtx.bfloat16):
        ln = F.layer_norm(x, (3,), weight=w)
        gn = F.group_norm(x, 2)
        sm = F.softmax(x, -1)
        lsm = F.log_softmax(x, -1)
        assert F.softmax(x, -1, dtype=rtx.bfloat16).dtype is rtx.bfloat16   # an explicit dtype wins
    for t in (ln, gn, sm, lsm):
        assert t.dtype is rtx.float32
    xr = x.float().numpy().astype(np.float64)
    ref = (xr - xr.mean(-1, keepdims=True)) / np.sqrt(xr.var(-1, keepdims=True) + 1e-5) * w.detach().numpy()
    np.testing.assert_allclose(ln.detach().numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sm.numpy(), np.exp(xr) / np.exp(xr).sum(-1, keepdims=True), rtol=1e-5)
    ln.sum().backward()
    assert w.grad.dtype is rtx.float32


@pytest.mark.parametrize("dtype", [rtx.bfloat16, rtx.float16])
def test_conv2d_and_conv_transpose2d_compute_in_the_autocast_dtype(dtype):
    g = np.random.default_rng(5)
    x, w = g.standard_normal((2, 3, 6, 6)).astype(np.float32), g.standard_normal((4, 3, 3, 3)).astype(np.float32)
    with autocast(dtype):
        y = F.conv2d(rtx.tensor(x), rtx.tensor(w), padding=1)
        yt = F.conv_transpose2d(rtx.tensor(x), rtx.tensor(w.transpose(1, 0, 2, 3).copy()), stride=2)
    assert y.dtype is dtype and yt.dtype is dtype
    # reference: the float64 convolution of the operands rounded to dtype (im2col by hand)
    xr, wr = _r(x, dtype), _r(w, dtype)
    xp = np.pad(xr, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((2, 4, 6, 6))
    for i in range(3):
        for j in range(3):
            want += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 6, j:j + 6], wr[:, :, i, j])
    _close(y, want, dtype, k=2)
    with rtx.no_grad():
        want_t = F.conv_transpose2d(rtx.tensor(xr), rtx.tensor(wr.transpose(1, 0, 2, 3).copy()), stride=2)
    _close(yt, want_t.numpy(), dtype, k=2)


def test_conv_weight_gradient_comes_back_float32():
    conv = nn.Conv2d(2, 3, 3)
    with autocast(rtx.bfloat16):
        y = conv(rtx.randn(1, 2, 5, 5))
    assert y.dtype is rtx.bfloat16
    y.float().sum().backward()
    assert conv.weight.grad.dtype is rtx.float32 and conv.bias.grad.dtype is rtx.float32
