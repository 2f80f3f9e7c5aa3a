"""Exploration noise for deterministic continuous policies (TD3)."""
from __future__ import annotations

import numpy as np


class ActionNoise:
    def reset(self) -> None:
        pass


class NormalActionNoise(ActionNoise):
    def __init__(self, mean, sigma, dtype=np.float32):
        self._mu, self._sigma, self._dtype = np.asarray(mean), np.asarray(sigma), dtype

    def __call__(self) -> np.ndarray:
        return np.random.normal(self._mu, self._sigma).astype(self._dtype)

    def __repr__(self):
        return f"NormalActionNoise(mu={self._mu}, sigma={self._sigma})"


class OrnsteinUhlenbeckActionNoise(ActionNoise):
    def __init__(self, mean, sigma, theta: float = 0.15, dt: float = 1e-2, initial_noise=None, dtype=np.float32):
        self._mu, self._sigma = np.asarray(mean), np.asarray(sigma)
        self._theta, self._dt, self._dtype = theta, dt, dtype
        self.initial_noise = initial_noise
        self.reset()

    def __call__(self) -> np.ndarray:
        noise = (self.noise_prev + self._theta * (self._mu - self.noise_prev) * self._dt
                 + self._sigma * np.sqrt(self._dt) * np.random.normal(size=self._mu.shape))
        self.noise_prev = noise
        return noise.astype(self._dtype)

    def reset(self) -> None:
        self.noise_prev = self.initial_noise if self.initial_noise is not None else np.zeros_like(self._mu)


class VectorizedActionNoise(ActionNoise):
    """One independent copy of `base_noise` per environment."""

    def __init__(self, base_noise: ActionNoise, n_envs: int):
        import copy
        self.noises = [copy.deepcopy(base_noise) for _ in range(n_envs)]

    def reset(self, indices=None) -> None:
        for i in (range(len(self.noises)) if indices is None else indices):
            self.noises[i].reset()

    def __call__(self) -> np.ndarray:
        return np.stack([noise() for noise in self.noises])
