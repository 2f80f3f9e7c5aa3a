"""Tuned hyper-parameters published by RL Baselines3 Zoo (DLR-RM/rl-baselines3-zoo, hyperparams/<algo>.yml)
for the environments rtx.rl's learning tests and `rtx rl train --hyperparams zoo` use. Values are copied
from the zoo's YAML (its 2.x entries for the -v1 environments: dqn.yml's CartPole-v1 "Almost Tuned" entry,
a2c.yml's CartPole-v1 with 8 envs, td3.yml's Pendulum-v1 with train_freq 1 / gradient_steps 1); `lin_<v>`
there is linear_schedule(v) here. Measured learning curves with this preset: the package README."""
from __future__ import annotations

import numpy as np

from rtx.rl.common.utils import linear_schedule

ZOO = {
    ("ppo", "CartPole-v1"): dict(n_envs=8, n_timesteps=100_000, n_steps=32, batch_size=256, gae_lambda=0.8,
                                 gamma=0.98, n_epochs=20, ent_coef=0.0, learning_rate=("lin", 1e-3),
                                 clip_range=("lin", 0.2)),
    ("a2c", "CartPole-v1"): dict(n_envs=8, n_timesteps=500_000, ent_coef=0.0),
    ("dqn", "CartPole-v1"): dict(n_envs=1, n_timesteps=50_000, learning_rate=2.3e-3, batch_size=64,
                                 buffer_size=100_000, learning_starts=1000, gamma=0.99, target_update_interval=10,
                                 train_freq=256, gradient_steps=128, exploration_fraction=0.16,
                                 exploration_final_eps=0.04, policy_kwargs=dict(net_arch=[256, 256])),
    ("sac", "Pendulum-v1"): dict(n_envs=1, n_timesteps=20_000, learning_rate=1e-3),
    ("td3", "Pendulum-v1"): dict(n_envs=1, n_timesteps=20_000, gamma=0.98, buffer_size=200_000,
                                 learning_starts=10_000, noise_type="normal", noise_std=0.1, gradient_steps=1,
                                 train_freq=1, learning_rate=1e-3, policy_kwargs=dict(net_arch=[400, 300])),
}


def zoo_hyperparams(algo: str, env_id: str, action_dim: int = 1) -> tuple[dict, int, int | None]:
    """(constructor kwargs, n_envs, zoo's n_timesteps) for (algo, env_id); empty kwargs when the zoo has none."""
    entry = dict(ZOO.get((algo.lower(), env_id), {}))
    n_envs = entry.pop("n_envs", 1)
    n_timesteps = entry.pop("n_timesteps", None)
    for key in ("learning_rate", "clip_range"):
        if isinstance(entry.get(key), tuple):
            entry[key] = linear_schedule(entry[key][1])
    noise_type, noise_std = entry.pop("noise_type", None), entry.pop("noise_std", None)
    if noise_type == "normal":
        from rtx.rl.common.noise import NormalActionNoise
        entry["action_noise"] = NormalActionNoise(np.zeros(action_dim), noise_std * np.ones(action_dim))
    return entry, n_envs, n_timesteps
