"""F.gelu's float32 CPU path (a branch-free float32 Phi, activation._phi_float32) against the exact
GELU from math.erfc in float64: relative error bounds over the whole float32 range, the special
values, and the same gradients as the float64 path."""
import math

import numpy as np

import rtx
import rtx.nn.functional as F


def _exact_gelu(x):
    return np.array([v * 0.5 * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])


def test_float32_gelu_relative_error():
    x = np.concatenate([np.linspace(-14, 9, 100001), np.random.default_rng(0).normal(size=20000) * 3,
                        [0.0, -0.0, 1e-30, -1e-30, 1e-3, -1e-3]]).astype(np.float32)
    got = F.gelu(rtx.tensor(x)).numpy()
    assert got.dtype == np.float32
    ref = _exact_gelu(x)
    ok = np.abs(ref) > 1e-37   # below that float32 is subnormal: absolute error only
    rel = np.abs(got.astype(np.float64) - ref)[ok] / np.abs(ref[ok])
    near = (np.abs(x) < 3)[ok]
    mid = (np.abs(x) < 6)[ok]
    assert rel[near].max() < 1e-6, rel[near].max()
    assert rel[mid].max() < 3e-6, rel[mid].max()
    assert rel.max() < 1.5e-5, rel.max()
    assert np.abs(got[~ok]).max() < 1e-37


def test_float32_gelu_special_values():
    x = np.array([np.inf, np.nan, 0.0, 1e30, -1e30, 40.0, -40.0], np.float32)
    with np.errstate(over="raise", divide="raise"):   # no overflow warning for huge inputs
        got = F.gelu(rtx.tensor(x)).numpy()
    assert got[0] == np.inf and np.isnan(got[1]) and got[2] == 0
    assert got[3] == 1e30 and got[4] == 0 and got[5] == 40 and got[6] == 0


def test_float32_gelu_gradient_matches_float64():
    x64 = np.random.default_rng(1).normal(size=(7, 33)) * 3
    grads = []
    for dt in (rtx.float32, rtx.float64):
        x = rtx.tensor(x64, dtype=dt, requires_grad=True)
        F.gelu(x).sum().backward()
        grads.append(x.grad.numpy().astype(np.float64))
    np.testing.assert_allclose(grads[0], grads[1], rtol=2e-6, atol=1e-7)
