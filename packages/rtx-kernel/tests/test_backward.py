"""Backward kernels against central finite differences of their forward kernels, in float64:
d/da sum(forward(...) * grad_y) for every element of every differentiable input."""
import numpy as np
import pytest

import rtx.kernel as K


def numerical_grad(loss, a, h=1e-6):
    """Central differences of the scalar loss() wrt every element of `a` (perturbed in place)."""
    grad = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        old = a[i]
        a[i] = old + h
        up = loss()
        a[i] = old - h
        down = loss()
        a[i] = old
        grad[i] = (up - down) / (2 * h)
    return grad


def check(analytic, loss, a, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(analytic, numerical_grad(loss, a), rtol=rtol, atol=atol)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


@pytest.mark.parametrize("impl", ["reference", "cpu"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_backward(rng, impl, axis):
    x, g = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 4, 5))
    fwd, bwd = K.softmax.reference, getattr(K.softmax_backward, impl)
    check(bwd(fwd(x, axis), g, axis), lambda: np.sum(fwd(x, axis) * g), x)


@pytest.mark.parametrize("impl", ["reference", "cpu"])
@pytest.mark.parametrize("axis", [-1, 0])
def test_log_softmax_backward(rng, impl, axis):
    x, g = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    fwd, bwd = K.log_softmax.reference, getattr(K.log_softmax_backward, impl)
    check(bwd(fwd(x, axis), g, axis), lambda: np.sum(fwd(x, axis) * g), x)


@pytest.mark.parametrize("impl", ["reference", "cpu"])
@pytest.mark.parametrize("shape,k,affine", [((3, 5), 1, True), ((2, 3, 4), 2, True), ((4, 6), 1, False)])
def test_layer_norm_backward(rng, impl, shape, k, affine):
    x, g = rng.standard_normal(shape), rng.standard_normal(shape)
    w = rng.standard_normal(shape[-k:]) if affine else None
    b = rng.standard_normal(shape[-k:]) if affine else None
    _, mean, rstd = K.layer_norm.reference(x, w, b, 1e-5, k)
    gx, gw, gb = getattr(K.layer_norm_backward, impl)(g, x, w, mean, rstd, k)

    def loss():
        return np.sum(K.layer_norm.reference(x, w, b, 1e-5, k)[0] * g)
    check(gx, loss, x)
    if affine:
        check(gw, loss, w)
        check(gb, loss, b)
    else:
        assert gw is None and gb is None


def test_layer_norm_backward_bias_without_weight(rng):
    x, g, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.standard_normal(4)
    _, mean, rstd = K.layer_norm(x, None, b, 1e-5, 1)
    gx, gw, gb = K.layer_norm_backward(g, x, None, mean, rstd, 1, has_bias=True)
    assert gw is None
    check(gb, lambda: np.sum(K.layer_norm(x, None, b, 1e-5, 1)[0] * g), b)


@pytest.mark.parametrize("impl", ["reference", "cpu"])
@pytest.mark.parametrize("shape,k,affine", [((3, 5), 1, True), ((2, 3, 4), 2, True), ((4, 6), 1, False)])
def test_rms_norm_backward(rng, impl, shape, k, affine):
    x, g = rng.standard_normal(shape), rng.standard_normal(shape)
    w = rng.standard_normal(shape[-k:]) if affine else None
    _, rstd = K.rms_norm.reference(x, w, 1e-6, k)
    gx, gw = getattr(K.rms_norm_backward, impl)(g, x, w, rstd, k)

    def loss():
        return np.sum(K.rms_norm.reference(x, w, 1e-6, k)[0] * g)
    check(gx, loss, x)
    if affine:
        check(gw, loss, w)
    else:
        assert gw is None


@pytest.mark.parametrize("impl", ["reference", "cpu"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward(rng, impl, approximate):
    x, g = rng.standard_normal(20) * 3, rng.standard_normal(20)
    gx = getattr(K.gelu_backward, impl)(x, g, approximate)
    check(gx, lambda: np.sum(K.gelu.reference(x, approximate) * g), x)


@pytest.mark.parametrize("impl", ["reference", "cpu"])
@pytest.mark.parametrize("act", ["none", "relu", "gelu", "gelu_tanh", "silu", "tanh", "sigmoid"])
@pytest.mark.parametrize("channel_axis", [-1, 1])
def test_bias_act_backward(rng, impl, act, channel_axis):
    x, g = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    b = rng.standard_normal(x.shape[channel_axis])
    if act == "relu":  # keep away from the kink, where central differences straddle it
        z = x + b.reshape((-1,) + (1,) * (x.ndim - 1 - channel_axis % x.ndim))
        x = np.where(np.abs(z) < 1e-3, x + 0.01, x)
    gx, gb = getattr(K.bias_act_backward, impl)(x, b, g, act, channel_axis=channel_axis)

    def loss():
        return np.sum(K.bias_act.reference(x, b, act, channel_axis=channel_axis) * g)
    check(gx, loss, x)
    check(gb, loss, b)


def test_bias_act_rejects_a_mismatched_bias(rng):
    with pytest.raises(ValueError, match=r"bias must have shape \(4,\)"):
        K.bias_act(rng.standard_normal((3, 4)), rng.standard_normal(3), "relu")
    with pytest.raises(ValueError, match="act must be one of"):
        K.bias_act(rng.standard_normal((3, 4)), None, "swish")
