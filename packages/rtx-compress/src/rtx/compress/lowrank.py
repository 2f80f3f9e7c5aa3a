"""Low-rank factorization of Linear layers: W (out x in) ~ U_r S_r V_r^T from the truncated SVD,
run as two thinner Linears (in -> r -> out), which pays when r < in * out / (in + out)."""
from __future__ import annotations

import numpy as np

import rtx
import rtx.nn as nn

__all__ = ["LowRankLinear", "low_rank_linear", "factorize_linears", "rank_for_energy"]


class LowRankLinear(nn.Module):
    """y = second(first(x)): first is Linear(in, rank, bias=False), second Linear(rank, out)."""

    def __init__(self, in_features, out_features, rank, bias=True):
        super().__init__()
        if not 1 <= rank <= min(in_features, out_features):
            raise ValueError(f"rank must be in [1, min(in_features, out_features) = "
                             f"{min(in_features, out_features)}], got {rank}")
        self.in_features, self.out_features, self.rank = in_features, out_features, rank
        self.first = nn.Linear(in_features, rank, bias=False)
        self.second = nn.Linear(rank, out_features, bias=bias)

    def forward(self, x):
        return self.second(self.first(x))

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, rank={self.rank}"


def rank_for_energy(weight, energy):
    """The smallest rank whose singular values keep `energy` of sum(sigma^2)."""
    if not 0 < energy <= 1:
        raise ValueError(f"energy must be in (0, 1], got {energy}")
    s = np.linalg.svd(weight.detach().cpu().numpy().astype(np.float64), compute_uv=False)
    cum = np.cumsum(s ** 2) / np.sum(s ** 2)
    return int(min(np.searchsorted(cum, energy - 1e-12) + 1, len(s)))


def low_rank_linear(linear, rank=None, energy=None):
    """The best rank-r approximation of linear (Eckart-Young, in the Frobenius norm) as a
    LowRankLinear: first.weight = sqrt(S_r) V_r^T, second.weight = U_r sqrt(S_r), same bias.
    Give rank, or energy (the fraction of sum(sigma^2) to keep)."""
    if not isinstance(linear, nn.Linear):
        raise TypeError(f"low_rank_linear factorizes an nn.Linear, got {type(linear).__name__}")
    if (rank is None) == (energy is None):
        raise ValueError("give exactly one of rank and energy")
    if rank is None:
        rank = rank_for_energy(linear.weight, energy)
    w = linear.weight.detach().cpu().numpy().astype(np.float64)
    u, s, vt = np.linalg.svd(w, full_matrices=False)
    out = LowRankLinear(linear.in_features, linear.out_features, rank, linear.bias is not None)
    root = np.sqrt(s[:rank])
    dtype, device = linear.weight.dtype, linear.weight.device
    with rtx.no_grad():
        out.first.weight.copy_(rtx.as_tensor(root[:, None] * vt[:rank], dtype=dtype, device=device))
        out.second.weight.copy_(rtx.as_tensor(u[:, :rank] * root, dtype=dtype, device=device))
        if linear.bias is not None:
            out.second.bias.copy_(linear.bias.detach())
    return out


def factorize_linears(model, rank=None, energy=None, min_saving=0.0):
    """Replace (in place) every nn.Linear of `model` whose factorization saves more than `min_saving`
    of its weight's parameters (r * (in + out) vs in * out); rank may be an int or a fraction of
    min(in, out). Returns the list of replaced names."""
    replaced = []
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is not nn.Linear:
                continue
            r = rank
            if isinstance(rank, float):
                r = max(1, int(round(rank * min(child.in_features, child.out_features))))
            elif rank is None:
                r = rank_for_energy(child.weight, energy)
            r = min(r, child.in_features, child.out_features)
            if r * (child.in_features + child.out_features) < (1 - min_saving) * child.in_features * child.out_features:
                setattr(parent, name, low_rank_linear(child, rank=r))
                replaced.append(name)
    return replaced
