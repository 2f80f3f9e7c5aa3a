"""Rollout buffer with GAE(lambda) for on-policy methods, replay buffer for off-policy ones."""
from __future__ import annotations

from typing import NamedTuple

import gymnasium as gym
import numpy as np

import rtx
from rtx.rl.common.preprocessing import get_action_dim


class RolloutBufferSamples(NamedTuple):
    observations: rtx.Tensor
    actions: rtx.Tensor
    old_values: rtx.Tensor
    old_log_prob: rtx.Tensor
    advantages: rtx.Tensor
    returns: rtx.Tensor


class ReplayBufferSamples(NamedTuple):
    observations: rtx.Tensor
    actions: rtx.Tensor
    next_observations: rtx.Tensor
    dones: rtx.Tensor
    rewards: rtx.Tensor


def _obs_dtype(space: gym.Space):
    return np.int64 if isinstance(space, gym.spaces.Discrete) else space.dtype


class BaseBuffer:
    def __init__(self, buffer_size: int, observation_space, action_space, device="cpu", n_envs: int = 1):
        self.buffer_size, self.n_envs = buffer_size, n_envs
        self.observation_space, self.action_space = observation_space, action_space
        self.obs_shape = observation_space.shape
        self.action_dim = get_action_dim(action_space)
        self.device = rtx.device(device) if isinstance(device, str) else device
        self.pos, self.full = 0, False

    def size(self) -> int:
        return self.buffer_size if self.full else self.pos

    def reset(self) -> None:
        self.pos, self.full = 0, False

    @staticmethod
    def swap_and_flatten(arr: np.ndarray) -> np.ndarray:
        """(n_steps, n_envs, ...) -> (n_envs * n_steps, ...), env-major as SB3 orders it."""
        shape = arr.shape
        if len(shape) < 3:
            shape = (*shape, 1)
        return arr.swapaxes(0, 1).reshape(shape[0] * shape[1], *shape[2:])

    def to_torch(self, array: np.ndarray) -> rtx.Tensor:
        return rtx.as_tensor(np.ascontiguousarray(array), device=self.device)


class RolloutBuffer(BaseBuffer):
    def __init__(self, buffer_size: int, observation_space, action_space, device="cpu", gae_lambda: float = 1.0,
                 gamma: float = 0.99, n_envs: int = 1):
        super().__init__(buffer_size, observation_space, action_space, device, n_envs)
        self.gae_lambda, self.gamma = gae_lambda, gamma
        self.generator_ready = False
        self.reset()

    def reset(self) -> None:
        n, e = self.buffer_size, self.n_envs
        self.observations = np.zeros((n, e, *self.obs_shape), dtype=np.float32)
        self.actions = np.zeros((n, e, self.action_dim), dtype=np.float32)
        self.rewards = np.zeros((n, e), dtype=np.float32)
        self.returns = np.zeros((n, e), dtype=np.float32)
        self.episode_starts = np.zeros((n, e), dtype=np.float32)
        self.values = np.zeros((n, e), dtype=np.float32)
        self.log_probs = np.zeros((n, e), dtype=np.float32)
        self.advantages = np.zeros((n, e), dtype=np.float32)
        self.generator_ready = False
        super().reset()

    def compute_returns_and_advantage(self, last_values, dones: np.ndarray) -> None:
        """GAE(lambda): A_t = sum_k (gamma lambda)^k delta_{t+k}, cut at episode starts; returns = A + V."""
        last_values = np.asarray(last_values.numpy() if isinstance(last_values, rtx.Tensor) else last_values,
                                 dtype=np.float32).flatten()
        last_gae_lam = 0
        for step in reversed(range(self.buffer_size)):
            if step == self.buffer_size - 1:
                next_non_terminal = 1.0 - dones.astype(np.float32)
                next_values = last_values
            else:
                next_non_terminal = 1.0 - self.episode_starts[step + 1]
                next_values = self.values[step + 1]
            delta = self.rewards[step] + self.gamma * next_values * next_non_terminal - self.values[step]
            last_gae_lam = delta + self.gamma * self.gae_lambda * next_non_terminal * last_gae_lam
            self.advantages[step] = last_gae_lam
        self.returns = self.advantages + self.values

    def add(self, obs, action, reward, episode_start, value, log_prob) -> None:
        if self.pos >= self.buffer_size:
            raise RuntimeError(f"rollout buffer is full ({self.buffer_size} steps); call reset() first")
        if isinstance(self.observation_space, gym.spaces.Discrete):
            obs = np.asarray(obs).reshape((self.n_envs, *self.obs_shape))
        self.observations[self.pos] = np.asarray(obs)
        self.actions[self.pos] = np.asarray(action).reshape((self.n_envs, self.action_dim))
        self.rewards[self.pos] = np.asarray(reward)
        self.episode_starts[self.pos] = np.asarray(episode_start)
        self.values[self.pos] = _np(value).flatten()
        self.log_probs[self.pos] = _np(log_prob)
        self.pos += 1
        if self.pos == self.buffer_size:
            self.full = True

    def get(self, batch_size: int | None = None):
        """Minibatches over a random permutation of all n_steps * n_envs transitions (np.random)."""
        if not self.full:
            raise RuntimeError("the rollout buffer is not full yet")
        indices = np.random.permutation(self.buffer_size * self.n_envs)
        if not self.generator_ready:
            for name in ("observations", "actions", "values", "log_probs", "advantages", "returns"):
                setattr(self, name, self.swap_and_flatten(getattr(self, name)))
            self.generator_ready = True
        if batch_size is None:
            batch_size = self.buffer_size * self.n_envs
        start = 0
        while start < self.buffer_size * self.n_envs:
            yield self._get_samples(indices[start:start + batch_size])
            start += batch_size

    def _get_samples(self, inds) -> RolloutBufferSamples:
        return RolloutBufferSamples(*(self.to_torch(a) for a in (
            self.observations[inds], self.actions[inds], self.values[inds].flatten(),
            self.log_probs[inds].flatten(), self.advantages[inds].flatten(), self.returns[inds].flatten())))


class ReplayBuffer(BaseBuffer):
    """Circular buffer of (obs, next_obs, action, reward, done, timeout) per env; sampled uniformly."""

    def __init__(self, buffer_size: int, observation_space, action_space, device="cpu", n_envs: int = 1,
                 optimize_memory_usage: bool = False, handle_timeout_termination: bool = True):
        super().__init__(max(buffer_size // n_envs, 1), observation_space, action_space, device, n_envs)
        if optimize_memory_usage:
            raise NotImplementedError("optimize_memory_usage=True is not implemented in rtx.rl")
        self.optimize_memory_usage = False
        self.handle_timeout_termination = handle_timeout_termination
        n, e, dt = self.buffer_size, n_envs, _obs_dtype(observation_space)
        self.observations = np.zeros((n, e, *self.obs_shape), dtype=dt)
        self.next_observations = np.zeros((n, e, *self.obs_shape), dtype=dt)
        act_dtype = action_space.dtype if isinstance(action_space, gym.spaces.Box) else np.int64
        self.actions = np.zeros((n, e, self.action_dim), dtype=act_dtype)
        self.rewards = np.zeros((n, e), dtype=np.float32)
        self.dones = np.zeros((n, e), dtype=np.float32)
        self.timeouts = np.zeros((n, e), dtype=np.float32)

    def add(self, obs, next_obs, action, reward, done, infos) -> None:
        self.observations[self.pos] = np.asarray(obs).reshape((self.n_envs, *self.obs_shape))
        self.next_observations[self.pos] = np.asarray(next_obs).reshape((self.n_envs, *self.obs_shape))
        self.actions[self.pos] = np.asarray(action).reshape((self.n_envs, self.action_dim))
        self.rewards[self.pos] = np.asarray(reward)
        self.dones[self.pos] = np.asarray(done)
        if self.handle_timeout_termination:
            self.timeouts[self.pos] = np.array([info.get("TimeLimit.truncated", False) for info in infos])
        self.pos += 1
        if self.pos == self.buffer_size:
            self.full, self.pos = True, 0

    def sample(self, batch_size: int, env=None) -> ReplayBufferSamples:
        upper = self.buffer_size if self.full else self.pos
        batch_inds = np.random.randint(0, upper, size=batch_size)
        return self._get_samples(batch_inds, env)

    def _get_samples(self, batch_inds, env=None) -> ReplayBufferSamples:
        env_inds = np.random.randint(0, self.n_envs, size=len(batch_inds))
        obs = self.observations[batch_inds, env_inds]
        next_obs = self.next_observations[batch_inds, env_inds]
        rewards = self.rewards[batch_inds, env_inds].reshape(-1, 1)
        if env is not None:  # VecNormalize: the buffer keeps raw values, the learner sees normalized ones
            obs, next_obs = env.normalize_obs(obs), env.normalize_obs(next_obs)
            rewards = env.normalize_reward(rewards)
        # A time-limit truncation is not a terminal state: the target still bootstraps from next_obs.
        dones = (self.dones[batch_inds, env_inds] * (1 - self.timeouts[batch_inds, env_inds])).reshape(-1, 1)
        return ReplayBufferSamples(self.to_torch(obs), self.to_torch(self.actions[batch_inds, env_inds]),
                                   self.to_torch(next_obs), self.to_torch(dones.astype(np.float32)),
                                   self.to_torch(rewards.astype(np.float32)))


def _np(x) -> np.ndarray:
    return x.detach().numpy() if isinstance(x, rtx.Tensor) else np.asarray(x)
