"""Differential operators of network outputs w.r.t. their inputs, on rtx autograd.

All take a batch: `x` is (N, d) with requires_grad, `u` is the network's output on it, (N,) or
(N, m). Rows are independent (a pointwise network), so d(sum_n u_n)/dx_n = du_n/dx_n and one
backward pass gives every row's gradient. `create_graph=True` keeps the result differentiable,
so a loss built from it trains the network (and second derivatives are derivatives of these).
"""
from __future__ import annotations

import rtx


def _check(u, x):
    if not isinstance(x, rtx.Tensor) or not x.requires_grad:
        raise ValueError("x must be an rtx.Tensor with requires_grad=True (call x.requires_grad_() "
                         "before evaluating the network)")
    if x.dim() != 2:
        raise ValueError(f"x must be a batch of points of shape (N, d), got {tuple(x.shape)}")
    if u.shape[0] != x.shape[0]:
        raise ValueError(f"u has {u.shape[0]} rows but x has {x.shape[0]}: expected one output row per point")


def _d(u_col, x, create_graph):
    # retain_graph: several derivatives (columns, second derivatives) walk the same graph
    (g,) = rtx.autograd.grad(u_col.sum(), [x], create_graph=create_graph, retain_graph=True, allow_unused=True)
    return rtx.zeros_like(x) if g is None else g


def grad(u, x, create_graph=True):
    """du/dx for a scalar field: u (N,) or (N, 1) -> (N, d)."""
    _check(u, x)
    if u.dim() == 2 and u.shape[1] != 1:
        raise ValueError(f"grad needs a scalar field, u has {u.shape[1]} components: use jacobian")
    return _d(u.reshape(-1), x, create_graph)


def jacobian(u, x, create_graph=True):
    """du_i/dx_j: u (N, m) -> (N, m, d)."""
    _check(u, x)
    u = u.reshape(u.shape[0], -1)
    return rtx.stack([_d(u[:, i], x, create_graph) for i in range(u.shape[1])], dim=1)


def divergence(u, x, create_graph=True):
    """sum_i du_i/dx_i for a vector field u (N, d) -> (N,)."""
    _check(u, x)
    if u.dim() != 2 or u.shape[1] != x.shape[1]:
        raise ValueError(f"divergence needs u of shape (N, {x.shape[1]}), got {tuple(u.shape)}")
    return sum(_d(u[:, i], x, create_graph)[:, i] for i in range(u.shape[1]))


def hessian(u, x, create_graph=True):
    """d2u/dx_i dx_j for a scalar field: (N, d, d)."""
    g = grad(u, x, create_graph=True)
    return rtx.stack([_d(g[:, i], x, create_graph) for i in range(x.shape[1])], dim=1)


def laplacian(u, x, create_graph=True):
    """sum_i d2u/dx_i^2 for a scalar field: (N,)."""
    g = grad(u, x, create_graph=True)
    return sum(_d(g[:, i], x, create_graph)[:, i] for i in range(x.shape[1]))
