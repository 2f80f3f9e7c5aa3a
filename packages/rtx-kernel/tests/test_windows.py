"""rtx.kernel.windows: strided windows, im2col in each layout, col2im, against loop references."""
import itertools

import numpy as np
import pytest

from rtx.kernel.windows import LAYOUTS, col2im, col2im_add, im2col, out_shape, pad, sliding_windows

rng = np.random.default_rng(0)


def _ref_windows(x, kernel, stride, dilation, pads, value=0):
    """(N, C, *k, *out) by explicit loops over output positions and kernel offsets (np.pad first)."""
    nd = len(kernel)
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads), constant_values=value)
    out = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    res = np.zeros(x.shape[:2] + tuple(kernel) + tuple(out), x.dtype)
    for k in itertools.product(*(range(v) for v in kernel)):
        for q in itertools.product(*(range(v) for v in out)):
            idx = tuple(q[i] * stride[i] + k[i] * dilation[i] for i in range(nd))
            res[(slice(None), slice(None)) + k + q] = xp[(slice(None), slice(None)) + idx]
    return res


GEOMS = [  # kernel, stride, dilation, pads
    ((3, 3), (1, 1), (1, 1), ((1, 1), (1, 1))),
    ((3, 2), (2, 1), (1, 2), ((0, 2), (1, 0))),
    ((1, 1), (2, 2), (1, 1), ((0, 0), (0, 0))),
    ((2, 3), (3, 2), (2, 1), ((2, 1), (0, 3))),
    ((3,), (2,), (2,), ((1, 2),)),
    ((2, 2, 2), (1, 2, 1), (1, 1, 2), ((1, 0), (0, 1), (1, 1))),
]


@pytest.mark.parametrize("kernel,stride,dilation,pads", GEOMS)
def test_sliding_windows_match_loops(kernel, stride, dilation, pads):
    nd = len(kernel)
    x = rng.standard_normal((2, 3) + (7, 6, 5)[:nd])
    ref = _ref_windows(x, kernel, stride, dilation, pads, value=-2.5)
    xpad = pad(x, pads, -2.5)
    np.testing.assert_array_equal(xpad, np.pad(x, [(0, 0), (0, 0)] + list(pads), constant_values=-2.5))
    win = sliding_windows(xpad, kernel, stride, dilation)
    np.testing.assert_array_equal(win, ref)
    assert np.shares_memory(win, xpad)                                      # a view, no copy
    assert win.shape[2 + nd:] == out_shape(x.shape[2:], kernel, stride, dilation, pads)
    perm = (0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd))
    np.testing.assert_array_equal(sliding_windows(xpad, kernel, stride, dilation, kernel_first=False),
                                  ref.transpose(perm))
    # batch last: (C, *S, N) -> (C, *k, *out, N)
    xt = np.ascontiguousarray(np.moveaxis(xpad, 0, -1))
    np.testing.assert_array_equal(sliding_windows(xt, kernel, stride, dilation, axis=1), np.moveaxis(ref, 0, -1))


@pytest.mark.parametrize("kernel,stride,dilation,pads", GEOMS)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_im2col_layouts_match_loops(kernel, stride, dilation, pads, layout):
    nd = len(kernel)
    x = rng.standard_normal((3, 2) + (7, 6, 5)[:nd]).astype(np.float32)
    ref = _ref_windows(x, kernel, stride, dilation, pads, value=0.5)         # (N, C, *k, *out)
    N, C = x.shape[:2]
    K, L = int(np.prod(kernel)), int(np.prod(ref.shape[2 + nd:]))
    r4 = ref.reshape(N, C, K, L)
    order = {"CK,NL": (1, 2, 0, 3), "CK,LN": (1, 2, 3, 0), "N,CK,L": (0, 1, 2, 3), "NL,CK": (0, 3, 1, 2)}[layout]
    shape = {"CK,NL": (C * K, N * L), "CK,LN": (C * K, L * N), "N,CK,L": (N, C * K, L), "NL,CK": (N * L, C * K)}
    want = r4.transpose(order).reshape(shape[layout])
    got = im2col(x, kernel, stride, dilation, pads=pads, pad_value=0.5, layout=layout)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == x.dtype
    # the same from a batch-last padded array, written into a caller's flat buffer
    xt = np.ascontiguousarray(np.moveaxis(np.pad(x, [(0, 0), (0, 0)] + list(pads), constant_values=0.5), 0, -1))
    buf = np.full(want.size + 7, np.nan, np.float32)
    got = im2col(xt, kernel, stride, dilation, layout=layout, batch_last=True, buf=buf)
    np.testing.assert_array_equal(got, want)
    assert np.shares_memory(got, buf)


def test_pad_into_a_dirty_buffer_writes_border_and_interior():
    x = rng.standard_normal((2, 3, 4, 5))
    pads = ((1, 2), (3, 0))
    buf = np.full(2 * 3 * 7 * 8 + 3, 99.0)
    np.testing.assert_array_equal(pad(x, pads, 0, buf=buf), np.pad(x, [(0, 0), (0, 0), (1, 2), (3, 0)]))
    assert pad(x, ((0, 0), (0, 0))) is x


def _ref_col2im(cols, in_shape, kernel, stride, dilation, pads):
    """The adjoint of the loop windows: scatter-add into a padded zero image, then crop."""
    nd = len(kernel)
    N, CK = cols.shape[:2]
    C = CK // int(np.prod(kernel))
    padded = [n + lo + hi for n, (lo, hi) in zip(in_shape, pads)]
    out = [(padded[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    c = cols.reshape((N, C) + tuple(kernel) + tuple(out))
    y = np.zeros((N, C) + tuple(padded))
    for k in itertools.product(*(range(v) for v in kernel)):
        for q in itertools.product(*(range(v) for v in out)):
            idx = tuple(q[i] * stride[i] + k[i] * dilation[i] for i in range(nd))
            y[(slice(None), slice(None)) + idx] += c[(slice(None), slice(None)) + k + q]
    return y[(slice(None), slice(None)) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(in_shape, pads))]


@pytest.mark.parametrize("kernel,stride,dilation,pads", GEOMS)
def test_col2im_is_the_adjoint(kernel, stride, dilation, pads):
    nd = len(kernel)
    in_shape = (7, 6, 5)[:nd]
    x = rng.standard_normal((2, 3) + in_shape)
    cols = im2col(x, kernel, stride, dilation, pads=pads, layout="N,CK,L")
    c = rng.standard_normal(cols.shape)
    back = col2im(c, in_shape, kernel, stride, dilation, pads)
    np.testing.assert_allclose(back, _ref_col2im(c, in_shape, kernel, stride, dilation, pads), rtol=1e-13, atol=1e-13)
    # <im2col(x), c> == <x, col2im(c)>
    assert np.isclose(np.vdot(cols, c), np.vdot(x, back), rtol=1e-12)


def test_col2im_add_on_a_padded_image_keeps_the_border():
    kernel, stride, dilation = (3, 3), (1, 1), (1, 1)
    cols = rng.standard_normal((1, 2, 3, 3, 4, 4))
    dst = np.zeros((1, 2, 6, 6))
    col2im_add(dst, cols, kernel, stride, dilation, (4, 4))
    np.testing.assert_allclose(dst, _ref_col2im(cols.reshape(1, 18, 16), (6, 6), kernel, stride, dilation,
                                                ((0, 0), (0, 0))), rtol=1e-13, atol=1e-13)


def test_errors_name_what_was_expected():
    x = np.zeros((1, 1, 4, 4))
    with pytest.raises(ValueError, match="smaller than the kernel's span"):
        sliding_windows(x, (3, 3), 1, 2)
    with pytest.raises(ValueError, match="do not fit"):
        sliding_windows(x, (3, 3), 1, 1, out_shape=(3, 2))
    with pytest.raises(ValueError, match="each of N, C, K, L once"):
        im2col(x, (2, 2), layout="CK,N")
    with pytest.raises(ValueError, match="stride must be"):
        sliding_windows(x, (2, 2), (1, 1, 1))
    with pytest.raises(ValueError, match="expected columns"):
        col2im(np.zeros((1, 5, 9)), (4, 4), (2, 2))


def test_read_only_view():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    win = sliding_windows(x, (2, 2), writeable=False)
    assert not win.flags.writeable
    assert sliding_windows(x, (2, 2)).flags.writeable
