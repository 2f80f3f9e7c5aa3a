"""Convolutions: values against brute-force NumPy loops over many (stride, padding, dilation,
groups) combinations, gradients (and double backward) by finite differences in float64,
PyTorch's layer shapes, init, state_dict keys, repr and errors."""
import contextlib
import itertools
import math

import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.autograd import gradcheck, gradgradcheck
from rtx.testing import OpCase, assert_close, check_case, devices

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape)


def t(a, grad=False, device="cpu"):
    return rtx.tensor(a, requires_grad=grad, device=device)


# ---- brute-force references: explicit loops over every output and every kernel tap ----------


def ref_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct definition: y[n, o, p] = b[o] + sum_{c, k} w[o, c, k] * xpad[n, g*Cg + c, p*s + k*d]."""
    nd = x.ndim - 2
    s = (stride,) * nd if isinstance(stride, int) else tuple(stride)
    d = (dilation,) * nd if isinstance(dilation, int) else tuple(dilation)
    k = w.shape[2:]
    if padding == "valid":
        pads = [(0, 0)] * nd
    elif padding == "same":
        pads = [(dd * (kk - 1) // 2, dd * (kk - 1) - dd * (kk - 1) // 2) for dd, kk in zip(d, k)]
    else:
        p = (padding,) * nd if isinstance(padding, int) else tuple(padding)
        pads = [(pp, pp) for pp in p]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    N, O, Cg = x.shape[0], w.shape[0], w.shape[1]
    out = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
    y = np.zeros((N, O, *out))
    og = O // groups
    for n in range(N):
        for o in range(O):
            g = o // og
            for pos in itertools.product(*(range(m) for m in out)):
                acc = 0.0 if b is None else b[o]
                for c in range(Cg):
                    for off in itertools.product(*(range(kk) for kk in k)):
                        src = tuple(pos[i] * s[i] + off[i] * d[i] for i in range(nd))
                        acc += w[(o, c) + off] * xp[(n, g * Cg + c) + src]
                y[(n, o) + pos] = acc
    return y


def ref_conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Direct definition: every input value scatters w[c, o, k] * x into y[p*s + k*d - pad]."""
    nd = x.ndim - 2
    tup = lambda v: (v,) * nd if isinstance(v, int) else tuple(v)  # noqa: E731
    s, p, op, d = tup(stride), tup(padding), tup(output_padding), tup(dilation)
    N, Cin = x.shape[:2]
    og, k = w.shape[1], w.shape[2:]
    cg = Cin // groups
    out = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(nd)]
    y = np.zeros((N, og * groups, *out))
    for n in range(N):
        for c in range(Cin):
            g = c // cg
            for pos in itertools.product(*(range(m) for m in x.shape[2:])):
                for o in range(og):
                    for off in itertools.product(*(range(kk) for kk in k)):
                        dst = tuple(pos[i] * s[i] + off[i] * d[i] - p[i] for i in range(nd))
                        if all(0 <= dst[i] < out[i] for i in range(nd)):
                            y[(n, g * og + o) + dst] += w[(c, o) + off] * x[(n, c) + pos]
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nd)
    return y


# ---- conv2d over a grid of parameters ---------------------------------------------------------

CONV2D_GRID = [
    (stride, padding, dilation, groups, bias)
    for stride in (1, 2, (2, 1))
    for padding in (0, 1, (1, 2), "same", "valid")
    for dilation in (1, 2, (1, 2))
    for groups in (1, 2)
    for bias in (True, False)
    if not (padding == "same" and stride != 1)
]


@pytest.mark.parametrize("stride,padding,dilation,groups,bias", CONV2D_GRID)
def test_conv2d_matches_loops(stride, padding, dilation, groups, bias):
    x, w = r(2, 4, 7, 6), r(4, 4 // groups, 3, 2)
    b = r(4) if bias else None
    y = F.conv2d(t(x), t(w), None if b is None else t(b), stride, padding, dilation, groups)
    assert_close(y, ref_conv(x, w, b, stride, padding, dilation, groups), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", [
    dict(x=(2, 4, 11), w=(6, 2, 3), stride=2, padding=1, dilation=1, groups=2),
    dict(x=(1, 3, 9), w=(2, 3, 4), stride=1, padding="same", dilation=2, groups=1),
    dict(x=(2, 2, 8), w=(4, 1, 2), stride=3, padding=2, dilation=3, groups=2),
    dict(x=(3, 10), w=(2, 3, 3), stride=1, padding=0, dilation=1, groups=1),  # unbatched
])
def test_conv1d_matches_loops(case):
    x, w, b = r(*case["x"]), r(*case["w"]), r(case["w"][0])
    kw = {k: case[k] for k in ("stride", "padding", "dilation", "groups")}
    y = F.conv1d(t(x), t(w), t(b), **kw)
    ref = ref_conv(x[None] if x.ndim == 2 else x, w, b, **kw)
    assert_close(y, ref[0] if x.ndim == 2 else ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), ((1, 2, 1), 1, 1, 2), (2, (1, 0, 1), 2, 1),
                                                            (1, "same", 1, 2)])
def test_conv3d_matches_loops(stride, padding, dilation, groups):
    x, w, b = r(2, 4, 5, 6, 5), r(2, 4 // groups, 2, 3, 2), r(2)
    y = F.conv3d(t(x), t(w), t(b), stride, padding, dilation, groups)
    assert_close(y, ref_conv(x, w, b, stride, padding, dilation, groups), rtol=1e-10, atol=1e-10)


def test_conv2d_unbatched_and_pointwise_and_float32():
    x, w = r(3, 6, 5), r(4, 3, 1, 1)
    assert_close(F.conv2d(t(x), t(w)), ref_conv(x[None], w)[0], rtol=1e-10, atol=1e-10)
    x32, w32 = x.astype(np.float32)[None], r(5, 3, 3, 3).astype(np.float32)
    y = F.conv2d(t(x32), t(w32), padding=1)
    assert y.dtype == rtx.float32
    assert_close(y, ref_conv(x32.astype(np.float64), w32.astype(np.float64), padding=1), rtol=1e-4, atol=1e-4)


def test_depthwise_conv_matches_loops():
    x, w, b = r(2, 6, 8, 7), r(6, 1, 3, 3), r(6)
    y = F.conv2d(t(x), t(w), t(b), stride=2, padding=1, groups=6)
    assert_close(y, ref_conv(x, w, b, 2, 1, 1, 6), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("chunk_bytes", [1, 60_000])
def test_batch_chunks_give_the_same_result(monkeypatch, chunk_bytes):
    # The CPU path cuts the batch into im2col chunks (one sample each, or a few): same values.
    from rtx.nn._functional import conv as C
    x, w, gy = r(7, 4, 9, 8), r(6, 2, 3, 3), r(7, 6, 5, 4)
    ref = ref_conv(x, w, None, 2, 1, 1, 2)
    xt, wt = t(x, True), t(w, True)
    F.conv2d(xt, wt, stride=2, padding=1, groups=2).backward(t(gy))
    monkeypatch.setitem(C._CHUNK_BYTES, "cpu", chunk_bytes)
    xc, wc = t(x, True), t(w, True)
    y = F.conv2d(xc, wc, stride=2, padding=1, groups=2)
    assert_close(y, ref, rtol=1e-10, atol=1e-10)
    y.backward(t(gy))
    assert_close(xc.grad, xt.grad, rtol=1e-12, atol=1e-12)
    assert_close(wc.grad, wt.grad, rtol=1e-12, atol=1e-12)
    wt2 = r(4, 3, 3, 3)
    assert_close(F.conv_transpose2d(t(x), t(wt2), stride=2, padding=1), ref_conv_transpose(x, wt2, None, 2, 1),
                 rtol=1e-10, atol=1e-10)


def test_empty_batch():
    x, w = t(np.zeros((0, 3, 5, 5)), True), t(r(4, 3, 3, 3), True)
    y = F.conv2d(x, w, padding=1)
    assert tuple(y.shape) == (0, 4, 5, 5)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 5, 5) and float(w.grad.abs().sum()) == 0
    assert tuple(F.conv_transpose2d(t(np.zeros((0, 4, 3, 3))), t(r(4, 2, 3, 3)), stride=2).shape) == (0, 2, 7, 7)


# ---- conv_transpose ----------------------------------------------------------------------------

CT_GRID = [(1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (2, 0, 1, 2, 2), ((3, 2), (1, 0), (2, 1), 1, 1), (2, 1, 0, (2, 1), 4),
           (1, 2, 0, 2, 2), (3, 1, 2, 1, 1)]


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", CT_GRID)
def test_conv_transpose2d_matches_loops(stride, padding, output_padding, dilation, groups):
    x, w, b = r(2, 4, 5, 4), r(4, 2, 3, 3), r(2 * groups)
    y = F.conv_transpose2d(t(x), t(w), t(b), stride, padding, output_padding, groups, dilation)
    assert_close(y, ref_conv_transpose(x, w, b, stride, padding, output_padding, groups, dilation), rtol=1e-10,
                 atol=1e-10)


def test_conv_transpose1d_3d_match_loops():
    x, w, b = r(2, 4, 7), r(4, 3, 4), r(3)
    assert_close(F.conv_transpose1d(t(x), t(w), t(b), stride=3, padding=1, output_padding=2),
                 ref_conv_transpose(x, w, b, 3, 1, 2), rtol=1e-10, atol=1e-10)
    x, w = r(1, 2, 3, 4, 3), r(2, 3, 2, 2, 2)
    assert_close(F.conv_transpose3d(t(x), t(w), stride=2, padding=1, output_padding=1),
                 ref_conv_transpose(x, w, None, 2, 1, 1), rtol=1e-10, atol=1e-10)


def test_conv_transpose_is_the_input_gradient_of_conv():
    x, w, gy = r(2, 4, 9, 8), r(6, 2, 3, 3), None
    xt = t(x, True)
    y = F.conv2d(xt, t(w), stride=2, padding=1, groups=2)
    gy = r(*y.shape)
    y.backward(t(gy))
    ct = F.conv_transpose2d(t(gy), t(w), stride=2, padding=1, output_padding=(0, 1), groups=2)
    assert_close(xt.grad, ct, rtol=1e-12, atol=1e-12)


# The input gradient (conv_transpose) runs one of two ways: for stride 1 a convolution with the
# flipped kernel, or one matmul and col2im's strided adds (any stride); _flip_pays picks by size.
# Both are forced here over the whole grid, plus paddings wider than the kernel (y is cropped).
CT_STRIDE1 = [(1, 1, 0, 1, 2), (1, 3, 0, 1, 1), (1, (0, 2), 0, (1, 2), 1), (1, (3, 1), 0, 1, 4)]


@pytest.mark.parametrize("flip", [True, False], ids=["flipped", "columns"])
@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", CT_GRID + CT_STRIDE1)
def test_conv_transpose_strategies_match_loops(monkeypatch, flip, stride, padding, output_padding, dilation, groups):
    from rtx.nn._functional import conv as C
    monkeypatch.setattr(C, "_flip_pays", lambda *a: flip)
    x, w, b = r(2, 4, 6, 7), r(4, 2, 3, 3), r(2 * groups)
    y = F.conv_transpose2d(t(x), t(w), t(b), stride, padding, output_padding, groups, dilation)
    assert_close(y, ref_conv_transpose(x, w, b, stride, padding, output_padding, groups, dilation), rtol=1e-10,
                 atol=1e-10)


@pytest.mark.parametrize("flip", [True, False], ids=["flipped", "columns"])
@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 1, 1, 1), (1, 0, 2, 2), (1, (2, 0), (1, 2), 1),
                                                            (2, 1, 1, 1), ((2, 3), (1, 2), (2, 1), 2)])
def test_conv_input_gradient_strategies_match_loops(monkeypatch, flip, stride, padding, dilation, groups):
    # x.grad of conv2d is the adjoint applied to the output gradient: the loop reference scatters
    # gy through w (ref_conv_transpose, with the output_padding that restores x's size).
    from rtx.nn._functional import conv as C
    monkeypatch.setattr(C, "_flip_pays", lambda *a: flip)
    x, w = r(3, 4, 9, 8), r(6, 4 // groups, 3, 2)
    xt, wt = t(x, True), t(w, True)
    y = F.conv2d(xt, wt, stride=stride, padding=padding, dilation=dilation, groups=groups)
    gy = r(*y.shape)
    y.backward(t(gy))
    tup = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    s, p, d = tup(stride), tup(padding), tup(dilation)
    op = [n - ((m - 1) * si - 2 * pi + di * (k - 1) + 1)
          for n, m, si, pi, di, k in zip(x.shape[2:], gy.shape[2:], s, p, d, w.shape[2:])]
    assert_close(xt.grad, ref_conv_transpose(gy, w, None, s, p, op, groups, d), rtol=1e-10, atol=1e-10)
    assert_close(wt.grad, _ref_weight_grad(x, gy, w.shape, s, p, d, groups), rtol=1e-10, atol=1e-10)


def _ref_weight_grad(x, gy, wshape, s, p, d, groups):
    """dw[o, c, k] = sum_{n, q} gy[n, o, q] * xpad[n, g*Cg + c, q*s + k*d], by loops."""
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pi, pi) for pi in p])
    O, Cg = wshape[:2]
    og = O // groups
    dw = np.zeros(wshape)
    for o, c, i, j in itertools.product(range(O), range(Cg), range(wshape[2]), range(wshape[3])):
        g = o // og
        win = xp[:, g * Cg + c, i * d[0]:, j * d[1]:][:, ::s[0], ::s[1]][:, :gy.shape[2], :gy.shape[3]]
        dw[o, c, i, j] = np.sum(gy[:, o] * win)
    return dw


@pytest.mark.parametrize("shape,stride,padding,chunk_bytes", [((3, 16, 3, 3), 1, 1, None), ((3, 16, 5, 4), 2, 1, 2_000),
                                                              ((5, 3, 9, 8), 1, 0, 2_000)],
                         ids=["split-weights", "chunk-workers-s2", "chunk-workers"])
def test_threads_split_weights_or_batch_same_values(monkeypatch, shape, stride, padding, chunk_bytes):
    # On the CPU with several BLAS threads, thin columns (few pixels, many weights) make the
    # threads split the weights' rows; otherwise (here: tiny chunks) they take batch chunks, the
    # calling thread taking its share. Forced to 3 threads here.
    from rtx.nn._functional import conv as C
    from rtx.runtime import threads
    if not threads._libs():
        pytest.skip("threadpoolctl found no BLAS to limit")
    monkeypatch.setattr(C, "_workers", lambda arr: 3)
    monkeypatch.setattr(C, "_flip_pays", lambda *a: False)
    if chunk_bytes:
        monkeypatch.setitem(C._CHUNK_BYTES, "cpu", chunk_bytes)
    x, w = r(*shape), r(7, shape[1], 3, 3)
    xt, wt = t(x, True), t(w, True)
    y = F.conv2d(xt, wt, stride=stride, padding=padding)
    assert_close(y, ref_conv(x, w, None, stride, padding), rtol=1e-10, atol=1e-10)
    gy = r(*y.shape)
    y.backward(t(gy))
    s, p = (stride, stride), (padding, padding)
    op = [n - ((m - 1) * stride - 2 * padding + 3) for n, m in zip(x.shape[2:], gy.shape[2:])]
    assert_close(xt.grad, ref_conv_transpose(gy, w, None, s, p, op), rtol=1e-10, atol=1e-10)
    assert_close(wt.grad, _ref_weight_grad(x, gy, w.shape, s, p, (1, 1), 1), rtol=1e-10, atol=1e-10)


def test_small_gemms_outside_the_pool_run_on_one_blas_thread():
    # rtx.nn.Linear's GEMMs run inside one_blas_thread: single-threaded BLAS when small (so that
    # OpenBLAS's threads are not woken to spin next to the convolutions' chunk threads), the
    # configured threads when big, and the setting is restored afterwards.
    from rtx.nn._functional import linear as L
    from rtx.runtime import threads as T
    if not T._libs():
        pytest.skip("threadpoolctl found no BLAS to limit")

    def blas_threads():  # what BLAS runs now (get_num_threads answers the configured count)
        return max(lib.num_threads for lib in T._libs())

    with T.limit_threads(2):
        if blas_threads() != 2:
            pytest.skip("this BLAS cannot run 2 threads")
        with L.one_blas_thread(np.zeros(1), 8 * 512 * 1000):
            assert blas_threads() == 1 and T.get_num_threads() == 2
            x, w = r(8, 512), r(1000, 512)
            xt, wt = t(x, True), t(w, True)
            y = F.linear(xt, wt)
        assert blas_threads() == 2
        with L.one_blas_thread(np.zeros(1), L._SMALL_GEMM):
            assert blas_threads() == 2
        # tiny GEMMs run on one OpenBLAS thread anyway: no (15 us) switch of the thread count
        assert isinstance(L.one_blas_thread(np.zeros(1), L._BLAS_SINGLE_THREADED_BELOW - 1), contextlib.nullcontext)
        y.backward(t(np.ones(y.shape)))
        assert blas_threads() == 2
    assert_close(y, x @ w.T, rtol=1e-12, atol=1e-12)
    assert_close(wt.grad, np.ones((1000, 8)) @ x, rtol=1e-12, atol=1e-12)


def test_linear_runs_its_gemms_in_one_blas_thread(monkeypatch):
    from rtx.nn._functional import linear as L
    seen = []
    monkeypatch.setattr(L, "one_blas_thread", lambda arr, macs: seen.append(macs) or contextlib.nullcontext())
    xt = t(r(4, 3, 5), True)
    F.linear(xt, t(r(6, 5), True)).sum().backward()
    assert seen == [4 * 3 * 5 * 6] * 2      # forward, backward


def test_pointwise_conv_input_gradient_matches_loops():
    # 1x1, stride 1, >= 64 pixels: the input gradient is one matmul per sample (no columns).
    x, w = r(2, 5, 8, 9), r(3, 5, 1, 1)
    xt = t(x, True)
    y = F.conv2d(xt, t(w))
    gy = r(*y.shape)
    y.backward(t(gy))
    assert_close(xt.grad, np.einsum("nohw,oc->nchw", gy, w[:, :, 0, 0]), rtol=1e-12, atol=1e-12)
    assert_close(F.conv_transpose2d(t(gy), t(w)), ref_conv_transpose(gy, w), rtol=1e-10, atol=1e-10)


# ---- gradients by finite differences, double backward ------------------------------------------

GRAD_CASES = [
    OpCase("conv2d s2 p1 g2", lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=2), None,
           [r(1, 4, 5, 4), r(4, 2, 2, 3), r(4)]),
    OpCase("conv2d same d2", lambda x, w: F.conv2d(x, w, padding="same", dilation=2), None,
           [r(2, 2, 5, 5), r(3, 2, 2, 2)]),
    OpCase("conv1d s2 d2", lambda x, w, b: F.conv1d(x, w, b, stride=2, dilation=2, padding=2), None,
           [r(2, 2, 7), r(3, 2, 3), r(3)]),
    OpCase("conv3d", lambda x, w: F.conv3d(x, w, stride=(1, 2, 1), padding=1), None,
           [r(1, 2, 3, 4, 3), r(2, 2, 2, 2, 2)]),
    OpCase("conv_transpose2d", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1,
                                                                  groups=2), None,
           [r(1, 4, 3, 3), r(4, 1, 3, 2), r(2)]),
    OpCase("conv_transpose1d d2", lambda x, w: F.conv_transpose1d(x, w, stride=3, dilation=2, output_padding=1),
           None, [r(2, 2, 4), r(2, 3, 2)]),
    OpCase("conv2d 1x1", lambda x, w, b: F.conv2d(x, w, b), None, [r(2, 3, 3, 2), r(2, 3, 1, 1), r(2)]),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", GRAD_CASES, ids=repr)
def test_conv_gradients_and_double_backward(case, device):
    check_case(case, device)


def test_conv_gradient_of_weight_only_and_input_only():
    x, w = t(r(2, 3, 5, 5)), t(r(4, 3, 3, 3), True)
    assert gradcheck(lambda w: F.conv2d(x, w, stride=2), [w])
    x, w = t(r(2, 3, 5, 5), True), t(r(4, 3, 3, 3))
    assert gradcheck(lambda x: F.conv2d(x, w, padding=1), [x])
    assert gradgradcheck(lambda x: F.conv2d(x, w, padding=1) ** 2, [x])


# ---- layers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls,nd", [(nn.Conv1d, 1), (nn.Conv2d, 2), (nn.Conv3d, 3)])
def test_conv_layer_parameters_and_init(cls, nd):
    m = cls(6, 8, 3, groups=2)
    assert list(m.state_dict().keys()) == ["weight", "bias"]
    assert tuple(m.weight.shape) == (8, 3) + (3,) * nd and tuple(m.bias.shape) == (8,)
    assert m.kernel_size == (3,) * nd and m.stride == (1,) * nd and m.padding == (0,) * nd
    bound = 1 / math.sqrt(3 * 3 ** nd)  # kaiming_uniform(a=sqrt(5)) and the bias both give U(-1/sqrt(fan_in), +)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.8 * bound
    assert list(cls(6, 8, 3, bias=False).state_dict().keys()) == ["weight"]


def test_conv_transpose_layer_parameters():
    m = nn.ConvTranspose2d(4, 6, (3, 2), stride=2, groups=2)
    assert list(m.state_dict().keys()) == ["weight", "bias"]
    assert tuple(m.weight.shape) == (4, 3, 3, 2) and tuple(m.bias.shape) == (6,)
    y = m(rtx.randn(2, 4, 5, 5))
    assert tuple(y.shape) == (2, 6, 11, 10)
    assert tuple(m(rtx.randn(2, 4, 5, 5), output_size=(12, 11)).shape) == (2, 6, 12, 11)
    with pytest.raises(ValueError, match="requested an output size of"):
        m(rtx.randn(2, 4, 5, 5), output_size=(14, 11))
    assert tuple(nn.ConvTranspose1d(2, 3, 3)(rtx.randn(1, 2, 4)).shape) == (1, 3, 6)


def test_conv_layer_forward_matches_functional():
    m = nn.Conv2d(3, 5, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2)).double()
    x = r(2, 3, 8, 7)
    ref = ref_conv(x, m.weight.detach().numpy(), m.bias.detach().numpy(), (2, 1), 1, (1, 2))
    assert_close(m(t(x)), ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
def test_conv_padding_modes(mode, np_mode):
    m = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode).double()
    x = r(2, 2, 5, 6)
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (2, 2)], mode=np_mode)
    assert_close(m(t(x)), ref_conv(xp, m.weight.detach().numpy(), m.bias.detach().numpy()), rtol=1e-10,
                 atol=1e-10)
    same = nn.Conv1d(2, 2, 4, padding="same", padding_mode=mode).double()
    x1 = r(1, 2, 6)
    assert_close(same(t(x1)), ref_conv(np.pad(x1, [(0, 0), (0, 0), (1, 2)], mode=np_mode),
                                       same.weight.detach().numpy(), same.bias.detach().numpy()), rtol=1e-10,
                 atol=1e-10)


def test_conv_layer_repr():
    assert repr(nn.Conv2d(3, 8, 3)) == "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))"
    assert repr(nn.Conv2d(3, 8, 3, 2, 1, bias=False, padding_mode="reflect")) == (
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False, padding_mode=reflect)")
    assert repr(nn.ConvTranspose2d(4, 8, 3, stride=2, output_padding=1, groups=2)) == (
        "ConvTranspose2d(4, 8, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1), groups=2)")


@pytest.mark.parametrize("h,k,s,p,d", [(7, 3, 1, 0, 1), (7, 3, 2, 1, 1), (8, 2, 3, 2, 2), (5, 5, 1, 2, 1),
                                       (9, 3, 4, 0, 3)])
def test_output_shape_formula(h, k, s, p, d):
    y = F.conv2d(rtx.randn(1, 1, h, h + 1), rtx.randn(1, 1, k, k), stride=s, padding=p, dilation=d)
    expect = [(n + 2 * p - d * (k - 1) - 1) // s + 1 for n in (h, h + 1)]
    assert list(y.shape[2:]) == expect
    ho = F.conv_transpose2d(rtx.randn(1, 1, h, h), rtx.randn(1, 1, k, k), stride=s, padding=0, dilation=d)
    assert ho.shape[2] == (h - 1) * s + d * (k - 1) + 1


# ---- errors ------------------------------------------------------------------------------------


def test_conv_errors():
    with pytest.raises(RuntimeError) as e:
        F.conv2d(rtx.randn(2, 4, 5, 5), rtx.randn(8, 3, 3, 3))
    assert str(e.value) == ("Given groups=1, weight of size [8, 3, 3, 3], expected input[2, 4, 5, 5] to have 3 "
                            "channels, but got 4 channels instead")
    with pytest.raises(RuntimeError, match=r"Calculated padded input size per channel: \(2 x 2\). Kernel size: "
                                           r"\(3 x 3\). Kernel size can't be greater than actual input size"):
        F.conv2d(rtx.randn(2, 3, 2, 2), rtx.randn(8, 3, 3, 3))
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got "
                                           r"input of size: \[2, 3\]"):
        F.conv2d(rtx.randn(2, 3), rtx.randn(8, 3, 3, 3))
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv2d(rtx.randn(1, 3, 5, 5), rtx.randn(8, 3, 3, 3), stride=2, padding="same")
    with pytest.raises(RuntimeError, match="Invalid padding string: 'full'"):
        F.conv2d(rtx.randn(1, 3, 5, 5), rtx.randn(8, 3, 3, 3), padding="full")
    with pytest.raises(RuntimeError, match="expected weight to be divisible by 2 at dimension 0"):
        F.conv2d(rtx.randn(1, 4, 5, 5), rtx.randn(3, 2, 3, 3), groups=2)
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 8 elements, but got bias of size "
                                           r"\[4\]"):
        F.conv2d(rtx.randn(1, 3, 5, 5), rtx.randn(8, 3, 3, 3), rtx.randn(4))
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        F.conv2d(rtx.randn(1, 3, 5, 5), rtx.randn(8, 3, 3, 3), stride=0)
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        F.conv2d(rtx.randn(1, 3, 5, 5, dtype=rtx.float64), rtx.randn(8, 3, 3, 3))
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size \[4, 8, 3, 3\], expected "
                                           r"input\[2, 3, 5, 5\] to have 4 channels, but got 3 channels instead"):
        F.conv_transpose2d(rtx.randn(2, 3, 5, 5), rtx.randn(4, 8, 3, 3))
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(rtx.randn(1, 4, 5, 5), rtx.randn(4, 8, 3, 3), stride=2, output_padding=2)
    with pytest.raises(RuntimeError, match="expected stride to be a single integer value or a list of 2 values"):
        F.conv2d(rtx.randn(1, 3, 5, 5), rtx.randn(8, 3, 3, 3), stride=(1, 1, 1))
    with pytest.raises(RuntimeError, match="not implemented for 'rtx.int64'"):
        F.conv2d(rtx.ones(1, 3, 5, 5, dtype=rtx.int64), rtx.ones(8, 3, 3, 3, dtype=rtx.int64))


def test_conv_layer_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(3, 4, 3, padding="full")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect")
