"""rtx.nn.utils.fusion: a conv/linear with an eval BatchNorm folded in computes bn(layer(x)),
checked against the layers run one after the other and against the closed form in float64 NumPy."""
import numpy as np
import pytest

import rtx
import rtx.nn as nn
from rtx.nn.utils.fusion import batch_norm_scale_shift, fuse_conv_bn_weights, fuse_linear_bn_weights


def _bn(c, affine=True, seed=0):
    rng = np.random.default_rng(seed)
    bn = nn.BatchNorm2d(c, affine=affine, eps=1e-3)
    bn.running_mean.copy_(rtx.tensor(rng.normal(size=c).astype(np.float32)))
    bn.running_var.copy_(rtx.tensor(rng.uniform(0.2, 3, size=c).astype(np.float32)))
    if affine:
        with rtx.no_grad():
            bn.weight.copy_(rtx.tensor(rng.normal(size=c).astype(np.float32)))
            bn.bias.copy_(rtx.tensor(rng.normal(size=c).astype(np.float32)))
    return bn.eval()


def test_scale_shift_is_the_closed_form():
    bn = _bn(5)
    scale, shift = batch_norm_scale_shift(bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    m, v = bn.running_mean.numpy().astype(np.float64), bn.running_var.numpy().astype(np.float64)
    g, b = bn.weight.detach().numpy().astype(np.float64), bn.bias.detach().numpy().astype(np.float64)
    np.testing.assert_allclose(scale.detach().numpy(), g / np.sqrt(v + 1e-3), rtol=1e-6)
    np.testing.assert_allclose(shift.detach().numpy(), b - m * g / np.sqrt(v + 1e-3), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bias, affine", [(True, True), (False, True), (True, False)])
def test_conv_bn_folds(bias, affine):
    conv = nn.Conv2d(3, 4, 3, bias=bias).eval()
    bn = _bn(4, affine)
    x = rtx.randn(2, 3, 7, 7)
    w, b = fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    assert isinstance(w, nn.Parameter) and w.shape == conv.weight.shape and b.shape == (4,)
    fused = nn.Conv2d(3, 4, 3).eval()
    fused.weight, fused.bias = w, b
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_transposed_conv_and_linear_fold():
    bn = _bn(4)
    up = nn.ConvTranspose2d(3, 4, 2, stride=2).eval()
    x = rtx.randn(1, 3, 4, 4)
    w, b = fuse_conv_bn_weights(up.weight, up.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
                                transpose=True)
    fused = nn.ConvTranspose2d(3, 4, 2, stride=2).eval()
    fused.weight, fused.bias = w, b
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(up(x)).detach().numpy(), rtol=1e-4, atol=1e-5)

    lin, bn1 = nn.Linear(6, 4).eval(), nn.BatchNorm1d(4).eval()
    bn1.running_var.copy_(rtx.tensor([0.5, 1.0, 2.0, 4.0]))
    x = rtx.randn(5, 6)
    w, b = fuse_linear_bn_weights(lin.weight, lin.bias, bn1.running_mean, bn1.running_var, bn1.eps, bn1.weight,
                                  bn1.bias)
    np.testing.assert_allclose((x @ w.T + b).detach().numpy(), bn1(lin(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
