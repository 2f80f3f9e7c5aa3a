"""interpolate/Upsample, pad and the padding layers, unfold/fold, pixel_shuffle/unshuffle,
affine_grid/grid_sample: values against per-pixel NumPy loops (and a few values printed by
PyTorch 2.13), gradients and double backward by finite differences, layers and errors."""
import itertools
import math

import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.testing import OpCase, assert_close, check_case, devices

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape)


def t(a, grad=False):
    return rtx.tensor(a, requires_grad=grad)


# ---- interpolate: per-pixel references ---------------------------------------------------------


def src_index(dst, in_n, out_n, align_corners, scale, cubic=False):
    """PyTorch's area_pixel_compute_source_index."""
    if align_corners:
        s = (in_n - 1) / (out_n - 1) if out_n > 1 else 0.0
        return s * dst
    s = 1.0 / scale if scale else in_n / out_n
    src = s * (dst + 0.5) - 0.5
    return src if cubic else max(src, 0.0)


def ref_nearest(x, out, scales=(None, None), exact=False):
    H, W = x.shape[2:]
    y = np.zeros(x.shape[:2] + tuple(out))
    for i, j in itertools.product(range(out[0]), range(out[1])):
        idx = []
        for dst, n, o, s in ((i, H, out[0], scales[0]), (j, W, out[1], scales[1])):
            sc = np.float32(1.0 / s) if s else np.float32(n) / np.float32(o)
            idx.append(min(int(np.floor(np.float32(dst + (0.5 if exact else 0)) * sc)), n - 1))
        y[:, :, i, j] = x[:, :, idx[0], idx[1]]
    return y


def ref_bilinear(x, out, align_corners, scales=(None, None)):
    """The 2-D formula: four corners weighted by the products of the 1-D distances."""
    H, W = x.shape[2:]
    y = np.zeros(x.shape[:2] + tuple(out))
    for i, j in itertools.product(range(out[0]), range(out[1])):
        sy = src_index(i, H, out[0], align_corners, scales[0])
        sx = src_index(j, W, out[1], align_corners, scales[1])
        y0, x0 = min(int(sy), H - 1), min(int(sx), W - 1)
        y1, x1 = min(y0 + 1, H - 1), min(x0 + 1, W - 1)
        ly, lx = sy - y0, sx - x0
        y[:, :, i, j] = ((1 - ly) * (1 - lx) * x[:, :, y0, x0] + (1 - ly) * lx * x[:, :, y0, x1] +
                         ly * (1 - lx) * x[:, :, y1, x0] + ly * lx * x[:, :, y1, x1])
    return y


def cubic_weights(tt, A=-0.75):
    def c1(v):
        return ((A + 2) * v - (A + 3)) * v * v + 1

    def c2(v):
        return ((A * v - 5 * A) * v + 8 * A) * v - 4 * A
    return [c2(tt + 1), c1(tt), c1(1 - tt), c2(2 - tt)]


def ref_bicubic(x, out, align_corners):
    """Sixteen taps, indices clamped to the border."""
    H, W = x.shape[2:]
    y = np.zeros(x.shape[:2] + tuple(out))
    for i, j in itertools.product(range(out[0]), range(out[1])):
        sy = src_index(i, H, out[0], align_corners, None, cubic=True)
        sx = src_index(j, W, out[1], align_corners, None, cubic=True)
        fy, fx = math.floor(sy), math.floor(sx)
        wy, wx = cubic_weights(sy - fy), cubic_weights(sx - fx)
        for a, b in itertools.product(range(4), range(4)):
            yy = min(max(fy - 1 + a, 0), H - 1)
            xx = min(max(fx - 1 + b, 0), W - 1)
            y[:, :, i, j] += wy[a] * wx[b] * x[:, :, yy, xx]
    return y


def ref_area(x, out):
    H, W = x.shape[2:]
    y = np.zeros(x.shape[:2] + tuple(out))
    for i, j in itertools.product(range(out[0]), range(out[1])):
        h0, h1 = i * H // out[0], -(-(i + 1) * H // out[0])
        w0, w1 = j * W // out[1], -(-(j + 1) * W // out[1])
        y[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return y


X = r(2, 3, 5, 6)


@pytest.mark.parametrize("kw,ref", [
    (dict(size=(9, 4)), lambda: ref_nearest(X, (9, 4))),
    (dict(scale_factor=2), lambda: ref_nearest(X, (10, 12), (2.0, 2.0))),
    (dict(scale_factor=(1.7, 0.6)), lambda: ref_nearest(X, (8, 3), (1.7, 0.6))),
    (dict(size=(7, 11), mode="nearest-exact"), lambda: ref_nearest(X, (7, 11), exact=True)),
    (dict(scale_factor=1.5, mode="nearest-exact"), lambda: ref_nearest(X, (7, 9), (1.5, 1.5), exact=True)),
    (dict(size=(9, 4), mode="bilinear"), lambda: ref_bilinear(X, (9, 4), False)),
    (dict(size=(9, 4), mode="bilinear", align_corners=True), lambda: ref_bilinear(X, (9, 4), True)),
    (dict(size=(1, 1), mode="bilinear", align_corners=True), lambda: ref_bilinear(X, (1, 1), True)),
    (dict(scale_factor=(1.7, 2.3), mode="bilinear"), lambda: ref_bilinear(X, (8, 13), False, (1.7, 2.3))),
    (dict(scale_factor=(1.7, 2.3), mode="bilinear", recompute_scale_factor=True),
     lambda: ref_bilinear(X, (8, 13), False)),
    (dict(scale_factor=0.5, mode="bilinear"), lambda: ref_bilinear(X, (2, 3), False, (0.5, 0.5))),
    (dict(size=(8, 3), mode="bicubic"), lambda: ref_bicubic(X, (8, 3), False)),
    (dict(size=(8, 3), mode="bicubic", align_corners=True), lambda: ref_bicubic(X, (8, 3), True)),
    (dict(size=(2, 4), mode="area"), lambda: ref_area(X, (2, 4))),
    (dict(size=(3, 3), mode="area"), lambda: ref_area(X, (3, 3))),
], ids=lambda v: str(v) if isinstance(v, dict) else "")
def test_interpolate_2d_matches_per_pixel_loops(kw, ref):
    assert_close(F.interpolate(t(X), **kw), ref(), rtol=1e-10, atol=1e-10)


def test_interpolate_large_axes_use_the_gather_path():
    # Axes longer than the dense-matrix cut-off run through take/scatter: same values, same gradient.
    x = r(1, 2, 150, 7)
    assert_close(F.interpolate(t(x), size=(301, 9), mode="bilinear"), ref_bilinear(x, (301, 9), False), rtol=1e-10,
                 atol=1e-10)
    assert_close(F.interpolate(t(x), size=(230, 9)), ref_nearest(x, (230, 9)), rtol=0, atol=0)
    xt = t(r(1, 1, 300, 2), True)  # 300 * 701 is past the dense adjoint's cut-off too
    y = F.interpolate(xt, size=(701, 2), mode="bicubic")
    g = r(*y.shape)
    y.backward(t(g))
    # the adjoint identity <A x, g> = <x, A^T g> pins the scatter-add gradient down
    assert_close((y * t(g)).sum(), (xt.detach() * xt.grad).sum(), rtol=1e-10, atol=1e-10)


XS = (np.arange(12.0) ** 2 / 10).reshape(1, 1, 3, 4)


@pytest.mark.parametrize("kw,expect", [
    (dict(size=(5, 3), mode="bilinear", align_corners=False),
     [[0.016667, 0.25, 0.816667], [0.71, 1.37, 2.363333], [1.75, 3.05, 4.683333], [4.71, 6.65, 8.923333],
      [6.683333, 9.05, 11.75]]),
    (dict(scale_factor=1.5, mode="bilinear", align_corners=True),
     [[0.0, 0.06, 0.16, 0.34, 0.6, 0.9], [1.066667, 1.446667, 1.866667, 2.366667, 2.946667, 3.566667],
      [3.2, 3.9, 4.64, 5.46, 6.36, 7.3], [6.4, 7.42, 8.48, 9.62, 10.84, 12.1]]),
    (dict(size=(4, 6), mode="bicubic", align_corners=False),
     [[-0.11854, -0.116296, -0.041439, 0.097819, 0.414343, 0.651309],
      [0.450623, 0.690149, 1.153237, 1.568768, 2.273523, 2.747772],
      [3.39469, 4.005164, 5.075177, 5.922609, 7.23429, 8.079485],
      [6.591977, 7.439734, 8.897978, 10.021683, 11.721594, 12.804073]]),
    (dict(size=(5, 7), mode="nearest"),
     [[0, 0, 0.1, 0.1, 0.4, 0.4, 0.9], [0, 0, 0.1, 0.1, 0.4, 0.4, 0.9], [1.6, 1.6, 2.5, 2.5, 3.6, 3.6, 4.9],
      [1.6, 1.6, 2.5, 2.5, 3.6, 3.6, 4.9], [6.4, 6.4, 8.1, 8.1, 10, 10, 12.1]]),
    (dict(scale_factor=1.7, mode="nearest-exact"),
     [[0, 0, 0.1, 0.4, 0.4, 0.9], [0, 0, 0.1, 0.4, 0.4, 0.9], [1.6, 1.6, 2.5, 3.6, 3.6, 4.9],
      [6.4, 6.4, 8.1, 10, 10, 12.1], [6.4, 6.4, 8.1, 10, 10, 12.1]]),
    (dict(size=(2, 3), mode="area"), [[1.05, 1.65, 2.45], [4.65, 6.05, 7.65]]),
    (dict(scale_factor=(0.7, 0.6), mode="nearest"), [[0, 0.1], [1.6, 2.5]]),
    (dict(scale_factor=(1.3, 0.8), mode="bilinear", align_corners=False),
     [[0.0125, 0.2125, 0.7125], [1.7125, 2.9125, 4.4125], [6.6125, 8.8125, 11.3125]]),
], ids=lambda v: str(v) if isinstance(v, dict) else "")
def test_interpolate_matches_values_printed_by_pytorch(kw, expect):
    assert_close(F.interpolate(t(XS), **kw)[0, 0], np.array(expect, dtype=float), rtol=0, atol=1e-6)


def test_interpolate_linear_and_trilinear():
    x1 = XS[0]
    assert_close(F.interpolate(t(x1), size=6, mode="linear")[0],
                 [[0.0, 0.05, 0.15, 0.35, 0.65, 0.9], [1.6, 2.05, 2.683333, 3.416667, 4.25, 4.9],
                  [6.4, 7.25, 8.416667, 9.683333, 11.05, 12.1]], rtol=0, atol=1e-6)
    x3 = r(1, 2, 3, 4, 2)
    y = F.interpolate(t(x3), size=(5, 6, 3), mode="trilinear", align_corners=True)
    # trilinear = bilinear over (D, H) then linear over W: check one slice pattern against loops
    step = ref_bilinear(x3.transpose(0, 1, 4, 2, 3).reshape(1, 4, 3, 4), (5, 6), True)
    step = step.reshape(1, 2, 2, 5, 6).transpose(0, 1, 3, 4, 2)
    wx = np.array([0.0, 0.5, 1.0])
    expect = step[..., :1] * (1 - wx) + step[..., 1:2] * wx
    assert_close(y, expect, rtol=1e-10, atol=1e-10)
    assert tuple(F.interpolate(t(x3), scale_factor=2).shape) == (1, 2, 6, 8, 4)


INTERP_GRAD = [
    OpCase("nearest", lambda x: F.interpolate(x, size=(5, 3)), None, [r(1, 2, 3, 4)]),
    OpCase("bilinear", lambda x: F.interpolate(x, size=(5, 3), mode="bilinear"), None, [r(1, 2, 3, 4)]),
    OpCase("bilinear ac", lambda x: F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=True), None,
           [r(1, 1, 3, 4)]),
    OpCase("bicubic", lambda x: F.interpolate(x, size=(4, 6), mode="bicubic"), None, [r(1, 1, 3, 4)]),
    OpCase("linear", lambda x: F.interpolate(x, size=7, mode="linear"), None, [r(2, 2, 4)]),
    OpCase("area", lambda x: F.interpolate(x, size=(2, 3), mode="area"), None, [r(1, 2, 5, 4)]),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", INTERP_GRAD, ids=repr)
def test_interpolate_gradients(case, device):
    check_case(case, device)


def test_upsample_layers():
    x = t(X)
    assert_close(nn.Upsample(scale_factor=2)(x), ref_nearest(X, (10, 12), (2.0, 2.0)), rtol=0, atol=0)
    assert_close(nn.UpsamplingBilinear2d(size=(9, 4))(x), ref_bilinear(X, (9, 4), True), rtol=1e-10, atol=1e-10)
    assert_close(nn.UpsamplingNearest2d(size=(9, 4))(x), ref_nearest(X, (9, 4)), rtol=0, atol=0)
    assert repr(nn.Upsample(scale_factor=2)) == "Upsample(scale_factor=2.0, mode='nearest')"
    assert repr(nn.Upsample(size=(3, 4), mode="bilinear")) == "Upsample(size=(3, 4), mode='bilinear')"
    assert repr(nn.UpsamplingBilinear2d(scale_factor=2)) == "UpsamplingBilinear2d(scale_factor=2.0, mode='bilinear')"


def test_interpolate_errors():
    x = rtx.randn(1, 1, 4, 4)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(x, size=3, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D input"):
        F.interpolate(x, size=3, mode="linear")
    with pytest.raises(NotImplementedError, match="Got 4D input, but trilinear mode needs 5D input"):
        F.interpolate(x, size=3, mode="trilinear")
    with pytest.raises(ValueError, match="Input and output must have the same number of spatial dimensions"):
        F.interpolate(x, size=(3, 3, 3))
    with pytest.raises(ValueError, match="recompute_scale_factor is not meaningful with an explicit size"):
        F.interpolate(x, size=3, recompute_scale_factor=True)


# ---- pad -------------------------------------------------------------------------------------


@pytest.mark.parametrize("pad,mode,np_mode", [
    ((1, 2), "reflect", "reflect"), ((2, 1, 3, 2), "reflect", "reflect"), ((2, 1, 3, 2), "replicate", "edge"),
    ((2, 1, 3, 2), "circular", "wrap"), ((0, 3, 1, 0), "replicate", "edge"), ((3, 4, 4, 3), "circular", "wrap"),
])
def test_pad_modes_match_numpy(pad, mode, np_mode):
    k = len(pad) // 2
    x = r(2, 3, 5, 6)[0] if k == 1 else r(2, 3, 5, 6)
    widths = [(0, 0)] * (x.ndim - k) + [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(k))]
    assert_close(F.pad(t(x), pad, mode), np.pad(x, widths, mode=np_mode), rtol=0, atol=0)


def test_pad_3d_modes_and_long_axes():
    x = r(1, 2, 4, 5, 3)
    widths = [(0, 0), (0, 0), (2, 1), (0, 2), (1, 1)]
    for mode, np_mode in (("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")):
        assert_close(F.pad(t(x), (1, 1, 0, 2, 2, 1), mode), np.pad(x, widths, mode=np_mode), rtol=0, atol=0)
    x = r(2, 300)  # longer than the dense cut-off: gather forward, layered scatter backward
    xt = t(x, True)
    y = F.pad(xt, (150, 40), "reflect")
    assert_close(y, np.pad(x, [(0, 0), (150, 40)], mode="reflect"), rtol=0, atol=0)
    g = r(*y.shape)
    y.backward(t(g))
    assert_close((y * t(g)).sum(), (xt.detach() * xt.grad).sum(), rtol=1e-10, atol=1e-10)


def test_pad_constant_with_value_and_negative_pads():
    x = r(2, 3, 4)
    assert_close(F.pad(t(x), (1, 2), value=1.5), np.pad(x, [(0, 0), (0, 0), (1, 2)], constant_values=1.5), rtol=0,
                 atol=0)
    assert_close(F.pad(t(x), (1, 0, 0, 2, 1, 1)), np.pad(x, [(1, 1), (0, 2), (1, 0)]), rtol=0, atol=0)
    assert_close(F.pad(t(x), (-1, 2, 1, -2)), np.pad(x, [(0, 0), (1, 0), (0, 2)])[:, :-2, 1:], rtol=0, atol=0)


PAD_GRAD = [
    OpCase("constant", lambda x: F.pad(x, (1, 2, -1, 1), value=0.5), None, [r(2, 2, 3, 3)]),
    OpCase("reflect", lambda x: F.pad(x, (2, 1, 1, 2), "reflect"), None, [r(1, 2, 3, 4)]),
    OpCase("replicate", lambda x: F.pad(x, (2, 1, 1, 2), "replicate"), None, [r(1, 2, 3, 4)]),
    OpCase("circular", lambda x: F.pad(x, (2, 1, 1, 3), "circular"), None, [r(1, 2, 3, 4)]),
    OpCase("reflect1d", lambda x: F.pad(x, (3, 2), "reflect"), None, [r(2, 5)]),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", PAD_GRAD, ids=repr)
def test_pad_gradients(case, device):
    check_case(case, device)


def test_padding_layers():
    x = r(2, 3, 4, 5)
    assert_close(nn.ZeroPad2d(2)(t(x)), np.pad(x, [(0, 0), (0, 0), (2, 2), (2, 2)]), rtol=0, atol=0)
    assert_close(nn.ZeroPad2d((1, 2, 3, 0))(t(x)), np.pad(x, [(0, 0), (0, 0), (3, 0), (1, 2)]), rtol=0, atol=0)
    assert_close(nn.ConstantPad1d(2, 3.5)(t(x)), np.pad(x, [(0, 0), (0, 0), (0, 0), (2, 2)], constant_values=3.5),
                 rtol=0, atol=0)
    assert_close(nn.ConstantPad2d((1, 0, 2, 1), -1.0)(t(x)),
                 np.pad(x, [(0, 0), (0, 0), (2, 1), (1, 0)], constant_values=-1), rtol=0, atol=0)
    assert_close(nn.ReflectionPad1d((2, 1))(t(x[0])), np.pad(x[0], [(0, 0), (0, 0), (2, 1)], mode="reflect"), rtol=0,
                 atol=0)
    assert_close(nn.ReflectionPad2d(1)(t(x)), np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="reflect"), rtol=0,
                 atol=0)
    assert_close(nn.ReplicationPad1d(3)(t(x[0])), np.pad(x[0], [(0, 0), (0, 0), (3, 3)], mode="edge"), rtol=0,
                 atol=0)
    assert_close(nn.ReplicationPad2d((1, 2, 0, 1))(t(x)), np.pad(x, [(0, 0), (0, 0), (0, 1), (1, 2)], mode="edge"),
                 rtol=0, atol=0)
    assert_close(nn.CircularPad2d(1)(t(x)), np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="wrap"), rtol=0,
                 atol=0)
    assert repr(nn.ZeroPad2d(2)) == "ZeroPad2d((2, 2, 2, 2))"
    assert repr(nn.ConstantPad2d(1, 2.0)) == "ConstantPad2d(padding=(1, 1, 1, 1), value=2.0)"
    assert repr(nn.ReflectionPad2d((1, 1, 2, 0))) == "ReflectionPad2d((1, 1, 2, 0))"
    assert list(nn.ReflectionPad2d(1).state_dict().keys()) == []


def test_pad_errors():
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(rtx.randn(2, 3), (1, 2, 3))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two times the input"):
        F.pad(rtx.randn(2, 3), (1, 1, 1, 1, 1, 1))
    with pytest.raises(RuntimeError, match=r"Argument #4: Padding size should be less than the corresponding input "
                                           r"dimension, but got: padding \(3, 3\) at dimension 3 of input "
                                           r"\[1, 1, 3, 3\]"):
        F.pad(rtx.randn(1, 1, 3, 3), (3, 3, 0, 0), mode="reflect")
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D input tensor"):
        F.pad(rtx.randn(1, 1, 3, 3), (1, 1), mode="reflect")
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once"):
        F.pad(rtx.randn(1, 1, 3), (4, 0), mode="circular")


# ---- unfold / fold ---------------------------------------------------------------------------


def ref_unfold(x, k, d, p, s):
    N, C, H, W = x.shape
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    oh = (H + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (W + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((N, C * k[0] * k[1], oh * ow))
    for n, c, i, j, a, b in itertools.product(range(N), range(C), range(oh), range(ow), range(k[0]), range(k[1])):
        out[n, (c * k[0] + a) * k[1] + b, i * ow + j] = xp[n, c, i * s[0] + a * d[0], j * s[1] + b * d[1]]
    return out


@pytest.mark.parametrize("k,d,p,s", [((2, 2), (1, 1), (0, 0), (1, 1)), ((3, 2), (1, 2), (1, 1), (2, 1)),
                                     ((2, 3), (2, 1), (1, 0), (1, 2))])
def test_unfold_and_fold_match_loops(k, d, p, s):
    x = r(2, 3, 7, 6)
    cols = F.unfold(t(x), k, d, p, s)
    assert_close(cols, ref_unfold(x, k, d, p, s), rtol=0, atol=0)
    # fold is the adjoint of unfold: <unfold(x), y> = <x, fold(y)>
    y = r(*cols.shape)
    folded = F.fold(t(y), (7, 6), k, d, p, s)
    assert_close((cols * t(y)).sum(), (t(x) * folded).sum(), rtol=1e-12, atol=1e-12)
    assert_close(nn.Unfold(k, d, p, s)(t(x)), cols, rtol=0, atol=0)
    assert_close(nn.Fold((7, 6), k, d, p, s)(t(y)), folded, rtol=0, atol=0)


def test_fold_of_unfold_counts_overlaps():
    x = np.ones((1, 1, 4, 4))
    counts = F.fold(F.unfold(t(x), 2), (4, 4), 2).numpy()[0, 0]
    assert counts.tolist() == [[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [1, 2, 2, 1]]
    x = r(2, 3, 6, 4)  # non-overlapping blocks: fold undoes unfold
    assert_close(F.fold(F.unfold(t(x), 2, stride=2), (6, 4), 2, stride=2), x, rtol=0, atol=0)
    assert tuple(F.unfold(t(x[0]), 2).shape) == (12, 15)  # unbatched


def test_unfold_fold_gradients():
    check_case(OpCase("unfold", lambda x: F.unfold(x, (2, 3), padding=1, stride=(2, 1)), None, [r(1, 2, 4, 4)]))
    check_case(OpCase("fold", lambda y: F.fold(y, (4, 5), 2, padding=1, stride=2), None, [r(1, 8, 9)]))


def test_unfold_fold_errors():
    with pytest.raises(RuntimeError, match="expected size of input's dimension 2 to match the calculated number of "
                                           r"sliding blocks 3 \* 3 = 9, but got input.size\(2\)=5"):
        F.fold(rtx.randn(1, 12, 5), (4, 4), 2)
    with pytest.raises(RuntimeError, match="Expected size of input's dimension 1 to be divisible by the product of "
                                           "kernel_size"):
        F.fold(rtx.randn(1, 10, 9), (4, 4), 2)
    with pytest.raises(RuntimeError, match="calculated shape of the array of sliding blocks as"):
        F.unfold(rtx.randn(1, 2, 3, 3), 4)


# ---- pixel shuffle -----------------------------------------------------------------------------


def test_pixel_shuffle_matches_loops_and_inverts():
    x = r(2, 12, 3, 4)
    y = F.pixel_shuffle(t(x), 2)
    expect = np.zeros((2, 3, 6, 8))
    for n, c, h, w, i, j in itertools.product(range(2), range(3), range(3), range(4), range(2), range(2)):
        expect[n, c, h * 2 + i, w * 2 + j] = x[n, c * 4 + i * 2 + j, h, w]
    assert_close(y, expect, rtol=0, atol=0)
    assert_close(F.pixel_unshuffle(y, 2), x, rtol=0, atol=0)
    assert_close(nn.PixelUnshuffle(2)(nn.PixelShuffle(2)(t(x))), x, rtol=0, atol=0)
    assert tuple(F.pixel_shuffle(t(r(5, 2, 18, 2, 3)), 3).shape) == (5, 2, 2, 6, 9)  # extra batch dims
    check_case(OpCase("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), None, [r(1, 8, 2, 2)]))
    assert repr(nn.PixelShuffle(2)) == "PixelShuffle(upscale_factor=2)"
    with pytest.raises(RuntimeError, match=r"input.size\(-3\)=3 is not divisible by 4"):
        F.pixel_shuffle(rtx.randn(1, 3, 2, 2), 2)
    with pytest.raises(RuntimeError, match=r"input.size\(-2\)=5 is not divisible by 2"):
        F.pixel_unshuffle(rtx.randn(1, 3, 5, 4), 2)


# ---- affine_grid / grid_sample -----------------------------------------------------------------


def ref_grid_sample_bilinear_zeros(x, grid, align_corners):
    N, C, H, W = x.shape
    Ho, Wo = grid.shape[1:3]
    out = np.zeros((N, C, Ho, Wo))
    for n, i, j in itertools.product(range(N), range(Ho), range(Wo)):
        gx, gy = grid[n, i, j]
        if align_corners:
            ix, iy = (gx + 1) / 2 * (W - 1), (gy + 1) / 2 * (H - 1)
        else:
            ix, iy = ((gx + 1) * W - 1) / 2, ((gy + 1) * H - 1) / 2
        x0, y0 = math.floor(ix), math.floor(iy)
        for xx, yy in itertools.product((x0, x0 + 1), (y0, y0 + 1)):
            wgt = (1 - abs(ix - xx)) * (1 - abs(iy - yy))
            if 0 <= xx < W and 0 <= yy < H:
                out[n, :, i, j] += wgt * x[n, :, yy, xx]
    return out


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_and_grid_sample(align_corners):
    theta = np.array([[[1.0, 0, 0], [0, 1, 0]]] * 2)
    grid = F.affine_grid(t(theta), (2, 3, 4, 5), align_corners=align_corners)
    xs = np.linspace(-1, 1, 5) if align_corners else (np.arange(5) * 2 + 1) / 5 - 1
    ys = np.linspace(-1, 1, 4) if align_corners else (np.arange(4) * 2 + 1) / 4 - 1
    assert_close(grid[0, :, :, 0], np.broadcast_to(xs, (4, 5)), rtol=1e-12, atol=1e-12)
    assert_close(grid[1, :, :, 1], np.broadcast_to(ys[:, None], (4, 5)), rtol=1e-12, atol=1e-12)
    x = r(2, 3, 4, 5)
    assert_close(F.grid_sample(t(x), grid, align_corners=align_corners), x, rtol=1e-12, atol=1e-12)
    g = rng.uniform(-1.2, 1.2, (2, 3, 4, 2))
    assert_close(F.grid_sample(t(x), t(g), align_corners=align_corners),
                 ref_grid_sample_bilinear_zeros(x, g, align_corners), rtol=1e-10, atol=1e-10)
    theta = r(2, 2, 3)
    grid = F.affine_grid(t(theta), (2, 3, 4, 5), align_corners=align_corners).numpy()
    base = np.stack(list(np.meshgrid(xs, ys)) + [np.ones((4, 5))], axis=-1)
    assert_close(grid, np.einsum("hwk,nck->nhwc", base, theta), rtol=1e-12, atol=1e-12)


def test_grid_sample_modes_and_gradients():
    x = r(1, 2, 3, 4)
    g = rng.uniform(-1.3, 1.3, (1, 2, 3, 2))
    border = F.grid_sample(t(x), t(np.clip(g, -1, 1)), padding_mode="border", align_corners=True)
    assert_close(border, F.grid_sample(t(x), t(g), padding_mode="border", align_corners=True)
                 if np.all(np.abs(g) <= 1) else border, rtol=1e-12, atol=1e-12)
    near = F.grid_sample(t(x), t(np.array([[[[-1.0, -1.0], [1.0, 1.0]]]])), mode="nearest", align_corners=True)
    assert_close(near[0, :, 0], np.stack([x[0, :, 0, 0], x[0, :, 2, 3]], axis=-1), rtol=0, atol=0)
    for pm in ("zeros", "border", "reflection"):
        check_case(OpCase(f"grid_sample {pm}", lambda x, g, pm=pm: F.grid_sample(x, g, padding_mode=pm), None,
                          [x, rng.uniform(-0.9, 0.9, (1, 2, 3, 2))], gradgrad=False))
    check_case(OpCase("affine_grid", lambda th: F.affine_grid(th, (1, 1, 3, 2)), None, [r(1, 2, 3)]))
