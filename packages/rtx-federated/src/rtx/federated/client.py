"""A federated client: local data, local training with an rtx model, optional DP-SGD, and the
client side of secure aggregation."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import rtx
import rtx.nn.functional as F

from .accountant import RDPAccountant
from .dp import dp_gradients, poisson_batches
from .params import flatten, get_weights, set_weights
from .secagg import DEFAULT_SCALE_BITS, SecAggClient, quantize

__all__ = ["Client", "DPConfig", "FitResult"]


@dataclass
class DPConfig:
    """DP-SGD settings: noise N(0, (noise_multiplier * max_grad_norm)^2) on the clipped sum."""
    noise_multiplier: float = 1.0
    max_grad_norm: float = 1.0
    delta: float = 1e-5

    def __post_init__(self):
        if self.noise_multiplier <= 0 or self.max_grad_norm <= 0 or not 0 < self.delta < 1:
            raise ValueError(f"DPConfig: expected noise_multiplier > 0, max_grad_norm > 0, 0 < delta < 1; got "
                             f"{self.noise_multiplier}, {self.max_grad_norm}, {self.delta}")


@dataclass
class FitResult:
    cid: int
    delta: np.ndarray | None          # flat local - global (None when masked for secure aggregation)
    num_samples: int
    metrics: dict = field(default_factory=dict)
    masked: np.ndarray | None = None  # uint64 masked [n * delta..., n] for secure aggregation


class Client:
    """Holds one client's data and trains the shared model architecture on it.

    model: an rtx nn.Module used as scratch space (the in-process simulation shares one among all
    clients: weights are loaded from the global vector at the start of every fit).
    """

    def __init__(self, cid: int, x: np.ndarray, y: np.ndarray, model, *, lr: float = 0.1, momentum: float = 0.0,
                 batch_size: int = 10, epochs: int = 1, dp: DPConfig | None = None, seed: int = 0):
        if len(x) != len(y) or len(x) == 0:
            raise ValueError(f"client {cid}: expected as many labels as samples (at least one), "
                             f"got {len(x)} samples and {len(y)} labels")
        self.cid, self.model = int(cid), model
        self.x = np.ascontiguousarray(x)
        self.y = np.ascontiguousarray(y, dtype=np.int64)
        self.lr, self.momentum, self.batch_size, self.epochs, self.dp = lr, momentum, batch_size, epochs, dp
        self.seed = seed
        self.accountant = RDPAccountant() if dp else None
        self.secagg: SecAggClient | None = None

    @property
    def num_samples(self) -> int:
        return len(self.x)

    def epsilon(self) -> float | None:
        return self.accountant.get_epsilon(self.dp.delta) if self.accountant else None

    def _train(self, global_weights, config) -> np.ndarray:
        model = self.model
        set_weights(model, global_weights)
        model.train()
        rng = np.random.default_rng([self.seed, self.cid, int(config.get("round", 0))])
        params = list(model.parameters())
        opt = rtx.optim.SGD(params, lr=config.get("lr", self.lr), momentum=self.momentum)
        mu = float(config.get("proximal_mu", 0.0))
        anchors = [p.detach().clone() for p in params] if mu else None
        dtype = params[0].detach().numpy().dtype if params else np.float32  # inputs follow the model's dtype
        n, bs = len(self.x), min(self.batch_size, len(self.x))
        if self.dp:
            q, steps = bs / n, self.epochs * int(np.ceil(n / bs))
            batches = poisson_batches(n, q, steps, rng)
            self.accountant.step(self.dp.noise_multiplier, q, steps)
        else:
            batches = (perm[i:i + bs] for _ in range(self.epochs)
                       for perm in [rng.permutation(n)] for i in range(0, n, bs))
        loss_none = lambda out, t: F.cross_entropy(out, t, reduction="none")  # noqa: E731
        for idx in batches:
            xb, yb = rtx.from_numpy(self.x[idx].astype(dtype, copy=False)), rtx.from_numpy(self.y[idx])
            if self.dp:
                dp_gradients(model, loss_none, xb, yb, max_grad_norm=self.dp.max_grad_norm,
                             noise_multiplier=self.dp.noise_multiplier, expected_batch_size=bs, rng=rng)
            else:
                opt.zero_grad()
                F.cross_entropy(model(xb), yb).backward()
            if mu:  # data-independent, so added after the DP noise without a privacy cost
                with rtx.no_grad():
                    for p, a in zip(params, anchors):
                        p.grad.add_(mu * (p - a))
            opt.step()
        return flatten(get_weights(model)) - flatten(global_weights)

    def fit(self, global_weights, config: dict) -> FitResult:
        """Train from the global weights; return the flat delta (local - global) and sample count."""
        delta = self._train(global_weights, config)
        return FitResult(self.cid, delta, self.num_samples, self._metrics())

    def _metrics(self):
        eps = self.epsilon()
        return {} if eps is None else {"epsilon": eps}

    # secure aggregation: three calls per round, between which the server relays messages
    def secagg_public_key(self, round_id: int, min_survivors: int = 2) -> bytes:
        self.secagg = SecAggClient(self.cid, round_id, min_survivors)
        return self.secagg.public_key

    def fit_masked(self, global_weights, config: dict, public_keys: dict[int, bytes],
                   scale_bits: int = DEFAULT_SCALE_BITS) -> FitResult:
        """Train, then send only the masked, quantised [n * delta..., n]."""
        self.secagg.set_peers(public_keys)
        delta = self._train(global_weights, config)
        vec = np.append(self.num_samples * delta, float(self.num_samples))
        masked = self.secagg.mask(quantize(vec, scale_bits, max_clients=max(len(public_keys), 2)))
        return FitResult(self.cid, None, self.num_samples, self._metrics(), masked=masked)

    def secagg_reveal(self, dropped, survivors) -> dict[int, bytes]:
        return self.secagg.reveal(dropped, survivors)
