"""PINN: fit a network to a PDE by penalising its residual at collocation points plus boundary
and initial conditions (Raissi et al. 2019; DeepXDE's workflow), Adam first then L-BFGS."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import rtx
import rtx.optim as optim


@dataclass
class Condition:
    """A data-type constraint: net(points) should equal `values` (a tensor or fn(points) -> tensor).
    `operator(net, points)` replaces net(points) for Neumann-type conditions."""
    points: rtx.Tensor
    values: object
    weight: float = 1.0
    operator: Callable | None = None

    def loss(self, net):
        pts = self.points
        if self.operator is not None:
            pred = self.operator(net, pts.detach().requires_grad_(True))
        else:
            pred = net(pts)
        target = self.values(pts) if callable(self.values) else self.values
        return ((pred.reshape(target.shape) - target) ** 2).mean()


class PINN:
    """`residual(net, x) -> r` is the PDE written as r = 0 (use rtx.science.pinn's grad/laplacian
    on x); `interior` are its collocation points; `boundary` / `initial` are Conditions (or
    (points, values[, weight]) tuples). `history` records each loss term per logged step."""

    def __init__(self, net, residual, interior, boundary=(), initial=(), residual_weight=1.0):
        self.net, self.residual = net, residual
        self.interior = interior
        self.residual_weight = float(residual_weight)
        self.boundary = [c if isinstance(c, Condition) else Condition(*c) for c in boundary]
        self.initial = [c if isinstance(c, Condition) else Condition(*c) for c in initial]
        self.history = []

    def losses(self):
        x = self.interior.detach().requires_grad_(True)
        r = self.residual(self.net, x)
        terms = {"residual": self.residual_weight * (r ** 2).mean()}
        for name, conds in (("boundary", self.boundary), ("initial", self.initial)):
            for i, c in enumerate(conds):
                terms[f"{name}{i}"] = c.weight * c.loss(self.net)
        return terms

    def loss(self):
        return sum(self.losses().values())

    def fit(self, adam_steps=1000, lr=1e-3, lbfgs_steps=0, lbfgs_lr=1.0, log_every=100, callback=None):
        params = list(self.net.parameters())
        if adam_steps:
            opt = optim.Adam(params, lr=lr)
            for step in range(adam_steps):
                opt.zero_grad()
                terms = self.losses()
                total = sum(terms.values())
                total.backward()
                opt.step()
                self._log("adam", step, terms, total, log_every, callback)
        if lbfgs_steps:
            opt = optim.LBFGS(params, lr=lbfgs_lr, max_iter=lbfgs_steps, history_size=50,
                              line_search_fn="strong_wolfe", tolerance_grad=1e-12, tolerance_change=1e-15)
            count = [0]

            def closure():
                opt.zero_grad()
                terms = self.losses()
                total = sum(terms.values())
                total.backward()
                self._log("lbfgs", count[0], terms, total, log_every, callback)
                count[0] += 1
                return total

            opt.step(closure)
        return self

    def _log(self, phase, step, terms, total, every, callback):
        if step % every == 0:
            rec = {"phase": phase, "step": step, "loss": float(total)}
            rec.update({k: float(v) for k, v in terms.items()})
            self.history.append(rec)
            if callback is not None:
                callback(rec)
