"""NumPy references shared by the tests: an MLP forward in float64 and central finite differences."""
import types

import numpy as np
import pytest

import rtx


def params_np(module) -> dict:
    return {k: v.detach().numpy().astype(np.float64) for k, v in module.state_dict().items()}


def linear(p: dict, name: str, x):
    return x @ p[name + ".weight"].T + p[name + ".bias"]


def mlp(p: dict, names: list, x, act):
    """Linear layers `names` with `act` between them (none after the last)."""
    for i, name in enumerate(names):
        x = linear(p, name, x)
        if i < len(names) - 1:
            x = act(x)
    return x


def relu(x):
    return np.maximum(x, 0.0)


def fd_grad(loss, p: dict, keys, eps: float = 1e-6) -> dict:
    """d loss / d p[k] for k in keys by central differences in float64."""
    out = {}
    for k in keys:
        g = np.zeros_like(p[k])
        for idx in np.ndindex(p[k].shape):
            orig = p[k][idx]
            p[k][idx] = orig + eps
            up = loss(p)
            p[k][idx] = orig - eps
            down = loss(p)
            p[k][idx] = orig
            g[idx] = (up - down) / (2 * eps)
        out[k] = g
    return out


def clip(grads: dict, max_norm: float) -> dict:
    """torch.nn.utils.clip_grad_norm_'s rule: scale by max_norm / (norm + 1e-6) when that is below 1."""
    norm = np.sqrt(sum(np.sum(g ** 2) for g in grads.values()))
    coef = min(1.0, max_norm / (norm + 1e-6))
    return {k: g * coef for k, g in grads.items()}


def gae(rewards, values, episode_starts, last_values, last_dones, gamma, lam):
    """GAE written per env and forwards over the episode structure (not SB3's backward loop)."""
    n, e = rewards.shape
    adv = np.zeros((n, e))
    for j in range(e):
        for t in range(n):
            total, discount = 0.0, 1.0
            for k in range(t, n):
                if k + 1 < n:
                    nonterminal, v_next = 1.0 - episode_starts[k + 1, j], values[k + 1, j]
                else:
                    nonterminal, v_next = 1.0 - last_dones[j], last_values[j]
                delta = rewards[k, j] + gamma * v_next * nonterminal - values[k, j]
                total += discount * delta
                if nonterminal == 0.0:
                    break
                discount *= gamma * lam
            adv[t, j] = total
    return adv, adv + values


@pytest.fixture
def ref():
    return types.SimpleNamespace(params_np=params_np, linear=linear, mlp=mlp, relu=relu, fd_grad=fd_grad,
                                 clip=clip, gae=gae)


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """Tiny matrices: one BLAS thread avoids the cost of waking threads on a shared 2-core machine."""
    before = rtx.get_num_threads()
    rtx.set_num_threads(1)
    yield
    rtx.set_num_threads(before)
