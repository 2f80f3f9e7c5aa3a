"""Server strategies. Every strategy needs from a round only the sample-weighted mean of the
clients' model deltas (local - global), which is also all that secure aggregation reveals."""
from __future__ import annotations

import numpy as np

__all__ = ["Strategy", "FedAvg", "FedProx", "FedAdam", "weighted_mean", "get_strategy"]


def weighted_mean(deltas, num_samples) -> np.ndarray:
    """sum_k n_k * delta_k / sum_k n_k over flat vectors."""
    n = np.asarray(num_samples, dtype=np.float64)
    if len(deltas) == 0 or len(deltas) != len(n) or n.sum() <= 0:
        raise ValueError(f"weighted_mean: expected one delta per client and a positive total sample count, "
                         f"got {len(deltas)} deltas and counts {n.tolist()}")
    return np.tensordot(n, np.stack(deltas), axes=1) / n.sum()


class Strategy:
    """update(global, mean_delta) -> new global, on flat float64 vectors; client_config() -> dict
    of settings sent to the clients with the weights each round."""

    name = "strategy"

    def client_config(self) -> dict:
        return {}

    def update(self, global_vector: np.ndarray, mean_delta: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self):
        args = ", ".join(f"{k}={v}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({args})"


class FedAvg(Strategy):
    """McMahan et al. 2017: the new global model is the sample-weighted mean of the client models
    (global + server_lr * mean delta; server_lr=1 is the paper's FedAvg)."""

    name = "fedavg"

    def __init__(self, server_lr: float = 1.0):
        self.server_lr = server_lr

    def update(self, global_vector, mean_delta):
        return global_vector + self.server_lr * mean_delta


class FedProx(FedAvg):
    """Li et al. 2020: FedAvg at the server; each client minimises loss + mu/2 ||w - w_global||^2
    (the client adds mu * (w - w_global) to its gradients)."""

    name = "fedprox"

    def __init__(self, mu: float = 0.01, server_lr: float = 1.0):
        if mu < 0:
            raise ValueError(f"FedProx: mu must be >= 0, got {mu}")
        super().__init__(server_lr)
        self.mu = mu

    def client_config(self):
        return {"proximal_mu": self.mu}


class FedAdam(Strategy):
    """Reddi et al. 2021 (Adaptive Federated Optimization): Adam at the server on the pseudo-gradient
    mean_delta: m = b1 m + (1-b1) d; v = b2 v + (1-b2) d^2; w += eta * m / (sqrt(v) + tau).
    No bias correction, as in the paper's Algorithm 2."""

    name = "fedadam"

    def __init__(self, eta: float = 0.01, beta1: float = 0.9, beta2: float = 0.99, tau: float = 1e-3):
        self.eta, self.beta1, self.beta2, self.tau = eta, beta1, beta2, tau
        self._m = self._v = None

    def update(self, global_vector, mean_delta):
        if self._m is None:
            self._m = np.zeros_like(mean_delta)
            self._v = np.zeros_like(mean_delta)
        self._m = self.beta1 * self._m + (1 - self.beta1) * mean_delta
        self._v = self.beta2 * self._v + (1 - self.beta2) * mean_delta ** 2
        return global_vector + self.eta * self._m / (np.sqrt(self._v) + self.tau)


_STRATEGIES = {"fedavg": FedAvg, "fedprox": FedProx, "fedadam": FedAdam}


def get_strategy(name: str, **kwargs) -> Strategy:
    try:
        return _STRATEGIES[name.lower()](**kwargs)
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}: expected one of {sorted(_STRATEGIES)}") from None
