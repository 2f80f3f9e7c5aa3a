"""DP-SGD: per-sample gradients against single-sample backward passes and a NumPy MLP; clipping
and noise against their definitions; the RDP accountant against closed forms and numerical
integration."""
import math

import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.federated import RDPAccountant, clip_and_noise, compute_rdp, get_privacy_spent, per_sample_gradients
from rtx.federated import dp as dp_mod


def _loss(out, t):
    return F.cross_entropy(out, t, reduction="none")


def _mlp():
    rtx.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3)).double()


def _numpy_per_sample(model, x, y):
    w1, b1, w2, b2 = [p.detach().numpy() for p in model.parameters()]
    out = []
    for xi, yi in zip(x, y):
        h = np.tanh(w1 @ xi + b1)
        z = w2 @ h + b2
        p = np.exp(z - z.max())
        p /= p.sum()
        dz = p.copy()
        dz[yi] -= 1
        dh = (w2.T @ dz) * (1 - h ** 2)
        out.append([np.outer(dh, xi), dh, np.outer(dz, h), dz])
    return [np.stack([o[k] for o in out]) for k in range(4)]


def test_per_sample_gradients_fast_path_equals_loop_and_numpy():
    rng = np.random.default_rng(0)
    model = _mlp()
    x = rng.normal(size=(6, 5))
    y = rng.integers(0, 3, size=6)
    xt, yt = rtx.from_numpy(x), rtx.from_numpy(y)
    params = list(model.parameters())
    assert dp_mod._linear_only(model)
    fast = per_sample_gradients(model, _loss, xt, yt)
    loop = dp_mod._per_sample_loop(model, _loss, xt, yt, params)
    ref = _numpy_per_sample(model, x, y)
    for f, lp, r in zip(fast, loop, ref):
        np.testing.assert_allclose(f, lp, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(f, r, rtol=1e-10, atol=1e-12)
    assert all(p.grad is None for p in params)


class _Mixer(nn.Module):  # a custom module: not eligible for the batched trick
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 3)

    def forward(self, x):
        return self.lin(x - x.mean(0, keepdim=True) * 0)


def test_per_sample_gradients_fall_back_to_a_loop_for_other_models():
    rtx.manual_seed(1)
    model = _Mixer().double()
    assert not dp_mod._linear_only(model)
    x = rtx.from_numpy(np.random.default_rng(1).normal(size=(4, 5)))
    y = rtx.from_numpy(np.array([0, 2, 1, 0]))
    g = per_sample_gradients(model, _loss, x, y)
    for i in range(4):
        model.zero_grad()
        _loss(model(x[i:i + 1]), y[i:i + 1]).sum().backward()
        np.testing.assert_allclose(g[0][i], model.lin.weight.grad.numpy(), rtol=1e-12)


def test_clipping_bounds_each_sample_and_noise_has_the_stated_scale():
    rng = np.random.default_rng(0)
    per = [rng.normal(size=(50, 4, 3)) * 10, rng.normal(size=(50, 3))]
    c = 0.5
    out = clip_and_noise(per, c, 0.0 + 1e-12, 50, rng)
    norms = np.sqrt((per[0].reshape(50, -1) ** 2).sum(1) + (per[1] ** 2).sum(1))
    f = np.minimum(1, c / (norms + 1e-6))
    np.testing.assert_allclose(out[0], (f[:, None, None] * per[0]).sum(0) / 50, atol=1e-9)
    np.testing.assert_allclose(out[1], (f[:, None] * per[1]).sum(0) / 50, atol=1e-9)
    # a small gradient is not scaled up
    tiny = [np.full((1, 2), 1e-3)]
    np.testing.assert_allclose(clip_and_noise(tiny, 1.0, 1e-12, 1, rng)[0], tiny[0][0], atol=1e-9)
    # noise: zero gradients, sigma=2, C=0.5 -> std of the sum is 1.0, divided by the batch of 4
    zeros = [np.zeros((4, 20000))]
    noise = clip_and_noise(zeros, 0.5, 2.0, 4, rng)[0]
    assert abs(noise.std() - 0.25) < 0.01 and abs(noise.mean()) < 0.01
    with pytest.raises(ValueError, match="max_grad_norm must be > 0"):
        clip_and_noise(per, 0.0, 1.0, 50, rng)


def test_rdp_without_subsampling_is_the_gaussian_mechanism():
    orders = [2, 3, 10, 64]
    for sigma in (0.5, 1.0, 4.0):
        np.testing.assert_allclose(compute_rdp(1.0, sigma, 1, orders), [a / (2 * sigma ** 2) for a in orders])
        # the q -> 1 limit of the binomial expansion agrees with the closed form
        np.testing.assert_allclose(compute_rdp(1 - 1e-12, sigma, 1, orders), [a / (2 * sigma ** 2) for a in orders],
                                   rtol=1e-6)
    np.testing.assert_allclose(compute_rdp(1.0, 2.0, 10, [5]), [10 * 5 / 8])


def _numeric_rdp(q, sigma, alpha):
    # A_alpha = integral mu0^(1-alpha) mu^alpha, mu0 = N(0, s^2), mu = (1-q) mu0 + q N(1, s^2)
    z = np.linspace(-30.0, 30.0 + alpha, 600001)
    log_mu0 = -z ** 2 / (2 * sigma ** 2)  # the common normalising constant cancels in the ratio
    log_mu1 = -(z - 1) ** 2 / (2 * sigma ** 2)
    log_mu = np.logaddexp(math.log1p(-q) + log_mu0, math.log(q) + log_mu1)
    f = np.exp(log_mu0 + alpha * (log_mu - log_mu0)) / (sigma * math.sqrt(2 * math.pi))
    a = np.sum((f[1:] + f[:-1]) / 2 * np.diff(z))
    return math.log(a) / (alpha - 1)


@pytest.mark.parametrize("q,sigma", [(0.01, 1.0), (0.1, 1.1), (0.3, 2.0), (0.05, 0.8)])
def test_rdp_of_the_subsampled_gaussian_matches_numerical_integration(q, sigma):
    orders = [2, 3, 5, 8]
    got = compute_rdp(q, sigma, 1, orders)
    ref = [_numeric_rdp(q, sigma, a) for a in orders]
    np.testing.assert_allclose(got, ref, rtol=1e-6)


def test_epsilon_conversion_and_accountant():
    orders = list(range(2, 257))
    rdp = compute_rdp(1.0, 1.0, 1, orders)  # alpha / 2
    eps, best = get_privacy_spent(orders, rdp, 1e-5)
    brute = min(a / 2 + math.log(1e5) / (a - 1) for a in orders)
    assert eps == pytest.approx(brute) and best == 6  # argmin of a/2 + 11.51/(a-1) over the integers
    acc = RDPAccountant()
    acc.step(1.1, 0.01, 500)
    acc.step(1.1, 0.01, 500)
    assert acc.history == [(1.1, 0.01, 1000)]
    one = RDPAccountant()
    one.step(1.1, 0.01, 1000)
    assert acc.get_epsilon(1e-5) == pytest.approx(one.get_epsilon(1e-5))
    # more noise, less epsilon; more steps, more epsilon; a tiny sample rate, small epsilon
    e = [RDPAccountant() for _ in range(3)]
    e[0].step(1.1, 0.01, 1000)
    e[1].step(2.0, 0.01, 1000)
    e[2].step(1.1, 0.01, 4000)
    assert e[1].get_epsilon(1e-5) < e[0].get_epsilon(1e-5) < e[2].get_epsilon(1e-5)
    assert 0.5 < e[0].get_epsilon(1e-5) < 3  # q=0.01, sigma=1.1, 1000 steps: about 1.2 with integer orders
    assert RDPAccountant().get_epsilon(1e-5) == 0.0
    with pytest.raises(ValueError, match="noise_multiplier must be > 0"):
        compute_rdp(0.1, 0.0, 1)
    with pytest.raises(ValueError, match="delta must be in"):
        get_privacy_spent(orders, rdp, 0.0)


def test_published_mnist_dp_sgd_budgets():
    # TensorFlow Privacy's MNIST DP-SGD tutorial (README table): batch 256 of 60,000, delta 1e-5;
    # sigma 1.1 for 60 epochs -> epsilon 3.01, sigma 0.7 for 45 epochs -> 7.10 (their orders include
    # fractional ones, so integer orders can only give the same or slightly more)
    for sigma, epochs, published in [(1.1, 60, 3.01), (0.7, 45, 7.10)]:
        acc = RDPAccountant()
        acc.step(sigma, 256 / 60000, epochs * 60000 // 256)
        assert published - 0.01 <= acc.get_epsilon(1e-5) <= published + 0.05
