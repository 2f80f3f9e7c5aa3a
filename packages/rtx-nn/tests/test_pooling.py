"""Pooling: values and indices against brute-force NumPy loops over (kernel, stride, padding,
dilation, ceil_mode, count_include_pad, divisor_override); gradients by finite differences;
PyTorch's tie rule, layers, repr and errors."""
import itertools

import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.autograd import gradcheck
from rtx.testing import OpCase, assert_close, check_case, devices

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape)


def t(a, grad=False):
    return rtx.tensor(a, requires_grad=grad)


def tup(v, n):
    return (v,) * n if isinstance(v, int) else tuple(v)


def out_size(n, k, s, p, d, ceil):
    o = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


# ---- brute-force references --------------------------------------------------------------------


def ref_max_pool(x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Loops over outputs and window taps; padding never wins; first maximum on ties.
    Returns (values, flat indices into the input plane)."""
    nd = x.ndim - 2
    k = tup(kernel, nd)
    s = k if stride is None else tup(stride, nd)
    p, d = tup(padding, nd), tup(dilation, nd)
    sp = x.shape[2:]
    out = [out_size(sp[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(nd)]
    vals = np.zeros(x.shape[:2] + tuple(out))
    idx = np.zeros(x.shape[:2] + tuple(out), dtype=np.int64)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for pos in itertools.product(*(range(o) for o in out)):
            best, arg = -np.inf, -1
            for off in itertools.product(*(range(kk) for kk in k)):
                src = tuple(pos[i] * s[i] - p[i] + off[i] * d[i] for i in range(nd))
                if all(0 <= src[i] < sp[i] for i in range(nd)):
                    v = x[(n, c) + src]
                    if v > best or arg < 0:
                        best, arg = v, int(np.ravel_multi_index(src, sp))
            vals[(n, c) + pos], idx[(n, c) + pos] = best, arg
    return vals, idx


def ref_avg_pool(x, kernel, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """PyTorch's divisor: the window clipped to input+padding (count_include_pad) or to the input."""
    nd = x.ndim - 2
    k = tup(kernel, nd)
    s = k if stride is None else tup(stride, nd)
    p = tup(padding, nd)
    sp = x.shape[2:]
    out = [out_size(sp[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(nd)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for pos in itertools.product(*(range(o) for o in out)):
            total, pool, valid = 0.0, 1, 1
            for i in range(nd):
                start = pos[i] * s[i] - p[i]
                end = min(start + k[i], sp[i] + p[i])
                pool *= end - start
                valid *= min(end, sp[i]) - max(start, 0)
            for off in itertools.product(*(range(kk) for kk in k)):
                src = tuple(pos[i] * s[i] - p[i] + off[i] for i in range(nd))
                if all(0 <= src[i] < sp[i] for i in range(nd)):
                    total += x[(n, c) + src]
            div = divisor_override or (pool if count_include_pad else valid)
            y[(n, c) + pos] = total / div
    return y


def bins(n, o):
    return [(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]


def ref_adaptive(x, out, reduce):
    nd = x.ndim - 2
    sp = x.shape[2:]
    out = tuple(sp[i] if out[i] is None else out[i] for i in range(nd))
    y = np.zeros(x.shape[:2] + out)
    idx = np.zeros(x.shape[:2] + out, dtype=np.int64)
    b = [bins(sp[i], out[i]) for i in range(nd)]
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for pos in itertools.product(*(range(o) for o in out)):
            region = tuple(slice(*b[i][pos[i]]) for i in range(nd))
            block = x[(n, c) + region]
            if reduce == "mean":
                y[(n, c) + pos] = block.mean()
            else:
                j = int(np.argmax(block))
                y[(n, c) + pos] = block.flat[j]
                local = np.unravel_index(j, block.shape)
                idx[(n, c) + pos] = np.ravel_multi_index(tuple(b[i][pos[i]][0] + local[i] for i in range(nd)), sp)
    return y, idx


# ---- max pooling -------------------------------------------------------------------------------

MAX_GRID = [(k, s, p, d, c) for k in (2, 3, (2, 3)) for s in (None, 1, 2, (2, 1)) for p in (0, 1) for d in (1, 2)
            for c in (False, True)]


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", MAX_GRID)
def test_max_pool2d_matches_loops(kernel, stride, padding, dilation, ceil_mode):
    x = r(2, 2, 7, 8)
    y, idx = F.max_pool2d(t(x), kernel, stride, padding, dilation, ceil_mode, return_indices=True)
    ev, ei = ref_max_pool(x, kernel, stride, padding, dilation, ceil_mode)
    assert_close(y, ev, rtol=0, atol=0)
    assert idx.dtype == rtx.int64
    assert np.array_equal(idx.numpy(), ei)
    assert_close(F.max_pool2d(t(x), kernel, stride, padding, dilation, ceil_mode), ev, rtol=0, atol=0)


@pytest.mark.parametrize("args", [(3, 2, 1, 1, True), (2, None, 0, 2, False), (4, 3, 2, 1, True)])
def test_max_pool1d_and_3d_match_loops(args):
    x = r(2, 3, 11)
    y, idx = F.max_pool1d(t(x), *args, return_indices=True)
    ev, ei = ref_max_pool(x, *args)
    assert_close(y, ev, rtol=0, atol=0)
    assert np.array_equal(idx.numpy(), ei)
    x3 = r(1, 2, 5, 6, 5)
    y3, i3 = F.max_pool3d(t(x3), 2, 2, 1, return_indices=True)
    ev, ei = ref_max_pool(x3, 2, 2, 1)
    assert_close(y3, ev, rtol=0, atol=0)
    assert np.array_equal(i3.numpy(), ei)


def test_max_pool_ties_send_the_gradient_to_the_first_maximum():
    x = t(np.ones((1, 1, 4, 4)), True)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    y.sum().backward()
    expect = np.zeros((4, 4))
    expect[::2, ::2] = 1
    assert_close(x.grad[0, 0], expect, rtol=0, atol=0)
    assert idx.numpy().ravel().tolist() == [0, 2, 8, 10]
    x = t(np.ones((1, 1, 5)), True)  # overlapping windows: the shared max collects both gradients
    F.max_pool1d(x, 3, stride=2).sum().backward()
    assert x.grad.numpy().ravel().tolist() == [1, 0, 1, 0, 0]


def test_max_pool_propagates_nan():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 0, 1] = np.nan
    y = F.max_pool2d(t(x), 2).numpy()
    assert np.isnan(y[0, 0, 0, 0]) and not np.isnan(y).ravel()[1:].any()


def test_max_pool_index_rules_match_pytorch():
    # Values printed by PyTorch 2.13: padding never wins (an all -inf window points at its first
    # real element), ties take the first maximum, a NaN window the last NaN.
    x = np.full((1, 1, 3, 4), -np.inf)
    x[0, 0, 2, 3] = 1.0
    y, i = F.max_pool2d(t(x), 3, 2, 1, return_indices=True)
    assert i.numpy().ravel().tolist() == [0, 1, 4, 11]
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 0, 0] = x[0, 0, 1, 1] = x[0, 0, 2, 3] = np.nan
    assert F.max_pool2d(t(x), 2, return_indices=True)[1].numpy().ravel().tolist() == [5, 7, 13, 11]
    assert F.max_pool2d(t(x), 3, 1, 1, return_indices=True)[1].numpy().ravel().tolist() == [
        5, 5, 5, 7, 5, 5, 11, 11, 5, 5, 11, 11, 13, 14, 11, 11]
    assert F.adaptive_max_pool2d(t(x), 3, return_indices=True)[1].numpy().ravel().tolist() == [
        5, 5, 7, 5, 5, 11, 13, 14, 11]


def test_empty_batch():
    x = t(np.zeros((0, 3, 5, 4)), True)
    for y in (F.max_pool2d(x, 2), F.avg_pool2d(x, 2), F.adaptive_max_pool2d(x, 3), F.adaptive_avg_pool2d(x, 3)):
        assert y.shape[0] == 0
        y.sum().backward()
        assert tuple(x.grad.shape) == (0, 3, 5, 4)


def test_max_pool_gradient_is_the_argmax_scatter():
    x = r(2, 3, 7, 6)
    xt = t(x, True)
    y, idx = F.max_pool2d(xt, 3, 2, 1, return_indices=True)
    g = r(*y.shape)
    y.backward(t(g))
    expect = np.zeros((2, 3, 42))
    for n, c in itertools.product(range(2), range(3)):
        np.add.at(expect[n, c], idx.numpy()[n, c].ravel(), g[n, c].ravel())
    assert_close(xt.grad, expect.reshape(x.shape), rtol=1e-12, atol=1e-12)


# ---- average pooling ---------------------------------------------------------------------------

AVG_GRID = [(k, s, p, c, cip, do) for k in (2, 3, (3, 2)) for s in (None, 2, (1, 2)) for p in (0, 1)
            for c in (False, True) for cip in (True, False) for do in (None, 5)]


@pytest.mark.parametrize("kernel,stride,padding,ceil_mode,count_include_pad,divisor_override", AVG_GRID)
def test_avg_pool2d_matches_loops(kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x = r(2, 2, 7, 8)
    y = F.avg_pool2d(t(x), kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    assert_close(y, ref_avg_pool(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override),
                 rtol=1e-12, atol=1e-12)


def test_avg_pool_of_integers_truncates_like_pytorch():
    x = rng.integers(-50, 50, (2, 2, 7, 6))
    y = F.avg_pool2d(rtx.tensor(x), 3, 2, 1, ceil_mode=True)
    assert y.dtype == rtx.int64
    assert np.array_equal(y.numpy(), np.trunc(ref_avg_pool(x.astype(float), 3, 2, 1, True)).astype(np.int64))


def test_avg_pool1d_and_3d_match_loops():
    x = r(2, 3, 11)
    assert_close(F.avg_pool1d(t(x), 4, 3, 2, True, False), ref_avg_pool(x, 4, 3, 2, True, False), rtol=1e-12,
                 atol=1e-12)
    x3 = r(1, 2, 5, 6, 5)
    assert_close(F.avg_pool3d(t(x3), 3, 2, 1, True), ref_avg_pool(x3, 3, 2, 1, True), rtol=1e-12, atol=1e-12)


# ---- adaptive pooling --------------------------------------------------------------------------


@pytest.mark.parametrize("out", [(3, 3), (4, 5), (1, 1), (7, 8), (2, None), (5, 7), (6, 3)])
def test_adaptive_pool2d_matches_loops(out):
    x = r(2, 3, 7, 8)
    mean, _ = ref_adaptive(x, out, "mean")
    assert_close(F.adaptive_avg_pool2d(t(x), out), mean, rtol=1e-12, atol=1e-12)
    mx, idx = ref_adaptive(x, out, "max")
    y, i = F.adaptive_max_pool2d(t(x), out, return_indices=True)
    assert_close(y, mx, rtol=0, atol=0)
    assert np.array_equal(i.numpy(), idx)


def test_adaptive_pool1d_3d_match_loops():
    x = r(2, 3, 11)
    assert_close(F.adaptive_avg_pool1d(t(x), 4), ref_adaptive(x, (4,), "mean")[0], rtol=1e-12, atol=1e-12)
    y, i = F.adaptive_max_pool1d(t(x), 4, return_indices=True)
    mx, idx = ref_adaptive(x, (4,), "max")
    assert_close(y, mx, rtol=0, atol=0)
    assert np.array_equal(i.numpy(), idx)
    x3 = r(1, 2, 5, 6, 7)
    assert_close(F.adaptive_avg_pool3d(t(x3), (2, 3, 4)), ref_adaptive(x3, (2, 3, 4), "mean")[0], rtol=1e-12,
                 atol=1e-12)
    assert_close(F.adaptive_max_pool3d(t(x3), (2, 3, 4)), ref_adaptive(x3, (2, 3, 4), "max")[0], rtol=0, atol=0)


# ---- gradients ---------------------------------------------------------------------------------

GRAD_CASES = [
    OpCase("max_pool2d k3 s2 p1 ceil", lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), None, [r(1, 2, 6, 5)]),
    OpCase("max_pool2d dil2", lambda x: F.max_pool2d(x, 2, 1, 0, 2), None, [r(1, 2, 5, 5)]),
    OpCase("max_pool1d", lambda x: F.max_pool1d(x, 3, 2, 1), None, [r(2, 2, 7)]),
    OpCase("avg_pool2d cip=False ceil", lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), None, [r(1, 2, 6, 5)]),
    OpCase("avg_pool2d divisor", lambda x: F.avg_pool2d(x, (2, 3), (1, 2), (1, 1), divisor_override=4), None,
           [r(1, 2, 5, 5)]),
    OpCase("avg_pool3d", lambda x: F.avg_pool3d(x, 2, 1, 1), None, [r(1, 1, 3, 4, 3)]),
    OpCase("adaptive_avg_pool2d 3x2", lambda x: F.adaptive_avg_pool2d(x, (3, 2)), None, [r(2, 2, 5, 7)]),
    OpCase("adaptive_avg_pool2d divisible", lambda x: F.adaptive_avg_pool2d(x, 2), None, [r(1, 2, 4, 6)]),
    OpCase("adaptive_max_pool2d 3x4", lambda x: F.adaptive_max_pool2d(x, (3, 4)), None, [r(2, 2, 5, 7)]),
    OpCase("adaptive_max_pool1d", lambda x: F.adaptive_max_pool1d(x, 3), None, [r(2, 2, 8)]),
    OpCase("lp_pool2d", lambda x: F.lp_pool2d(x, 2, 2), None, [np.abs(r(1, 2, 4, 4)) + 0.5]),
    OpCase("max_unpool2d", lambda x: F.max_unpool2d(x, rtx.tensor([[[[0, 3], [9, 14]]]]), 2), None,
           [r(1, 1, 2, 2)]),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", GRAD_CASES, ids=repr)
def test_pool_gradients_and_double_backward(case, device):
    check_case(case, device)


# ---- lp pool, unpool ---------------------------------------------------------------------------


def test_lp_pool_matches_formula():
    x = np.abs(r(2, 3, 6, 6))
    ref = np.sqrt(ref_avg_pool(x ** 2, 3, 2) * 9)
    assert_close(F.lp_pool2d(t(x), 2, 3, 2), ref, rtol=1e-12, atol=1e-12)
    assert_close(F.lp_pool1d(t(x[:, :, 0]), 3, 2), np.cbrt(ref_avg_pool(x[:, :, 0] ** 3, 2) * 2), rtol=1e-12,
                 atol=1e-12)


def test_max_unpool_inverts_max_pool_at_the_maxima():
    x = r(2, 3, 6, 8)
    y, idx = F.max_pool2d(t(x), 2, return_indices=True)
    u = F.max_unpool2d(y, idx, 2)
    assert tuple(u.shape) == x.shape
    expect = np.zeros_like(x).reshape(2, 3, -1)
    np.put_along_axis(expect, idx.numpy().reshape(2, 3, -1), y.numpy().reshape(2, 3, -1), axis=2)
    assert_close(u, expect.reshape(x.shape), rtol=0, atol=0)
    assert tuple(nn.MaxUnpool2d(2)(y, idx, output_size=(7, 9)).shape) == (2, 3, 7, 9)
    y1, i1 = F.max_pool1d(t(x[:, :, 0]), 2, return_indices=True)
    assert tuple(F.max_unpool1d(y1, i1, 2).shape) == (2, 3, 8)
    with pytest.raises(RuntimeError, match="Found an invalid max index: 17"):
        F.max_unpool2d(rtx.randn(1, 1, 2, 2), rtx.tensor([[[[0, 1], [2, 17]]]]), 2)


# ---- layers ------------------------------------------------------------------------------------


def test_pool_layers_forward_and_repr():
    x = rtx.randn(2, 3, 9, 8)
    assert tuple(nn.MaxPool2d(2)(x).shape) == (2, 3, 4, 4)
    assert tuple(nn.MaxPool2d(3, 2, 1, ceil_mode=True)(x).shape) == (2, 3, 5, 5)
    y, i = nn.MaxPool2d(2, return_indices=True)(x)
    assert i.dtype == rtx.int64
    assert tuple(nn.AvgPool2d(3, 1, 1)(x).shape) == (2, 3, 9, 8)
    assert tuple(nn.AdaptiveAvgPool2d((5, None))(x).shape) == (2, 3, 5, 8)
    assert tuple(nn.AdaptiveAvgPool2d(1)(x).shape) == (2, 3, 1, 1)
    assert tuple(nn.AdaptiveMaxPool2d(3)(x).shape) == (2, 3, 3, 3)
    assert tuple(nn.MaxPool1d(2)(x[0]).shape) == (3, 9, 4)
    assert tuple(nn.AvgPool1d(3)(x[0]).shape) == (3, 9, 2)
    assert tuple(nn.LPPool2d(2, 2)(x.abs()).shape) == (2, 3, 4, 4)
    assert tuple(nn.MaxPool2d(2)(x[0]).shape) == (3, 4, 4)  # unbatched
    assert repr(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool2d(3, 2, 1)) == "AvgPool2d(kernel_size=3, stride=2, padding=1)"
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert repr(nn.AdaptiveAvgPool2d((5, 7))) == "AdaptiveAvgPool2d(output_size=(5, 7))"
    assert repr(nn.MaxUnpool2d(2)) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    assert list(nn.MaxPool2d(2).state_dict().keys()) == []


def test_pool_output_shape_formula():
    # (n, kernel, stride, padding, dilation, ceil_mode) -> PyTorch's output size, worked by hand
    for n, k, s, p, d, c, expect in [(9, 3, 2, 1, 1, True, 5), (10, 3, 3, 1, 1, True, 4), (10, 3, 3, 0, 1, True, 4),
                                     (8, 2, 2, 0, 1, False, 4), (7, 2, 3, 1, 2, True, 3), (5, 5, 1, 2, 1, False, 5),
                                     (6, 3, 2, 1, 1, True, 4)]:
        assert out_size(n, k, s, p, d, c) == expect
        assert F.max_pool2d(rtx.randn(1, 1, n, n), k, s, p, d, c).shape[2] == expect
        if d == 1:
            assert F.avg_pool2d(rtx.randn(1, 1, n, n), k, s, p, c).shape[2] == expect


def test_pool_errors():
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size, but got pad=2, "
                                           "kernel_size=2 and dilation=1"):
        F.max_pool2d(rtx.randn(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.avg_pool2d(rtx.randn(1, 1, 4, 4), 3, padding=2)
    with pytest.raises(RuntimeError, match=r"Given input size: \(1x1x1\). Calculated output size: \(1x0x0\). "
                                           r"Output size is too small"):
        F.max_pool2d(rtx.randn(1, 1, 1, 1), 2)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to max_pool2d"):
        F.max_pool2d(rtx.randn(4, 4), 2)
    with pytest.raises(RuntimeError, match="stride should not be zero"):
        F.max_pool2d(rtx.randn(1, 1, 4, 4), 2, stride=0)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(rtx.randn(1, 1, 4, 4), 2, divisor_override=0)
    with pytest.raises(RuntimeError, match="not implemented for 'rtx.bool'"):
        F.avg_pool2d(rtx.ones(1, 1, 4, 4, dtype=rtx.bool), 2)


def test_gradcheck_max_pool_with_indices_output():
    x = t(r(1, 1, 4, 4), True)
    assert gradcheck(lambda x: F.max_pool2d(x, 2, return_indices=True)[0], [x])
