"""Dropout family: masks and scaling, channel-wise masks, alpha dropout's statistics,
reproducibility under rtx.manual_seed, eval mode, p = 0 / 1, in-place, gradients, PyTorch's
errors and warnings, and the layers."""
import math

import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.testing import assert_close


def ones(*shape, requires_grad=False):
    return rtx.ones(*shape, dtype=rtx.float64, requires_grad=requires_grad)


def test_dropout_mask_scale_and_rate():
    rtx.manual_seed(0)
    x = ones(200, 100)
    y = F.dropout(x, 0.3).numpy()
    kept = y != 0
    assert_close(y[kept], np.full(kept.sum(), 1 / 0.7))
    assert abs(1 - kept.mean() - 0.3) < 0.01
    assert abs(y.mean() - 1.0) < 0.02  # unbiased in expectation


def test_dropout_gradient_is_the_mask():
    rtx.manual_seed(1)
    x = ones(50, 20, requires_grad=True)
    y = F.dropout(x, 0.5)
    (g,) = rtx.autograd.grad(y.sum(), [x])
    assert_close(g, y.detach())  # d(x * mask)/dx = mask = y for x = 1
    (gg,) = rtx.autograd.grad(F.dropout(x, 0.5).pow(2).sum(), [x], create_graph=True)
    assert gg.requires_grad


def test_seeded_dropout_is_reproducible():
    x = rtx.randn(8, 8)
    rtx.manual_seed(42)
    a = F.dropout(x, 0.5)
    rtx.manual_seed(42)
    b = F.dropout(x, 0.5)
    c = F.dropout(x, 0.5)
    assert_close(a, b)
    assert not np.array_equal(a.numpy(), c.numpy())


def test_eval_mode_is_identity_and_p_edges():
    x = rtx.randn(4, 5)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.alpha_dropout(x, 0.5) is x  # functional alpha_dropout defaults to training=False
    assert F.dropout1d(rtx.randn(2, 3, 4), 0.5, training=False).shape == (2, 3, 4)
    assert F.dropout(x, 1.0).tolist() == [[0.0] * 5] * 4
    assert F.alpha_dropout(x, 1.0, True).tolist() == [[0.0] * 5] * 4
    m = nn.Dropout(0.9)
    m.eval()
    assert m(x) is x


@pytest.mark.parametrize("p", [-0.1, 1.1])
def test_probability_out_of_range(p):
    msg = f"dropout probability has to be between 0 and 1, but got {p}"
    for fn in (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout):
        with pytest.raises(ValueError, match=msg.replace(".", r"\.")):
            fn(rtx.randn(2, 3, 4, 5, 6), p)
    for cls in (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            cls(p)


def _channel_constant(y, batched_dims):
    """Every channel is all-kept (constant 1/(1-p)) or all-zero."""
    flat = y.reshape(y.shape[:batched_dims] + (-1,))
    return np.all((flat == flat[..., :1]))


@pytest.mark.parametrize("fn, shape, channel_dims", [
    (F.dropout1d, (6, 8, 5), 2), (F.dropout1d, (8, 5), 1),
    (F.dropout2d, (6, 8, 3, 3), 2),
    (F.dropout3d, (4, 8, 2, 2, 2), 2), (F.dropout3d, (8, 2, 2, 2), 1),
])
def test_channel_dropout_zeroes_whole_channels(fn, shape, channel_dims):
    rtx.manual_seed(5)
    y = fn(ones(*shape), 0.5).numpy()
    assert _channel_constant(y, channel_dims)
    flat = y.reshape(y.shape[:channel_dims] + (-1,))[..., 0]
    assert set(np.unique(flat)) <= {0.0, 2.0} and 0 < (flat == 0).mean() < 1


def test_channel_dropout_shapes_and_warnings():
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 1D input"):
        F.dropout1d(rtx.randn(3))
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                                         "1D dropout behavior is desired"):
        y = F.dropout2d(ones(4, 6, 5), 0.5)
    assert _channel_constant(y.numpy(), 2)  # read as (N, C, L)
    with pytest.warns(UserWarning, match="dropout3d: Received a 2-D input to dropout3d, which is deprecated"):
        F.dropout3d(ones(3, 2), 0.5)
    with pytest.warns(UserWarning, match="dropout2d: Received a 1-D input"):
        with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
            F.dropout2d(rtx.randn(3))


def test_alpha_dropout_keeps_mean_and_variance():
    rtx.manual_seed(11)
    x = rtx.randn(400, 500, dtype=rtx.float64)
    y = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    # dropped elements share one value: a * (-alpha') + b with PyTorch's constants
    alpha = 1.7580993408473766
    a = 1 / math.sqrt((alpha * alpha * 0.2 + 1) * 0.8)
    dropped_value = -alpha * a + alpha * a * 0.2
    xn = x.numpy()
    kept = np.isclose(y, xn * a + alpha * a * 0.2)
    assert_close(y[~kept], np.full((~kept).sum(), dropped_value))
    assert abs((~kept).mean() - 0.2) < 0.01


def test_feature_alpha_dropout_is_channel_wise():
    rtx.manual_seed(2)
    y = F.feature_alpha_dropout(ones(4, 10, 6), 0.5, training=True).numpy()
    assert _channel_constant(y, 2)


def test_inplace_dropout():
    rtx.manual_seed(9)
    x = ones(10, 10)
    out = F.dropout(x, 0.5, inplace=True)
    assert out is x and set(np.unique(x.numpy())) == {0.0, 2.0}
    leaf = ones(3, requires_grad=True)
    h = leaf * 1.0
    F.dropout(h, 0.5, inplace=True)
    (g,) = rtx.autograd.grad(h.sum(), [leaf])
    assert_close(g, h.detach())


def test_layers_repr_and_training_switch():
    assert repr(nn.Dropout()) == "Dropout(p=0.5, inplace=False)"
    assert repr(nn.Dropout(0.2, True)) == "Dropout(p=0.2, inplace=True)"
    assert repr(nn.Dropout1d()) == "Dropout1d(p=0.5, inplace=False)"
    assert repr(nn.Dropout2d(0.3)) == "Dropout2d(p=0.3, inplace=False)"
    assert repr(nn.Dropout3d()) == "Dropout3d(p=0.5, inplace=False)"
    assert repr(nn.AlphaDropout(0.1)) == "AlphaDropout(p=0.1, inplace=False)"
    assert repr(nn.FeatureAlphaDropout()) == "FeatureAlphaDropout(p=0.5, inplace=False)"
    x = ones(20, 8, 4, 4)
    for m in (nn.Dropout(0.5), nn.Dropout2d(0.5), nn.AlphaDropout(0.5), nn.FeatureAlphaDropout(0.5)):
        assert not np.array_equal(m(x).numpy(), x.numpy())
        m.eval()
        assert m(x) is x
        assert list(m.state_dict()) == []
    assert nn.Dropout1d(0.5)(ones(4, 6, 3)).shape == (4, 6, 3)
    assert nn.Dropout3d(0.5)(ones(2, 3, 2, 2, 2)).shape == (2, 3, 2, 2, 2)
