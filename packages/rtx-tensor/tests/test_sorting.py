"""Sorting and selection: sort/argsort/msort/topk/kthvalue (values against NumPy, gradients of
the values), unique/unique_consecutive, searchsorted/bucketize; named results; errors."""
import numpy as np
import pytest

import rtx
from rtx.testing import OpCase, assert_close, check_case, devices

rng = np.random.default_rng(2)


def r(*shape):
    return rng.standard_normal(shape)


def _np_sort(a, dim=-1, descending=False):
    idx = np.argsort(-a if descending else a, axis=dim, kind="stable")
    return np.take_along_axis(a, idx, dim), idx


def _np_topk(a, k, dim=-1, largest=True):
    v, i = _np_sort(a, dim, largest)
    sl = [slice(None)] * a.ndim
    sl[dim] = slice(0, k)
    return v[tuple(sl)], i[tuple(sl)]


def _np_kth(a, k, dim=-1, keepdim=False):
    v, i = _np_sort(a, dim)
    v, i = np.take(v, [k - 1], axis=dim), np.take(i, [k - 1], axis=dim)
    return (v, i) if keepdim else (v.squeeze(dim), i.squeeze(dim))


X = r(3, 5)
X3 = r(2, 3, 4)

CASES = [
    OpCase("sort", lambda x: x.sort(), lambda a: _np_sort(a), [X]),
    OpCase("sort_dim0", lambda x: rtx.sort(x, 0), lambda a: _np_sort(a, 0), [X]),
    OpCase("sort_desc", lambda x: x.sort(dim=1, descending=True), lambda a: _np_sort(a, 1, True), [X3]),
    OpCase("sort_stable", lambda x: rtx.sort(x, stable=True, dim=-1), lambda a: _np_sort(a), [X3]),
    OpCase("sort_1d", lambda x: x.sort(descending=True), lambda a: _np_sort(a, -1, True), [r(6)]),
    OpCase("sort_0d", lambda x: x.sort(), lambda a: (a, np.int64(0)), [np.float64(1.5)]),
    OpCase("argsort", lambda x: x.argsort(), lambda a: np.argsort(a, kind="stable"), [X], grad=False),
    OpCase("argsort_desc", lambda x: rtx.argsort(x, 0, descending=True), lambda a: _np_sort(a, 0, True)[1], [X],
           grad=False),
    OpCase("msort", lambda x: rtx.msort(x), lambda a: np.sort(a, 0), [X]),
    OpCase("topk", lambda x: x.topk(2), lambda a: _np_topk(a, 2), [X]),
    OpCase("topk_smallest", lambda x: rtx.topk(x, 3, largest=False), lambda a: _np_topk(a, 3, -1, False), [X]),
    OpCase("topk_dim", lambda x: x.topk(2, dim=1), lambda a: _np_topk(a, 2, 1), [X3]),
    OpCase("topk_all", lambda x: x.topk(5), lambda a: _np_topk(a, 5), [X]),
    OpCase("topk_zero", lambda x: x.topk(0), lambda a: _np_topk(a, 0), [X], grad=False),
    OpCase("kthvalue", lambda x: x.kthvalue(2), lambda a: _np_kth(a, 2), [X]),
    OpCase("kthvalue_dim", lambda x: rtx.kthvalue(x, 3, 0), lambda a: _np_kth(a, 3, 0), [X]),
    OpCase("kthvalue_keepdim", lambda x: x.kthvalue(1, 1, keepdim=True), lambda a: _np_kth(a, 1, 1, True), [X3]),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_op(case, device):
    check_case(case, device)


def test_named_results():
    x = rtx.tensor([[3.0, 1.0, 2.0]])
    res = x.sort()
    assert type(res).__name__ == "sort" and res._fields == ("values", "indices")
    v, i = res
    assert v is res.values and i is res.indices and res[0] is v
    assert type(x.topk(1)).__name__ == "topk"
    assert type(x.kthvalue(1)).__name__ == "kthvalue"
    assert x.kthvalue(1).values.item() == 1.0 and x.kthvalue(1).indices.item() == 1
    assert x.sort().indices.dtype == rtx.int64
    from rtx._tensor.ops import return_types
    assert return_types.aminmax._fields == ("min", "max")
    for name in ("max", "min", "median", "mode", "cummax", "cummin"):
        assert getattr(return_types, name)._fields == ("values", "indices")


def test_stable_ties_both_directions():
    x = rtx.tensor([2, 1, 2, 1, 2])
    assert x.sort().indices.tolist() == [1, 3, 0, 2, 4]
    assert x.sort(descending=True).indices.tolist() == [0, 2, 4, 1, 3]
    assert x.argsort(descending=True, stable=True).tolist() == [0, 2, 4, 1, 3]


def test_nan_sorts_as_largest():
    x = rtx.tensor([1.0, float("nan"), -1.0, 3.0])
    v, i = x.sort()
    assert i.tolist() == [2, 0, 3, 1]
    v, i = x.sort(descending=True)
    assert i.tolist() == [1, 3, 0, 2]
    assert x.topk(1).indices.tolist() == [1]


@pytest.mark.parametrize("dtype", [rtx.int64, rtx.int32, rtx.uint8, rtx.bool, rtx.float16])
def test_other_dtypes(dtype):
    a = np.array([3, 0, 2, 0, 1])
    x = rtx.tensor(a).to(dtype)
    v, i = x.sort(descending=True)
    assert v.dtype == dtype and i.dtype == rtx.int64
    ref = np.sort(a.astype(x.numpy().dtype))[::-1]
    assert_close(v, ref)
    assert x.topk(2).values.dtype == dtype


def test_gradient_goes_to_chosen_positions():
    x = rtx.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], requires_grad=True)
    v, _ = x.topk(2)
    (v * rtx.tensor([[10.0, 1.0], [10.0, 1.0]])).sum().backward()
    assert_close(x.grad, np.array([[10.0, 0.0, 1.0], [0.0, 10.0, 1.0]]))
    x.grad = None
    x.kthvalue(2, dim=1).values.sum().backward()
    assert_close(x.grad, np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]))
    assert x.sort().values.grad_fn.name() == "SortBackward0"


# ---- unique ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", devices())
def test_unique_flat(device):
    a = np.array([[3, 1, 2], [3, 3, 1]])
    x = rtx.tensor(a, device=device)
    u = rtx.unique(x)
    assert_close(u, np.unique(a))
    u, inv, cnt = x.unique(return_inverse=True, return_counts=True)
    ru, rinv, rcnt = np.unique(a, return_inverse=True, return_counts=True)
    assert_close(u, ru)
    assert_close(inv, rinv.reshape(a.shape))
    assert inv.shape == x.shape and inv.dtype == rtx.int64
    assert_close(cnt, rcnt)
    u, cnt = x.unique(sorted=False, return_counts=True)
    assert_close(u[inv], a)
    assert cnt.sum().item() == a.size


def test_unique_dim():
    a = np.array([[1, 2], [3, 4], [1, 2], [0, 9]])
    u, inv, cnt = rtx.tensor(a).unique(dim=0, return_inverse=True, return_counts=True)
    ru, rinv, rcnt = np.unique(a, axis=0, return_inverse=True, return_counts=True)
    assert_close(u, ru)
    assert_close(inv, rinv.reshape(-1))
    assert_close(cnt, rcnt)
    u = rtx.tensor(a).unique(dim=1)
    assert_close(u, np.unique(a, axis=1))


def test_unique_float_and_empty():
    x = rtx.tensor([1.5, -0.5, 1.5])
    assert x.unique().tolist() == [-0.5, 1.5]
    assert x.unique().dtype == rtx.float32
    e = rtx.zeros(0)
    u, inv, cnt = e.unique(return_inverse=True, return_counts=True)
    assert u.shape == (0,) and inv.shape == (0,) and cnt.shape == (0,)


def test_unique_consecutive():
    x = rtx.tensor([1, 1, 2, 2, 3, 1, 1, 2])
    assert x.unique_consecutive().tolist() == [1, 2, 3, 1, 2]
    u, inv, cnt = rtx.unique_consecutive(x, return_inverse=True, return_counts=True)
    assert inv.tolist() == [0, 0, 1, 1, 2, 3, 3, 4]
    assert cnt.tolist() == [2, 2, 1, 2, 1]
    m = rtx.tensor([[1, 1, 2, 2], [0, 0, 5, 6]])
    u, inv, cnt = m.unique_consecutive(dim=1, return_inverse=True, return_counts=True)
    assert u.tolist() == [[1, 2, 2], [0, 5, 6]]
    assert inv.tolist() == [0, 0, 1, 2] and cnt.tolist() == [2, 1, 1]
    u, cnt = rtx.tensor([[1, 2], [1, 2], [3, 4]]).unique_consecutive(dim=0, return_counts=True)
    assert u.tolist() == [[1, 2], [3, 4]] and cnt.tolist() == [2, 1]
    m2 = rtx.tensor([[1, 1], [2, 2]])
    assert m2.unique_consecutive(return_inverse=True)[1].shape == (2, 2)


# ---- searchsorted, bucketize ---------------------------------------------------------------------------

SEQ = np.array([1.0, 3.0, 5.0, 7.0, 9.0])
VALS = np.array([[3.0, 6.0, 9.0], [0.0, 1.0, 10.0]])


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_1d(device, right):
    out = rtx.searchsorted(rtx.tensor(SEQ, device=device), rtx.tensor(VALS, device=device), right=right)
    assert out.dtype == rtx.int64 and out.shape == VALS.shape
    assert_close(out, np.searchsorted(SEQ, VALS, side="right" if right else "left"))
    side = rtx.searchsorted(rtx.tensor(SEQ), rtx.tensor(VALS), side="right" if right else "left")
    assert_close(side, out)


def test_searchsorted_nd_scalar_sorter_int32():
    seq = np.array([[1, 3, 5, 7, 9], [2, 4, 6, 8, 10]])
    vals = np.array([[3, 6, 9], [3, 6, 9]])
    out = rtx.searchsorted(rtx.tensor(seq), rtx.tensor(vals))
    assert out.tolist() == [[1, 3, 4], [1, 2, 4]]
    assert rtx.searchsorted(rtx.tensor(SEQ), 5.0).item() == 2
    assert rtx.searchsorted(rtx.tensor(SEQ), 5.0, right=True).shape == ()
    unsorted = rtx.tensor([5.0, 1.0, 9.0, 3.0, 7.0])
    sorter = unsorted.argsort()
    assert_close(rtx.searchsorted(unsorted, rtx.tensor(VALS), sorter=sorter), np.searchsorted(SEQ, VALS))
    assert rtx.searchsorted(rtx.tensor(SEQ), rtx.tensor(VALS), out_int32=True).dtype == rtx.int32


@pytest.mark.parametrize("right", [False, True])
def test_bucketize(right):
    b = rtx.tensor([1, 3, 5, 7, 9])
    x = rtx.tensor([[3, 6, 9], [3, 6, 9]])
    out = rtx.bucketize(x, b, right=right)
    expected = [[1, 3, 4], [1, 3, 4]] if not right else [[2, 3, 5], [2, 3, 5]]
    assert out.tolist() == expected
    assert rtx.bucketize(x, b, out_int32=True).dtype == rtx.int32


# ---- errors -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn, exc, match", [
    (lambda: rtx.zeros(3).topk(4), RuntimeError, "selected index k out of range"),
    (lambda: rtx.zeros(3).kthvalue(0), IndexError, "kthvalue\\(\\): selected number k = 0 out of range"),
    (lambda: rtx.zeros(3).kthvalue(4), IndexError, "out of range for dimension 0"),
    (lambda: rtx.zeros(3).sort(1), IndexError, "Dimension out of range"),
    (lambda: rtx.zeros(3, dtype=rtx.complex64).sort(), RuntimeError, "not supported for complex"),
    (lambda: rtx.searchsorted(rtx.zeros(2, 3), rtx.zeros(3, 3)), RuntimeError, "first N-1 dimensions of boundaries "
                                                                                "tensor and input value tensor"),
    (lambda: rtx.searchsorted(rtx.zeros(3), rtx.zeros(2), right=True, side="left"), RuntimeError,
     "side and right can't be set to opposites"),
    (lambda: rtx.searchsorted(rtx.zeros(3), rtx.zeros(2), side="middle"), RuntimeError,
     "side can only be 'left' or 'right'"),
    (lambda: rtx.bucketize(rtx.zeros(2), rtx.zeros(2, 2)), RuntimeError, "boundaries tensor must be 1 dimension"),
])
def test_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()
