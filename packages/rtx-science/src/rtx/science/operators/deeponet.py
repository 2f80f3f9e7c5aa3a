"""DeepONet (Lu et al., Nature Mach. Intell. 2021): G(u)(y) = sum_k branch_k(u) trunk_k(y) + b."""
from __future__ import annotations

import rtx
import rtx.nn as nn


def _mlp(sizes, act):
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(act())
    return nn.Sequential(*layers)


class DeepONet(nn.Module):
    """branch: u sampled at m sensors (B, m) -> (B, p); trunk: query points (Q, d) -> (Q, p);
    output (B, Q)."""

    def __init__(self, branch_sizes, trunk_sizes, activation=nn.Tanh):
        super().__init__()
        if branch_sizes[-1] != trunk_sizes[-1]:
            raise ValueError(f"branch and trunk must end in the same width p, got {branch_sizes[-1]} and "
                             f"{trunk_sizes[-1]}")
        self.branch = _mlp(branch_sizes, activation)
        self.trunk = nn.Sequential(_mlp(trunk_sizes, activation), activation())
        self.bias = nn.Parameter(rtx.zeros(1))

    def forward(self, u, y):
        return self.branch(u) @ self.trunk(y).T + self.bias
