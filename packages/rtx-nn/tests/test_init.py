"""rtx.nn.init: statistics of every initializer over a large tensor (mean, std, bounds), the
gain table, fan computation, reproducibility, in-place semantics on Parameters, and the
default initialisation of nn.Linear."""
import math

import numpy as np
import pytest

import rtx
import rtx.nn as nn
from rtx.nn import init

N = (400, 500)  # 200k samples: the sample std is within ~0.3% of the true one


def big(*shape, dtype=rtx.float64):
    return nn.Parameter(rtx.empty(shape or N, dtype=dtype))


def stats(t):
    a = t.detach().numpy()
    return a.mean(), a.std(), a.min(), a.max()


def test_uniform_and_normal():
    rtx.manual_seed(0)
    t = big()
    assert init.uniform_(t, -2.0, 3.0) is t
    mean, std, lo, hi = stats(t)
    assert lo >= -2.0 and hi <= 3.0 and abs(mean - 0.5) < 0.01 and abs(std - 5 / math.sqrt(12)) < 0.01
    init.normal_(t, 1.5, 0.5)
    mean, std, _, _ = stats(t)
    assert abs(mean - 1.5) < 0.005 and abs(std - 0.5) < 0.005
    assert t.requires_grad and t.grad_fn is None  # in place on a Parameter, nothing recorded


def test_trunc_normal():
    rtx.manual_seed(1)
    t = init.trunc_normal_(big(), mean=0.0, std=1.0, a=-2.0, b=2.0)
    mean, std, lo, hi = stats(t)
    phi = math.exp(-2.0) / math.sqrt(2 * math.pi)  # density at 2
    mass = math.erf(2 / math.sqrt(2))
    expected_std = math.sqrt(1 - 2 * 2 * phi / mass)
    assert lo >= -2.0 and hi <= 2.0 and abs(mean) < 0.01 and abs(std - expected_std) < 0.01
    t = init.trunc_normal_(big(), mean=1.0, std=0.02, a=0.97, b=1.1)
    _, _, lo, hi = stats(t)
    assert lo >= 0.97 and hi <= 1.1
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        init.trunc_normal_(big(10), mean=10.0, std=1.0)


def test_constants_eye_dirac():
    t = big(3, 4)
    assert init.constant_(t, 0.3).tolist() == [[0.3] * 4] * 3
    assert init.ones_(t).tolist() == [[1.0] * 4] * 3
    assert init.zeros_(t).tolist() == [[0.0] * 4] * 3
    assert np.array_equal(init.eye_(t).detach().numpy(), np.eye(3, 4))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(big(2, 2, 2))
    w = init.dirac_(big(4, 2, 3, 3), groups=2)
    a = w.detach().numpy()
    assert a.sum() == 4 and a[0, 0, 1, 1] == a[1, 1, 1, 1] == a[2, 0, 1, 1] == a[3, 1, 1, 1] == 1
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(big(3, 2, 3), groups=2)


def test_fan_computation():
    assert init._calculate_fan_in_and_fan_out(rtx.empty(7, 5)) == (5, 7)
    assert init._calculate_fan_in_and_fan_out(rtx.empty(16, 3, 5, 5)) == (75, 400)
    assert init._calculate_fan_in_and_fan_out(rtx.empty(4, 2, 3)) == (6, 12)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(rtx.empty(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(rtx.empty(3, 3), mode="fan_avg")


def test_gain_table():
    for name in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d", "sigmoid"):
        assert init.calculate_gain(name) == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01 ** 2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == pytest.approx(0.75)
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")


def test_xavier():
    rtx.manual_seed(2)
    t = init.xavier_uniform_(big(300, 200), gain=2.0)
    bound = 2.0 * math.sqrt(6 / 500)
    mean, std, lo, hi = stats(t)
    assert -bound <= lo and hi <= bound and hi > 0.99 * bound and abs(std - bound / math.sqrt(3)) < 0.01 * bound
    t = init.xavier_normal_(big(300, 200))
    _, std, _, _ = stats(t)
    assert abs(std - math.sqrt(2 / 500)) < 0.01 * math.sqrt(2 / 500)


@pytest.mark.parametrize("mode, nonlinearity, a", [("fan_in", "leaky_relu", 0), ("fan_out", "relu", 0),
                                                   ("fan_in", "leaky_relu", math.sqrt(5)), ("fan_in", "tanh", 0)])
def test_kaiming(mode, nonlinearity, a):
    rtx.manual_seed(3)
    shape = (200, 50, 3, 3)  # fan_in 450, fan_out 1800
    fan = 450 if mode == "fan_in" else 1800
    gain = init.calculate_gain(nonlinearity, a)
    t = init.kaiming_uniform_(big(*shape), a=a, mode=mode, nonlinearity=nonlinearity)
    bound = math.sqrt(3) * gain / math.sqrt(fan)
    mean, std, lo, hi = stats(t)
    assert -bound <= lo and hi <= bound and abs(mean) < 0.01 * bound and abs(std - gain / math.sqrt(fan)) < 0.01 * bound
    t = init.kaiming_normal_(big(*shape), a=a, mode=mode, nonlinearity=nonlinearity)
    _, std, _, _ = stats(t)
    assert abs(std - gain / math.sqrt(fan)) < 0.01 * gain / math.sqrt(fan)
    empty = rtx.empty(0, 3)
    assert init.kaiming_uniform_(empty) is empty  # zero-element tensors: a no-op


def test_orthogonal():
    rtx.manual_seed(4)
    w = init.orthogonal_(big(30, 50), gain=2.0).detach().numpy()
    assert np.allclose(w @ w.T, 4 * np.eye(30), atol=1e-10)
    w = init.orthogonal_(big(50, 30)).detach().numpy()
    assert np.allclose(w.T @ w, np.eye(30), atol=1e-10)
    w = init.orthogonal_(big(6, 2, 2)).detach().numpy().reshape(6, 4)
    assert np.allclose(w.T @ w, np.eye(4), atol=1e-10)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        init.orthogonal_(big(5))


def test_sparse():
    rtx.manual_seed(5)
    w = init.sparse_(big(100, 400), sparsity=0.3, std=0.05).detach().numpy()
    assert ((w == 0).sum(axis=0) == 30).all()  # exactly ceil(0.3 * 100) zeros per column
    assert abs(w[w != 0].std() - 0.05) < 0.002


def test_reproducible_with_seed_and_generator():
    rtx.manual_seed(7)
    a = init.normal_(big(10, 10)).detach().numpy().copy()
    rtx.manual_seed(7)
    b = init.normal_(big(10, 10)).detach().numpy()
    assert np.array_equal(a, b)
    g = rtx.Generator().manual_seed(9)
    c = init.uniform_(big(5), generator=g).detach().numpy().copy()
    rtx.manual_seed(123)  # the global stream does not matter with an explicit generator
    g.manual_seed(9)
    assert np.array_equal(c, init.uniform_(big(5), generator=g).detach().numpy())


def test_float32_tensors_keep_their_dtype():
    t = init.kaiming_uniform_(big(8, 8, dtype=rtx.float32))
    assert t.dtype == rtx.float32
    assert init.normal_(rtx.empty(3, dtype=rtx.float16)).dtype == rtx.float16


def test_linear_default_init():
    rtx.manual_seed(11)
    fan_in = 256
    lin = nn.Linear(fan_in, 2000)
    w = lin.weight.detach().numpy()
    bound = 1 / math.sqrt(fan_in)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.999 * bound
    assert abs(w.mean()) < 0.01 * bound and abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    hist, _ = np.histogram(w, bins=10, range=(-bound, bound))
    assert np.all(np.abs(hist / w.size - 0.1) < 0.005)  # flat: uniform, not normal
    b = lin.bias.detach().numpy()
    assert np.abs(b).max() <= bound and b.std() > 0.4 * bound
