"""Rényi-DP accountant for the subsampled Gaussian mechanism (DP-SGD).

RDP of one step with sampling rate q and noise multiplier sigma, at integer order alpha
(Mironov, Talwar, Zhang 2019, "Rényi Differential Privacy of the Sampled Gaussian Mechanism",
Sec. 3.3):

    A_alpha = sum_{k=0}^{alpha} C(alpha, k) (1-q)^(alpha-k) q^k exp((k^2 - k) / (2 sigma^2))
    RDP(alpha) = log(A_alpha) / (alpha - 1)

RDP composes by addition over steps; the conversion to (epsilon, delta)-DP is the standard one
(Mironov 2017, Prop. 3): epsilon = min_alpha RDP_total(alpha) + log(1/delta) / (alpha - 1).
"""
from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["DEFAULT_ORDERS", "compute_rdp", "get_privacy_spent", "RDPAccountant"]

DEFAULT_ORDERS = tuple(range(2, 257))


@functools.lru_cache(maxsize=256)
def _rdp_one_step(q: float, sigma: float, orders: tuple[int, ...]) -> np.ndarray:
    if q == 0:
        return np.zeros(len(orders))
    if q == 1.0:
        return np.array([a / (2 * sigma ** 2) for a in orders])
    top = max(orders)
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, top + 1)))])
    out = np.empty(len(orders))
    for i, a in enumerate(orders):
        k = np.arange(a + 1)
        terms = (log_fact[a] - log_fact[k] - log_fact[a - k] + k * math.log(q) + (a - k) * math.log1p(-q)
                 + (k * k - k) / (2 * sigma ** 2))
        hi = terms.max()
        out[i] = (hi + math.log(np.exp(terms - hi).sum())) / (a - 1)
    return out


def compute_rdp(q: float, noise_multiplier: float, steps: int, orders=DEFAULT_ORDERS) -> np.ndarray:
    """RDP at each (integer) order after `steps` subsampled Gaussian steps."""
    if not 0 <= q <= 1:
        raise ValueError(f"compute_rdp: sample rate q must be in [0, 1], got {q}")
    if noise_multiplier <= 0:
        raise ValueError(f"compute_rdp: noise_multiplier must be > 0 (no noise means no privacy), "
                         f"got {noise_multiplier}")
    orders = list(orders)
    if any(int(a) != a or a < 2 for a in orders):
        raise ValueError(f"compute_rdp: orders must be integers >= 2, got {orders[:5]}...")
    return _rdp_one_step(float(q), float(noise_multiplier), tuple(int(a) for a in orders)) * steps


def get_privacy_spent(orders, rdp, delta: float) -> tuple[float, int]:
    """(epsilon, best order) for the given delta: min over orders of rdp + log(1/delta)/(alpha-1)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    orders = np.asarray(orders, dtype=np.float64)
    eps = np.asarray(rdp, dtype=np.float64) + math.log(1 / delta) / (orders - 1)
    best = int(np.nanargmin(eps))
    return float(eps[best]), int(orders[best])


class RDPAccountant:
    """Accumulates RDP over steps (possibly with different q and sigma) and reports epsilon."""

    def __init__(self, orders=DEFAULT_ORDERS):
        self.orders = tuple(orders)
        self._rdp = np.zeros(len(self.orders))
        self.history: list[tuple[float, float, int]] = []  # (noise_multiplier, sample_rate, steps)

    def step(self, noise_multiplier: float, sample_rate: float, steps: int = 1) -> None:
        if steps <= 0:
            return
        if self.history and self.history[-1][:2] == (noise_multiplier, sample_rate):
            self.history[-1] = (noise_multiplier, sample_rate, self.history[-1][2] + steps)
        else:
            self.history.append((noise_multiplier, sample_rate, steps))
        self._rdp = self._rdp + compute_rdp(sample_rate, noise_multiplier, steps, self.orders)

    @property
    def rdp(self) -> np.ndarray:
        return self._rdp.copy()

    def get_epsilon(self, delta: float) -> float:
        if not self.history:
            return 0.0
        return get_privacy_spent(self.orders, self._rdp, delta)[0]
