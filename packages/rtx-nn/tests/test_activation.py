"""Activations (rtx.nn.functional and the layers): values against NumPy references, gradients
against finite differences in float64 and double backward (OpCase tables), PyTorch's
derivatives at the kinks, integer inputs, in-place forms, softmax dims/dtypes/stability,
errors, and the layers' repr and parameters."""
import math
import warnings

import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.testing import OpCase, assert_close, check_case, devices

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

rng = np.random.default_rng(7)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def away(*shape, kinks=(0.0,), gap=0.15, scale=3.0):
    """Random values kept `gap` away from the kinks, where finite differences are meaningless."""
    x = rng.uniform(-scale, scale, shape)
    for k in kinks:
        near = np.abs(x - k) < gap
        x[near] = k + gap * 2 * np.sign(x[near] - k + 1e-12)
    return x


_erf = np.vectorize(math.erf)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def np_softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def np_gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


X = away(3, 5, kinks=(0.0, -3.0, 3.0, -1.0, 1.0, 6.0, 0.5, -0.5))

CASES = [
    OpCase("relu", F.relu, lambda x: np.maximum(x, 0), [X]),
    OpCase("relu6", F.relu6, lambda x: np.clip(x, 0, 6), [away(4, 3, kinks=(0.0, 6.0), scale=8)]),
    OpCase("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x), [X]),
    OpCase("elu", lambda x: F.elu(x, 1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x)), [X]),
    OpCase("selu", F.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), [X]),
    OpCase("celu", lambda x: F.celu(x, 0.7), lambda x: np.maximum(x, 0) + np.minimum(0, 0.7 * np.expm1(x / 0.7)),
           [X]),
    OpCase("gelu", F.gelu, np_gelu, [X], rtol=1e-6, atol=1e-7),
    OpCase("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), lambda x: np_gelu(x, "tanh"), [X]),
    OpCase("silu", F.silu, lambda x: x * np_sigmoid(x), [X]),
    OpCase("mish", F.mish, lambda x: x * np.tanh(np.log1p(np.exp(x))), [X]),
    OpCase("hardswish", F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6, [X]),
    OpCase("hardsigmoid", F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6, [X]),
    OpCase("hardtanh", lambda x: F.hardtanh(x, -0.5, 1.0), lambda x: np.clip(x, -0.5, 1.0), [X]),
    OpCase("softplus", F.softplus, np_softplus, [X]),
    OpCase("softplus_beta", lambda x: F.softplus(x, beta=2.0, threshold=3.0),
           lambda x: np_softplus(x, 2.0, 3.0), [away(4, 4, kinks=(1.5,))]),
    OpCase("softsign", F.softsign, lambda x: x / (1 + np.abs(x)), [X]),
    OpCase("tanh", F.tanh, np.tanh, [X]),
    OpCase("sigmoid", F.sigmoid, np_sigmoid, [X]),
    OpCase("logsigmoid", F.logsigmoid, lambda x: np.log(np_sigmoid(x)), [X]),
    OpCase("threshold", lambda x: F.threshold(x, 0.5, -2.0), lambda x: np.where(x > 0.5, x, -2.0), [X]),
    OpCase("tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x), [X]),
    OpCase("softshrink", F.softshrink,
           lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0.0)), [X]),
    OpCase("hardshrink", F.hardshrink, lambda x: np.where(np.abs(x) > 0.5, x, 0.0), [X]),
    OpCase("glu", lambda x: F.glu(x, 0), lambda x: x[:2] * np_sigmoid(x[2:]), [away(4, 3)]),
    OpCase("glu_last", F.glu, lambda x: x[..., :3] * np_sigmoid(x[..., 3:]), [away(2, 6)]),
    OpCase("prelu", F.prelu, lambda x, w: np.where(x > 0, x, w[None, :, None] * x),
           [away(2, 3, 4), np.array([0.1, -0.4, 0.8])]),
    OpCase("prelu_shared", F.prelu, lambda x, w: np.where(x > 0, x, w * x), [away(5), np.array([0.3])]),
    OpCase("softmax", lambda x: F.softmax(x, 1), lambda x: np_softmax(x, 1), [away(3, 4, 2)]),
    OpCase("softmax_0", lambda x: F.softmax(x, 0), lambda x: np_softmax(x, 0), [away(3, 4)]),
    OpCase("log_softmax", lambda x: F.log_softmax(x, -1), lambda x: np.log(np_softmax(x, -1)), [away(3, 5)]),
    OpCase("softmin", lambda x: F.softmin(x, 1), lambda x: np_softmax(-x, 1), [away(2, 4)]),
]


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_values_gradients_double_backward(case, device):
    check_case(case, device)


@pytest.mark.parametrize("fn", [F.relu, F.gelu, F.silu, F.elu, F.softplus, F.hardswish, F.logsigmoid,
                                lambda x: F.softmax(x, -1), lambda x: F.log_softmax(x, -1)])
def test_float32_in_float32_out(fn):
    x = rtx.tensor(away(4, 6).astype(np.float32))
    y = fn(x)
    assert y.dtype == rtx.float32 and tuple(y.shape) == (4, 6)


# ---- PyTorch's derivatives at the kinks (values recorded from torch 2.13) ------------------------

KINK_X = [-3.0, 0.0, 3.0, 6.0, -1.0, 1.0]
KINK_GRADS = {
    "relu6": (F.relu6, [0.0, 0.0, 1.0, 0.0, 0.0, 1.0]),
    "hardtanh": (F.hardtanh, [0.0, 1.0, 0.0, 0.0, 0.0, 0.0]),
    "hardsigmoid": (F.hardsigmoid, [0.0, 1 / 6, 0.0, 0.0, 1 / 6, 1 / 6]),
    "hardswish": (F.hardswish, [0.0, 0.5, 1.0, 1.0, 1 / 6, 5 / 6]),
    "softshrink": (lambda v: F.softshrink(v, 1.0), [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]),
    "hardshrink": (lambda v: F.hardshrink(v, 1.0), [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]),
    "leaky_relu": (F.leaky_relu, [0.01, 0.01, 1.0, 1.0, 0.01, 1.0]),
    "elu": (F.elu, [math.exp(-3), 1.0, 1.0, 1.0, math.exp(-1), 1.0]),
    "relu": (F.relu, [0.0, 0.0, 1.0, 1.0, 0.0, 1.0]),
    "threshold": (lambda v: F.threshold(v, 1.0, 7.0), [0.0, 0.0, 1.0, 1.0, 0.0, 0.0]),
}


@pytest.mark.parametrize("name", sorted(KINK_GRADS))
def test_gradients_at_kinks_match_pytorch(name):
    fn, expected = KINK_GRADS[name]
    x = rtx.tensor(KINK_X, requires_grad=True)
    (g,) = rtx.autograd.grad(fn(x).sum(), [x])
    assert_close(g, np.array(expected, dtype=np.float32), rtol=1e-6, atol=1e-7)


# ---- dtypes, in-place, numerics ------------------------------------------------------------------


def test_integer_inputs_as_pytorch():
    ti = rtx.tensor([-2, 0, 3, 9])
    assert F.relu(ti).dtype == rtx.int64 and F.relu(ti).tolist() == [0, 0, 3, 9]
    assert F.relu6(ti).tolist() == [0, 0, 3, 6] and F.relu6(ti).dtype == rtx.int64
    assert F.hardtanh(ti).tolist() == [-1, 0, 1, 1]
    assert F.threshold(ti, 1, 5).tolist() == [5, 5, 3, 9]
    for fn in (F.leaky_relu, F.elu, F.gelu, F.silu, F.softplus, F.hardswish, F.mish, F.logsigmoid):
        with pytest.raises(NotImplementedError, match="not implemented for 'Int64'"):
            fn(ti)
    with pytest.raises(NotImplementedError, match="not implemented"):
        F.softmax(ti, 0)
    assert F.softmax(ti, 0, dtype=rtx.float64).dtype == rtx.float64


@pytest.mark.parametrize("fn, name", [(F.relu, "relu"), (F.elu, "elu"), (F.leaky_relu, "leaky_relu"),
                                      (F.hardtanh, "hardtanh"), (F.silu, "silu"), (F.selu, "selu"),
                                      (F.celu, "celu"), (F.hardswish, "hardswish"), (F.mish, "mish"),
                                      (F.hardsigmoid, "hardsigmoid"), (F.relu6, "relu6")])
def test_inplace_writes_input_and_keeps_gradient(fn, name):
    base = away(3, 4)
    x = rtx.tensor(base, requires_grad=True)
    expected = fn(x)
    (g_ref,) = rtx.autograd.grad(expected.sum(), [x])
    h = x * 1.0
    out = fn(h, inplace=True)
    assert out is h
    assert_close(h, expected.detach())
    (g,) = rtx.autograd.grad(out.sum(), [x])
    assert_close(g, g_ref)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fn(rtx.tensor(base, requires_grad=True), inplace=True)


def test_inplace_underscore_forms():
    x = rtx.tensor([-1.0, 2.0])
    assert F.relu_(x) is x and x.tolist() == [0.0, 2.0]
    y = rtx.tensor([-1.0, 2.0])
    F.elu_(y)
    assert_close(y, np.array([math.expm1(-1), 2.0], dtype=np.float32))
    z = rtx.tensor([-2.0, 0.5, 3.0])
    F.hardtanh_(z)
    assert z.tolist() == [-1.0, 0.5, 1.0]
    t = rtx.tensor([0.2, 2.0])
    F.threshold_(t, 1.0, -1.0)
    assert t.tolist() == [-1.0, 2.0]


def test_numerics_at_extremes():
    big = rtx.tensor([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=rtx.float64)
    assert np.isfinite(F.logsigmoid(big).numpy()).all()
    assert_close(F.logsigmoid(big), np.array([-1000.0, -50.0, -math.log(2), -1.9287498479639178e-22, 0.0]))
    assert_close(F.softplus(big), np.array([0.0, 1.9287498479639178e-22, math.log(2), 50.0, 1000.0]))
    assert_close(F.silu(big), np.array([0.0, -50 * np_sigmoid(-50.0), 0.0, 50.0, 1000.0]))
    assert np.isfinite(F.mish(big).numpy()).all()
    # softplus above the threshold is the identity (and its gradient 1)
    x = rtx.tensor([30.0, 100.0], requires_grad=True)
    y = F.softplus(x, beta=2, threshold=20)
    assert y.tolist() == [30.0, 100.0]
    (g,) = rtx.autograd.grad(y.sum(), [x])
    assert g.tolist() == [1.0, 1.0]


def test_softmax_is_stable_and_sums_to_one():
    x = rtx.tensor([[1e4, 1e4 + 1.0, -1e4], [-5e3, -5e3 + 2.0, -5e3 - 1.0]], dtype=rtx.float32)
    y = F.softmax(x, -1)
    assert np.isfinite(y.numpy()).all()
    assert_close(y.sum(-1), np.ones(2, dtype=np.float32))
    assert_close(y[0], np_softmax(np.array([0.0, 1.0, -2e4]), 0).astype(np.float32))
    ly = F.log_softmax(x, -1)
    assert np.isfinite(ly.numpy()[:, :2]).all()
    assert_close(ly[1], np.log(np_softmax(np.array([0.0, 2.0, -1.0]), 0)).astype(np.float32), atol=1e-5)


def test_softmax_dim_none_warns_and_picks_pytorch_dim():
    x3 = rtx.tensor(away(2, 3, 4))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        y = F.softmax(x3)
    assert_close(y, np_softmax(x3.numpy(), 0))
    x2 = rtx.tensor(away(2, 3))
    with pytest.warns(UserWarning, match="log_softmax"):
        y = F.log_softmax(x2)
    assert_close(y, np.log(np_softmax(x2.numpy(), 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.softmax(x2, dim=1)


def test_softmax_scalar_dtype_and_dim_errors():
    assert F.softmax(rtx.tensor(2.0), 0).item() == 1.0
    assert F.log_softmax(rtx.tensor(2.0), 0).item() == 0.0
    x = rtx.randn(2, 3)
    y = F.softmax(x, 1, dtype=rtx.float64)
    assert y.dtype == rtx.float64
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.softmax(x, 2)
    assert F.softmax(rtx.randn(5, 0), -1).shape == (5, 0)
    assert F.log_softmax(rtx.randn(0, 3), 0).shape == (0, 3)


def test_softmax_backward_fused_and_recorded_paths_agree():
    x0 = away(4, 7)
    g0 = rng.standard_normal((4, 7))
    for fn in (lambda t: F.softmax(t, 1), lambda t: F.log_softmax(t, 1)):
        x = rtx.tensor(x0, requires_grad=True)
        (fused,) = rtx.autograd.grad(fn(x), [x], rtx.tensor(g0))
        x = rtx.tensor(x0, requires_grad=True)
        (recorded,) = rtx.autograd.grad(fn(x), [x], rtx.tensor(g0), create_graph=True)
        assert recorded.grad_fn is not None and fused.grad_fn is None
        assert_close(fused, recorded.detach())


def test_gelu_backward_fused_and_recorded_paths_agree():
    x0 = away(3, 4)
    for approximate in ("none", "tanh"):
        x = rtx.tensor(x0, requires_grad=True)
        (g1,) = rtx.autograd.grad(F.gelu(x, approximate=approximate).sum(), [x], create_graph=True)
        (g2,) = rtx.autograd.grad(g1.sum(), [x])
        h = 1e-5
        num = (np_gelu(x0 + h, approximate) - 2 * np_gelu(x0, approximate) + np_gelu(x0 - h, approximate)) / h ** 2
        assert_close(g2, num, rtol=1e-4, atol=1e-4)


def test_rrelu_train_and_eval():
    x = rtx.tensor(away(200), requires_grad=True)
    y = F.rrelu(x)  # eval: slope (lower + upper) / 2
    mid = (1 / 8 + 1 / 3) / 2
    assert_close(y, np.where(x.detach().numpy() >= 0, x.detach().numpy(), mid * x.detach().numpy()))
    rtx.manual_seed(3)
    y1 = F.rrelu(x, training=True)
    rtx.manual_seed(3)
    y2 = F.rrelu(x, training=True)
    assert_close(y1, y2)
    xn = x.detach().numpy()
    slopes = (y1.detach().numpy() / xn)[xn < 0]
    assert slopes.min() >= 1 / 8 - 1e-12 and slopes.max() <= 1 / 3 + 1e-12 and slopes.std() > 0.01
    (g,) = rtx.autograd.grad(y1.sum(), [x])
    assert_close(g, np.where(xn >= 0, 1.0, y1.detach().numpy() / xn))


# ---- errors ---------------------------------------------------------------------------------------


def test_errors_match_pytorch():
    x = rtx.randn(2, 3)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(x, approximate="foo")
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 3"):
        F.glu(x, 1)
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(rtx.tensor(1.0))
    with pytest.raises(RuntimeError, match="Found parameter numbers = 4 and channel size = 3"):
        F.prelu(x, rtx.ones(4))
    with pytest.raises(RuntimeError, match="parameter numbers = 4 and channel size = 1"):
        F.prelu(rtx.randn(4), rtx.ones(4))
    with pytest.raises(RuntimeError, match="lambda must be in range"):
        F.softshrink(x, -1.0)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(x, 2.0, 1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(x, alpha=0.0)
    with pytest.raises(TypeError, match="must be Tensor"):
        F.relu([1.0, 2.0])


# ---- layers -------------------------------------------------------------------------------------

REPRS = [
    (nn.ReLU(), "ReLU()"), (nn.ReLU(True), "ReLU(inplace=True)"), (nn.ReLU6(), "ReLU6()"),
    (nn.ReLU6(True), "ReLU6(inplace=True)"), (nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)"),
    (nn.LeakyReLU(0.2, True), "LeakyReLU(negative_slope=0.2, inplace=True)"),
    (nn.PReLU(), "PReLU(num_parameters=1)"), (nn.PReLU(3), "PReLU(num_parameters=3)"),
    (nn.ELU(), "ELU(alpha=1.0)"), (nn.ELU(inplace=True), "ELU(alpha=1.0, inplace=True)"),
    (nn.CELU(), "CELU(alpha=1.0)"), (nn.SELU(), "SELU()"), (nn.SELU(True), "SELU(inplace=True)"),
    (nn.GELU(), "GELU(approximate='none')"), (nn.GELU("tanh"), "GELU(approximate='tanh')"),
    (nn.SiLU(), "SiLU()"), (nn.SiLU(True), "SiLU(inplace=True)"), (nn.Mish(), "Mish()"),
    (nn.Hardswish(), "Hardswish()"), (nn.Hardsigmoid(True), "Hardsigmoid()"),
    (nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"),
    (nn.Hardtanh(-2, 2, True), "Hardtanh(min_val=-2, max_val=2, inplace=True)"),
    (nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"), (nn.Softsign(), "Softsign()"), (nn.Tanh(), "Tanh()"),
    (nn.Sigmoid(), "Sigmoid()"), (nn.LogSigmoid(), "LogSigmoid()"), (nn.Softmax(), "Softmax(dim=None)"),
    (nn.Softmax(1), "Softmax(dim=1)"), (nn.LogSoftmax(-1), "LogSoftmax(dim=-1)"), (nn.Softmin(0), "Softmin(dim=0)"),
    (nn.Softmax2d(), "Softmax2d()"), (nn.GLU(), "GLU(dim=-1)"),
    (nn.Threshold(0.1, 20), "Threshold(threshold=0.1, value=20)"),
    (nn.Threshold(0.1, 20, True), "Threshold(threshold=0.1, value=20, inplace=True)"),
    (nn.Tanhshrink(), "Tanhshrink()"), (nn.Softshrink(), "Softshrink(0.5)"), (nn.Hardshrink(0.3), "Hardshrink(0.3)"),
    (nn.RReLU(), "RReLU(lower=0.125, upper=0.3333333333333333)"),
    (nn.RReLU(0.1, 0.3, True), "RReLU(lower=0.1, upper=0.3, inplace=True)"),
]


@pytest.mark.parametrize("module, text", REPRS, ids=[t for _, t in REPRS])
def test_layer_repr_matches_pytorch(module, text):
    assert repr(module) == text


LAYERS = [
    (nn.ReLU(), F.relu), (nn.ReLU6(), F.relu6), (nn.LeakyReLU(0.3), lambda x: F.leaky_relu(x, 0.3)),
    (nn.ELU(0.5), lambda x: F.elu(x, 0.5)), (nn.SELU(), F.selu), (nn.CELU(2.0), lambda x: F.celu(x, 2.0)),
    (nn.GELU("tanh"), lambda x: F.gelu(x, approximate="tanh")), (nn.SiLU(), F.silu), (nn.Mish(), F.mish),
    (nn.Hardswish(), F.hardswish), (nn.Hardsigmoid(), F.hardsigmoid),
    (nn.Hardtanh(-2, 2), lambda x: F.hardtanh(x, -2, 2)),
    (nn.Softplus(2, 10), lambda x: F.softplus(x, 2, 10)), (nn.Softsign(), F.softsign), (nn.Tanh(), F.tanh),
    (nn.Sigmoid(), F.sigmoid), (nn.LogSigmoid(), F.logsigmoid), (nn.Softmax(1), lambda x: F.softmax(x, 1)),
    (nn.LogSoftmax(0), lambda x: F.log_softmax(x, 0)), (nn.Softmin(1), lambda x: F.softmin(x, 1)),
    (nn.GLU(1), lambda x: F.glu(x, 1)), (nn.Threshold(0.2, -1.0), lambda x: F.threshold(x, 0.2, -1.0)),
    (nn.Tanhshrink(), F.tanhshrink), (nn.Softshrink(0.3), lambda x: F.softshrink(x, 0.3)),
    (nn.Hardshrink(0.3), lambda x: F.hardshrink(x, 0.3)), (nn.PReLU(), lambda x: F.prelu(x, rtx.tensor([0.25]))),
]


@pytest.mark.parametrize("module, fn", LAYERS, ids=[type(m).__name__ for m, _ in LAYERS])
def test_layer_forward_is_the_functional(module, fn):
    x = rtx.tensor(away(3, 4).astype(np.float32))
    assert_close(module(x), fn(x))
    assert list(module.state_dict()) == (["weight"] if isinstance(module, nn.PReLU) else [])


def test_prelu_parameter_init_and_gradient():
    m = nn.PReLU(3, init=0.1)
    assert isinstance(m.weight, nn.Parameter) and m.weight.tolist() == pytest.approx([0.1] * 3)
    assert list(m.state_dict()) == ["weight"]
    x = rtx.tensor(away(2, 3, 4).astype(np.float32))
    y = m(x)
    y.sum().backward()
    xn = x.numpy()
    assert_close(m.weight.grad, np.minimum(xn, 0).sum(axis=(0, 2)), rtol=1e-5, atol=1e-5)
    assert nn.PReLU(dtype=rtx.float64).weight.dtype == rtx.float64


def test_softmax2d():
    x = rtx.tensor(away(2, 3, 4, 5))
    assert_close(nn.Softmax2d()(x), np_softmax(x.numpy(), 1))
    assert_close(nn.Softmax2d()(x[0]), np_softmax(x.numpy()[0], 0))
    with pytest.raises(ValueError, match="expected input to be 3D or 4D, got 2D"):
        nn.Softmax2d()(rtx.randn(2, 3))


def test_rrelu_layer_follows_training_mode():
    m = nn.RReLU()
    x = rtx.tensor(-np.ones(1000))
    rtx.manual_seed(0)
    assert m(x).numpy().std() > 0.01
    m.eval()
    assert_close(m(x), -np.full(1000, (1 / 8 + 1 / 3) / 2))
