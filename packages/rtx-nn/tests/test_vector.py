"""one_hot, normalize, cosine_similarity, pairwise_distance, pdist and the distance modules:
values against NumPy, gradients by finite differences (and double backward) in float64."""
import math

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


def np_norm(x, p, axis, keepdims=False):
    a = np.abs(x)
    if p == math.inf:
        return a.max(axis=axis, keepdims=keepdims)
    if p == 0:
        return (a != 0).sum(axis=axis, keepdims=keepdims).astype(x.dtype)
    return (a ** p).sum(axis=axis, keepdims=keepdims) ** (1 / p)


def np_normalize(x, p=2.0, dim=1, eps=1e-12):
    return x / np.maximum(np_norm(x, p, dim, True), eps)


def np_cosine(x1, x2, dim=1, eps=1e-8):
    x1, x2 = np.broadcast_arrays(x1, x2)
    n1 = np.maximum(np_norm(x1, 2, dim, True), eps)
    n2 = np.maximum(np_norm(x2, 2, dim, True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def np_pairwise(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    nd = max(x1.ndim, x2.ndim)
    return np_norm(x1 - x2 + eps, p, nd - 1, keepdim)


def np_pdist(x, p=2.0):
    i, j = np.triu_indices(x.shape[0], 1)
    return np_norm(x[i] - x[j], p, 1)


CASES = [
    OpCase("normalize", F.normalize, np_normalize, [r(3, 4)]),
    OpCase("normalize_p1_dim0", F.normalize, np_normalize, [r(3, 4)], {"p": 1.0, "dim": 0}),
    OpCase("normalize_p3_dim-1", F.normalize, np_normalize, [r(2, 3, 4)], {"p": 3.0, "dim": -1}),
    OpCase("normalize_inf", F.normalize, np_normalize, [r(3, 5)], {"p": math.inf}),
    OpCase("cosine_similarity", F.cosine_similarity, np_cosine, [r(4, 5), r(4, 5)]),
    OpCase("cosine_similarity_dim-1_broadcast", F.cosine_similarity, np_cosine, [r(2, 3, 4), r(1, 4)],
           {"dim": -1}),
    OpCase("cosine_similarity_dim0", F.cosine_similarity, np_cosine, [r(5, 2), r(5, 2)], {"dim": 0}),
    OpCase("pairwise_distance", F.pairwise_distance, np_pairwise, [r(4, 5), r(4, 5)]),
    OpCase("pairwise_distance_p1_keepdim", F.pairwise_distance, np_pairwise, [r(4, 5), r(4, 5)],
           {"p": 1.0, "keepdim": True}),
    OpCase("pairwise_distance_p3_broadcast", F.pairwise_distance, np_pairwise, [r(4, 5), r(5)], {"p": 3.0}),
    OpCase("pairwise_distance_inf", F.pairwise_distance, np_pairwise, [r(3, 6), r(3, 6)], {"p": math.inf}),
    OpCase("pairwise_distance_1d", F.pairwise_distance, np_pairwise, [r(6), r(6)]),
    OpCase("pdist", F.pdist, np_pdist, [r(5, 3)]),
    OpCase("pdist_p1", F.pdist, np_pdist, [r(4, 3)], {"p": 1.0}),
    OpCase("pdist_p3", F.pdist, np_pdist, [r(4, 3)], {"p": 3.0}),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_against_numpy_and_gradients(case, device):
    check_case(case, device)


def test_float32_values_and_dtype():
    x1 = r(4, 8).astype(np.float32)
    x2 = r(4, 8).astype(np.float32)
    out = F.cosine_similarity(rtx.tensor(x1), rtx.tensor(x2))
    assert out.dtype == rtx.float32
    assert_close(out, np_cosine(x1, x2).astype(np.float32), rtol=1e-5, atol=1e-6)
    assert F.normalize(rtx.tensor(x1)).dtype == rtx.float32


def test_zero_vector_gives_finite_gradients():
    # normalize clamps the norm; the norm's gradient at 0 is 0, so no NaN appears.
    x = rtx.zeros(2, 3, dtype=rtx.float64, requires_grad=True)
    F.normalize(x).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    a = rtx.zeros(2, 3, dtype=rtx.float64, requires_grad=True)
    b = rtx.ones(2, 3, dtype=rtx.float64, requires_grad=True)
    out = F.cosine_similarity(a, b)
    assert_close(out, np.zeros(2))
    out.sum().backward()
    assert np.isfinite(a.grad.numpy()).all() and np.isfinite(b.grad.numpy()).all()
    p = rtx.tensor([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]], dtype=rtx.float64, requires_grad=True)
    F.pdist(p).sum().backward()  # rows 0 and 1 coincide: distance 0
    assert np.isfinite(p.grad.numpy()).all()


def test_cosine_similarity_is_bounded():
    x = rtx.tensor(r(3, 4) * 1e30)
    out = F.cosine_similarity(x, x * 3)
    assert np.all(np.abs(out.numpy()) <= 1.0 + 1e-12)


def test_one_hot():
    t = rtx.tensor([[0, 2], [1, 0]])
    out = F.one_hot(t)
    assert out.dtype == rtx.int64 and tuple(out.shape) == (2, 2, 3)
    np.testing.assert_array_equal(out.numpy(), np.eye(3, dtype=np.int64)[t.numpy()])
    assert tuple(F.one_hot(rtx.tensor([1, 0]), num_classes=5).shape) == (2, 5)
    assert tuple(F.one_hot(rtx.tensor([], dtype=rtx.int64), num_classes=4).shape) == (0, 4)


@pytest.mark.parametrize("values,num_classes,match", [
    ([0, -1], -1, "non-negative"),
    ([0, 3], 3, "smaller than num_classes"),
    ([], -1, "empty tensor"),
])
def test_one_hot_errors(values, num_classes, match):
    with pytest.raises(RuntimeError, match=match):
        F.one_hot(rtx.tensor(values, dtype=rtx.int64), num_classes)


def test_one_hot_needs_int64():
    with pytest.raises(RuntimeError, match="LongTensor"):
        F.one_hot(rtx.tensor([0.0, 1.0]))


def test_modules():
    x1, x2 = r(4, 5), r(4, 5)
    d = nn.PairwiseDistance(p=1.0, keepdim=True)
    assert (d.norm, d.eps, d.keepdim) == (1.0, 1e-6, True)
    assert_close(d(rtx.tensor(x1), rtx.tensor(x2)), np_pairwise(x1, x2, 1.0, keepdim=True))
    c = nn.CosineSimilarity(dim=0)
    assert (c.dim, c.eps) == (0, 1e-8)
    assert_close(c(rtx.tensor(x1), rtx.tensor(x2)), np_cosine(x1, x2, dim=0))
    assert list(c.state_dict()) == [] and list(d.state_dict()) == []


def test_errors():
    with pytest.raises(RuntimeError, match="2D"):
        F.pdist(rtx.randn(3))
    with pytest.raises(RuntimeError, match="do not broadcast"):
        F.cosine_similarity(rtx.randn(3, 4), rtx.randn(3, 5))


def test_int_inputs_promote():
    out = F.normalize(rtx.tensor([[3, 4]]))
    assert out.dtype == rtx.get_default_dtype()
    assert_close(out, np.array([[0.6, 0.8]]), check_dtype=False)


def test_gradcheck_cosine_similarity_eps_clamp():
    # Tiny vectors: the clamp is active (the gradient still flows through the norm, as
    # PyTorch's, which here differs from the clamped function's only at order 1e-10).
    x1 = rtx.tensor(r(2, 3) * 1e-10, requires_grad=True)
    x2 = rtx.tensor(r(2, 3), requires_grad=True)
    assert gradcheck(lambda a, b: F.cosine_similarity(a, b, eps=1.0), [x1, x2], eps=1e-12, atol=1e-4)
