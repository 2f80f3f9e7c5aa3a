"""Vectorized environments with SB3's VecEnv interface, built on gymnasium.vector.

SB3's algorithms speak `obs = reset()` and `obs, rewards, dones, infos = step(actions)` with a list of
per-env info dicts carrying `terminal_observation` and `TimeLimit.truncated`. `GymVecEnv` gives that
view of a gymnasium `SyncVectorEnv`/`AsyncVectorEnv` run in SAME_STEP autoreset mode (the returned
observation of a finished env is already the first one of its next episode, as in SB3).
"""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from rtx.rl.common.running_mean_std import RunningMeanStd


class VecEnv:
    """Base of the vectorized environments: num_envs, observation_space, action_space (one env's)."""

    num_envs: int
    observation_space: gym.Space
    action_space: gym.Space

    def step(self, actions):
        self.step_async(actions)
        return self.step_wait()

    @property
    def unwrapped(self):
        return self


class GymVecEnv(VecEnv):
    def __init__(self, venv: gym.vector.VectorEnv):
        mode = venv.metadata.get("autoreset_mode")
        if mode not in (AutoresetMode.SAME_STEP, "SameStep"):
            raise ValueError(f"GymVecEnv needs a gymnasium vector env with autoreset_mode=SAME_STEP, got {mode}; "
                             "build it with make_vec_env or vector_kwargs={'autoreset_mode': AutoresetMode.SAME_STEP}")
        self.venv = venv
        self.num_envs = venv.num_envs
        self.observation_space = venv.single_observation_space
        self.action_space = venv.single_action_space
        self._seeds: list | None = None
        self._actions = None

    def seed(self, seed: int | None = None):
        """Seeds applied at the next reset: seed, seed+1, ... one per env (SB3's rule); action spaces too."""
        if seed is None:
            return [None] * self.num_envs
        self._seeds = [seed + i for i in range(self.num_envs)]
        self.action_space.seed(seed)
        return self._seeds

    def reset(self):
        obs, _ = self.venv.reset(seed=self._seeds)
        self._seeds = None
        return obs

    def step_async(self, actions):
        self._actions = actions

    def step_wait(self):
        obs, rewards, terminated, truncated, info = self.venv.step(self._actions)
        dones = np.logical_or(terminated, truncated)
        infos = [_unbatch(info, i) for i in range(self.num_envs)]
        if dones.any():
            final_infos = info.get("final_info", {})
            for i in np.flatnonzero(dones):
                infos[i] = _unbatch(final_infos, i)
                infos[i]["terminal_observation"] = info["final_obs"][i]
                infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        return obs, rewards.astype(np.float32), dones, infos

    def close(self):
        self.venv.close()

    def get_attr(self, name: str):
        return self.venv.get_attr(name)

    def env_method(self, name: str, *args, **kwargs):
        return self.venv.call(name, *args, **kwargs)


def _unbatch(info: dict, i: int) -> dict:
    """The i-th env's view of gymnasium's batched info dict (values with a `_key` mask)."""
    out = {}
    for key, value in info.items():
        if key.startswith("_") or key in ("final_obs", "final_info"):
            continue
        mask = info.get("_" + key)
        if mask is not None and not mask[i]:
            continue
        out[key] = _unbatch(value, i) if isinstance(value, dict) else value[i]
    if "episode" in out:
        out["episode"] = {k: v.item() if hasattr(v, "item") else v for k, v in out["episode"].items()}
    return out


def make_vec_env(env_id, n_envs: int = 1, seed: int | None = None, start_index: int = 0, monitor_dir=None,
                 wrapper_class=None, env_kwargs=None, vec_env_cls=None, vec_env_kwargs=None, monitor_kwargs=None,
                 wrapper_kwargs=None) -> GymVecEnv:
    """`n_envs` Monitor-wrapped copies of `env_id` (a string or a callable making an env), seeded seed+i.

    vec_env_cls is gymnasium's SyncVectorEnv (default) or AsyncVectorEnv (worker processes)."""
    import os

    from rtx.rl.common.monitor import Monitor

    env_kwargs, monitor_kwargs, wrapper_kwargs = env_kwargs or {}, monitor_kwargs or {}, wrapper_kwargs or {}
    vec_env_cls = vec_env_cls or SyncVectorEnv
    if vec_env_cls not in (SyncVectorEnv, AsyncVectorEnv):
        raise TypeError(f"vec_env_cls must be gymnasium.vector.SyncVectorEnv or AsyncVectorEnv, got {vec_env_cls}")

    def make(rank):
        def _init():
            env = gym.make(env_id, **env_kwargs) if isinstance(env_id, str) else env_id(**env_kwargs)
            path = os.path.join(monitor_dir, str(rank)) if monitor_dir is not None else None
            if path is not None:
                os.makedirs(monitor_dir, exist_ok=True)
            env = Monitor(env, filename=path, **monitor_kwargs)
            if wrapper_class is not None:
                env = wrapper_class(env, **wrapper_kwargs)
            return env
        return _init

    kwargs = dict(vec_env_kwargs or {})
    kwargs["autoreset_mode"] = AutoresetMode.SAME_STEP
    venv = GymVecEnv(vec_env_cls([make(start_index + i) for i in range(n_envs)], **kwargs))
    venv.seed(seed)
    return venv


def wrap_env(env, monitor: bool = True) -> VecEnv:
    """A VecEnv from what a user passes to an algorithm: a VecEnv, an env id, a gym.Env or a gymnasium vector env."""
    from rtx.rl.common.monitor import Monitor

    if isinstance(env, VecEnv):
        return env
    if isinstance(env, str):
        return make_vec_env(env, n_envs=1)
    if isinstance(env, gym.vector.VectorEnv):
        return GymVecEnv(env)
    if isinstance(env, gym.Env):
        if monitor and not _has_wrapper(env, Monitor):
            env = Monitor(env)
        return GymVecEnv(SyncVectorEnv([lambda: env], autoreset_mode=AutoresetMode.SAME_STEP))
    raise TypeError(f"expected a gymnasium.Env, an env id string or a VecEnv, got {type(env).__name__}")


def _has_wrapper(env, cls) -> bool:
    while isinstance(env, gym.Wrapper):
        if isinstance(env, cls):
            return True
        env = env.env
    return False


class VecEnvWrapper(VecEnv):
    def __init__(self, venv: VecEnv):
        self.venv = venv
        self.num_envs = venv.num_envs
        self.observation_space = venv.observation_space
        self.action_space = venv.action_space

    def step_async(self, actions):
        self.venv.step_async(actions)

    def seed(self, seed=None):
        return self.venv.seed(seed)

    def close(self):
        self.venv.close()

    def get_attr(self, name):
        return self.venv.get_attr(name)

    def env_method(self, name, *args, **kwargs):
        return self.venv.env_method(name, *args, **kwargs)

    @property
    def unwrapped(self):
        return self.venv.unwrapped


class VecNormalize(VecEnvWrapper):
    """Normalizes observations by running mean/std and rewards by the running std of the discounted return."""

    def __init__(self, venv: VecEnv, training: bool = True, norm_obs: bool = True, norm_reward: bool = True,
                 clip_obs: float = 10.0, clip_reward: float = 10.0, gamma: float = 0.99, epsilon: float = 1e-8):
        super().__init__(venv)
        if norm_obs and not isinstance(self.observation_space, gym.spaces.Box):
            raise ValueError(f"VecNormalize normalizes Box observations only, got {self.observation_space}; "
                             "pass norm_obs=False")
        self.obs_rms = RunningMeanStd(shape=self.observation_space.shape)
        self.ret_rms = RunningMeanStd(shape=())
        self.training, self.norm_obs, self.norm_reward = training, norm_obs, norm_reward
        self.clip_obs, self.clip_reward, self.gamma, self.epsilon = clip_obs, clip_reward, gamma, epsilon
        self.returns = np.zeros(self.num_envs)
        self.old_obs = self.old_reward = None

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        self.old_obs, self.old_reward = obs, rewards
        if self.training and self.norm_obs:
            self.obs_rms.update(obs)
        obs = self.normalize_obs(obs)
        if self.training:
            self.returns = self.returns * self.gamma + rewards
            self.ret_rms.update(self.returns)
        rewards = self.normalize_reward(rewards)
        for i in np.flatnonzero(dones):
            if "terminal_observation" in infos[i]:
                infos[i]["terminal_observation"] = self.normalize_obs(infos[i]["terminal_observation"])
        self.returns[dones] = 0
        return obs, rewards, dones, infos

    def reset(self):
        obs = self.venv.reset()
        self.old_obs = obs
        self.returns = np.zeros(self.num_envs)
        if self.training and self.norm_obs:
            self.obs_rms.update(obs)
        return self.normalize_obs(obs)

    def normalize_obs(self, obs):
        if not self.norm_obs:
            return obs
        out = (obs - self.obs_rms.mean) / np.sqrt(self.obs_rms.var + self.epsilon)
        return np.clip(out, -self.clip_obs, self.clip_obs).astype(np.float32)

    def unnormalize_obs(self, obs):
        if not self.norm_obs:
            return obs
        return (obs * np.sqrt(self.obs_rms.var + self.epsilon) + self.obs_rms.mean).astype(np.float32)

    def normalize_reward(self, reward):
        if not self.norm_reward:
            return reward
        out = reward / np.sqrt(self.ret_rms.var + self.epsilon)
        return np.clip(out, -self.clip_reward, self.clip_reward).astype(np.float32)

    def unnormalize_reward(self, reward):
        return reward * np.sqrt(self.ret_rms.var + self.epsilon) if self.norm_reward else reward

    def get_original_obs(self):
        return self.old_obs.copy()

    def get_original_reward(self):
        return self.old_reward.copy()

    # Statistics and settings as JSON: saved inside the model's archive and by save()/load() alone.
    def get_state(self) -> dict:
        return {"obs_rms": self.obs_rms.state(), "ret_rms": self.ret_rms.state(), "norm_obs": self.norm_obs,
                "norm_reward": self.norm_reward, "clip_obs": self.clip_obs, "clip_reward": self.clip_reward,
                "gamma": self.gamma, "epsilon": self.epsilon}

    def set_state(self, state: dict) -> None:
        self.obs_rms.load_state(state["obs_rms"])
        self.ret_rms.load_state(state["ret_rms"])
        for key in ("norm_obs", "norm_reward", "clip_obs", "clip_reward", "gamma", "epsilon"):
            setattr(self, key, state[key])

    def save(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.get_state(), f)

    @staticmethod
    def load(path: str, venv: VecEnv) -> "VecNormalize":
        with open(path) as f:
            state = json.load(f)
        vn = VecNormalize(venv, norm_obs=state["norm_obs"], norm_reward=state["norm_reward"])
        vn.set_state(state)
        return vn


def unwrap_vec_normalize(env):
    while isinstance(env, VecEnvWrapper):
        if isinstance(env, VecNormalize):
            return env
        env = env.venv
    return None


def sync_envs_normalization(env, eval_env) -> None:
    """Copy the training env's VecNormalize statistics into the evaluation env's."""
    src, dst = unwrap_vec_normalize(env), unwrap_vec_normalize(eval_env)
    if src is not None and dst is not None:
        dst.obs_rms.load_state(src.obs_rms.state())
        dst.ret_rms.load_state(src.ret_rms.state())
