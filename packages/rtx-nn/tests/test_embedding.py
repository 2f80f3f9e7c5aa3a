"""Embedding and EmbeddingBag: lookups against NumPy, gradients (scatter-add, padding_idx,
scale_grad_by_freq) in closed form and by finite differences, double backward, max_norm
renormalisation, from_pretrained, bags (sum / mean / max, offsets, include_last_offset,
per_sample_weights, padding, empty bags), errors, repr and state_dict."""
import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.testing import assert_close

rng = np.random.default_rng(5)
W = rng.standard_normal((10, 4))
IDX = np.array([[1, 2, 4, 5], [4, 3, 2, 9]])


def leaf(a):
    return rtx.tensor(a, requires_grad=True)


def test_lookup_values_and_shape():
    out = F.embedding(rtx.tensor(IDX), rtx.tensor(W))
    assert out.shape == (2, 4, 4)
    assert_close(out, W[IDX])
    assert F.embedding(rtx.tensor(3), rtx.tensor(W)).shape == (4,)
    assert F.embedding(rtx.tensor(IDX, dtype=rtx.int32), rtx.tensor(W)).shape == (2, 4, 4)


def test_gradient_is_a_scatter_add():
    w = leaf(W)
    g = rng.standard_normal((2, 4, 4))
    (gw,) = rtx.autograd.grad(F.embedding(rtx.tensor(IDX), w), [w], rtx.tensor(g))
    expected = np.zeros_like(W)
    np.add.at(expected, IDX, g)
    assert_close(gw, expected)
    assert rtx.autograd.gradcheck(lambda t: F.embedding(rtx.tensor(IDX), t), [leaf(W)])
    assert rtx.autograd.gradgradcheck(lambda t: F.embedding(rtx.tensor(IDX), t) ** 2, [leaf(W)])


def test_padding_idx_gets_no_gradient_and_freq_scaling():
    w = leaf(W)
    idx = np.array([0, 2, 2, 2, 5, 0])
    g = rng.standard_normal((6, 4))
    (gw,) = rtx.autograd.grad(F.embedding(rtx.tensor(idx), w, padding_idx=2), [w], rtx.tensor(g))
    expected = np.zeros_like(W)
    np.add.at(expected, idx, g)
    expected[2] = 0
    assert_close(gw, expected)
    (gw,) = rtx.autograd.grad(F.embedding(rtx.tensor(idx), w, padding_idx=-8, scale_grad_by_freq=True), [w],
                              rtx.tensor(g))
    counts = np.bincount(idx, minlength=10)
    expected = np.zeros_like(W)
    np.add.at(expected, idx, g / counts[idx][:, None])
    expected[2] = 0
    assert_close(gw, expected)
    # the padding row's value is whatever the weight holds (here not zero): only the gradient is blocked
    assert_close(F.embedding(rtx.tensor(idx), rtx.tensor(W), padding_idx=2)[1], W[2])


def test_double_backward_with_padding_and_frequency():
    """The gradient map g -> grad_weight is linear: its derivative (the double backward) is
    g-shaped, V[idx] * scale, zero at padding positions. (A finite-difference gradgradcheck
    does not apply: with padding_idx / scale_grad_by_freq PyTorch's defined gradient is not the
    derivative of the lookup.)"""
    idx = np.array([0, 2, 2, 1, 2])
    w = leaf(W[:3])
    g = leaf(rng.standard_normal((5, 4)))
    v = rng.standard_normal((3, 4))
    out = F.embedding(rtx.tensor(idx), w, padding_idx=1, scale_grad_by_freq=True)
    (gw,) = rtx.autograd.grad(out, [w], g, create_graph=True)
    (gg,) = rtx.autograd.grad((gw * rtx.tensor(v)).sum(), [g])
    scale = (idx != 1) / np.bincount(idx)[idx]
    assert_close(gg, v[idx] * scale[:, None])


def test_max_norm_renormalises_used_rows_in_place():
    w = rtx.tensor(W.copy())
    idx = rtx.tensor([1, 3, 3, 7])
    out = F.embedding(idx, w, max_norm=1.0)
    used = [1, 3, 7]
    norms = np.linalg.norm(W, axis=1)
    expected = W.copy()
    for i in used:
        if norms[i] > 1.0:
            expected[i] = W[i] * (1.0 / (norms[i] + 1e-7))
    assert_close(w, expected)
    assert_close(out, expected[[1, 3, 3, 7]])
    untouched = [i for i in range(10) if i not in used]
    assert_close(w[untouched], W[untouched])
    w1 = rtx.tensor(W.copy())
    F.embedding(idx, w1, max_norm=0.5, norm_type=1.0)
    l1 = np.abs(W[used]).sum(1)
    assert_close(w1[used], W[used] * np.where(l1 > 0.5, 0.5 / (l1 + 1e-7), 1.0)[:, None])


def test_embedding_module():
    rtx.manual_seed(0)
    e = nn.Embedding(1000, 8, padding_idx=3)
    assert list(e.state_dict()) == ["weight"] and isinstance(e.weight, nn.Parameter)
    w = e.weight.detach().numpy()
    assert (w[3] == 0).all()
    rest = np.delete(w, 3, axis=0)
    assert abs(rest.mean()) < 0.05 and abs(rest.std() - 1) < 0.05  # N(0, 1) init
    out = e(rtx.tensor([[3, 4], [5, 3]]))
    out.sum().backward()
    assert e.weight.grad[3].tolist() == [0.0] * 8
    assert e.weight.grad[4].tolist() == [1.0] * 8
    assert nn.Embedding(5, 2, padding_idx=-1).padding_idx == 4
    assert nn.Embedding(5, 2, dtype=rtx.float64).weight.dtype == rtx.float64


def test_embedding_repr():
    assert repr(nn.Embedding(10, 3)) == "Embedding(10, 3)"
    assert repr(nn.Embedding(10, 3, padding_idx=0, max_norm=1.5, norm_type=1.0, scale_grad_by_freq=True,
                             sparse=True)) == \
        "Embedding(10, 3, padding_idx=0, max_norm=1.5, norm_type=1.0, scale_grad_by_freq=True, sparse=True)"
    assert repr(nn.EmbeddingBag(10, 3)) == "EmbeddingBag(10, 3, mode='mean')"
    assert repr(nn.EmbeddingBag(10, 3, max_norm=2.0, mode="sum", padding_idx=1)) == \
        "EmbeddingBag(10, 3, max_norm=2.0, mode='sum', padding_idx=1)"


def test_from_pretrained_shares_memory_and_freezes():
    src = rtx.tensor(W)
    e = nn.Embedding.from_pretrained(src)
    assert not e.weight.requires_grad
    assert_close(e(rtx.tensor([2])), W[[2]])
    src[2, 0] = 100.0
    assert e.weight[2, 0].item() == 100.0  # the weight is the given tensor's memory
    e2 = nn.Embedding.from_pretrained(rtx.tensor(W), freeze=False, padding_idx=1)
    assert e2.weight.requires_grad and e2.padding_idx == 1
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(rtx.tensor([1.0, 2.0]))
    bag = nn.EmbeddingBag.from_pretrained(rtx.tensor(W), mode="sum")
    assert not bag.weight.requires_grad and bag.mode == "sum"
    assert_close(bag(rtx.tensor([[1, 2]])), W[[1]] + W[[2]])


def test_embedding_errors():
    w = rtx.tensor(W)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int"):
        F.embedding(rtx.tensor([1.0]), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(rtx.tensor([10]), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(rtx.tensor([-1]), w)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(5, 2, padding_idx=5)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(rtx.tensor([1]), w, padding_idx=-11)
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        nn.Embedding(5, 2, _weight=rtx.randn(4, 2))


# ---- EmbeddingBag -------------------------------------------------------------------------------

def np_bags(idx, offsets, mode, weights=None, psw=None, pad=None, last=False):
    n = len(idx)
    bounds = list(offsets) + ([] if last else [n])
    out = []
    for s, e in zip(bounds[:-1], bounds[1:]):
        rows = [(i, j) for j, i in enumerate(idx[s:e], start=s) if i != pad]
        if not rows:
            out.append(np.zeros(W.shape[1]))
            continue
        vecs = np.array([W[i] * (1 if psw is None else psw[j]) for i, j in rows])
        out.append({"sum": vecs.sum(0), "mean": vecs.mean(0), "max": vecs.max(0)}[mode])
    return np.array(out)


IDX1 = np.array([1, 2, 4, 5, 4, 3, 2, 9, 2, 2])
OFFS = np.array([0, 3, 3, 7])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_bag_values_with_offsets_and_2d_input(mode):
    out = F.embedding_bag(rtx.tensor(IDX1), rtx.tensor(W), rtx.tensor(OFFS), mode=mode)
    assert_close(out, np_bags(IDX1, OFFS, mode))
    out = F.embedding_bag(rtx.tensor(IDX), rtx.tensor(W), mode=mode)
    assert_close(out, np_bags(IDX.reshape(-1), [0, 4], mode))
    out = F.embedding_bag(rtx.tensor(IDX1), rtx.tensor(W), rtx.tensor([0, 3, 3, 7, 10]), mode=mode,
                          include_last_offset=True)
    assert_close(out, np_bags(IDX1, [0, 3, 3, 7, 10], mode, last=True))
    out = F.embedding_bag(rtx.tensor(IDX1), rtx.tensor(W), rtx.tensor(OFFS), mode=mode, padding_idx=2)
    assert_close(out, np_bags(IDX1, OFFS, mode, pad=2))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_bag_gradients(mode):
    def fn(t):
        return F.embedding_bag(rtx.tensor(IDX1), t, rtx.tensor(OFFS), mode=mode, padding_idx=4)

    assert rtx.autograd.gradcheck(fn, [leaf(W)])
    assert rtx.autograd.gradgradcheck(lambda t: fn(t) ** 2, [leaf(W)])


def test_bag_max_gradient_goes_to_the_maximum():
    w = leaf(np.array([[1.0, 5.0], [3.0, 2.0], [3.0, 9.0]]))
    out = F.embedding_bag(rtx.tensor([[0, 1, 2]]), w, mode="max")
    assert out.tolist() == [[3.0, 9.0]]
    (g,) = rtx.autograd.grad(out.sum(), [w])
    assert g.tolist() == [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]  # ties: the first occurrence


def test_bag_per_sample_weights():
    psw = rng.standard_normal(10)
    w, p = leaf(W), leaf(psw)
    out = F.embedding_bag(rtx.tensor(IDX1), w, rtx.tensor(OFFS), mode="sum", per_sample_weights=p)
    assert_close(out, np_bags(IDX1, OFFS, "sum", psw=psw))
    assert rtx.autograd.gradcheck(lambda a, b: F.embedding_bag(rtx.tensor(IDX1), a, rtx.tensor(OFFS), mode="sum",
                                                               per_sample_weights=b, padding_idx=2), [w, p])
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum' "
                                                  "\\(got mode='mean'\\)"):
        F.embedding_bag(rtx.tensor(IDX1), w, rtx.tensor(OFFS), per_sample_weights=p)


def test_bag_scale_grad_by_freq():
    w = leaf(W)
    (g,) = rtx.autograd.grad(F.embedding_bag(rtx.tensor(IDX1), w, rtx.tensor(OFFS), mode="sum",
                                             scale_grad_by_freq=True).sum(), [w])
    counts = np.bincount(IDX1, minlength=10)
    assert_close(g, (counts > 0)[:, None] * np.ones((10, 4)))  # each used row: count * (1 / count)


def test_bag_module_forward_and_errors():
    bag = nn.EmbeddingBag(10, 4, mode="sum", padding_idx=0)
    assert list(bag.state_dict()) == ["weight"] and bag.weight[0].tolist() == [0.0] * 4
    out = bag(rtx.tensor(IDX1), rtx.tensor(OFFS))
    assert out.shape == (4, 4) and out[1].tolist() == [0.0] * 4  # the empty bag
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(rtx.tensor(IDX), rtx.tensor(W), rtx.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(rtx.tensor(IDX1), rtx.tensor(W))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(rtx.tensor(IDX), rtx.tensor(W), mode="min")
    with pytest.raises(ValueError, match="max mode does not support scaling the gradient by the frequency"):
        F.embedding_bag(rtx.tensor(IDX), rtx.tensor(W), mode="max", scale_grad_by_freq=True)
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(rtx.tensor(IDX1), rtx.tensor(W), rtx.tensor([1, 3]))
    with pytest.raises(ValueError, match="If per_sample_weights .* must have the same shape as the input"):
        F.embedding_bag(rtx.tensor(IDX1), rtx.tensor(W), rtx.tensor(OFFS), mode="sum",
                        per_sample_weights=rtx.ones(3))
    with pytest.raises(ValueError, match="input has to be 1D or 2D Tensor, but got Tensor of dimension 3"):
        F.embedding_bag(rtx.tensor(IDX[None]), rtx.tensor(W))
