"""evaluate_policy: run n_eval_episodes episodes and report the mean and std of the returns."""
from __future__ import annotations

import warnings

import numpy as np

from rtx.rl.common.monitor import Monitor
from rtx.rl.common.vec_env import wrap_env


def evaluate_policy(model, env, n_eval_episodes: int = 10, deterministic: bool = True, render: bool = False,
                    callback=None, reward_threshold: float | None = None, return_episode_rewards: bool = False,
                    warn: bool = True):
    """Episodes are split evenly over the envs (env i runs (n_eval_episodes + i) // n_envs of them) so the
    result does not favour short episodes. Returns come from Monitor's `episode` info when the env has a
    Monitor (the unnormalized return even under VecNormalize), else the sum of the rewards seen."""
    env = wrap_env(env)
    n_envs = env.num_envs
    if warn and not _has_monitor(env):
        warnings.warn("evaluation env has no Monitor wrapper: returns are summed from the (possibly "
                      "normalized) rewards the VecEnv returns", UserWarning, stacklevel=2)
    episode_rewards, episode_lengths = [], []
    counts = np.zeros(n_envs, dtype=int)
    targets = np.array([(n_eval_episodes + i) // n_envs for i in range(n_envs)], dtype=int)
    current_rewards = np.zeros(n_envs)
    current_lengths = np.zeros(n_envs, dtype=int)
    observations = env.reset()
    states = None
    episode_starts = np.ones((n_envs,), dtype=bool)
    while (counts < targets).any():
        actions, states = model.predict(observations, state=states, episode_start=episode_starts,
                                        deterministic=deterministic)
        new_observations, rewards, dones, infos = env.step(actions)
        current_rewards += rewards
        current_lengths += 1
        for i in range(n_envs):
            if counts[i] < targets[i]:
                episode_starts[i] = dones[i]
                if callback is not None:
                    callback(locals(), globals())
                if dones[i]:
                    ep = infos[i].get("episode")
                    if ep is not None:
                        episode_rewards.append(ep["r"])
                        episode_lengths.append(ep["l"])
                    else:
                        episode_rewards.append(float(current_rewards[i]))
                        episode_lengths.append(int(current_lengths[i]))
                    counts[i] += 1
                    current_rewards[i] = 0
                    current_lengths[i] = 0
        observations = new_observations
    mean_reward, std_reward = float(np.mean(episode_rewards)), float(np.std(episode_rewards))
    if reward_threshold is not None and mean_reward <= reward_threshold:
        raise AssertionError(f"mean reward below threshold: {mean_reward:.2f} <= {reward_threshold:.2f}")
    if return_episode_rewards:
        return episode_rewards, episode_lengths
    return mean_reward, std_reward


def _has_monitor(venv) -> bool:
    from rtx.rl.common.vec_env import GymVecEnv, VecEnvWrapper

    while isinstance(venv, VecEnvWrapper):
        venv = venv.venv
    if not isinstance(venv, GymVecEnv):
        return False
    envs = getattr(venv.venv, "envs", None)
    if envs is None:  # AsyncVectorEnv: the envs live in worker processes; make_vec_env always adds Monitor
        return True
    e = envs[0]
    while hasattr(e, "env"):
        if isinstance(e, Monitor):
            return True
        e = e.env
    return False
