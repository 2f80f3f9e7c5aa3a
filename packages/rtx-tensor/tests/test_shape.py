"""Shape and view ops: values against NumPy, gradients by finite differences (and double
backward) in float64, on every device; PyTorch's errors."""
import numpy as np
import pytest

import rtx
from rtx.testing import OpCase, assert_close, check_case, devices

rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape)


def idx(a):
    """An int64 index tensor on the device of nothing in particular (CPU), built from a list."""
    return rtx.tensor(a, dtype=rtx.int64)


X234 = r(2, 3, 4)
X34 = r(3, 4)


def _np_unfold(a, dim, size, step):
    w = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
    return np.take(w, np.arange(0, w.shape[dim], step), axis=dim)


def _np_diag_embed(a, offset, d1, d2):
    n = a.shape[-1] + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n))
    i = np.arange(a.shape[-1])
    rows, cols = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., rows, cols] = a
    nd = a.ndim + 1
    d1, d2 = d1 % nd, d2 % nd
    rest = [k for k in range(nd) if k not in (d1, d2)]
    perm = [0] * nd
    for pos, k in enumerate(rest):
        perm[k] = pos
    perm[d1], perm[d2] = nd - 2, nd - 1
    return out.transpose(perm)


def _tsplit(a, ios, axis):
    return tuple(np.array_split(a, ios, axis=axis))


CASES = [
    # views
    OpCase("reshape", lambda x: x.reshape(4, 6), lambda a: a.reshape(4, 6), [X234]),
    OpCase("reshape_infer", lambda x: x.reshape(-1, 2), lambda a: a.reshape(-1, 2), [X234]),
    OpCase("reshape_noncontig", lambda x: x.transpose(0, 2).reshape(-1), lambda a: a.transpose(2, 1, 0).reshape(-1),
           [X234]),
    OpCase("view", lambda x: x.view(6, 4), lambda a: a.reshape(6, 4), [X234]),
    OpCase("view_size", lambda x: x.view(rtx.Size([3, 8])), lambda a: a.reshape(3, 8), [X234]),
    OpCase("permute", lambda x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), [X234]),
    OpCase("permute_neg", lambda x: x.permute(-1, -3, -2), lambda a: a.transpose(2, 0, 1), [X234]),
    OpCase("transpose", lambda x: x.transpose(0, -1), lambda a: a.swapaxes(0, 2), [X234]),
    OpCase("t", lambda x: x.t(), lambda a: a.T, [X34]),
    OpCase("T", lambda x: x.T, lambda a: a.T, [X234]),
    OpCase("mT", lambda x: x.mT, lambda a: a.swapaxes(-1, -2), [X234]),
    OpCase("movedim", lambda x: x.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1), [X234]),
    OpCase("movedim_multi", lambda x: rtx.movedim(x, (0, 1), (2, 0)), lambda a: np.moveaxis(a, (0, 1), (2, 0)), [X234]),
    OpCase("expand", lambda x: x.expand(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4)), [r(3, 1)]),
    OpCase("expand_neg1", lambda x: x.expand(-1, 4), lambda a: np.broadcast_to(a, (3, 4)), [r(3, 1)]),
    OpCase("expand_lead", lambda x: x.expand(1, 3, 1), lambda a: a.reshape(1, 3, 1), [r(3, 1)]),
    OpCase("expand_as", lambda x, y: x.expand_as(y), lambda a, b: np.broadcast_to(a, b.shape), [r(1, 4), X34],
           grad_inputs=(0,)),
    OpCase("broadcast_to", lambda x: rtx.broadcast_to(x, (2, 3)), lambda a: np.broadcast_to(a, (2, 3)), [r(3)]),
    OpCase("squeeze_all", lambda x: x.squeeze(), lambda a: a.squeeze(), [r(1, 3, 1, 2)]),
    OpCase("squeeze_dim", lambda x: x.squeeze(2), lambda a: a.squeeze(2), [r(1, 3, 1, 2)]),
    OpCase("squeeze_tuple", lambda x: x.squeeze((0, 2)), lambda a: a.squeeze((0, 2)), [r(1, 3, 1, 2)]),
    OpCase("squeeze_non1", lambda x: x.squeeze((1, -1)), lambda a: a, [r(1, 3, 1, 2)]),
    OpCase("unsqueeze", lambda x: x.unsqueeze(-1), lambda a: a[..., None], [X34]),
    OpCase("unsqueeze0", lambda x: x.unsqueeze(0), lambda a: a[None], [X34]),
    OpCase("flatten", lambda x: x.flatten(1), lambda a: a.reshape(2, 12), [X234]),
    OpCase("flatten_all", lambda x: rtx.flatten(x), lambda a: a.reshape(-1), [X234]),
    OpCase("ravel", lambda x: x.transpose(0, 1).ravel(), lambda a: a.swapaxes(0, 1).reshape(-1), [X234]),
    OpCase("unflatten", lambda x: x.unflatten(2, (2, -1)), lambda a: a.reshape(2, 3, 2, 2), [X234]),
    OpCase("narrow", lambda x: x.narrow(1, 1, 2), lambda a: a[:, 1:3], [X234]),
    OpCase("narrow_neg", lambda x: rtx.narrow(x, -1, -3, 2), lambda a: a[..., 1:3], [X234]),
    OpCase("select", lambda x: x.select(1, -1), lambda a: a[:, -1], [X234]),
    OpCase("select_fn", lambda x: rtx.select(x, 0, 1), lambda a: a[1], [X234]),
    OpCase("diagonal", lambda x: x.diagonal(), lambda a: np.diagonal(a), [X34]),
    OpCase("diagonal_off", lambda x: x.diagonal(1, 0, 2), lambda a: np.diagonal(a, 1, 0, 2), [X234]),
    OpCase("diagonal_negoff", lambda x: rtx.diagonal(x, -1, -1, 1), lambda a: np.diagonal(a, -1, 2, 1), [X234]),
    OpCase("diagonal_big_off", lambda x: x.diagonal(5), lambda a: np.diagonal(a, 5), [X34]),
    OpCase("diag_embed", lambda x: rtx.diag_embed(x), lambda a: _np_diag_embed(a, 0, -2, -1), [r(2, 3)]),
    OpCase("diag_embed_off", lambda x: x.diag_embed(1, 0, 2), lambda a: _np_diag_embed(a, 1, 0, 2), [r(2, 3)]),
    OpCase("diag_embed_neg", lambda x: x.diag_embed(-2, 2, 0), lambda a: _np_diag_embed(a, -2, 2, 0), [r(2, 3)]),
    OpCase("diag_1d", lambda x: rtx.diag(x, 1), lambda a: np.diag(a, 1), [r(3)]),
    OpCase("diag_2d", lambda x: x.diag(-1), lambda a: np.diag(a, -1), [X34]),
    OpCase("unfold", lambda x: x.unfold(2, 2, 1), lambda a: _np_unfold(a, 2, 2, 1), [X234]),
    OpCase("unfold_step", lambda x: x.unfold(-1, 3, 2), lambda a: _np_unfold(a, 1, 3, 2), [r(2, 7)]),
    OpCase("unfold_dim0", lambda x: x.unfold(0, 2, 2), lambda a: _np_unfold(a, 0, 2, 2), [r(5, 2)]),
    # getitem
    OpCase("getitem_basic", lambda x: x[1:, ::2, None, ...], lambda a: a[1:, ::2, None, ...], [X234]),
    OpCase("getitem_int", lambda x: x[0, 1], lambda a: a[0, 1], [X234]),
    OpCase("getitem_scalar", lambda x: x[1, -1, 2], lambda a: a[1, -1, 2], [X234]),
    OpCase("getitem_neg_slice", lambda x: x[-1, -2:, :-1], lambda a: a[-1, -2:, :-1], [X234]),
    OpCase("getitem_ellipsis", lambda x: x[..., 1], lambda a: a[..., 1], [X234]),
    OpCase("getitem_none", lambda x: x[None, :, None], lambda a: a[None, :, None], [X34]),
    OpCase("getitem_list", lambda x: x[[0, 2, 2, -1]], lambda a: a[[0, 2, 2, -1]], [X34]),
    OpCase("getitem_tensor", lambda x: x[idx([[0, 1], [1, 1]])], lambda a: a[np.array([[0, 1], [1, 1]])], [X234]),
    OpCase("getitem_two_adv", lambda x: x[idx([0, 1, 1]), :, idx([3, 0, 3])],
           lambda a: a[[0, 1, 1], :, [3, 0, 3]], [X234]),
    OpCase("getitem_mixed", lambda x: x[:, [0, 2], 1:3], lambda a: a[:, [0, 2], 1:3], [X234]),
    OpCase("getitem_adv_int", lambda x: x[1, [2, 0]], lambda a: a[1, [2, 0]], [X234]),
    OpCase("getitem_bool", lambda x: x[rtx.tensor(X34 > 0)], lambda a: a[X34 > 0], [X34]),
    OpCase("getitem_bool_row", lambda x: x[rtx.tensor([True, False, True])], lambda a: a[[True, False, True]], [X34]),
    OpCase("getitem_bool_dim1", lambda x: x[:, rtx.tensor([True, False, True])], lambda a: a[:, [True, False, True]],
           [X234]),
    # splitting (tuples of outputs)
    OpCase("split_int", lambda x: x.split(3, dim=2), lambda a: (a[..., :3], a[..., 3:]), [X234]),
    OpCase("split_list", lambda x: rtx.split(x, [1, 0, 2], 1), lambda a: (a[:, :1], a[:, 1:1], a[:, 1:]), [X234]),
    OpCase("split_with_sizes", lambda x: x.split_with_sizes([3, 1], -1), lambda a: (a[..., :3], a[..., 3:]), [X234]),
    OpCase("chunk", lambda x: x.chunk(3, -1), lambda a: (a[..., :2], a[..., 2:]), [X234]),
    OpCase("chunk_even", lambda x: rtx.chunk(x, 2, 0), lambda a: (a[:1], a[1:]), [X234]),
    OpCase("tensor_split_int", lambda x: x.tensor_split(3, 2), lambda a: _tsplit(a, 3, 2), [X234]),
    OpCase("tensor_split_idx", lambda x: rtx.tensor_split(x, [1, 3], 2), lambda a: _tsplit(a, [1, 3], 2), [X234]),
    OpCase("tensor_split_tensor", lambda x: x.tensor_split(idx([2, 1, 5]), -1), lambda a: _tsplit(a, [2, 1, 5], -1),
           [X234]),
    OpCase("hsplit", lambda x: rtx.hsplit(x, 3), lambda a: tuple(np.hsplit(a, 3)), [X234]),
    OpCase("vsplit", lambda x: x.vsplit([1]), lambda a: tuple(np.vsplit(a, [1])), [X234]),
    OpCase("dsplit", lambda x: rtx.dsplit(x, 2), lambda a: tuple(np.dsplit(a, 2)), [X234]),
    OpCase("unbind", lambda x: x.unbind(1), lambda a: tuple(np.moveaxis(a, 1, 0)), [X234]),
    OpCase("unbind_fn", lambda x: rtx.unbind(x), lambda a: tuple(a), [X34]),
    # copies
    OpCase("repeat", lambda x: x.repeat(2, 1, 3), lambda a: np.tile(a, (2, 1, 3)), [r(2, 3)]),
    OpCase("repeat_same", lambda x: x.repeat(2, 2), lambda a: np.tile(a, (2, 2)), [r(2, 3)]),
    OpCase("repeat_list", lambda x: x.repeat([1, 2]), lambda a: np.tile(a, (1, 2)), [r(3)]),
    OpCase("tile", lambda x: x.tile((2,)), lambda a: np.tile(a, 2), [r(2, 3)]),
    OpCase("tile_more", lambda x: rtx.tile(x, (2, 1, 2)), lambda a: np.tile(a, (2, 1, 2)), [r(2, 3)]),
    OpCase("flip", lambda x: x.flip((0, 2)), lambda a: np.flip(a, (0, 2)), [X234]),
    OpCase("flip_varargs", lambda x: x.flip(0, 1), lambda a: np.flip(a, (0, 1)), [X234]),
    OpCase("flip_int", lambda x: rtx.flip(x, -1), lambda a: np.flip(a, -1), [X234]),
    OpCase("fliplr", lambda x: x.fliplr(), lambda a: np.fliplr(a), [X234]),
    OpCase("flipud", lambda x: rtx.flipud(x), lambda a: np.flipud(a), [X34]),
    OpCase("roll_flat", lambda x: x.roll(5), lambda a: np.roll(a, 5), [X34]),
    OpCase("roll_dim", lambda x: rtx.roll(x, -1, 1), lambda a: np.roll(a, -1, 1), [X234]),
    OpCase("roll_dims", lambda x: x.roll((1, 7), (0, -1)), lambda a: np.roll(a, (1, 7), (0, 2)), [X234]),
    OpCase("rot90", lambda x: x.rot90(), lambda a: np.rot90(a), [X34]),
    OpCase("rot90_k", lambda x: rtx.rot90(x, -1, (1, 2)), lambda a: np.rot90(a, -1, (1, 2)), [X234]),
    OpCase("rot90_2", lambda x: x.rot90(2, (2, 0)), lambda a: np.rot90(a, 2, (2, 0)), [X234]),
    OpCase("tril", lambda x: x.tril(), lambda a: np.tril(a), [X34]),
    OpCase("tril_off", lambda x: rtx.tril(x, -1), lambda a: np.tril(a, -1), [X234]),
    OpCase("triu", lambda x: x.triu(1), lambda a: np.triu(a, 1), [X234]),
    OpCase("triu_neg", lambda x: rtx.triu(x, -1), lambda a: np.triu(a, -1), [X34]),
    OpCase("clone", lambda x: x.clone(), lambda a: a.copy(), [X34]),
    OpCase("contiguous", lambda x: x.t().contiguous(), lambda a: a.T.copy(), [X34]),
    # joining
    OpCase("cat", lambda x, y: rtx.cat([x, y], 1), lambda a, b: np.concatenate([a, b], 1), [r(2, 1), r(2, 3)]),
    OpCase("cat_empty", lambda x, y: rtx.cat([x, y]), lambda a, b: a, [r(3), np.zeros(0)], grad_inputs=(0,)),
    OpCase("stack", lambda x, y: rtx.stack((x, y), -1), lambda a, b: np.stack([a, b], -1), [r(2, 3), r(2, 3)]),
    OpCase("hstack", lambda x, y: rtx.hstack([x, y]), lambda a, b: np.hstack([a, b]), [r(2, 1), r(2, 3)]),
    OpCase("hstack_1d", lambda x, y: rtx.hstack([x, y]), lambda a, b: np.hstack([a, b]), [r(2), r(3)]),
    OpCase("vstack", lambda x, y: rtx.vstack([x, y]), lambda a, b: np.vstack([a, b]), [r(3), r(2, 3)]),
    OpCase("row_stack", lambda x, y: rtx.row_stack([x, y]), lambda a, b: np.vstack([a, b]), [r(3), r(3)]),
    OpCase("dstack", lambda x, y: rtx.dstack([x, y]), lambda a, b: np.dstack([a, b]), [r(2, 3), r(2, 3, 2)]),
    OpCase("column_stack", lambda x, y: rtx.column_stack([x, y]), lambda a, b: np.column_stack([a, b]),
           [r(3), r(3, 2)]),
    OpCase("atleast_1d", lambda x: rtx.atleast_1d(x), lambda a: np.atleast_1d(a), [np.float64(1.5)]),
    OpCase("atleast_2d", lambda x, y: rtx.atleast_2d(x, y), lambda a, b: tuple(np.atleast_2d(a, b)),
           [r(3), np.float64(2.0)]),
    OpCase("atleast_3d", lambda x, y, z: rtx.atleast_3d((x, y, z)), lambda a, b, c: tuple(np.atleast_3d(a, b, c)),
           [r(3), r(2, 3), np.float64(2.0)]),
    OpCase("meshgrid_ij", lambda x, y: rtx.meshgrid(x, y, indexing="ij"),
           lambda a, b: tuple(np.meshgrid(a, b, indexing="ij")), [r(3), r(2)]),
    OpCase("meshgrid_xy", lambda x, y, z: rtx.meshgrid([x, y, z], indexing="xy"),
           lambda a, b, c: tuple(np.meshgrid(a, b, c, indexing="xy")), [r(3), r(2), r(2)]),
    OpCase("broadcast_tensors", lambda x, y: rtx.broadcast_tensors(x, y),
           lambda a, b: tuple(np.broadcast_arrays(a, b)), [r(3, 1), r(4)]),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_op(case, device):
    check_case(case, device)


def test_case_names_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


# ---- dtypes, shapes and small semantics ----------------------------------------------------------------


@pytest.mark.parametrize("device", devices())
def test_integer_dtypes_kept(device):
    x = rtx.arange(12, device=device).reshape(3, 4)
    for out in (x.flip(0), x.roll(1), x.repeat(2, 1), x.tril(), x.diagonal(), x.unfold(1, 2, 1), x.t().contiguous(),
                x[[0, 2]], x.split(2)[0], rtx.diag_embed(x)):
        assert out.dtype == rtx.int64
        assert out.device == x.device


def test_split_shapes_like_pytorch():
    x = rtx.zeros(5, 2)
    assert [tuple(p.shape) for p in x.split(2)] == [(2, 2), (2, 2), (1, 2)]
    assert [tuple(p.shape) for p in x.chunk(3)] == [(2, 2), (2, 2), (1, 2)]
    # torch.chunk may return fewer chunks than asked
    assert len(rtx.zeros(6).chunk(4)) == 3
    assert len(rtx.zeros(0).chunk(3)) == 3
    assert [tuple(p.shape) for p in rtx.zeros(0).split(2)] == [(0,)]
    assert [p.numel() for p in rtx.zeros(7).tensor_split(3)] == [3, 2, 2]
    assert [p.numel() for p in rtx.zeros(7).tensor_split([2, 9])] == [2, 5, 0]
    assert isinstance(x.split(5), tuple) and len(x.split(5)) == 1


def test_squeeze_and_expand_details():
    x = rtx.zeros(1, 3, 1)
    assert x.squeeze(1).shape == (1, 3, 1)           # a non-1 dim is left alone
    assert x.squeeze((0, 2)).shape == (3,)
    assert rtx.tensor(5.0).squeeze(0).shape == ()
    assert rtx.zeros(3, 1).expand(2, -1, 4).shape == (2, 3, 4)
    assert rtx.tensor(1.0).expand(2, 2).shape == (2, 2)


def test_contiguous_returns_self_when_contiguous():
    x = rtx.zeros(2, 3)
    assert x.contiguous() is x
    y = x.t()
    assert not y.is_contiguous()
    c = y.contiguous()
    assert c.is_contiguous() and c is not y
    assert_close(c, y)


def test_atleast_return_types():
    a, b = rtx.tensor(1.0), rtx.zeros(2)
    assert rtx.atleast_1d(a).shape == (1,)
    assert isinstance(rtx.atleast_1d(a, b), tuple)
    assert [t.shape for t in rtx.atleast_3d(a, b)] == [(1, 1, 1), (1, 2, 1)]
    assert rtx.atleast_2d(b).shape == (1, 2)
    m = rtx.zeros(2, 2)
    assert rtx.atleast_2d(m) is m   # already 2-D: returned as is


def test_meshgrid_default_warns_and_is_ij():
    with pytest.warns(UserWarning, match="indexing"):
        gx, gy = rtx.meshgrid(rtx.arange(3), rtx.arange(2))
    assert gx.shape == (3, 2) and gy.shape == (3, 2)
    gx, gy = rtx.meshgrid(rtx.arange(3), rtx.arange(2), indexing="xy")
    assert gx.shape == (2, 3)


def test_unfold_0d_and_full_window():
    assert rtx.tensor(3.0).unfold(0, 1, 1).shape == (1,)
    x = rtx.arange(4.0)
    assert_close(x.unfold(0, 4, 1), x.reshape(1, 4))
    assert x.unfold(0, 0, 1).shape == (5, 0)


# ---- errors (PyTorch's wording) ----------------------------------------------------------------------------


@pytest.mark.parametrize("fn, exc, match", [
    (lambda: rtx.zeros(2, 3).t().view(6), RuntimeError, "view size is not compatible"),
    (lambda: rtx.zeros(2, 3).view(4), RuntimeError, "shape '\\[4\\]' is invalid for input of size 6"),
    (lambda: rtx.zeros(2, 3).view(-1, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda: rtx.zeros(6).split([2, 2]), RuntimeError, "split_with_sizes expects split_sizes to sum exactly to 6"),
    (lambda: rtx.zeros(6).chunk(0), RuntimeError, "chunk expects `chunks` to be greater than 0"),
    (lambda: rtx.zeros(2, 3).repeat(2), RuntimeError, "Number of dimensions of repeat dims can not be smaller"),
    (lambda: rtx.zeros(4).unfold(0, 5, 1), RuntimeError, "maximum size for tensor at dimension 0 is 4 but size is 5"),
    (lambda: rtx.zeros(4).unfold(0, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda: rtx.zeros(3, 3).diagonal(0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical"),
    (lambda: rtx.zeros(3).diagonal(), RuntimeError, "at least 2 dimensions"),
    (lambda: rtx.zeros(3, 4).select(1, 4), IndexError, "index 4 out of range"),
    (lambda: rtx.zeros(3, 4).select(2, 0), IndexError, "Dimension out of range"),
    (lambda: rtx.zeros(3, 4).narrow(1, 3, 2), RuntimeError, "exceeds dimension size"),
    (lambda: rtx.zeros(2, 3).expand(3, 3), RuntimeError, "The expanded size of the tensor \\(3\\) must match the "
                                                         "existing size \\(2\\) at non-singleton dimension 0"),
    (lambda: rtx.zeros(3).tril(), RuntimeError, "tril: input tensor must have at least 2 dimensions"),
    (lambda: rtx.zeros(3).fliplr(), RuntimeError, "Input must be >= 2-d"),
    (lambda: rtx.zeros(3).roll((1, 2), 0), RuntimeError, "shifts and dimensions must align"),
    (lambda: rtx.meshgrid(rtx.zeros(2, 2), indexing="ij"), RuntimeError, "Expected 0D or 1D tensor"),
    (lambda: rtx.meshgrid(rtx.zeros(2), indexing="yx"), RuntimeError, "indexing must be one of"),
    (lambda: rtx.cat([rtx.zeros(2, 3), rtx.zeros(3, 2)]), RuntimeError, "Sizes of tensors must match except in "
                                                                         "dimension 0"),
    (lambda: rtx.stack([rtx.zeros(2), rtx.zeros(3)]), RuntimeError, "stack expects each tensor to be equal size"),
    (lambda: rtx.zeros(2, 3).permute(0, 0), RuntimeError, "duplicate dims"),
    (lambda: rtx.zeros(2, 3)[2], IndexError, "index 2 is out of bounds for dimension 0 with size 2"),
    (lambda: rtx.zeros(2, 3)[0, 0, 0], IndexError, "too many indices"),
    (lambda: rtx.zeros(2, 3)[rtx.zeros(2)], IndexError, "tensors used as indices must be long, int, byte or bool"),
    (lambda: rtx.zeros(2, 3).squeeze((0, 0)), RuntimeError, "appears multiple times"),
])
def test_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


def test_reshape_copy_when_not_viewable():
    x = rtx.arange(6.0).reshape(2, 3)
    y = x.t().reshape(6)          # must copy: not a view, no shared version counter
    assert y._base is None and y._vc is not x._vc
    y.add_(1)
    assert_close(x, np.arange(6.0).reshape(2, 3))
