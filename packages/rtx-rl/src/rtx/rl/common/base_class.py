"""BaseAlgorithm: environment setup, seeding, learn() bookkeeping, predict, save/load (SB3's base_class)."""
from __future__ import annotations

import time
from collections import deque

import gymnasium as gym
import numpy as np

import rtx
import rtx.nn as nn
from rtx.rl.common import save_util
from rtx.rl.common.callbacks import BaseCallback, CallbackList, ConvertCallback, ProgressBarCallback
from rtx.rl.common.logger import configure
from rtx.rl.common.policies import ACTIVATIONS, EXTRACTORS, OPTIMIZERS
from rtx.rl.common.utils import (
    get_device,
    get_schedule_fn,
    safe_mean,
    schedule_to_json,
    set_random_seed,
    update_learning_rate,
)
from rtx.rl.common.vec_env import VecNormalize, unwrap_vec_normalize, wrap_env


class BaseAlgorithm:
    policy_aliases: dict = {}
    # Constructor arguments saved in data.json and given back to __init__ by load().
    _hyperparams: tuple = ()
    # Modules whose parameters are saved; optimizers saved with them.
    _modules: tuple = ("policy",)
    _optimizers: tuple = ("policy.optimizer",)

    def __init__(self, policy, env, learning_rate, policy_kwargs=None, stats_window_size: int = 100,
                 tensorboard_log=None, verbose: int = 0, device="auto", support_multi_env: bool = False,
                 monitor_wrapper: bool = True, seed=None, supported_action_spaces=None):
        if tensorboard_log is not None:
            raise NotImplementedError("tensorboard_log is not supported by rtx.rl: use the CSV logger "
                                      "(model.set_logger(configure(folder, ['stdout', 'csv'])))")
        if isinstance(policy, str):
            if policy not in self.policy_aliases:
                raise ValueError(f"unknown policy {policy!r} for {type(self).__name__}; "
                                 f"expected one of {sorted(self.policy_aliases)}")
            self.policy_name, self.policy_class = policy, self.policy_aliases[policy]
        else:
            self.policy_name, self.policy_class = policy.__name__, policy
        self.device = get_device(device)
        self.verbose = verbose
        self.policy_kwargs = dict(policy_kwargs or {})
        self.learning_rate = learning_rate
        self.seed = seed
        self.stats_window_size = stats_window_size
        self.num_timesteps = 0
        self._total_timesteps = 0
        self._num_timesteps_at_start = 0
        self._episode_num = 0
        self._current_progress_remaining = 1.0
        self._n_updates = 0
        self._logger = None
        self._last_obs = None
        self._last_episode_starts = None
        self._last_original_obs = None
        self.action_noise = None
        self.env_id = env if isinstance(env, str) else None
        self.env = None
        self._vec_normalize_env = None
        self._vec_normalize_state = None  # stats read by load() when no env came with them
        if env is not None:
            if self.env_id is None:
                spec = getattr(env, "spec", None)
                self.env_id = spec.id if spec is not None else None
            env = wrap_env(env, monitor=monitor_wrapper)
            self.observation_space, self.action_space = env.observation_space, env.action_space
            self.n_envs = env.num_envs
            self.env = env
            self._vec_normalize_env = unwrap_vec_normalize(env)
            if self.env_id is None:
                self.env_id = _env_id_of(env)
            if not support_multi_env and self.n_envs > 1:
                raise ValueError(f"{type(self).__name__} supports one environment only, got {self.n_envs}")
            if supported_action_spaces and not isinstance(self.action_space, supported_action_spaces):
                raise ValueError(f"{type(self).__name__} does not support the action space {self.action_space}; "
                                 f"supported: {', '.join(s.__name__ for s in supported_action_spaces)}")
        self.ep_info_buffer = deque(maxlen=stats_window_size)
        self.ep_success_buffer = deque(maxlen=stats_window_size)

    # ---- setup --------------------------------------------------------------------------------------
    def _setup_lr_schedule(self) -> None:
        self.lr_schedule = get_schedule_fn(self.learning_rate)

    def set_random_seed(self, seed=None) -> None:
        if seed is None:
            return
        set_random_seed(seed)
        self.action_space.seed(seed)
        if self.env is not None:
            self.env.seed(seed)

    def _resolve_policy_kwargs(self) -> dict:
        kw = dict(self.policy_kwargs)
        for key, table in (("activation_fn", ACTIVATIONS), ("features_extractor_class", EXTRACTORS),
                           ("optimizer_class", OPTIMIZERS)):
            if isinstance(kw.get(key), str):
                kw[key] = table[kw[key]]
        return kw

    def _update_current_progress_remaining(self, num_timesteps: int, total_timesteps: int) -> None:
        self._current_progress_remaining = 1.0 - float(num_timesteps) / float(total_timesteps)

    def _update_learning_rate(self, optimizers) -> None:
        lr = self.lr_schedule(self._current_progress_remaining)
        self.logger.record("train/learning_rate", lr)
        for opt in (optimizers if isinstance(optimizers, (list, tuple)) else [optimizers]):
            update_learning_rate(opt, lr)

    @property
    def logger(self):
        if self._logger is None:
            self._logger = configure(None, ["stdout"] if self.verbose >= 1 else [])
        return self._logger

    def set_logger(self, logger) -> None:
        self._logger = logger

    def get_env(self):
        return self.env

    def get_vec_normalize_env(self):
        return self._vec_normalize_env

    def set_env(self, env, force_reset: bool = True) -> None:
        env = wrap_env(env)
        if env.observation_space != self.observation_space or env.action_space != self.action_space:
            raise ValueError(f"the new env's spaces ({env.observation_space}, {env.action_space}) differ from "
                             f"the model's ({self.observation_space}, {self.action_space})")
        if env.num_envs != self.n_envs:
            raise ValueError(f"the model was built for {self.n_envs} envs, the new env has {env.num_envs}")
        self.env = env
        self._vec_normalize_env = unwrap_vec_normalize(env)
        if self._vec_normalize_env is not None and self._vec_normalize_state is not None:
            self._vec_normalize_env.set_state(self._vec_normalize_state)
        if force_reset:
            self._last_obs = None

    # ---- learn bookkeeping --------------------------------------------------------------------------
    def _init_callback(self, callback, progress_bar: bool = False) -> BaseCallback:
        if isinstance(callback, list):
            callback = CallbackList(callback)
        elif callback is None:
            callback = CallbackList([])
        elif not isinstance(callback, BaseCallback):
            callback = ConvertCallback(callback)
        if progress_bar:
            callback = CallbackList([callback, ProgressBarCallback()])
        callback.init_callback(self)
        return callback

    def _setup_learn(self, total_timesteps: int, callback=None, reset_num_timesteps: bool = True,
                     tb_log_name: str = "run", progress_bar: bool = False):
        if self.env is None:
            raise ValueError("this model has no environment: pass env= to load() or call set_env() first")
        self.start_time = time.time_ns()
        if reset_num_timesteps:
            self.num_timesteps = 0
            self._episode_num = 0
        else:
            total_timesteps += self.num_timesteps
        self._total_timesteps = total_timesteps
        self._num_timesteps_at_start = self.num_timesteps
        if reset_num_timesteps or self._last_obs is None:
            self._last_obs = self.env.reset()
            self._last_episode_starts = np.ones((self.env.num_envs,), dtype=bool)
            if self._vec_normalize_env is not None:
                self._last_original_obs = self._vec_normalize_env.get_original_obs()
        return total_timesteps, self._init_callback(callback, progress_bar)

    def _update_info_buffer(self, infos, dones=None) -> None:
        for idx, info in enumerate(infos):
            ep = info.get("episode")
            if ep is not None:
                self.ep_info_buffer.append(ep)
            success = info.get("is_success")
            if success is not None and dones is not None and dones[idx]:
                self.ep_success_buffer.append(success)

    def _dump_logs_common(self) -> None:
        elapsed = max((time.time_ns() - self.start_time) / 1e9, 1e-9)
        fps = int((self.num_timesteps - self._num_timesteps_at_start) / elapsed)
        if len(self.ep_info_buffer) > 0:
            self.logger.record("rollout/ep_rew_mean", safe_mean([ep["r"] for ep in self.ep_info_buffer]))
            self.logger.record("rollout/ep_len_mean", safe_mean([ep["l"] for ep in self.ep_info_buffer]))
        self.logger.record("time/fps", fps)
        self.logger.record("time/time_elapsed", int(elapsed))
        self.logger.record("time/total_timesteps", self.num_timesteps)

    # ---- inference ----------------------------------------------------------------------------------
    def predict(self, observation, state=None, episode_start=None, deterministic: bool = False):
        """Actions for one observation or a batch (n_envs, *obs_shape): returns (actions, state)."""
        return self.policy.predict(observation, state, episode_start, deterministic)

    # ---- parameters ---------------------------------------------------------------------------------
    def _module(self, name):
        obj = self
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj

    def _extra_tensors(self) -> dict:
        """Tensors that are not module parameters (SAC's log_ent_coef)."""
        return {}

    def get_parameters(self) -> dict:
        """{"policy": state_dict, ...}: NumPy arrays keyed as the modules name them."""
        params = {name: {k: v.detach().cpu().numpy() for k, v in self._module(name).state_dict().items()}
                  for name in self._modules}
        for k, v in self._extra_tensors().items():
            params[k] = v.detach().cpu().numpy()
        return params

    def set_parameters(self, load_path_or_dict, exact_match: bool = True, device="auto") -> None:
        """Load parameters from get_parameters()'s dict or from a saved archive."""
        if not isinstance(load_path_or_dict, dict):
            _, tensors = save_util.load_from_zip(load_path_or_dict)
            # state_dict keys hold dots, never slashes: "policy/<key>" unflattens to one level
            load_path_or_dict = {name: save_util.unflatten_state(name, tensors) for name in self._modules}
            load_path_or_dict.update({k: tensors[k] for k in self._extra_tensors() if k in tensors})
        missing = [n for n in self._modules if n not in load_path_or_dict]
        if exact_match and missing:
            raise ValueError(f"parameters for {missing} are missing; got {sorted(load_path_or_dict)}")
        for name in self._modules:
            if name not in load_path_or_dict:
                continue
            module: nn.Module = self._module(name)
            state = {k: rtx.as_tensor(np.asarray(v), device=self.device) for k, v in load_path_or_dict[name].items()}
            module.load_state_dict(state, strict=exact_match)
        with rtx.no_grad():
            for k, t in self._extra_tensors().items():
                if k in load_path_or_dict:
                    t.copy_(rtx.as_tensor(np.asarray(load_path_or_dict[k]), device=self.device))

    # ---- save / load --------------------------------------------------------------------------------
    def _hyperparams_json(self) -> dict:
        out = {}
        for name in self._hyperparams:
            value = getattr(self, name)
            if callable(value) or hasattr(value, "to_json"):
                value = schedule_to_json(value)
            out[name] = value
        return out

    def save(self, path, exclude=None, include=None) -> str:
        """One zip: data.json (hyper-parameters, spaces, counters, VecNormalize statistics) and
        parameters.safetensors (weights and optimizer states). Returns the path written."""
        tensors, opt_groups = {}, {}
        for name in self._modules:
            for k, v in self._module(name).state_dict().items():
                tensors[f"{name}/{k}"] = np.array(v.detach().cpu().numpy(), order="C")
        for name in self._optimizers:
            opt_groups[name] = save_util.optimizer_to_tensors(f"opt:{name}", self._module(name), tensors)
        for k, v in self._extra_tensors().items():
            tensors[k] = np.array(v.detach().cpu().numpy(), order="C")
        vn = self._vec_normalize_env.get_state() if self._vec_normalize_env is not None else self._vec_normalize_state
        data = {
            "format": save_util.FORMAT, "algo": type(self).__name__, "policy": self.policy_name,
            "hyperparams": self._hyperparams_json(), "policy_kwargs": _kwargs_to_json(self.policy_kwargs),
            "observation_space": save_util.space_to_json(self.observation_space),
            "action_space": save_util.space_to_json(self.action_space),
            "n_envs": self.n_envs, "num_timesteps": self.num_timesteps, "n_updates": self._n_updates,
            "episode_num": self._episode_num, "seed": self.seed, "env_id": self.env_id,
            "optimizers": opt_groups, "vec_normalize": vn, "extra": self._extra_json(),
        }
        return save_util.save_to_zip(path, data, tensors)

    def _extra_json(self) -> dict:
        return {}

    def _load_extra_json(self, extra: dict) -> None:
        pass

    @classmethod
    def load(cls, path, env=None, device="auto", custom_objects=None, print_system_info: bool = False,
             force_reset: bool = True, **kwargs):
        """Rebuild a saved model. env (optional) is wrapped in VecNormalize with the saved statistics
        (training=False) when the model was trained with one and env has none."""
        data, tensors = save_util.load_from_zip(path)
        if data["algo"] != cls.__name__:
            raise ValueError(f"{path} holds a {data['algo']} model; load it with {data['algo']}.load")
        hp = dict(data["hyperparams"])
        hp.update(custom_objects or {})
        hp.update(kwargs)
        obs_space = save_util.space_from_json(data["observation_space"])
        act_space = save_util.space_from_json(data["action_space"])
        if env is not None:
            env = wrap_env(env)
            if env.observation_space != obs_space or env.action_space != act_space:
                raise ValueError(f"the env's spaces ({env.observation_space}, {env.action_space}) differ from the "
                                 f"saved model's ({obs_space}, {act_space})")
            if data["vec_normalize"] is not None and unwrap_vec_normalize(env) is None:
                env = VecNormalize(env, training=False, norm_obs=data["vec_normalize"]["norm_obs"],
                                   norm_reward=False)
        model = cls(policy=data["policy"], env=env, device=device, policy_kwargs=data["policy_kwargs"],
                    _init_setup_model=False, **hp)
        if env is None:
            model.observation_space, model.action_space, model.n_envs = obs_space, act_space, data["n_envs"]
        model.env_id = data.get("env_id")
        model._setup_model()
        for name in model._modules:
            prefix = name + "/"
            state = {k[len(prefix):]: rtx.as_tensor(v, device=model.device)
                     for k, v in tensors.items() if k.startswith(prefix)}
            model._module(name).load_state_dict(state)
        for name, groups in data["optimizers"].items():
            save_util.optimizer_from_tensors(f"opt:{name}", model._module(name), tensors, groups, model.device)
        with rtx.no_grad():
            for k, t in model._extra_tensors().items():
                t.copy_(rtx.as_tensor(tensors[k], device=model.device))
        model.num_timesteps, model._n_updates = data["num_timesteps"], data["n_updates"]
        model._episode_num = data["episode_num"]
        model._load_extra_json(data.get("extra") or {})
        model._vec_normalize_state = data["vec_normalize"]
        if model._vec_normalize_env is not None and data["vec_normalize"] is not None:
            model._vec_normalize_env.set_state(data["vec_normalize"])
        return model


def _kwargs_to_json(kw: dict) -> dict:
    """policy_kwargs with classes written as their names (resolved back by the policies)."""
    out = {}
    for k, v in kw.items():
        if isinstance(v, type):
            v = v.__name__
        elif isinstance(v, tuple):
            v = list(v)
        out[k] = v
    return out


def _env_id_of(env) -> str | None:
    try:
        specs = env.unwrapped.venv.get_attr("spec") if hasattr(env.unwrapped, "venv") else None
        return specs[0].id if specs and specs[0] is not None else None
    except Exception:  # an env without a spec (built from a class) has no id to record
        return None


def is_box(space) -> bool:
    return isinstance(space, gym.spaces.Box)
