"""Views share memory and the version counter with their base (as in PyTorch).

Property test: a random base shape and a random chain of view ops. The same chain applied to a
NumPy array of element ids says which base element each view element is; then a write through
the view must change exactly those base elements, a write to the base must show in the view,
and both tensors' _version must move together.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rtx
from rtx.testing import assert_close


def _slices(d, sl):
    return (slice(None),) * d + (sl,)


# Each op: (applicable(shape) -> bool, draw params, rtx version, numpy version on ids, kind)
# kind: "view" | "readonly" (expand, overlapping unfold: writes refused) | "maybe_copy" (reshape)


def _p_transpose(draw, s):
    n = len(s)
    return draw(st.integers(-n, n - 1)), draw(st.integers(-n, n - 1))


def _p_permute(draw, s):
    return tuple(draw(st.permutations(range(len(s)))))


def _p_unsqueeze(draw, s):
    return draw(st.integers(-len(s) - 1, len(s)))


def _p_squeeze(draw, s):
    ones = [i for i, n in enumerate(s) if n == 1]
    return draw(st.sampled_from(ones)) if ones else None


def _p_narrow(draw, s):
    d = draw(st.integers(0, len(s) - 1))
    start = draw(st.integers(0, s[d]))
    return d, start, draw(st.integers(0, s[d] - start))


def _p_select(draw, s):
    d = draw(st.integers(0, len(s) - 1))
    return d, draw(st.integers(-s[d], s[d] - 1))


def _p_slice(draw, s):
    out = []
    for n in s:
        start = draw(st.integers(0, n))
        stop = draw(st.integers(start, n))
        out.append(slice(start, stop, draw(st.integers(1, 3))))
    return tuple(out)


def _p_diagonal(draw, s):
    n = len(s)
    d1 = draw(st.integers(0, n - 1))
    d2 = draw(st.integers(0, n - 1).filter(lambda x: x != d1))
    return draw(st.integers(-3, 3)), d1, d2


def _p_unfold(draw, s):
    d = draw(st.integers(0, len(s) - 1))
    return d, draw(st.integers(0, s[d])), draw(st.integers(1, 3))


def _p_expand(draw, s):
    ones = [i for i, n in enumerate(s) if n == 1]
    if ones and draw(st.booleans()):
        i = draw(st.sampled_from(ones))
        return tuple(draw(st.integers(2, 3)) if k == i else -1 for k in range(len(s)))
    return (draw(st.integers(2, 3)),) + tuple(s)


def _p_split(draw, s):
    d = draw(st.integers(0, len(s) - 1))
    size = draw(st.integers(1, max(s[d], 1)))
    npieces = -(-s[d] // size) if s[d] else 1
    return d, size, draw(st.integers(0, npieces - 1))


def _p_chunk(draw, s):
    d = draw(st.integers(0, len(s) - 1))
    c = draw(st.integers(1, 4))
    size = -(-s[d] // c) if s[d] else 0
    n = (-(-s[d] // size)) if size else c
    return d, c, draw(st.integers(0, n - 1))


def _p_unflatten(draw, s):
    cands = [(i, a) for i, n in enumerate(s) for a in range(1, n + 1) if n % a == 0]
    i, a = draw(st.sampled_from(cands))
    return i, (a, s[i] // a)


def _p_movedim(draw, s):
    n = len(s)
    return draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))


def _np_split_piece(a, d, size, j):
    starts = list(range(0, a.shape[d], size)) or [0]
    st_ = starts[j]
    return a[_slices(d, slice(st_, min(st_ + size, a.shape[d])))]


def _np_unfold(a, d, size, step):
    w = np.lib.stride_tricks.sliding_window_view(a, size, axis=d)
    return w[_slices(d, slice(None, None, step))]


def _np_chunk(a, d, c, j):
    n = a.shape[d]
    if n == 0:
        return a[_slices(d, slice(0, 0))]
    return _np_split_piece(a, d, -(-n // c), j)


OPS = {
    "transpose": (lambda s: len(s) >= 1, _p_transpose, lambda x, p: x.transpose(*p),
                  lambda a, p: np.swapaxes(a, *p), "view"),
    "permute": (lambda s: len(s) >= 1, _p_permute, lambda x, p: x.permute(*p), lambda a, p: a.transpose(p), "view"),
    "T": (lambda s: True, lambda d, s: None, lambda x, p: x.T, lambda a, p: a.T, "view"),
    "mT": (lambda s: len(s) >= 2, lambda d, s: None, lambda x, p: x.mT, lambda a, p: np.swapaxes(a, -1, -2), "view"),
    "unsqueeze": (lambda s: len(s) < 5, _p_unsqueeze, lambda x, p: x.unsqueeze(p), lambda a, p: np.expand_dims(a, p),
                  "view"),
    "squeeze": (lambda s: 1 in s, _p_squeeze, lambda x, p: x.squeeze(p), lambda a, p: np.squeeze(a, p), "view"),
    "squeeze_all": (lambda s: True, lambda d, s: None, lambda x, p: x.squeeze(), lambda a, p: np.squeeze(a), "view"),
    "narrow": (lambda s: len(s) >= 1, _p_narrow, lambda x, p: x.narrow(*p),
               lambda a, p: a[_slices(p[0], slice(p[1], p[1] + p[2]))], "view"),
    "select": (lambda s: len(s) >= 1 and 0 not in s, _p_select, lambda x, p: x.select(*p),
               lambda a, p: a[_slices(p[0], p[1]) + (Ellipsis,)], "view"),
    "slice": (lambda s: len(s) >= 1, _p_slice, lambda x, p: x[p], lambda a, p: a[p], "view"),
    "int_index": (lambda s: len(s) >= 1 and s[0] > 0, lambda d, s: d(st.integers(-s[0], s[0] - 1)),
                  lambda x, p: x[p], lambda a, p: a[p, ...], "view"),
    "ellipsis_none": (lambda s: len(s) < 5, lambda d, s: None, lambda x, p: x[None, ..., None],
                      lambda a, p: a[None, ..., None], "view"),
    "diagonal": (lambda s: len(s) >= 2, _p_diagonal, lambda x, p: x.diagonal(*p),
                 lambda a, p: np.diagonal(a, *p), "view"),
    "unfold": (lambda s: len(s) >= 1, _p_unfold, lambda x, p: x.unfold(*p), lambda a, p: _np_unfold(a, *p),
               "unfold"),
    "expand": (lambda s: len(s) < 5, _p_expand, lambda x, p: x.expand(*p),
               lambda a, p: np.broadcast_to(a, tuple(n if n != -1 else a.shape[i - (len(p) - a.ndim)]
                                                     for i, n in enumerate(p))), "readonly"),
    "split": (lambda s: len(s) >= 1, _p_split, lambda x, p: x.split(p[1], p[0])[p[2]],
              lambda a, p: _np_split_piece(a, *p), "view"),
    "chunk": (lambda s: len(s) >= 1, _p_chunk, lambda x, p: x.chunk(p[1], p[0])[p[2]], lambda a, p: _np_chunk(a, *p),
              "view"),
    "unbind": (lambda s: len(s) >= 1 and 0 not in s[:1], lambda d, s: d(st.integers(0, s[0] - 1)),
               lambda x, p: x.unbind(0)[p], lambda a, p: a[p, ...], "view"),
    "unflatten": (lambda s: len(s) >= 1 and len(s) < 5 and 0 not in s, _p_unflatten, lambda x, p: x.unflatten(*p),
                  lambda a, p: a.reshape(a.shape[:p[0]] + p[1] + a.shape[p[0] + 1:]), "view"),
    "movedim": (lambda s: len(s) >= 1, _p_movedim, lambda x, p: x.movedim(*p), lambda a, p: np.moveaxis(a, *p),
                "view"),
    "reshape_flat": (lambda s: True, lambda d, s: None, lambda x, p: x.reshape(-1), lambda a, p: a.reshape(-1),
                     "maybe_copy"),
    "detach": (lambda s: True, lambda d, s: None, lambda x, p: x.detach(), lambda a, p: a, "view"),
}


@st.composite
def chains(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    ids = np.arange(int(np.prod(shape))).reshape(shape)
    ops = []
    for _ in range(draw(st.integers(1, 4))):
        names = [n for n, op in OPS.items() if op[0](ids.shape)]
        name = draw(st.sampled_from(names))
        params = OPS[name][1](draw, ids.shape)
        if name == "squeeze" and params is None:
            continue
        ids = OPS[name][3](ids, params)
        ops.append((name, params))
    return shape, ops


def _apply(shape, ops):
    """(base, the view after the chain, element ids of the view, whether the chain may refuse
    writes (a broadcasting expand or overlapping unfold windows), whether a reshape copied)."""
    base = rtx.tensor(np.arange(float(np.prod(shape))).reshape(shape), dtype=rtx.float64)
    ids = np.arange(int(np.prod(shape))).reshape(shape)
    v = base
    may_refuse = copied = False
    for name, p in ops:
        prev = v
        v = OPS[name][2](v, p)
        ids = OPS[name][3](ids, p)
        kind = OPS[name][4]
        if kind == "readonly" and v.numel() != prev.numel():
            may_refuse = True
        if kind == "unfold" and p[2] < p[1]:
            may_refuse = True
        if kind == "maybe_copy" and v._vc is not prev._vc:
            copied = True
    return base, v, np.asarray(ids), may_refuse, copied


WRITES = {
    "copy_": lambda v, vals: v.copy_(rtx.tensor(vals)),
    "setitem": lambda v, vals: v.__setitem__(Ellipsis, rtx.tensor(vals)),
    "add_": lambda v, vals: v.add_(rtx.tensor(vals)),
    "fill_": lambda v, vals: v.fill_(float(vals.ravel()[0]) if vals.size else 0.0),
    "mul_scalar": lambda v, vals: v.mul_(3.0),
}


def _expected(base0, ids, vals, how):
    out = base0.copy().ravel()
    flat_ids = ids.ravel()
    if how == "copy_" or how == "setitem":
        out[flat_ids] = vals.ravel()
    elif how == "add_":
        out[flat_ids] += vals.ravel()
    elif how == "fill_":
        out[flat_ids] = vals.ravel()[0] if vals.size else 0.0
    else:
        out[flat_ids] *= 3.0
    return out.reshape(base0.shape)


@settings(max_examples=300, deadline=None)
@given(chain=chains(), how=st.sampled_from(sorted(WRITES)), seed=st.integers(0, 2 ** 16))
def test_view_chain_writes_reach_the_base(chain, how, seed):
    shape, ops = chain
    base, v, ids, may_refuse, copied = _apply(shape, ops)
    base0 = base.numpy().copy()
    # the view reads the base elements the NumPy chain names
    assert_close(v, base0.ravel()[ids.ravel()].reshape(ids.shape))
    if copied:
        assert v._vc is not base._vc and v._base is not base
        assert not np.shares_memory(v._data, base._data)
        return
    assert v._base is base and v._vc is base._vc
    vals = np.random.default_rng(seed).standard_normal(ids.shape)
    overlapping = np.unique(ids).size < ids.size
    try:
        WRITES[how](v, vals)
    except RuntimeError as e:
        # PyTorch refuses writes into expanded or overlapping memory
        assert may_refuse and "more than one element of the written-to tensor" in str(e)
        assert base._version == 0
        return
    assert not overlapping
    assert base._version == v._version == 1
    assert_close(base, _expected(base0, ids, vals, how))
    # and the other way: a write to the base shows through the view
    base.mul_(-2.0)
    assert base._version == v._version == 2
    assert_close(v, base.numpy().ravel()[ids.ravel()].reshape(ids.shape))


@settings(max_examples=100, deadline=None)
@given(chain=chains())
def test_view_succeeds_exactly_when_reshape_does_not_copy(chain):
    shape, ops = chain
    _, v, ids, _, _ = _apply(shape, ops)
    r = v.reshape(-1)
    is_view = r._vc is v._vc
    if is_view:
        w = v.view(-1)
        assert w._vc is v._vc
        assert_close(w, r)
    else:
        assert not np.shares_memory(r._data, v._data)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            v.view(-1)


# ---- fixed cases ------------------------------------------------------------------------------------------


def test_every_listed_view_op_shares_storage():
    x = rtx.zeros(4, 6)
    views = [x.view(24), x.reshape(6, 4), x.permute(1, 0), x.transpose(0, 1), x[:, None].expand(4, 3, 6),
             x.squeeze(), x.unsqueeze(1), x[1:3, ::2], x.narrow(1, 2, 3), x.diagonal(), x.select(0, 1),
             x.split(2)[1], x.chunk(3, 1)[2], x.unbind(1)[0], x.T, x.mT, x.unfold(1, 2, 2), x.flatten(),
             x.unflatten(1, (2, 3)), x.movedim(0, 1), x.t(), x.view_as(x), x.detach(), x[..., 0],
             x.tensor_split(3, 1)[1], x.swapaxes(0, 1), x.hsplit(2)[0], x.expand(2, 4, 6), x.ravel()]
    for i, v in enumerate(views):
        assert v._base is x, i
        assert v._vc is x._vc, i
        assert np.shares_memory(v._data, x._data), i


def test_every_listed_copy_op_does_not_share():
    x = rtx.arange(24.0).reshape(4, 6)
    copies = [x.flip(0), x.roll(1), x.repeat(1, 2), x.tile((2,)), x.tril(), x.triu(), x.clone(),
              x.t().contiguous(), x[[0, 1]], x[x > 3], x.t().reshape(-1), rtx.diag(x), x.rot90(), x.masked_fill(
                  x > 3, 0.0), x.gather(1, rtx.zeros(4, 1, dtype=rtx.int64)), x.index_select(0, rtx.tensor([1])),
              x.take(rtx.tensor([1])), rtx.cat([x, x]), rtx.stack([x, x]), x.sort().values]
    for i, c in enumerate(copies):
        assert c._vc is not x._vc, i
        assert not np.shares_memory(c._data, x._data), i


def test_version_counter_counts_writes_through_any_view():
    x = rtx.zeros(3, 4)
    a, b = x[0], x.t()
    assert x._version == 0
    a.add_(1.0)
    b[1, 1] = 5.0
    x.mul_(2.0)
    b.select(0, 2).zero_()
    assert x._version == a._version == b._version == 4
    assert x.tolist() == [[2.0, 2.0, 0.0, 2.0], [0.0, 10.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]


def test_split_pieces_and_unbind_write_through():
    x = rtx.zeros(2, 6)
    for i, piece in enumerate(x.split(2, dim=1)):
        piece.fill_(float(i))
    assert x.tolist() == [[0.0, 0.0, 1.0, 1.0, 2.0, 2.0]] * 2
    for i, row in enumerate(x.unbind(0)):
        row.add_(10.0 * i)
    assert x[1].tolist() == [10.0, 10.0, 11.0, 11.0, 12.0, 12.0]
    assert x._version == 5


def test_diagonal_is_writable_view():
    x = rtx.zeros(3, 4)
    x.diagonal(1).fill_(1.0)
    x.diagonal().copy_(rtx.tensor([7.0, 8.0, 9.0]))
    assert x.tolist() == [[7.0, 1.0, 0.0, 0.0], [0.0, 8.0, 1.0, 0.0], [0.0, 0.0, 9.0, 1.0]]


def test_unfold_without_overlap_is_writable_and_with_overlap_is_not():
    x = rtx.zeros(6)
    x.unfold(0, 2, 2)[:, 0].fill_(1.0)
    assert x.tolist() == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    with pytest.raises(RuntimeError, match="more than one element"):
        x.unfold(0, 3, 1).fill_(2.0)


def test_views_of_leaf_under_autograd():
    leaf = rtx.ones(2, 3, requires_grad=True)
    v = leaf[0]
    assert v.requires_grad and v._base is leaf
    with pytest.raises(RuntimeError):
        v.add_(1.0)                        # in-place on a view of a leaf that requires grad
    with rtx.no_grad():
        v.add_(1.0)                        # allowed without a graph (as an optimizer step does)
    assert leaf[0].tolist() == [2.0, 2.0, 2.0]
    assert leaf._version == 1
    # gradients through a chain of views
    leaf.T.diagonal().sum().backward()
    assert leaf.grad.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
