"""DP-SGD (Abadi et al. 2016): per-sample gradients, each clipped to max_grad_norm, summed, plus
Gaussian noise N(0, sigma^2 C^2), divided by the expected batch size. Batches are drawn by
Poisson sampling (each sample in with probability q), which is what the RDP accountant assumes."""
from __future__ import annotations

import numpy as np

import rtx
import rtx.nn as nn

__all__ = ["per_sample_gradients", "clip_and_noise", "dp_gradients", "dp_sgd_step", "poisson_batches"]

_PARAM_FREE = (nn.ReLU, nn.Tanh, nn.Sigmoid, nn.GELU, nn.Identity, nn.Flatten, nn.Dropout, nn.LeakyReLU,
               nn.ELU, nn.SiLU, nn.Softplus)


def _linear_only(model) -> bool:
    # Only Sequential stacks of Linear layers and elementwise activations: a custom forward could mix
    # samples (batch statistics, a mean over the batch), which would make the batched trick wrong.
    mods = [m for _, m in model.named_modules(remove_duplicate=False)]
    if sum(isinstance(m, nn.Linear) for m in mods) != len({id(m) for m in mods if isinstance(m, nn.Linear)}):
        return False
    return all(isinstance(m, (nn.Linear, nn.Sequential) + _PARAM_FREE) for m in mods)


def _per_sample_loop(model, loss_fn, x, y, params):
    grads = [np.zeros((len(x),) + tuple(p.shape), dtype=p.detach().numpy().dtype) for p in params]
    for i in range(len(x)):
        for p in params:
            p.grad = None
        loss_fn(model(x[i:i + 1]), y[i:i + 1]).sum().backward()
        for g, p in zip(grads, params):
            if p.grad is not None:
                g[i] = p.grad.numpy()
    for p in params:
        p.grad = None
    return grads


def _per_sample_linear(model, loss_fn, x, y, params):
    """One batched backward of the summed loss; for a Linear layer y = a W^T + b the sample's
    gradients are outer(g_i, a_i) and g_i, with a_i its input and g_i the loss gradient at its output."""
    acts, hooks = {}, []

    def fwd(mod, inputs, out):
        acts[mod] = [inputs[0].detach().numpy(), None]
        if out.requires_grad:
            def grab(g, mod=mod):
                acts[mod][1] = g.numpy()
            out.register_hook(grab)

    for m in model.modules():
        if isinstance(m, nn.Linear):
            hooks.append(m.register_forward_hook(fwd))
    try:
        out = model(x)
        for p in params:
            p.grad = None
        loss_fn(out, y).sum().backward()
    finally:
        for h in hooks:
            h.remove()
    per = {}
    for m, (a, g) in acts.items():
        if a.ndim != 2:
            return None
        per[id(m.weight)] = np.einsum("bo,bi->boi", g, a)
        if m.bias is not None:
            per[id(m.bias)] = g.copy()
    for p in params:
        p.grad = None
    return [per[id(p)] for p in params]


def per_sample_gradients(model, loss_fn, x, y, params=None) -> list[np.ndarray]:
    """Per-sample gradients [B, *p.shape] for each parameter. `loss_fn(output, target)` must return
    per-sample losses (reduction='none'). Models made of nn.Linear and activations take one
    batched backward pass; anything else falls back to one backward pass per sample."""
    params = [p for p in (params if params is not None else model.parameters()) if p.requires_grad]
    if len(x) == 0:
        return [np.zeros((0,) + tuple(p.shape)) for p in params]
    if _linear_only(model):
        g = _per_sample_linear(model, loss_fn, x, y, params)
        if g is not None:
            return g
    return _per_sample_loop(model, loss_fn, x, y, params)


def clip_and_noise(per_sample: list[np.ndarray], max_grad_norm: float, noise_multiplier: float,
                   expected_batch_size: float, rng: np.random.Generator) -> list[np.ndarray]:
    """(sum_i g_i * min(1, C / ||g_i||) + N(0, sigma^2 C^2)) / expected_batch_size, per parameter;
    ||g_i|| is the norm over all parameters together."""
    if max_grad_norm <= 0:
        raise ValueError(f"max_grad_norm must be > 0, got {max_grad_norm}")
    b = per_sample[0].shape[0] if per_sample else 0
    norms = np.sqrt(sum((g.reshape(b, -1).astype(np.float64) ** 2).sum(1) for g in per_sample)) if b else np.zeros(0)
    factor = np.minimum(1.0, max_grad_norm / (norms + 1e-6))
    out = []
    for g in per_sample:
        s = np.tensordot(factor, g.astype(np.float64), axes=1) if b else np.zeros(g.shape[1:])
        s = s + rng.normal(0.0, noise_multiplier * max_grad_norm, size=s.shape)
        out.append((s / expected_batch_size).astype(g.dtype))
    return out


def poisson_batches(n: int, sample_rate: float, steps: int, rng: np.random.Generator):
    """`steps` batches, each sample in each batch independently with probability sample_rate."""
    for _ in range(steps):
        yield np.flatnonzero(rng.random(n) < sample_rate)


def dp_gradients(model, loss_fn, x, y, *, max_grad_norm: float, noise_multiplier: float,
                 expected_batch_size: float, rng: np.random.Generator) -> None:
    """Set every parameter's .grad to the clipped, noised mean gradient of the batch."""
    params = [p for p in model.parameters() if p.requires_grad]
    per = per_sample_gradients(model, loss_fn, x, y, params)
    for p, g in zip(params, clip_and_noise(per, max_grad_norm, noise_multiplier, expected_batch_size, rng)):
        p.grad = rtx.from_numpy(g)


def dp_sgd_step(model, optimizer, loss_fn, x, y, **kwargs) -> None:
    """dp_gradients(...) then optimizer.step()."""
    dp_gradients(model, loss_fn, x, y, **kwargs)
    optimizer.step()
