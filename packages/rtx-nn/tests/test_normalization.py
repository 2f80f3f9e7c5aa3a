"""Normalization: batch_norm / instance_norm / layer_norm / group_norm / rms_norm /
local_response_norm against NumPy references, gradients by finite differences and double
backward, running statistics (momentum, cumulative average, unbiased variance), train/eval,
state_dict keys and versioning, PyTorch's errors, and the layers' repr."""
import math
import re

import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.testing import OpCase, assert_close, check_case, devices

rng = np.random.default_rng(3)


def r(*shape):
    return rng.standard_normal(shape)


def np_norm(x, axes, eps):
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps)


def chan(t, nd):
    return t.reshape((1, -1) + (1,) * (nd - 2))


def np_batch_norm(x, w=None, b=None, eps=1e-5):
    y = np_norm(x, (0,) + tuple(range(2, x.ndim)), eps)
    if w is not None:
        y = y * chan(w, x.ndim)
    if b is not None:
        y = y + chan(b, x.ndim)
    return y


def np_instance_norm(x, w=None, b=None, eps=1e-5):
    y = np_norm(x, tuple(range(2, x.ndim)), eps)
    if w is not None:
        y = y * chan(w, x.ndim)
    if b is not None:
        y = y + chan(b, x.ndim)
    return y


def np_layer_norm(x, nd, w=None, b=None, eps=1e-5):
    y = np_norm(x, tuple(range(x.ndim - nd, x.ndim)), eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def np_group_norm(x, G, w, b, eps=1e-5):
    N, C = x.shape[:2]
    y = np_norm(x.reshape(N, G, -1), (2,), eps).reshape(x.shape)
    return y * chan(w, x.ndim) + chan(b, x.ndim)


def np_rms_norm(x, nd, w=None, eps=1e-6):
    axes = tuple(range(x.ndim - nd, x.ndim))
    y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return y if w is None else y * w


def np_lrn(x, size, alpha, beta, k):
    C = x.shape[1]
    sq = x * x
    div = np.zeros_like(x)
    for c in range(C):
        lo, hi = max(0, c - size // 2), min(C, c + (size - 1) // 2 + 1)
        div[:, c] = sq[:, lo:hi].sum(axis=1)
    return x / (k + alpha / size * div) ** beta


CASES = [
    OpCase("batch_norm_2d", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
           lambda x, w, b: np_batch_norm(x, w, b), [r(5, 3), r(3), r(3)], atol=1e-6),
    OpCase("batch_norm_4d", lambda x, w, b: F.batch_norm(x, None, None, w, b, True, 0.1, 1e-3),
           lambda x, w, b: np_batch_norm(x, w, b, 1e-3), [r(2, 3, 2, 2), r(3), r(3)], atol=1e-6),
    OpCase("batch_norm_no_affine", lambda x: F.batch_norm(x, None, None, training=True),
           lambda x: np_batch_norm(x), [r(4, 2, 3)], atol=1e-6),
    OpCase("batch_norm_eval", lambda x, w, b, m, v: F.batch_norm(x, m, v, w, b, training=False),
           lambda x, w, b, m, v: (x - chan(m, 3)) / np.sqrt(chan(v, 3) + 1e-5) * chan(w, 3) + chan(b, 3),
           [r(2, 3, 4), r(3), r(3), r(3), rng.uniform(0.5, 2, 3)], grad_inputs=(0, 1, 2)),
    OpCase("instance_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
           lambda x, w, b: np_instance_norm(x, w, b), [r(2, 3, 5), r(3), r(3)], atol=1e-6),
    OpCase("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), lambda x, w, b: np_layer_norm(x, 1, w, b),
           [r(3, 4), r(4), r(4)], atol=1e-6),
    OpCase("layer_norm_2d_shape", lambda x, w, b: F.layer_norm(x, (3, 4), w, b, 1e-3),
           lambda x, w, b: np_layer_norm(x, 2, w, b, 1e-3), [r(2, 3, 4), r(3, 4), r(3, 4)], atol=1e-6),
    OpCase("layer_norm_no_affine", lambda x: F.layer_norm(x, [5]), lambda x: np_layer_norm(x, 1), [r(2, 5)],
           atol=1e-6),
    OpCase("layer_norm_weight_only", lambda x, w: F.layer_norm(x, 3, w), lambda x, w: np_layer_norm(x, 1, w),
           [r(4, 3), r(3)], atol=1e-6),
    OpCase("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), lambda x, w, b: np_group_norm(x, 2, w, b),
           [r(2, 4, 3), r(4), r(4)], atol=1e-6),
    OpCase("rms_norm", lambda x, w: F.rms_norm(x, (4,), w, 1e-6), lambda x, w: np_rms_norm(x, 1, w),
           [r(3, 4), r(4)], atol=1e-6),
    OpCase("rms_norm_2d_no_weight", lambda x: F.rms_norm(x, (2, 3), eps=1e-6), lambda x: np_rms_norm(x, 2),
           [r(2, 2, 3)], atol=1e-6),
    OpCase("local_response_norm_3d", lambda x: F.local_response_norm(x, 3, 0.1, 0.75, 1.5),
           lambda x: np_lrn(x, 3, 0.1, 0.75, 1.5), [r(2, 5, 3)]),
    OpCase("local_response_norm_4d", lambda x: F.local_response_norm(x, 2, 0.1, 0.75, 1.0),
           lambda x: np_lrn(x, 2, 0.1, 0.75, 1.0), [r(1, 4, 2, 2)]),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_values_gradients_double_backward(case, device):
    check_case(case, device)


def test_fused_and_recorded_backward_agree():
    x0, w0, b0, g0 = r(4, 6), r(6), r(6), r(4, 6)
    for fn in (lambda x, w, b: F.layer_norm(x, (6,), w, b), lambda x, w, b: F.rms_norm(x, (6,), w, 1e-6) + b,
               lambda x, w, b: F.batch_norm(x, None, None, w, b, True)):
        ins = [rtx.tensor(a, requires_grad=True) for a in (x0, w0, b0)]
        fused = rtx.autograd.grad(fn(*ins), ins, rtx.tensor(g0))
        ins = [rtx.tensor(a, requires_grad=True) for a in (x0, w0, b0)]
        recorded = rtx.autograd.grad(fn(*ins), ins, rtx.tensor(g0), create_graph=True)
        for a, b in zip(fused, recorded):
            assert_close(a, b.detach())


def test_float32_and_mixed_dtypes():
    x = rtx.randn(4, 8)
    assert F.layer_norm(x, (8,)).dtype == rtx.float32
    y = F.layer_norm(x, (8,), rtx.ones(8, dtype=rtx.float64), rtx.zeros(8, dtype=rtx.float64))
    assert y.dtype == rtx.float32
    assert_close(y, np_layer_norm(x.numpy().astype(np.float64), 1).astype(np.float32), atol=1e-5)
    assert F.batch_norm(x, None, None, training=True).dtype == rtx.float32
    assert F.rms_norm(x, [8]).dtype == rtx.float32


def test_batch_norm_float32_with_offset_mean():
    # The training forward folds rstd, w, b and the mean into one scale and shift per channel
    # (x * scale + shift): with a mean several standard deviations away from 0 it must still
    # agree with the float64 reference to float32 accuracy.
    x = (r(8, 6, 5, 5) * 0.5 + np.arange(6).reshape(1, 6, 1, 1) * 4.0).astype(np.float32)
    w, b = r(6).astype(np.float32), r(6).astype(np.float32)
    y = F.batch_norm(rtx.tensor(x), None, None, rtx.tensor(w), rtx.tensor(b), training=True)
    assert y.dtype == rtx.float32
    ref = np_batch_norm(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64))
    assert_close(y, ref.astype(np.float32), atol=2e-5, rtol=1e-5)


# ---- running statistics -------------------------------------------------------------------------


def test_batch_norm_running_stats_update():
    x = r(10, 3, 4)
    rm, rv = rtx.zeros(3, dtype=rtx.float64), rtx.ones(3, dtype=rtx.float64)
    F.batch_norm(rtx.tensor(x), rm, rv, training=True, momentum=0.3)
    assert_close(rm, 0.3 * x.mean(axis=(0, 2)))
    assert_close(rv, 0.7 + 0.3 * x.var(axis=(0, 2), ddof=1))  # unbiased, as PyTorch
    assert rm._version == 1 and rv._version == 1


def test_batchnorm_module_train_then_eval():
    bn = nn.BatchNorm1d(3, dtype=rtx.float64)
    xs = [r(8, 3) * (i + 1) + i for i in range(3)]
    rm, rv = np.zeros(3), np.ones(3)
    for x in xs:
        y = bn(rtx.tensor(x))
        assert_close(y, np_batch_norm(x), atol=1e-6)
        rm = 0.9 * rm + 0.1 * x.mean(0)
        rv = 0.9 * rv + 0.1 * x.var(0, ddof=1)
    assert_close(bn.running_mean, rm)
    assert_close(bn.running_var, rv)
    assert bn.num_batches_tracked.item() == 3 and bn.num_batches_tracked.dtype == rtx.int64
    bn.eval()
    x = r(5, 3)
    assert_close(bn(rtx.tensor(x)), (x - rm) / np.sqrt(rv + 1e-5))
    assert bn.num_batches_tracked.item() == 3  # eval leaves the statistics alone
    assert_close(bn.running_mean, rm)


def test_momentum_none_is_cumulative_average():
    bn = nn.BatchNorm2d(2, momentum=None, dtype=rtx.float64)
    xs = [r(3, 2, 2, 2) * (i + 1) for i in range(4)]
    for x in xs:
        bn(rtx.tensor(x))
    assert_close(bn.running_mean, np.mean([x.mean(axis=(0, 2, 3)) for x in xs], axis=0))
    assert_close(bn.running_var, np.mean([x.var(axis=(0, 2, 3), ddof=1) for x in xs], axis=0))


def test_track_running_stats_false_uses_batch_stats_in_eval():
    bn = nn.BatchNorm3d(2, track_running_stats=False, affine=False)
    assert bn.running_mean is None and bn.num_batches_tracked is None
    assert list(bn.state_dict()) == []
    bn.eval()
    x = rtx.randn(2, 2, 2, 2, 2, dtype=rtx.float64)
    assert_close(bn(x), np_batch_norm(x.numpy()), atol=1e-6)


def test_batchnorm_gradients_through_module():
    bn = nn.BatchNorm2d(3, dtype=rtx.float64)
    x = rtx.tensor(r(2, 3, 2, 2), requires_grad=True)
    assert rtx.autograd.gradcheck(lambda t: bn(t), [x])
    bn(x).pow(2).sum().backward()
    assert bn.weight.grad.shape == (3,) and bn.bias.grad.shape == (3,)


def test_instance_norm_running_stats_and_modules():
    x = r(4, 3, 6)
    m = nn.InstanceNorm1d(3, track_running_stats=True, momentum=0.2, dtype=rtx.float64)
    y = m(rtx.tensor(x))
    assert_close(y, np_instance_norm(x), atol=1e-6)
    assert_close(m.running_mean, 0.2 * x.mean(axis=2).mean(0))
    assert_close(m.running_var, 0.8 + 0.2 * x.var(axis=2, ddof=1).mean(0))
    m.eval()
    x2 = r(2, 3, 6)
    expected = (x2 - chan(m.running_mean.numpy(), 3)) / np.sqrt(chan(m.running_var.numpy(), 3) + 1e-5)
    assert_close(m(rtx.tensor(x2)), expected)
    # defaults: no affine, no running stats, statistics of the input also in eval
    m2 = nn.InstanceNorm2d(3)
    assert list(m2.state_dict()) == [] and m2.weight is None
    m2.eval()
    x4 = r(2, 3, 4, 4)
    assert_close(m2(rtx.tensor(x4, dtype=rtx.float32)), np_instance_norm(x4).astype(np.float32), atol=1e-5)
    # unbatched input
    x3 = r(3, 4, 4)
    assert_close(nn.InstanceNorm2d(3)(rtx.tensor(x3)), np_instance_norm(x3[None])[0], atol=1e-6)
    m3 = nn.InstanceNorm3d(2, affine=True)
    assert list(m3.state_dict()) == ["weight", "bias"]
    assert m3(rtx.randn(2, 2, 3, 3, 3)).shape == (2, 2, 3, 3, 3)


# ---- errors -------------------------------------------------------------------------------------


def test_errors_match_pytorch():
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size"):
        nn.BatchNorm1d(3)(rtx.randn(1, 3))
    assert nn.BatchNorm1d(3)(rtx.randn(1, 3, 2)).shape == (1, 3, 2)
    nn.BatchNorm1d(3).eval()(rtx.randn(1, 3))  # fine in eval
    for m, x, msg in [(nn.BatchNorm1d(3), rtx.randn(3), "expected 2D or 3D input (got 1D input)"),
                      (nn.BatchNorm2d(3), rtx.randn(3, 4, 4), "expected 4D input (got 3D input)"),
                      (nn.BatchNorm3d(3), rtx.randn(1, 3, 2, 2), "expected 5D input (got 4D input)"),
                      (nn.InstanceNorm1d(3), rtx.randn(3), "expected 2D or 3D input (got 1D input)"),
                      (nn.InstanceNorm2d(3), rtx.randn(3, 4), "expected 3D or 4D input (got 2D input)"),
                      (nn.InstanceNorm3d(3), rtx.randn(3, 4, 4), "expected 4D or 5D input (got 3D input)")]:
        with pytest.raises(ValueError, match=re.escape(msg)):
            m(x)
    with pytest.raises(RuntimeError, match="running_mean should contain 5 elements not 3"):
        nn.BatchNorm1d(3)(rtx.randn(4, 5))
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(rtx.randn(2, 3), None, None, training=False)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], but "
                                           r"got input of size\[2, 3\]"):
        F.layer_norm(rtx.randn(2, 3), [4])
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\]"):
        F.rms_norm(rtx.randn(2, 3), [4])
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        F.layer_norm(rtx.randn(2, 3), [3], rtx.ones(4))
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be divisible by num_groups, but "
                                           r"got input of shape \[2, 3\] and num_groups=2"):
        F.group_norm(rtx.randn(2, 3), 2)
    with pytest.raises(ValueError, match=r"num_channels \(3\) must be divisible by num_groups \(2\)"):
        nn.GroupNorm(2, 3)
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(rtx.randn(2, 3, 1))
    with pytest.raises(ValueError, match="Expected 3D or higher dimensionality input"):
        F.local_response_norm(rtx.randn(2, 3), 2)
    with pytest.raises(ValueError, match="expected input's size at dim=1 to match num_features"):
        nn.InstanceNorm1d(4, affine=True)(rtx.randn(2, 3, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(4)(rtx.randn(2, 3, 5))


# ---- layers: state_dict, repr, defaults ------------------------------------------------------------

STATE_KEYS = [
    (nn.BatchNorm1d(3), ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]),
    (nn.BatchNorm2d(3, affine=False), ["running_mean", "running_var", "num_batches_tracked"]),
    (nn.BatchNorm3d(3, track_running_stats=False), ["weight", "bias"]),
    (nn.BatchNorm1d(3, bias=False), ["weight", "running_mean", "running_var", "num_batches_tracked"]),
    (nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
     ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]),
    (nn.LayerNorm(8), ["weight", "bias"]), (nn.LayerNorm(8, bias=False), ["weight"]),
    (nn.LayerNorm([2, 3], elementwise_affine=False), []), (nn.GroupNorm(2, 4), ["weight", "bias"]),
    (nn.RMSNorm(8), ["weight"]), (nn.LocalResponseNorm(2), []),
]


@pytest.mark.parametrize("module, keys", STATE_KEYS, ids=[repr(m) for m, _ in STATE_KEYS])
def test_state_dict_keys(module, keys):
    assert list(module.state_dict()) == keys


REPRS = [
    (nn.BatchNorm1d(3), "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"),
    (nn.BatchNorm2d(3, momentum=None, affine=False),
     "BatchNorm2d(3, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=True)"),
    (nn.BatchNorm3d(4, track_running_stats=False),
     "BatchNorm3d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=False)"),
    (nn.LayerNorm(768), "LayerNorm((768,), eps=1e-05, elementwise_affine=True, bias=True)"),
    (nn.LayerNorm([3, 4], elementwise_affine=False),
     "LayerNorm((3, 4), eps=1e-05, elementwise_affine=False, bias=False)"),
    (nn.LayerNorm(5, bias=False), "LayerNorm((5,), eps=1e-05, elementwise_affine=True, bias=False)"),
    (nn.GroupNorm(2, 4), "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"),
    (nn.RMSNorm(8), "RMSNorm((8,), eps=None, elementwise_affine=True)"),
    (nn.RMSNorm([2, 3], eps=1e-5, elementwise_affine=False), "RMSNorm((2, 3), eps=1e-05, elementwise_affine=False)"),
    (nn.InstanceNorm1d(3),
     "InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)"),
    (nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
     "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"),
    (nn.LocalResponseNorm(2), "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"),
]


@pytest.mark.parametrize("module, text", REPRS, ids=[t for _, t in REPRS])
def test_repr_matches_pytorch(module, text):
    assert repr(module) == text


def test_default_parameters_and_buffers():
    bn = nn.BatchNorm2d(4)
    assert bn.weight.tolist() == [1.0] * 4 and bn.bias.tolist() == [0.0] * 4
    assert bn.running_mean.tolist() == [0.0] * 4 and bn.running_var.tolist() == [1.0] * 4
    assert isinstance(bn.weight, nn.Parameter) and not isinstance(bn.running_mean, nn.Parameter)
    ln = nn.LayerNorm((2, 3))
    assert ln.weight.shape == (2, 3) and ln.normalized_shape == (2, 3)
    assert nn.RMSNorm(5).weight.tolist() == [1.0] * 5
    g = nn.GroupNorm(2, 4, affine=False)
    assert g.weight is None and list(g.parameters()) == []
    bn.running_mean.fill_(3.0)
    bn.num_batches_tracked.fill_(7)
    bn.reset_running_stats()
    assert bn.running_mean.tolist() == [0.0] * 4 and bn.num_batches_tracked.item() == 0


def test_rms_norm_eps_none_uses_machine_epsilon():
    x = np.full((2, 4), 1e-4)
    for dtype, npd in ((rtx.float32, np.float32), (rtx.float64, np.float64)):
        y = F.rms_norm(rtx.tensor(x, dtype=dtype), [4])
        expected = x / np.sqrt((x * x).mean(-1, keepdims=True) + np.finfo(npd).eps)
        assert_close(y, expected.astype(npd), rtol=1e-5)
    assert_close(nn.RMSNorm(4)(rtx.tensor(x, dtype=rtx.float32)),
                 (x / np.sqrt(1e-8 + np.finfo(np.float32).eps)).astype(np.float32), rtol=1e-5)


def test_layernorm_and_groupnorm_modules():
    x = r(2, 4, 3)
    ln = nn.LayerNorm(3, dtype=rtx.float64)
    assert_close(ln(rtx.tensor(x)), np_layer_norm(x, 1), atol=1e-6)
    gn = nn.GroupNorm(2, 4, dtype=rtx.float64)
    with rtx.no_grad():
        gn.weight.copy_(rtx.tensor([1.0, 2.0, 3.0, 4.0]))
    assert_close(gn(rtx.tensor(x)), np_group_norm(x, 2, np.array([1.0, 2, 3, 4]), np.zeros(4)), atol=1e-6)
    lrn = nn.LocalResponseNorm(3, 0.1, 0.5, 2.0)
    assert_close(lrn(rtx.tensor(x)), np_lrn(x, 3, 0.1, 0.5, 2.0))


def test_old_checkpoint_without_num_batches_tracked():
    bn = nn.BatchNorm1d(3)
    sd = dict(bn.state_dict())  # a plain dict: no version metadata, as from an old checkpoint
    del sd["num_batches_tracked"]
    target = nn.BatchNorm1d(3)
    assert target.load_state_dict(sd) is not None
    sd2 = bn.state_dict()       # carries version 2: the key is really missing
    del sd2["num_batches_tracked"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "num_batches_tracked"'):
        nn.BatchNorm1d(3).load_state_dict(sd2)


def test_batchnorm_state_dict_round_trip():
    bn = nn.BatchNorm1d(3)
    for _ in range(2):
        bn(rtx.randn(6, 3))
    bn2 = nn.BatchNorm1d(3)
    bn2.load_state_dict(bn.state_dict())
    assert_close(bn2.running_mean, bn.running_mean)
    assert bn2.num_batches_tracked.item() == 2
    bn.eval()
    bn2.eval()
    x = rtx.randn(4, 3)
    assert_close(bn2(x), bn(x))


def test_layer_norm_kernel_speed_is_not_worse_than_composed():
    """The fused path must not be slower than composing Tensor ops (64x768, forward + backward)."""
    import timeit
    x = rtx.randn(64, 768, requires_grad=True)
    w, b = rtx.ones(768, requires_grad=True), rtx.zeros(768, requires_grad=True)

    def fused():
        F.layer_norm(x, (768,), w, b).sum().backward()

    def composed():
        xc = x - x.mean(-1, keepdim=True)
        y = xc * ((xc * xc).mean(-1, keepdim=True) + 1e-5).rsqrt() * w + b
        y.sum().backward()

    t_fused = min(timeit.repeat(fused, number=5, repeat=3))
    t_comp = min(timeit.repeat(composed, number=5, repeat=3))
    assert t_fused < 1.5 * t_comp, (t_fused, t_comp)


def test_no_graph_inference_and_unchanged_statistics_in_eval():
    bn = nn.BatchNorm1d(2).eval()
    with rtx.no_grad():
        y = bn(rtx.randn(3, 2))
    assert y.grad_fn is None
    assert math.isclose(bn.running_var.sum().item(), 2.0)
