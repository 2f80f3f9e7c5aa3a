"""The no-graph fast paths of the common ops (reshape/view argument parsing, stack, cat, var/std,
max/min with a dim, logsumexp along a short axis) give what the Primitive path and NumPy give,
raise the same errors, and step aside for the graph and for a recording hook."""
import numpy as np
import pytest

import rtx
from rtx.autograd import gradcheck
from rtx.extend import recording


def _pair(shape, dtype=np.float32, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return rtx.tensor(a), rtx.tensor(a, requires_grad=True), a


@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 1), (1, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std_fast_path_matches_graph_path_and_numpy(dim, keepdim, correction):
    plain, graph, a = _pair((3, 4, 5))
    for fn, ref in ((rtx.var, np.var), (rtx.std, np.std)):
        fast = fn(plain, dim, keepdim=keepdim, correction=correction)
        slow = fn(graph, dim, keepdim=keepdim, correction=correction)
        assert not fast.requires_grad and slow.requires_grad
        assert fast.shape == slow.shape and fast.dtype == slow.dtype == rtx.float32
        np.testing.assert_array_equal(fast.numpy(), slow.detach().numpy())  # the same steps, the same bits
        axis = dim if dim is None or isinstance(dim, tuple) else (dim,)
        np.testing.assert_allclose(fast.numpy(), ref(a.astype(np.float64), axis=axis, ddof=correction,
                                                     keepdims=keepdim), rtol=1e-5)
    v, m = rtx.var_mean(plain, dim, keepdim=keepdim, correction=correction)
    vg, mg = rtx.var_mean(graph, dim, keepdim=keepdim, correction=correction)
    np.testing.assert_array_equal(v.numpy(), vg.detach().numpy())
    np.testing.assert_array_equal(m.numpy(), mg.detach().numpy())
    assert m.shape == mg.shape


def test_var_edge_cases_keep_their_old_answers():
    one = rtx.tensor([3.0])
    assert np.isnan(one.var().item()) and np.isnan(one.std().item())   # n - correction = 0
    assert rtx.tensor([1.0, 2.0]).var(correction=0).item() == 0.25
    with pytest.raises(RuntimeError, match="floating point"):
        rtx.tensor([1, 2, 3]).var()
    with rtx.no_grad():
        x = rtx.randn(6, requires_grad=True)
        assert not x.std().requires_grad
    np.testing.assert_allclose(rtx.tensor([1.0, 2.0, 4.0], dtype=rtx.float16).std().item(),
                               np.std([1.0, 2.0, 4.0], ddof=1), rtol=1e-3)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_dim_fast_path(op, dim, keepdim):
    a = np.array([[1.0, 5.0, 5.0, -2.0], [np.nan, 0.0, 3.0, np.nan], [2.0, 2.0, -7.0, 0.5]], np.float32)
    fast = getattr(rtx.tensor(a), op)(dim, keepdim)
    slow = getattr(rtx.tensor(a, requires_grad=True), op)(dim, keepdim)
    np.testing.assert_array_equal(fast.values.numpy(), slow.values.detach().numpy())
    np.testing.assert_array_equal(fast.indices.numpy(), slow.indices.numpy())
    assert fast.indices.dtype == rtx.int64 and type(fast).__name__ == op
    arg = np.argmax if op == "max" else np.argmin
    np.testing.assert_array_equal(fast.indices.numpy(), arg(a, axis=dim, keepdims=keepdim))  # first of ties, NaN
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(rtx.tensor(a), op)(2)
    with pytest.raises(IndexError, match="non-zero size"):
        getattr(rtx.zeros(2, 0), op)(1)


@pytest.mark.parametrize("shape,dim", [((256, 2), -1), ((5, 3), 1), ((4, 7), 0), ((3, 4, 2), 2), ((2, 3, 5), 1),
                                       ((6, 1), 1), ((5, 6), 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_logsumexp_short_axis_matches_reference(shape, dim, keepdim):
    a = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 5
    got = rtx.tensor(a).logsumexp(dim, keepdim=keepdim)
    want = np.log(np.exp(a.astype(np.float64)).sum(axis=dim, keepdims=keepdim))
    assert got.shape == want.shape and got.dtype == rtx.float32
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_logsumexp_short_axis_infinities_and_nan():
    inf = np.inf
    a = np.array([[-inf, -inf], [inf, 1.0], [inf, inf], [np.nan, 0.0], [1000.0, 1000.0], [-inf, 2.0]], np.float32)
    got = rtx.tensor(a).logsumexp(1).numpy()
    np.testing.assert_array_equal(got[:4], [-inf, inf, inf, np.nan])
    np.testing.assert_allclose(got[4:], [1000.0 + np.log(2.0), 2.0], rtol=1e-6)
    np.testing.assert_array_equal(rtx.tensor(a.T).logsumexp(0).numpy()[:4], [-inf, inf, inf, np.nan])


@pytest.mark.parametrize("shape,dim", [((4, 3), 1), ((2, 4, 3), 1), ((3, 2), 0)])
def test_logsumexp_short_axis_gradients(shape, dim):
    x = rtx.randn(*shape, dtype=rtx.float64, requires_grad=True)
    assert gradcheck(lambda t: t.logsumexp(dim), (x,))
    assert gradcheck(lambda t: t.logsumexp(dim, keepdim=True), (x,))


@pytest.mark.parametrize("dim", [-3, -2, -1, 0, 1, 2])
def test_stack_fast_path_matches_graph_path(dim):
    plain, graph, a = _pair((3, 4))
    b = a * 2
    fast = rtx.stack([plain, rtx.tensor(b)], dim)
    slow = rtx.stack([graph, rtx.tensor(b)], dim)
    assert not fast.requires_grad and slow.requires_grad
    np.testing.assert_array_equal(fast.numpy(), np.stack([a, b], dim))
    np.testing.assert_array_equal(slow.detach().numpy(), np.stack([a, b], dim))
    fast[(0,) * fast.ndim] = 100.0  # a fresh array, not a view of either input
    assert plain.numpy()[0, 0] == a[0, 0]


def test_stack_and_cat_errors_and_promotion():
    x, i = rtx.ones(2, 3), rtx.ones(2, 3, dtype=rtx.int64)
    assert rtx.stack([i, x]).dtype == rtx.float32 and rtx.cat([i, x]).dtype == rtx.float32
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        rtx.stack([x, rtx.ones(3, 2)])
    with pytest.raises(IndexError, match="Dimension out of range"):
        rtx.stack([x, x], 3)
    with pytest.raises(TypeError, match="element 1 is int"):
        rtx.stack([x, 1])
    with pytest.raises(TypeError, match="element 0 is list"):
        rtx.cat([[1.0], x])
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        rtx.cat([x, rtx.ones(2, 4)])
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        rtx.cat([x, rtx.ones(3)])
    assert rtx.cat([rtx.zeros(0), x, rtx.zeros(0)]).shape == (2, 3)  # PyTorch's legacy skip of 1-D empties
    out = rtx.empty(2, 2, 3)
    assert rtx.stack([x, x], out=out) is out and out.sum().item() == 12


def test_reshape_view_arguments_and_errors():
    x = rtx.arange(24.0)
    assert x.reshape(2, -1, 3).shape == (2, 4, 3) and x.view((4, 6)).shape == (4, 6)
    assert x.reshape([np.int64(3), rtx.tensor(8)]).shape == (3, 8)
    assert x.reshape(rtx.Size([6, 4])).shape == (6, 4)
    assert rtx.zeros(0, 3).reshape(-1, 6).shape == (0, 6)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.reshape(-1, -1)
    with pytest.raises(RuntimeError, match="invalid shape dimension -2"):
        x.reshape(-2, 12)
    with pytest.raises(RuntimeError, match=r"shape '\[5, -1\]' is invalid for input of size 24"):
        x.reshape(5, -1)
    with pytest.raises(RuntimeError, match=r"shape '\[5, 5\]' is invalid for input of size 24"):
        x.view(5, 5)
    with pytest.raises(RuntimeError, match="invalid for input of size 0"):
        rtx.zeros(0, 3).reshape(0, -1)
    t = x.view(4, 6).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.view(-1)
    flat = t.reshape(-1)  # a copy: its own version counter
    flat.add_(1.0)
    assert x[0].item() == 0.0 and t.reshape(6, 4)._version == x._version
    v = x.view(4, 6)
    v.add_(1.0)
    assert x[0].item() == 1.0 and x._version == v._version


class _Log:
    """A hook that runs each op (unhooked) and logs its name."""

    def __init__(self):
        self.ops = []

    def primitive(self, cls, inputs, attrs):
        self.ops.append(cls.op)
        with recording(None):
            return cls.apply(*inputs, **attrs)


def test_hook_sees_primitives_of_fast_path_ops():
    x, p = rtx.randn(4, 5), rtx.randn(6, 2)
    log = _Log()
    with recording(log):
        x.std(), x.var(1), x.max(1), rtx.stack([x, x]), p.logsumexp(-1), x.reshape(20), x.mean(1)
    var = ["mean", "sub", "mul", "sum", "div", "reshape"]
    assert log.ops == var + ["safe_sqrt"] + var + ["gather", "reshape", "reshape", "reshape", "cat", "logsumexp",
                                                   "reshape", "mean"]


@pytest.mark.parametrize("index", [0, -1, slice(1, 3), (1, 2), (slice(None), 1), (slice(None, None, 2), -2),
                                   (0, slice(1, None), 3)])
def test_simple_getitem_fast_path_is_a_view(index):
    plain, graph, a = _pair((4, 5, 6))
    fast, slow = plain[index], graph[index]
    np.testing.assert_array_equal(fast.numpy(), a[index])
    np.testing.assert_array_equal(slow.detach().numpy(), a[index])
    assert fast.shape == slow.shape and slow.grad_fn is not None
    fast.add_(1.0)  # a view: the write shows in the base, and both count the version
    assert plain._version == fast._version == 1
    np.testing.assert_array_equal(plain.numpy()[index], a[index] + 1)


def test_simple_getitem_errors():
    x = rtx.zeros(3, 4)
    with pytest.raises(IndexError, match=r"out of bounds for dimension 0 with size 3 \(indexing a tensor of shape"):
        x[3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[0, ::-1]
    assert x[True].shape == (1, 3, 4) and x[None, 1].shape == (1, 4) and x[..., 1].shape == (3,)


@pytest.mark.parametrize("op", [lambda t: t.permute(2, 0, 1), lambda t: t.transpose(0, -1), lambda t: t.mT,
                                lambda t: t.reshape(20, 6), lambda t: t.view(-1, 3)])
def test_view_fast_paths_share_memory(op):
    plain, graph, a = _pair((4, 5, 6))
    fast, slow = op(plain), op(graph)
    np.testing.assert_array_equal(fast.numpy(), slow.detach().numpy())
    fast.mul_(2.0)
    assert plain._version == 1 and fast._base is plain
    np.testing.assert_array_equal(plain.numpy(), a * 2)


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2), ()])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_mean_fast_path_matches_graph_path(dim, keepdim, dtype):
    plain, graph, a = _pair((3, 4, 5), dtype)
    for fn in (rtx.sum, rtx.mean):
        fast, slow = fn(plain, dim, keepdim), fn(graph, dim, keepdim)
        assert fast.dtype == slow.dtype and fast.shape == slow.shape and not fast.requires_grad
        np.testing.assert_array_equal(fast.numpy(), slow.detach().numpy())
    assert rtx.mean(rtx.zeros(0, 3), 0).shape == (3,) and np.isnan(rtx.mean(rtx.zeros(0, 3), 0).numpy()).all()
    with pytest.raises(IndexError, match="Dimension out of range"):
        rtx.sum(plain, 3)


@pytest.mark.parametrize("exponent", [2, 3, 0.5, -1.5, 0, 2.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_pow_scalar_fast_path_matches_pow(exponent, dtype):
    plain, graph, a = _pair((3, 4), dtype)
    plain, graph = plain.abs() + 0.5, graph.abs() + 0.5
    fast, slow, ref = plain ** exponent, graph ** exponent, rtx.pow(plain, exponent)
    assert fast.dtype == slow.dtype == ref.dtype and slow.grad_fn is not None and not fast.requires_grad
    np.testing.assert_array_equal(fast.numpy(), ref.numpy())
    np.testing.assert_array_equal(fast.numpy(), slow.detach().numpy())
    assert (rtx.arange(4) ** 2).dtype == rtx.int64 and (rtx.arange(4) ** 0.5).dtype == rtx.float32
    with pytest.raises(RuntimeError, match="negative integer powers"):
        rtx.arange(4) ** -1


@pytest.mark.parametrize("dim", [-2, -1, 0, 1])
def test_cat_fast_path_matches_graph_path(dim):
    plain, graph, a = _pair((3, 4))
    b = rtx.ones(3, 4)
    fast, slow = rtx.cat([plain, b, plain], dim), rtx.cat([graph, b, graph], dim)
    assert not fast.requires_grad and slow.grad_fn is not None
    np.testing.assert_array_equal(fast.numpy(), np.concatenate([a, np.ones((3, 4), np.float32), a], dim))
    np.testing.assert_array_equal(fast.numpy(), slow.detach().numpy())
    fast.zero_()  # a fresh array
    np.testing.assert_array_equal(plain.numpy(), a)


@pytest.mark.parametrize("src,sizes", [((16, 1), (16, 5)), ((3,), (4, 2, 3)), ((1, 4, 1), (2, 3, 4, 5)),
                                       ((2, 1), (2, -1)), ((1,), (0,)), ((4, 1), (4, 3))])
@pytest.mark.parametrize("layout", ["contiguous", "permuted", "bool"])
def test_expand_view_matches_numpy_broadcast(src, sizes, layout):
    a = np.random.default_rng(2).standard_normal(src).astype(np.float32)
    if layout == "permuted":  # not C-contiguous (when 2-D or more): NumPy's broadcast_to path
        rev = tuple(reversed(range(a.ndim)))
        x = rtx.tensor(np.ascontiguousarray(a.transpose(rev))).permute(*rev)
    else:
        x = rtx.tensor(a > 0 if layout == "bool" else a)
    full = tuple(s if s != -1 else x.shape[i - (len(sizes) - x.ndim)] for i, s in enumerate(sizes))
    e = x.expand(*sizes)
    np.testing.assert_array_equal(e.numpy(), np.broadcast_to(x.numpy(), full))
    if e.numel() > x.numel():
        assert e._base is (x._base if x._base is not None else x) and e._version == x._version
        with pytest.raises((RuntimeError, ValueError)):
            e.add_(1)
    if layout != "bool":
        g = rtx.tensor(x.numpy().astype(np.float64), requires_grad=True)
        assert gradcheck(lambda t: t.expand(*sizes) * 1.5, (g,))
