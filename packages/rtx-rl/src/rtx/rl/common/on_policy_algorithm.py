"""OnPolicyAlgorithm: collect n_steps per env into a RolloutBuffer, then train (PPO, A2C)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np

import rtx
from rtx.rl.common.base_class import BaseAlgorithm
from rtx.rl.common.buffers import RolloutBuffer
from rtx.rl.common.utils import obs_as_tensor


class OnPolicyAlgorithm(BaseAlgorithm):
    def __init__(self, policy, env, learning_rate, n_steps: int, gamma: float, gae_lambda: float, ent_coef: float,
                 vf_coef: float, max_grad_norm: float, use_sde: bool = False, sde_sample_freq: int = -1,
                 rollout_buffer_class=None, rollout_buffer_kwargs=None, stats_window_size: int = 100,
                 tensorboard_log=None, monitor_wrapper: bool = True, policy_kwargs=None, verbose: int = 0,
                 seed=None, device="auto", _init_setup_model: bool = True, supported_action_spaces=None):
        if use_sde:
            raise NotImplementedError("gSDE (use_sde=True) is not implemented in rtx.rl")
        super().__init__(policy, env, learning_rate, policy_kwargs=policy_kwargs, stats_window_size=stats_window_size,
                         tensorboard_log=tensorboard_log, verbose=verbose, device=device, support_multi_env=True,
                         monitor_wrapper=monitor_wrapper, seed=seed, supported_action_spaces=supported_action_spaces)
        self.n_steps, self.gamma, self.gae_lambda = n_steps, gamma, gae_lambda
        self.ent_coef, self.vf_coef, self.max_grad_norm = ent_coef, vf_coef, max_grad_norm
        self.use_sde, self.sde_sample_freq = False, sde_sample_freq
        self.rollout_buffer_class = rollout_buffer_class or RolloutBuffer
        self.rollout_buffer_kwargs = rollout_buffer_kwargs or {}
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        self._setup_lr_schedule()
        self.set_random_seed(self.seed)
        self.rollout_buffer = self.rollout_buffer_class(self.n_steps, self.observation_space, self.action_space,
                                                        device=self.device, gamma=self.gamma,
                                                        gae_lambda=self.gae_lambda, n_envs=self.n_envs,
                                                        **self.rollout_buffer_kwargs)
        self.policy = self.policy_class(self.observation_space, self.action_space, self.lr_schedule,
                                        **self._resolve_policy_kwargs()).to(self.device)

    def collect_rollouts(self, env, callback, rollout_buffer: RolloutBuffer, n_rollout_steps: int) -> bool:
        self.policy.set_training_mode(False)
        n_steps = 0
        rollout_buffer.reset()
        callback.on_rollout_start()
        box = isinstance(self.action_space, gym.spaces.Box)
        while n_steps < n_rollout_steps:
            with rtx.no_grad():
                actions, values, log_probs = self.policy(obs_as_tensor(self._last_obs, self.device))
            actions = actions.numpy()
            clipped_actions = actions
            if box:
                clipped_actions = (self.policy.unscale_action(clipped_actions) if self.policy.squash_output
                                   else np.clip(actions, self.action_space.low, self.action_space.high))
            new_obs, rewards, dones, infos = env.step(clipped_actions)
            self.num_timesteps += env.num_envs
            callback.update_locals(locals())
            if not callback.on_step():
                return False
            self._update_info_buffer(infos, dones)
            n_steps += 1
            if isinstance(self.action_space, gym.spaces.Discrete):
                actions = actions.reshape(-1, 1)
            # A time-limit truncation is not a failure: bootstrap its reward with the value of the last state.
            for idx in np.flatnonzero(dones):
                if infos[idx].get("terminal_observation") is not None and infos[idx].get("TimeLimit.truncated"):
                    terminal_obs = self.policy.obs_to_tensor(infos[idx]["terminal_observation"])[0]
                    with rtx.no_grad():
                        terminal_value = self.policy.predict_values(terminal_obs)[0]
                    rewards[idx] += self.gamma * float(terminal_value.item())
            rollout_buffer.add(self._last_obs, actions, rewards, self._last_episode_starts, values, log_probs)
            self._last_obs, self._last_episode_starts = new_obs, dones
        with rtx.no_grad():
            values = self.policy.predict_values(obs_as_tensor(new_obs, self.device))
        rollout_buffer.compute_returns_and_advantage(last_values=values, dones=dones)
        callback.update_locals(locals())
        callback.on_rollout_end()
        return True

    def train(self) -> None:
        raise NotImplementedError

    def _dump_logs(self, iteration: int) -> None:
        self._dump_logs_common()
        self.logger.record("time/iterations", iteration)
        self.logger.dump(step=self.num_timesteps)

    def learn(self, total_timesteps: int, callback=None, log_interval: int = 1, tb_log_name: str = "OnPolicy",
              reset_num_timesteps: bool = True, progress_bar: bool = False):
        iteration = 0
        total_timesteps, callback = self._setup_learn(total_timesteps, callback, reset_num_timesteps, tb_log_name,
                                                      progress_bar)
        callback.on_training_start(locals(), globals())
        while self.num_timesteps < total_timesteps:
            if not self.collect_rollouts(self.env, callback, self.rollout_buffer, n_rollout_steps=self.n_steps):
                break
            iteration += 1
            self._update_current_progress_remaining(self.num_timesteps, total_timesteps)
            if log_interval is not None and iteration % log_interval == 0:
                self._dump_logs(iteration)
            self.train()
        callback.on_training_end()
        return self
