"""Losses under autocast: every loss on PyTorch's "autocast to float32" lists computes in float32
from lower-precision inputs (compared with a NumPy float64 reference on the same, already rounded,
inputs) and its gradient reaches the lower-precision input in that input's dtype."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import rtx
import rtx.losses.functional as L
from rtx.extend import autocast as ac


@contextlib.contextmanager
def autocast(dtype, device_type="cpu"):
    # rtx.autocast lives in rtx-optim, a layer above; the state it sets lives in rtx-tensor.
    prev = ac.set_autocast_dtype(device_type, dtype)
    try:
        yield
    finally:
        ac.set_autocast_dtype(device_type, prev)


g = np.random.default_rng(0)
X = g.standard_normal((6, 4)).astype(np.float32)
Y = g.standard_normal((6, 4)).astype(np.float32)
P = (1 / (1 + np.exp(-X))).astype(np.float32)
Q = (1 / (1 + np.exp(-Y))).astype(np.float32)
T = np.array([0, 3, 1, 2, 3, 0])


def _logsm(x):
    return x - np.log(np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)) - x.max(1, keepdims=True)


def _sp(x):
    return np.log1p(np.exp(x))


# name -> (call(a, b) on rtx tensors, NumPy reference(a, b) on float64 arrays, inputs)
CASES = {
    "mse_loss": (lambda a, b: L.mse_loss(a, b), lambda a, b: ((a - b) ** 2).mean(), (X, Y)),
    "l1_loss": (lambda a, b: L.l1_loss(a, b), lambda a, b: np.abs(a - b).mean(), (X, Y)),
    "smooth_l1_loss": (lambda a, b: L.smooth_l1_loss(a, b),
                       lambda a, b: np.where(np.abs(a - b) < 1, 0.5 * (a - b) ** 2, np.abs(a - b) - 0.5).mean(),
                       (X, Y)),
    "huber_loss": (lambda a, b: L.huber_loss(a, b),
                   lambda a, b: np.where(np.abs(a - b) < 1, 0.5 * (a - b) ** 2, np.abs(a - b) - 0.5).mean(), (X, Y)),
    "binary_cross_entropy": (lambda a, b: L.binary_cross_entropy(a, b),
                             lambda a, b: -(b * np.log(a) + (1 - b) * np.log(1 - a)).mean(), (P, Q)),
    "binary_cross_entropy_with_logits": (lambda a, b: L.binary_cross_entropy_with_logits(a, b),
                                         lambda a, b: ((1 - b) * a + _sp(-a)).mean(), (X, Q)),
    "kl_div": (lambda a, b: L.kl_div(a, b, reduction="batchmean"),
               lambda a, b: (b * (np.log(b) - a)).sum() / a.shape[0], (np.log(P), Q)),
    "soft_margin_loss": (lambda a, b: L.soft_margin_loss(a, b), lambda a, b: _sp(-a * b).mean(), (X, np.sign(Y))),
    "cross_entropy": (lambda a, b: L.cross_entropy(a, rtx.tensor(T)),
                      lambda a, b: -_logsm(a)[np.arange(6), T].mean(), (X, None)),
    "nll_loss": (lambda a, b: L.nll_loss(a, rtx.tensor(T)), lambda a, b: -a[np.arange(6), T].mean(),
                 (_logsm(X.astype(np.float64)).astype(np.float32), None)),
}


@pytest.mark.parametrize("dtype", [rtx.bfloat16, rtx.float16])
@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_computes_in_float32_from_lower_precision_inputs(name, dtype):
    call, ref, (a, b) = CASES[name]
    ta = rtx.tensor(a).to(dtype).requires_grad_()
    tb = None if b is None else rtx.tensor(b).to(dtype)
    with autocast(dtype):
        loss = call(ta, tb)
    assert loss.dtype is rtx.float32
    ar = ta.detach().float().numpy().astype(np.float64)
    br = None if tb is None else tb.float().numpy().astype(np.float64)
    np.testing.assert_allclose(loss.item(), ref(ar, br), rtol=1e-5, atol=1e-6)
    loss.backward()
    assert ta.grad.dtype is dtype and np.isfinite(ta.grad.float().numpy()).all()


def test_the_same_losses_without_autocast_keep_the_input_dtype():
    a = rtx.tensor(X).to(rtx.bfloat16)
    assert L.mse_loss(a, a).dtype is rtx.bfloat16
    assert L.cross_entropy(a, rtx.tensor(T)).dtype is rtx.bfloat16


def test_float64_inputs_are_not_lowered_to_float32():
    a = rtx.tensor(X, dtype=rtx.float64)
    with autocast(rtx.bfloat16):
        assert L.mse_loss(a, a).dtype is rtx.float64
