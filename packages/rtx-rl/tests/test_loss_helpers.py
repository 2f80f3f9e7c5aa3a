"""PPO/A2C's loss helpers are speed-ups that must not change a bit: the advantage normalisation on
arrays against the Tensor formula it replaces, and the loss without its zero-weighted entropy term
against the full sum (value and every gradient)."""
import numpy as np
import pytest

import rtx
from rtx.rl.common.utils import actor_critic_loss, normalize_advantages


@pytest.mark.parametrize("n", [2, 7, 64, 256, 1000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_normalize_advantages_is_bitwise_the_tensor_formula(n, dtype):
    rng = np.random.default_rng(n)
    for scale, shift in [(1.0, 0.0), (1e-3, 5.0), (300.0, -40.0)]:
        a = rtx.as_tensor((rng.standard_normal(n) * scale + shift).astype(dtype))
        want = ((a - a.mean()) / (a.std() + 1e-8)).numpy()
        got = normalize_advantages(a).numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


def test_normalize_advantages_matches_numpy_reference():
    a = np.random.default_rng(0).standard_normal(50)
    np.testing.assert_allclose(normalize_advantages(rtx.as_tensor(a)).numpy(),
                               (a - a.mean()) / (a.std(ddof=1) + 1e-8), rtol=1e-12)


def test_normalize_advantages_keeps_the_graph_when_asked():
    a = rtx.randn(8, requires_grad=True)
    out = normalize_advantages(a)
    assert out.requires_grad  # the Tensor spelling, differentiable


def _parts(seed):
    rtx.manual_seed(seed)
    w = rtx.randn(5, 3, requires_grad=True)
    x = rtx.randn(16, 3)
    logits = rtx.nn.functional.linear(x, w)
    dist = rtx.distributions.Categorical(logits=logits)
    actions = rtx.randint(0, 5, (16,))
    policy_loss = -(rtx.randn(16) * dist.log_prob(actions)).mean()
    value_loss = (logits.sum(1) ** 2).mean()
    entropy_loss = -dist.entropy().mean()
    return w, policy_loss, entropy_loss, value_loss


@pytest.mark.parametrize("ent_coef", [0.0, 0, 0.01])
def test_actor_critic_loss_equals_the_full_sum(ent_coef):
    w, p, e, v = _parts(0)
    full = p + ent_coef * e + 0.5 * v
    (g_full,) = rtx.autograd.grad(full, [w])
    w2, p2, e2, v2 = _parts(0)
    short = actor_critic_loss(p2, e2, v2, ent_coef, 0.5)
    (g_short,) = rtx.autograd.grad(short, [w2])
    assert short.item() == full.item()
    assert np.array_equal(g_short.numpy(), g_full.numpy())


def test_actor_critic_loss_keeps_a_nonzero_entropy_term():
    _, p, e, v = _parts(1)
    assert actor_critic_loss(p, e, v, 0.5, 0.5).item() == pytest.approx((p + 0.5 * e + 0.5 * v).item())
    assert actor_critic_loss(p, e, v, 0.5, 0.5).item() != pytest.approx((p + 0.5 * v).item())
