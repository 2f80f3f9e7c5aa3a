"""Indexing ops (gather/scatter family, index_*, masked_*, take, put, nonzero), their in-place
forms, and __getitem__/__setitem__ with autograd: values against NumPy, gradients by finite
differences and double backward in float64, PyTorch's errors."""
import numpy as np
import pytest

import rtx
from rtx.testing import OpCase, assert_close, check_case, devices

rng = np.random.default_rng(1)


def r(*shape):
    return rng.standard_normal(shape)


def L(a):
    return np.asarray(a, dtype=np.int64)


def _np_gather(a, dim, idx):
    full = [np.arange(n).reshape([-1 if k == d else 1 for k in range(idx.ndim)]) for d, n in enumerate(idx.shape)]
    full[dim] = idx
    return a[tuple(full)]


def _np_scatter(a, dim, idx, src, op=None):
    out = a.copy()
    full = [np.arange(n).reshape([-1 if k == d else 1 for k in range(idx.ndim)]) for d, n in enumerate(idx.shape)]
    full[dim] = idx
    pos = tuple(np.broadcast_arrays(*full))
    vals = src[tuple(slice(0, n) for n in idx.shape)] if np.ndim(src) else np.full(idx.shape, src)
    if op is None:
        for p, v in zip(zip(*[q.ravel() for q in pos]), vals.ravel()):
            out[p] = v
    else:
        getattr(np, op).at(out, pos, vals)
    return out


def _np_scatter_reduce(a, dim, idx, src, reduce, include_self=True):
    out = a.copy()
    pos = [np.arange(n).reshape([-1 if k == d else 1 for k in range(idx.ndim)]) for d, n in enumerate(idx.shape)]
    pos[dim] = idx
    pos = [q.ravel() for q in np.broadcast_arrays(*pos)]
    vals = src[tuple(slice(0, n) for n in idx.shape)].ravel()
    groups = {}
    for p, v in zip(zip(*pos), vals):
        groups.setdefault(p, []).append(v)
    for p, vs in groups.items():
        allv = ([a[p]] if include_self else []) + vs
        out[p] = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce](allv)
    return out


def _np_index_add(a, dim, idx, src, alpha=1):
    out = a.copy()
    np.add.at(out, (slice(None),) * dim + (idx,), alpha * src)
    return out


def _np_index_copy(a, dim, idx, src):
    out = a.copy()
    out[(slice(None),) * dim + (idx,)] = src
    return out


def _np_index_fill(a, dim, idx, value):
    out = a.copy()
    out[(slice(None),) * dim + (idx,)] = value
    return out


def _np_index_put(a, index, v, accumulate=False):
    out = a.copy()
    if accumulate:
        np.add.at(out, index, np.broadcast_to(v, out[index].shape))
    else:
        out[index] = v
    return out


def _np_masked_scatter(a, mask, src):
    out = np.broadcast_to(a, np.broadcast_shapes(a.shape, mask.shape)).copy()
    m = np.broadcast_to(mask, out.shape)
    out[m] = src.ravel()[:m.sum()]
    return out


X = r(3, 4)
IDX = L([[0, 2, 2], [1, 0, 3]])           # repeated targets along dim 1
IDX0 = L([[0, 2, 2, 1], [2, 2, 0, 0]])    # along dim 0, ties
MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])
ROWMASK = np.array([[True], [False], [True]])
I = rtx.tensor  # shorthand


CASES = [
    # gather and friends
    OpCase("gather", lambda x, i: x.gather(1, i), lambda a, i: _np_gather(a, 1, i), [X, IDX]),
    OpCase("gather_dim0", lambda x, i: rtx.gather(x, 0, i), lambda a, i: _np_gather(a, 0, i), [X, IDX0]),
    OpCase("gather_neg_dim", lambda x, i: x.gather(-1, i), lambda a, i: _np_gather(a, 1, i), [X, IDX]),
    OpCase("take_along_dim", lambda x, i: rtx.take_along_dim(x, i, 1), lambda a, i: np.take_along_axis(a, i, 1),
           [X, L([[0, 3], [1, 1], [2, 0]])]),
    OpCase("take_along_dim_bcast", lambda x, i: x.take_along_dim(i, 0),
           lambda a, i: np.take_along_axis(a, np.broadcast_to(i, (2, 4)), 0), [X, L([[2], [0]])]),
    OpCase("take_along_dim_none", lambda x, i: rtx.take_along_dim(x, i), lambda a, i: a.ravel()[i.ravel()],
           [X, L([[0, 11], [5, 5]])]),
    OpCase("take", lambda x, i: x.take(i), lambda a, i: a.ravel()[i], [X, L([[0, -1], [5, 5]])]),
    OpCase("index_select", lambda x, i: x.index_select(1, i), lambda a, i: a[:, i], [X, L([3, 0, 0])]),
    OpCase("index_select_0", lambda x, i: rtx.index_select(x, 0, i), lambda a, i: a[i], [X, L([2, 1, 2, 2])]),
    OpCase("index_select_int32", lambda x, i: x.index_select(0, i.int()), lambda a, i: a[i], [X, L([1])]),
    # scatter family
    OpCase("scatter_src", lambda x, i, s: x.scatter(1, i, s), lambda a, i, s: _np_scatter(a, 1, i, s),
           [X, L([[0, 2], [1, 3]]), r(2, 3)]),
    OpCase("scatter_value", lambda x, i: rtx.scatter(x, 0, i, value=2.5), lambda a, i: _np_scatter(a, 0, i, 2.5),
           [X, L([[0, 1, 2, 0]])]),
    OpCase("scatter_value_pos", lambda x, i: x.scatter(0, i, -1.0), lambda a, i: _np_scatter(a, 0, i, -1.0),
           [X, L([[2, 1, 2, 0]])]),
    OpCase("scatter_reduce_add", lambda x, i, s: x.scatter(1, i, s, reduce="add"),
           lambda a, i, s: _np_scatter(a, 1, i, s, "add"), [X, IDX, r(2, 3)]),
    OpCase("scatter_reduce_mul", lambda x, i, s: x.scatter(1, i, s, reduce="multiply"),
           lambda a, i, s: _np_scatter(a, 1, i, s, "multiply"), [X, IDX, r(2, 3)], grad=False),
    OpCase("scatter_add", lambda x, i, s: x.scatter_add(1, i, s), lambda a, i, s: _np_scatter(a, 1, i, s, "add"),
           [X, IDX, r(2, 4)]),
    OpCase("scatter_add_dim0", lambda x, i, s: rtx.scatter_add(x, 0, i, s),
           lambda a, i, s: _np_scatter(a, 0, i, s, "add"), [X, IDX0, r(3, 4)]),
]
for _red in ("sum", "prod", "mean", "amax", "amin"):
    for _inc in (True, False):
        CASES.append(OpCase(f"scatter_reduce_{_red}_{'self' if _inc else 'noself'}",
                            lambda x, i, s, red=_red, inc=_inc: x.scatter_reduce(1, i, s, red, include_self=inc),
                            lambda a, i, s, red=_red, inc=_inc: _np_scatter_reduce(a, 1, i, s, red, inc),
                            [X, IDX, r(2, 4)]))
CASES += [
    # zeros in prod: the gradient uses the product of the others (exact: prod is multilinear)
    OpCase("scatter_reduce_prod_zeros", lambda x, i, s: x.scatter_reduce(0, i, s, "prod"),
           lambda a, i, s: _np_scatter_reduce(a, 0, i, s, "prod"),
           [np.array([[0.0, 2.0], [3.0, 0.5]]), L([[0, 0], [0, 1], [1, 1]]), np.array([[1.5, 0.0], [0.0, 2.0],
                                                                                        [4.0, 0.0]])],
           gradgrad=False),
    OpCase("scatter_reduce_prod_one_zero", lambda x, i, s: x.scatter_reduce(0, i, s, "prod"),
           lambda a, i, s: _np_scatter_reduce(a, 0, i, s, "prod"),
           [np.array([[2.0, 2.0], [3.0, 0.5]]), L([[0, 0], [1, 1]]), np.array([[0.0, 1.5], [2.0, 0.0]])]),
    OpCase("index_add", lambda x, i, s: x.index_add(0, i, s), lambda a, i, s: _np_index_add(a, 0, i, s),
           [X, L([2, 0, 2]), r(3, 4)]),
    OpCase("index_add_alpha", lambda x, i, s: rtx.index_add(x, 1, i, s, alpha=-2.0),
           lambda a, i, s: _np_index_add(a, 1, i, s, -2.0), [X, L([3, 3]), r(3, 2)]),
    OpCase("index_copy", lambda x, i, s: x.index_copy(1, i, s), lambda a, i, s: _np_index_copy(a, 1, i, s),
           [X, L([3, 0]), r(3, 2)]),
    OpCase("index_fill", lambda x, i: x.index_fill(1, i, -1.5), lambda a, i: _np_index_fill(a, 1, i, -1.5),
           [X, L([1, 3])]),
    OpCase("index_fill_tensor", lambda x, i, v: rtx.index_fill(x, 0, i, v),
           lambda a, i, v: _np_index_fill(a, 0, i, v), [X, L([2]), np.float64(0.7)]),
    OpCase("index_put", lambda x, v: x.index_put((I([0, 2]), I([1, 1])), v),
           lambda a, v: _np_index_put(a, ([0, 2], [1, 1]), v), [X, r(2)]),
    OpCase("index_put_acc", lambda x, v: rtx.index_put(x, (I([0, 2, 0]),), v, accumulate=True),
           lambda a, v: _np_index_put(a, ([0, 2, 0],), v, True), [X, r(4)]),
    OpCase("index_put_bool", lambda x, v: x.index_put((I(MASK),), v), lambda a, v: _np_index_put(a, (MASK,), v),
           [X, r(1)]),
    OpCase("index_put_none", lambda x, v: x.index_put((None, I([3, 0])), v),
           lambda a, v: _np_index_put(a, (slice(None), [3, 0]), v), [X, r(3, 1)]),
    OpCase("put", lambda x, i, s: x.put(i, s),
           lambda a, i, s: _np_index_put(a.ravel(), (i.ravel(),), s.ravel()).reshape(a.shape),
           [X, L([[1, -1], [4, 0]]), r(2, 2)]),
    OpCase("put_acc", lambda x, i, s: rtx.put(x, i, s, accumulate=True),
           lambda a, i, s: _np_index_put(a.ravel(), (i,), s, True).reshape(a.shape), [X, L([1, 1, 7]), r(3)]),
    # masked ops
    OpCase("masked_fill", lambda x: x.masked_fill(I(MASK), 3.5), lambda a: np.where(MASK, 3.5, a), [X]),
    OpCase("masked_fill_bcast", lambda x: rtx.masked_fill(x, I(ROWMASK), -1.0), lambda a: np.where(ROWMASK, -1.0, a),
           [X]),
    OpCase("masked_fill_grow", lambda x: x.masked_fill(I(MASK), 0.0), lambda a: np.where(MASK, 0.0, a), [r(1, 4)]),
    OpCase("masked_fill_tensor", lambda x, v: x.masked_fill(I(MASK), v), lambda a, v: np.where(MASK, v, a),
           [X, np.float64(-0.3)]),
    OpCase("masked_select", lambda x: x.masked_select(I(MASK)), lambda a: a[MASK], [X]),
    OpCase("masked_select_bcast", lambda x: rtx.masked_select(x, I(MASK)), lambda a: np.broadcast_to(a, (3, 4))[MASK],
           [r(4)]),
    OpCase("masked_scatter", lambda x, s: x.masked_scatter(I(MASK), s), lambda a, s: _np_masked_scatter(a, MASK, s),
           [X, r(2, 4)]),
    OpCase("masked_scatter_bcast", lambda x, s: rtx.masked_scatter(x, I(ROWMASK), s),
           lambda a, s: _np_masked_scatter(a, ROWMASK, s), [X, r(9)]),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_op(case, device):
    check_case(case, device)


def test_case_names_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("device", devices())
def test_nonzero_argwhere(device):
    a = np.array([[0, 1.5, 0], [2, 0, -1]])
    x = rtx.tensor(a, device=device)
    nz = x.nonzero()
    assert nz.dtype == rtx.int64 and nz.device == x.device
    assert_close(nz, np.argwhere(a))
    assert_close(rtx.argwhere(x), np.argwhere(a))
    rows, cols = rtx.nonzero(x, as_tuple=True)
    assert_close(rows, np.nonzero(a)[0])
    assert_close(cols, np.nonzero(a)[1])
    assert rtx.tensor(0.0).nonzero().shape == (0, 0)
    assert rtx.tensor(3.0).nonzero().shape == (1, 0)
    assert [t.tolist() for t in rtx.tensor(3.0).nonzero(as_tuple=True)] == [[0]]


def test_dtypes_of_results():
    x = rtx.arange(6).reshape(2, 3)
    assert x.gather(1, rtx.tensor([[0], [2]])).dtype == rtx.int64
    assert x.masked_fill(x > 2, 2.7).dtype == rtx.int64          # value cast to the tensor's dtype
    assert x.masked_fill(x > 2, 2.7).tolist() == [[0, 1, 2], [2, 2, 2]]
    assert x.float().scatter_reduce(1, rtx.tensor([[0, 0, 0]]), rtx.ones(1, 3), "mean").dtype == rtx.float32
    # integer mean floors, as PyTorch
    m = rtx.tensor([[1, 2, 4]]).scatter_reduce(1, rtx.tensor([[0, 0]]), rtx.tensor([[2, 2]]), "mean")
    assert m.tolist() == [[1, 2, 4]]
    m = rtx.tensor([[5, 2, 4]]).scatter_reduce(1, rtx.tensor([[0, 0]]), rtx.tensor([[2, 2]]), "mean")
    assert m.tolist() == [[3, 2, 4]]


# ---- in-place variants --------------------------------------------------------------------------------

_INPLACE = [
    ("scatter_", lambda t: t.scatter_(1, I([[0, 2]]), I([[5.0, 6.0]])),
     lambda t: t.scatter(1, I([[0, 2]]), I([[5.0, 6.0]]))),
    ("scatter_value", lambda t: t.scatter_(0, I([[1, 0, 1, 0]]), 9.0), lambda t: t.scatter(0, I([[1, 0, 1, 0]]), 9.0)),
    ("scatter_add_", lambda t: t.scatter_add_(1, I([[0, 0]]), I([[1.0, 2.0]])),
     lambda t: t.scatter_add(1, I([[0, 0]]), I([[1.0, 2.0]]))),
    ("scatter_reduce_", lambda t: t.scatter_reduce_(1, I([[0, 0]]), I([[1.0, 2.0]]), "amax", include_self=False),
     lambda t: t.scatter_reduce(1, I([[0, 0]]), I([[1.0, 2.0]]), "amax", include_self=False)),
    ("index_add_", lambda t: t.index_add_(0, I([1, 1]), rtx.ones(2, 4), alpha=3),
     lambda t: t.index_add(0, I([1, 1]), rtx.ones(2, 4), alpha=3)),
    ("index_copy_", lambda t: t.index_copy_(1, I([3]), rtx.ones(3, 1)),
     lambda t: t.index_copy(1, I([3]), rtx.ones(3, 1))),
    ("index_fill_", lambda t: t.index_fill_(1, I([0, 2]), -2.0), lambda t: t.index_fill(1, I([0, 2]), -2.0)),
    ("index_put_", lambda t: t.index_put_((I([0, 0]), I([1, 1])), I([1.0, 2.0]), accumulate=True),
     lambda t: t.index_put((I([0, 0]), I([1, 1])), I([1.0, 2.0]), accumulate=True)),
    ("masked_fill_", lambda t: t.masked_fill_(I(ROWMASK), 0.5), lambda t: t.masked_fill(I(ROWMASK), 0.5)),
    ("masked_fill_0d", lambda t: t.masked_fill_(I(MASK), I(4.0)), lambda t: t.masked_fill(I(MASK), 4.0)),
    ("masked_scatter_", lambda t: t.masked_scatter_(I(MASK), rtx.arange(12.0)),
     lambda t: t.masked_scatter(I(MASK), rtx.arange(12.0))),
    ("put_", lambda t: t.put_(I([0, 11]), I([7.0, 8.0])), lambda t: t.put(I([0, 11]), I([7.0, 8.0]))),
]


@pytest.mark.parametrize("name, inplace, outplace", _INPLACE, ids=[c[0] for c in _INPLACE])
def test_inplace_matches_out_of_place(name, inplace, outplace):
    base = rtx.tensor(X, dtype=rtx.float32)
    expected = outplace(base)
    t = base.clone()
    v0 = t._version
    out = inplace(t)
    assert out is t
    assert t._version == v0 + 1
    assert_close(t, expected)


@pytest.mark.parametrize("name, inplace, outplace", _INPLACE, ids=[c[0] for c in _INPLACE])
def test_inplace_through_a_view_reaches_the_base(name, inplace, outplace):
    base = rtx.zeros(2, 3, 4)
    view = base[1]
    expected = outplace(rtx.zeros(3, 4))
    inplace(view)
    assert_close(base[1], expected)
    assert base._version == view._version == 1


@pytest.mark.parametrize("name, inplace, outplace", _INPLACE, ids=[c[0] for c in _INPLACE])
def test_inplace_under_autograd(name, inplace, outplace):
    leaf = rtx.tensor(X, dtype=rtx.float32, requires_grad=True)
    t = leaf * 2
    inplace_result = inplace(t)  # records: t takes over the op's history
    assert inplace_result is t and t.requires_grad and t._version == 1
    expected = outplace(rtx.tensor(X * 2, dtype=rtx.float32))
    assert_close(t.detach(), expected)
    t.sum().backward()
    # d/dleaf: 2 where the element of t survived (not overwritten), 0 where overwritten
    probe = rtx.tensor(X * 2, dtype=rtx.float32, requires_grad=True)
    outplace(probe * 1).sum().backward()
    assert_close(leaf.grad, probe.grad * 2)


def test_inplace_on_leaf_requiring_grad_raises():
    leaf = rtx.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        leaf.index_fill_(0, I([0]), 1.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        leaf.masked_fill_(I([True, False, False]), 1.0)
    with rtx.no_grad():
        leaf.index_fill_(0, I([0]), 1.0)   # allowed without a graph, as in PyTorch
    assert leaf.tolist() == [1.0, 0.0, 0.0]


def test_masked_fill_gradient_reaches_value_tensor():
    x = rtx.tensor(X, requires_grad=True)
    v = rtx.tensor(2.0, dtype=rtx.float64, requires_grad=True)
    x.masked_fill(I(MASK), v).sum().backward()
    assert v.grad.item() == MASK.sum()
    assert_close(x.grad, (~MASK).astype(np.float64))


def test_index_put_value_broadcast_grad():
    v = rtx.tensor([1.0, 2.0], requires_grad=True)
    out = rtx.zeros(3, 2).index_put((I([0, 2]),), v)
    (out * rtx.arange(6.0).reshape(3, 2)).sum().backward()
    assert_close(v.grad, np.array([0.0 + 4.0, 1.0 + 5.0]))


# ---- errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn, exc, match", [
    (lambda: rtx.zeros(3, 4).gather(1, I([[4]])), IndexError, "index 4 is out of bounds for dimension 1 with size 4"),
    (lambda: rtx.zeros(3, 4).gather(1, I([[-1]])), IndexError, "index -1 is out of bounds for dimension 1 with size 4"),
    (lambda: rtx.zeros(3, 4).gather(1, I([[1]], dtype=rtx.int32)), RuntimeError, "gather\\(\\): Expected dtype int64 "
                                                                                   "for index"),
    (lambda: rtx.zeros(3, 4).gather(1, I([1])), RuntimeError, "Index tensor must have the same number of dimensions"),
    (lambda: rtx.zeros(3, 4).gather(1, I([[1]] * 4)), RuntimeError, "to be no larger than self"),
    (lambda: rtx.zeros(3, 4).scatter(0, I([[3]]), 1.0), IndexError, "index 3 is out of bounds for dimension 0 with "
                                                                    "size 3"),
    (lambda: rtx.zeros(3, 4).scatter(0, I([[0]], dtype=rtx.int32), 1.0), RuntimeError, "scatter\\(\\): Expected "
                                                                                        "dtype int64 for index"),
    (lambda: rtx.zeros(3, 4).scatter(0, I([[0, 1]]), rtx.ones(1, 1)), RuntimeError, "no larger size than src"),
    (lambda: rtx.zeros(3, 4).scatter(0, I([[0]]), rtx.ones(1, 1, dtype=rtx.float64)), RuntimeError,
     "Expected self.dtype to be equal to src.dtype"),
    (lambda: rtx.zeros(3, 4).scatter_add(0, I([[0]]), rtx.ones(1, 1, dtype=rtx.float64)), RuntimeError,
     "Expected self.dtype to be equal to src.dtype"),
    (lambda: rtx.zeros(3).scatter_reduce(0, I([0]), rtx.ones(1), "max"), RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin"),
    (lambda: rtx.zeros(3).scatter(0, I([0]), rtx.ones(1), reduce="max"), RuntimeError,
     "reduce argument must be either add or multiply"),
    (lambda: rtx.zeros(3, 4).index_select(0, I([3])), IndexError, "index 3 is out of bounds for dimension 0 with "
                                                                   "size 3"),
    (lambda: rtx.zeros(3, 4).index_select(0, I([0.0])), RuntimeError, "Expected dtype int32 or int64 for index"),
    (lambda: rtx.zeros(3, 4).index_select(0, I([[0]])), IndexError, "Index is supposed to be a vector"),
    (lambda: rtx.zeros(3, 4).index_add(0, I([0]), rtx.ones(2, 4)), RuntimeError, "must have same slice shapes"),
    (lambda: rtx.zeros(3, 4).index_add(0, I([0]), rtx.ones(1, 4, dtype=rtx.float64)), RuntimeError,
     "must have the same scalar type"),
    (lambda: rtx.zeros(3, 4).index_copy(0, I([0], dtype=rtx.int32), rtx.ones(1, 4)), RuntimeError,
     "Expected dtype int64 for index"),
    (lambda: rtx.zeros(3, 4).index_fill(1, I([4]), 0.0), IndexError, "index 4 is out of bounds for dimension 1"),
    (lambda: rtx.zeros(3).masked_fill(I([1, 0, 1]), 0.0), RuntimeError, "masked_fill_ only supports boolean masks"),
    (lambda: rtx.zeros(3).masked_fill(I([True, False, True]), rtx.ones(2)), RuntimeError,
     "only supports a 0-dimensional value tensor"),
    (lambda: rtx.zeros(3).masked_fill_(I([[True, False, True]] * 2), 0.0), RuntimeError,
     "output with shape \\[3\\] doesn't match the broadcast shape \\[2, 3\\]"),
    (lambda: rtx.zeros(3).masked_scatter(I([True, True, True]), rtx.ones(2)), RuntimeError,
     "Number of elements of source \\(2\\) < number of ones in mask \\(3\\)"),
    (lambda: rtx.zeros(3).masked_select(I([True, False])), RuntimeError, "must be broadcastable"),
    (lambda: rtx.zeros(2, 3).take(I([6])), IndexError, "out of range: tried to access index 6 on a tensor of 6 "
                                                       "elements"),
    (lambda: rtx.zeros(2, 3).take(I([-7])), IndexError, "tried to access index -7"),
    (lambda: rtx.zeros(2, 3).put_(I([0, 1]), rtx.ones(3)), RuntimeError, "same number of elements"),
    (lambda: rtx.zeros(2, 3).index_put_((I([2]),), rtx.ones(3)), IndexError, "index 2 is out of bounds for "
                                                                             "dimension 0 with size 2"),
    (lambda: rtx.zeros(2, 3).index_put_((I([0]),), rtx.ones(3, dtype=rtx.float64)), RuntimeError,
     "Index put requires the source and destination dtypes match"),
    (lambda: rtx.take_along_dim(rtx.zeros(2, 3), I([0]), 1), RuntimeError, "same number of dimensions"),
])
def test_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


# ---- __getitem__ / __setitem__ -----------------------------------------------------------------------------

A = np.arange(60.0).reshape(3, 4, 5)
_INDICES = [
    1, -1, (0, 2), (-1, -2, -3), slice(1, None), (slice(None), slice(None, None, 2)), (Ellipsis, 1),
    (None, 1, Ellipsis, None), (1, None, slice(1, 3)), ([0, 2],), ([2, 0, 2], slice(None), [1, 1, 4]),
    (slice(None), [0, 3]), (1, [3, 0], slice(1, None)), ([[0, 1], [2, 2]],), (A[:, :, 0] > 20,),
    (slice(None), np.array([True, False, True, True])), (A > 30,), (Ellipsis, [4, -1]), (0, A[0, :, 0] > 5),
    (slice(0, 3, 2), -2), (slice(None), slice(None), slice(10, 20)),
]


def _to_rtx_index(idx):
    def conv(i):
        if isinstance(i, np.ndarray):
            return rtx.tensor(i)
        if isinstance(i, list):
            return rtx.tensor(i)
        return i
    return tuple(conv(i) for i in idx) if isinstance(idx, tuple) else conv(idx)


@pytest.mark.parametrize("index", _INDICES, ids=[str(i)[:40] for i in range(len(_INDICES))])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_getitem_matches_numpy(index, as_tensor):
    x = rtx.tensor(A)
    idx = _to_rtx_index(index) if as_tensor else index
    assert_close(x[idx], A[index])


@pytest.mark.parametrize("index", _INDICES, ids=[str(i)[:40] for i in range(len(_INDICES))])
def test_setitem_matches_numpy(index):
    expected = A.copy()
    expected[index] = -7.0
    x = rtx.tensor(A)
    x[_to_rtx_index(index)] = -7.0
    assert_close(x, expected)
    # a tensor value broadcast into the indexed region
    region = A[index]
    val = rng.standard_normal(region.shape[-1:] if region.ndim else ())
    expected = A.copy()
    expected[index] = val
    x = rtx.tensor(A)
    x[_to_rtx_index(index)] = rtx.tensor(val)
    assert_close(x, expected)
    assert x._version == 1


@pytest.mark.parametrize("index", _INDICES, ids=[str(i)[:40] for i in range(len(_INDICES))])
def test_getitem_gradient(index):
    case = OpCase("getitem", lambda x: x[_to_rtx_index(index)], lambda a: a[index], [A[:, :, :] / 10 + 0.1],
                  gradgrad=False)
    check_case(case)


def test_basic_index_is_view_advanced_is_copy():
    x = rtx.arange(12.0).reshape(3, 4)
    v = x[1]
    v[0] = 100.0                       # writes through
    assert x[1, 0].item() == 100.0 and x._version == v._version == 1
    s = x[0, 0]                        # a 0-d view, not a copy
    s.fill_(-1.0)
    assert x[0, 0].item() == -1.0
    c = x[[1]]
    c.fill_(0.0)
    assert x[1, 0].item() == 100.0 and c._vc is not x._vc


def test_setitem_autograd_flows_to_history_and_value():
    leaf = rtx.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    val = rtx.tensor([10.0, 20.0], requires_grad=True)
    y = leaf * 3
    y[:, 1] = val * 2
    assert y.requires_grad and y._version == 1
    (y * rtx.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    assert_close(leaf.grad, np.array([[3.0, 0.0, 9.0], [12.0, 0.0, 18.0]]))
    assert_close(val.grad, np.array([2.0 * 2, 5.0 * 2]))


def test_setitem_value_with_grad_into_plain_tensor():
    v = rtx.tensor([1.0, 2.0], requires_grad=True)
    out = rtx.zeros(3, 2)
    out[1] = v
    out[2] = v * v
    assert out.grad_fn is not None
    out.sum().backward()
    assert_close(v.grad, np.array([1.0 + 2.0, 1.0 + 4.0]))


def test_setitem_advanced_index_gradients():
    leaf = rtx.tensor(np.ones((4, 2)), requires_grad=True)
    val = rtx.tensor(np.array([[5.0, 6.0]]), requires_grad=True)
    y = leaf.clone()
    y[rtx.tensor([0, 3])] = val           # broadcast over two rows
    (y * rtx.arange(8.0).reshape(4, 2)).sum().backward()
    assert_close(leaf.grad, np.array([[0.0, 0.0], [2.0, 3.0], [4.0, 5.0], [0.0, 0.0]]))
    assert_close(val.grad, np.array([[0.0 + 6.0, 1.0 + 7.0]]))


def test_setitem_double_backward():
    def f(x, v):
        y = x * x
        y[1:] = v * v
        return y
    from rtx.autograd import gradcheck, gradgradcheck
    x = rtx.tensor(r(3, 2), requires_grad=True)
    v = rtx.tensor(r(2), requires_grad=True)
    assert gradcheck(f, (x, v))
    assert gradgradcheck(f, (x, v))


def test_setitem_on_leaf_requiring_grad_raises():
    leaf = rtx.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "
                                           "operation"):
        leaf[0] = 1.0
    with rtx.no_grad():
        leaf[0] = 1.0
    assert leaf[0].item() == 1.0


def test_modifying_a_saved_tensor_raises_at_backward():
    leaf = rtx.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = leaf * 1
    z = (y * y).sum()                     # Mul saves y
    y[0] = 5.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_modifying_a_saved_tensor_through_a_view_raises_at_backward():
    leaf = rtx.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (leaf * 1).detach()
    y.requires_grad_(True)
    z = (y.exp()).sum()                   # exp saves its output
    w = y * 2
    with rtx.no_grad():
        y[1:].mul_(3.0)                   # the view shares y's version counter
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (z + w.sum()).backward()


def test_setitem_errors():
    x = rtx.zeros(2, 3)
    with pytest.raises(IndexError, match="index 2 is out of bounds for dimension 0 with size 2"):
        x[2] = 1.0
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[0] = rtx.ones(4)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single"):
        rtx.zeros(3).expand(2, 3)[0] = 1.0


def test_negative_step_refused_as_pytorch():
    with pytest.raises(ValueError, match="step must be greater than zero"):
        rtx.zeros(3)[::-1]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        rtx.zeros(3)[::-1] = 1.0
