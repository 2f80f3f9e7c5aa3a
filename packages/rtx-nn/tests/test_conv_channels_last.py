"""The CPU's channels-last column path of the convolutions (rtx.nn._functional.conv, "channels-last
columns"): values against a NumPy reference (one einsum per kernel offset) over stride, padding,
dilation and 1-3 spatial dims, pieces cut by samples and by rows, gradients and double backward by
finite differences in float64, and the cases that keep the other path."""
import itertools

import numpy as np
import pytest

import rtx
import rtx.nn.functional as F
from rtx.autograd import gradcheck, gradgradcheck
from rtx.nn._functional import conv as C
from rtx.testing import assert_close

rng = np.random.default_rng(1)


def r(*shape):
    return rng.standard_normal(shape)


def ref_conv(x, w, b, stride, pads, dilation):
    """y[n, o, p] = b[o] + sum_{c, k} w[o, c, k] x_padded[n, c, p*s + k*d], one einsum per offset k."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    k = w.shape[2:]
    out = [(xp.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for off in itertools.product(*(range(kk) for kk in k)):
        sl = tuple(slice(off[i] * dilation[i], off[i] * dilation[i] + (out[i] - 1) * stride[i] + 1, stride[i])
                   for i in range(nd))
        y += np.einsum("nc...,oc->no...", xp[(slice(None), slice(None)) + sl], w[(slice(None), slice(None)) + off])
    return y if b is None else y + b.reshape((1, -1) + (1,) * nd)


def ref_grads(x, w, gy, stride, pads, dilation):
    """The adjoints of ref_conv, offset by offset: dw[:, :, k] = sum gy * x-window(k), and each
    window's share of w^T gy scattered back into the padded input, then cropped."""
    nd = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    out = gy.shape[2:]
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for off in itertools.product(*(range(kk) for kk in w.shape[2:])):
        sl = (slice(None), slice(None)) + tuple(
            slice(off[i] * dilation[i], off[i] * dilation[i] + (out[i] - 1) * stride[i] + 1, stride[i])
            for i in range(nd))
        dw[(slice(None), slice(None)) + off] = np.einsum("ncl,nol->oc", xp[sl].reshape(x.shape[0], x.shape[1], -1),
                                                          gy.reshape(gy.shape[0], gy.shape[1], -1))
        dxp[sl] += np.einsum("no...,oc->nc...", gy, w[(slice(None), slice(None)) + off])
    crop = (slice(None), slice(None)) + tuple(slice(lo, lo + n) for (lo, _), n in zip(pads, x.shape[2:]))
    return dxp[crop], dw


@pytest.fixture
def paths(monkeypatch):
    """Every eligible convolution takes the channels-last path (any channel count); returns the list
    of ("fwd" | "dw") calls of that path."""
    seen = []
    monkeypatch.setattr(C, "_CL_MIN_CHANNELS", 1)
    for name, tag in (("_cl_conv", "fwd"), ("_cl_weight_grad", "dw")):
        real = getattr(C, name)
        monkeypatch.setattr(C, name, lambda *a, _real=real, _tag=tag: seen.append(_tag) or _real(*a))
    return seen


CASES = [  # x shape, w shape, stride, padding (lo, hi per dim), dilation
    ((3, 4, 7, 6), (5, 4, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1)),
    ((2, 3, 8, 9), (4, 3, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 1)),
    ((2, 3, 9, 9), (4, 3, 3, 3), (1, 2), ((2, 2), (1, 0)), (2, 1)),
    ((2, 2, 6, 7), (3, 2, 2, 3), (3, 2), ((0, 0), (0, 0)), (2, 2)),
    ((2, 3, 11), (4, 3, 3), (2,), ((1, 1),), (2,)),
    ((1, 2, 4, 5, 4), (3, 2, 2, 3, 2), (1, 2, 1), ((1, 1), (0, 1), (1, 0)), (1, 1, 2)),
]


@pytest.mark.parametrize("chunk", [None, 1, 30_000], ids=["default", "rows", "samples"])
@pytest.mark.parametrize("xs,ws,stride,pads,dil", CASES)
def test_values_and_gradients_match_reference(paths, monkeypatch, xs, ws, stride, pads, dil, chunk):
    if chunk:   # pieces of one row, or of a few rows, instead of whole samples
        monkeypatch.setattr(C, "_CL_CHUNK_BYTES", chunk)
    x, w, b = r(*xs), r(*ws), r(ws[0])
    y_ref = ref_conv(x, w, b, stride, pads, dil)
    gy = r(*y_ref.shape)
    xt, wt, bt = (rtx.tensor(a, requires_grad=True) for a in (x, w, b))
    geom = C._Geom(stride, pads, dil, 1)
    y = C.Conv.apply(xt, wt, bt, geom=geom)
    assert_close(y, y_ref, rtol=1e-10, atol=1e-10)
    y.backward(rtx.tensor(gy))
    dx, dw = ref_grads(x, w, gy, stride, pads, dil)
    assert_close(xt.grad, dx, rtol=1e-10, atol=1e-10)
    assert_close(wt.grad, dw, rtol=1e-10, atol=1e-10)
    assert "fwd" in paths and "dw" in paths


def test_gradcheck_and_double_backward_float64(paths):
    x, w, b = (rtx.tensor(a, requires_grad=True) for a in (r(2, 3, 5, 4), r(4, 3, 3, 2), r(4)))
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2)), [x, w, b])
    assert gradgradcheck(lambda x, w: F.conv2d(x, w, padding=(1, 0)) ** 2, [x, w])
    assert gradcheck(lambda x, w: F.conv1d(x, w, padding=2, dilation=2), [rtx.tensor(r(2, 3, 7), requires_grad=True),
                                                                        rtx.tensor(r(2, 3, 3), requires_grad=True)])
    assert set(paths) == {"fwd", "dw"}


def test_float32_matches_float64_reference_at_unet_size():
    # the default threshold: 32 channels take this path; float32 rounding only
    x, w, b = r(4, 32, 8, 8), r(16, 32, 3, 3), r(16)
    y = F.conv2d(rtx.tensor(x.astype(np.float32)), rtx.tensor(w.astype(np.float32)), rtx.tensor(b.astype(np.float32)),
                 padding=1)
    assert y.dtype == rtx.float32
    assert_close(y, ref_conv(x, w, b, (1, 1), ((1, 1), (1, 1)), (1, 1)), rtol=1e-4, atol=1e-4)
    assert C._channels_last_pays(x, 32, 9, 1, w.size)


@pytest.mark.parametrize("what", ["groups", "pointwise", "few channels", "big weights"])
def test_other_cases_keep_the_other_path(monkeypatch, what):
    seen = []
    for name in ("_cl_conv", "_cl_weight_grad"):
        real = getattr(C, name)
        monkeypatch.setattr(C, name, lambda *a, _real=real: seen.append(1) or _real(*a))
    x, w, groups = r(2, 32, 6, 6), r(8, 32, 3, 3), 1
    if what == "groups":
        w, groups = r(8, 16, 3, 3), 2
    elif what == "pointwise":
        w = r(8, 32, 1, 1)
    elif what == "few channels":
        x, w = r(2, 3, 6, 6), r(8, 3, 3, 3)
    else:
        monkeypatch.setattr(C, "_CL_MAX_WEIGHT_BYTES", w.size * 8 - 1)
    xt, wt = rtx.tensor(x, requires_grad=True), rtx.tensor(w, requires_grad=True)
    y = F.conv2d(xt, wt, padding=1, groups=groups)
    y.sum().backward()
    assert seen == []
    assert wt.grad.shape == wt.shape


def test_tuning_cache_reaches_this_path(monkeypatch, tmp_path):
    # rtx automeasure tune's cache (chunk_bytes, workers), keyed by the layer, is read by all three kernels here too
    from rtx.runtime import tuning
    monkeypatch.setenv("RTX_TUNING_CACHE", str(tmp_path / "tuning.json"))
    tuning.clear_memo()
    try:
        # 32 -> 32 channels: the input gradient's flipped-kernel convolution asks with the same key (a layer
        # whose channel counts differ gets its input gradient tuned under the flipped convolution's own key)
        x, w = r(3, 32, 5, 5), r(32, 32, 3, 3)
        tuning.store("conv2d", (3, 32, 5, 5, 32, 3, 3, 1, 1), "float64", "cpu", {"chunk_bytes": 123, "workers": 2})
        limits, workers = [], []
        real_units, real_run = C._cl_units, C._run_chunks
        monkeypatch.setattr(C, "_cl_units", lambda *a: limits.append(a[0]) or real_units(*a))
        monkeypatch.setattr(C, "_run_chunks",
                            lambda arr, chunks, n, fn: workers.append(n) or real_run(arr, chunks, n, fn))
        xt, wt = rtx.tensor(x, requires_grad=True), rtx.tensor(w, requires_grad=True)
        y = F.conv2d(xt, wt, padding=1)
        y.backward(rtx.ones(*y.shape, dtype=rtx.float64))
        assert limits == [123, 123, 123] and workers == [2, 2, 2]      # forward, input gradient, weight gradient
        dx, dw = ref_grads(x, w, np.ones(y.shape), (1, 1), ((1, 1), (1, 1)), (1, 1))
        assert_close(xt.grad, dx, rtol=1e-10, atol=1e-10)
        assert_close(wt.grad, dw, rtol=1e-10, atol=1e-10)
    finally:
        tuning.clear_memo()


def test_pointwise_forward_is_one_batched_matmul(monkeypatch):
    # 1x1, stride 1, no padding, >= _POINTWISE_MIN_L pixels: y[n] = w @ x[n] (+ b), no columns
    monkeypatch.setattr(C, "_batch_columns", None)   # the columns way would fail
    monkeypatch.setattr(C, "_im2col", None)
    x, w, b = r(3, 5, 8, 9), r(4, 5, 1, 1), r(4)
    y = F.conv2d(rtx.tensor(x), rtx.tensor(w), rtx.tensor(b))
    assert_close(y, ref_conv(x, w, b, (1, 1), ((0, 0), (0, 0)), (1, 1)), rtol=1e-12, atol=1e-12)
    y32 = F.conv2d(rtx.tensor(x.astype(np.float32)), rtx.tensor(w.astype(np.float32)))
    assert y32.dtype == rtx.float32
    assert_close(y32, ref_conv(x, w, None, (1, 1), ((0, 0), (0, 0)), (1, 1)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("chunk", [1, 30_000], ids=["rows", "samples"])
def test_several_workers_same_values(paths, monkeypatch, chunk):
    # each worker takes a contiguous share of the pieces (own buffers, own weight-gradient sum)
    monkeypatch.setattr(C, "_workers", lambda arr: 3)
    monkeypatch.setattr(C, "_CL_CHUNK_BYTES", chunk)
    xs, ws, stride, pads, dil = CASES[0]
    x, w, b = r(5, *xs[1:]), r(*ws), r(ws[0])
    y_ref = ref_conv(x, w, b, stride, pads, dil)
    gy = r(*y_ref.shape)
    xt, wt, bt = (rtx.tensor(a, requires_grad=True) for a in (x, w, b))
    y = C.Conv.apply(xt, wt, bt, geom=C._Geom(stride, pads, dil, 1))
    assert_close(y, y_ref, rtol=1e-10, atol=1e-10)
    y.backward(rtx.tensor(gy))
    dx, dw = ref_grads(x, w, gy, stride, pads, dil)
    assert_close(xt.grad, dx, rtol=1e-10, atol=1e-10)
    assert_close(wt.grad, dw, rtol=1e-10, atol=1e-10)


def test_empty_batch(paths):
    x, w = rtx.tensor(np.zeros((0, 3, 5, 5)), requires_grad=True), rtx.tensor(r(4, 3, 3, 3), requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    assert y.shape == (0, 4, 5, 5)
    y.sum().backward()
    assert x.grad.shape == x.shape and float(w.grad.abs().sum()) == 0.0
    assert "fwd" in paths and "dw" in paths
