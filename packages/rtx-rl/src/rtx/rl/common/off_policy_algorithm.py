"""OffPolicyAlgorithm: act, store transitions in a ReplayBuffer, train every train_freq (DQN, SAC, TD3)."""
from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np

from rtx.rl.common.base_class import BaseAlgorithm
from rtx.rl.common.buffers import ReplayBuffer
from rtx.rl.common.noise import ActionNoise, NormalActionNoise, OrnsteinUhlenbeckActionNoise, VectorizedActionNoise
from rtx.rl.common.utils import TrainFreq, should_collect_more_steps


class OffPolicyAlgorithm(BaseAlgorithm):
    def __init__(self, policy, env, learning_rate, buffer_size: int = 1_000_000, learning_starts: int = 100,
                 batch_size: int = 256, tau: float = 0.005, gamma: float = 0.99, train_freq=(1, "step"),
                 gradient_steps: int = 1, action_noise: ActionNoise | None = None, replay_buffer_class=None,
                 replay_buffer_kwargs=None, optimize_memory_usage: bool = False, n_steps: int = 1,
                 policy_kwargs=None, stats_window_size: int = 100, tensorboard_log=None, verbose: int = 0,
                 device="auto", support_multi_env: bool = False, monitor_wrapper: bool = True, seed=None,
                 use_sde: bool = False, sde_sample_freq: int = -1, use_sde_at_warmup: bool = False,
                 sde_support: bool = True, supported_action_spaces=None):
        if use_sde:
            raise NotImplementedError("gSDE (use_sde=True) is not implemented in rtx.rl")
        if n_steps != 1:
            raise NotImplementedError("n-step returns (n_steps > 1) are not implemented in rtx.rl")
        super().__init__(policy, env, learning_rate, policy_kwargs=policy_kwargs, stats_window_size=stats_window_size,
                         tensorboard_log=tensorboard_log, verbose=verbose, device=device,
                         support_multi_env=support_multi_env, monitor_wrapper=monitor_wrapper, seed=seed,
                         supported_action_spaces=supported_action_spaces)
        self.buffer_size, self.batch_size, self.learning_starts = buffer_size, batch_size, learning_starts
        self.tau, self.gamma, self.gradient_steps = tau, gamma, gradient_steps
        self.action_noise = action_noise
        self.optimize_memory_usage = optimize_memory_usage
        self.replay_buffer_class = replay_buffer_class or ReplayBuffer
        self.replay_buffer_kwargs = replay_buffer_kwargs or {}
        self.train_freq = TrainFreq.parse(train_freq)
        self.replay_buffer = None
        self.use_sde = False

    def _setup_model(self) -> None:
        self._setup_lr_schedule()
        self.set_random_seed(self.seed)
        self.replay_buffer = self.replay_buffer_class(self.buffer_size, self.observation_space, self.action_space,
                                                      device=self.device, n_envs=self.n_envs,
                                                      optimize_memory_usage=self.optimize_memory_usage,
                                                      **self.replay_buffer_kwargs)
        self.policy = self.policy_class(self.observation_space, self.action_space, self.lr_schedule,
                                        **self._resolve_policy_kwargs()).to(self.device)

    def _setup_learn(self, total_timesteps, callback=None, reset_num_timesteps=True, tb_log_name="run",
                     progress_bar=False):
        if (self.action_noise is not None and self.env.num_envs > 1
                and not isinstance(self.action_noise, VectorizedActionNoise)):
            self.action_noise = VectorizedActionNoise(self.action_noise, self.env.num_envs)
        return super()._setup_learn(total_timesteps, callback, reset_num_timesteps, tb_log_name, progress_bar)

    def learn(self, total_timesteps: int, callback=None, log_interval: int = 4, tb_log_name: str = "run",
              reset_num_timesteps: bool = True, progress_bar: bool = False):
        total_timesteps, callback = self._setup_learn(total_timesteps, callback, reset_num_timesteps, tb_log_name,
                                                      progress_bar)
        callback.on_training_start(locals(), globals())
        while self.num_timesteps < total_timesteps:
            continue_training, episode_timesteps = self.collect_rollouts(self.env, callback, self.train_freq,
                                                                         self.replay_buffer, self.action_noise,
                                                                         self.learning_starts, log_interval)
            if not continue_training:
                break
            if self.num_timesteps > 0 and self.num_timesteps > self.learning_starts:
                # gradient_steps=-1: as many steps as environment steps were just collected
                gradient_steps = self.gradient_steps if self.gradient_steps >= 0 else episode_timesteps
                if gradient_steps > 0:
                    self.train(batch_size=self.batch_size, gradient_steps=gradient_steps)
        callback.on_training_end()
        return self

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        raise NotImplementedError

    def _sample_action(self, learning_starts: int, action_noise, n_envs: int = 1):
        """(env action, buffer action): random before learning_starts; Box actions are stored scaled to [-1, 1]."""
        if self.num_timesteps < learning_starts:
            unscaled_action = np.array([self.action_space.sample() for _ in range(n_envs)])
        else:
            unscaled_action, _ = self.predict(self._last_obs, deterministic=False)
        if isinstance(self.action_space, gym.spaces.Box):
            scaled_action = self.policy.scale_action(unscaled_action)
            if action_noise is not None:
                scaled_action = np.clip(scaled_action + action_noise(), -1, 1)
            return self.policy.unscale_action(scaled_action), scaled_action
        return unscaled_action, unscaled_action

    def _on_step(self) -> None:
        pass

    def _dump_logs(self) -> None:
        self._dump_logs_common()
        self.logger.record("time/episodes", self._episode_num)
        self.logger.dump(step=self.num_timesteps)

    def _store_transition(self, replay_buffer, buffer_action, new_obs, reward, dones, infos) -> None:
        if self._vec_normalize_env is not None:  # the buffer keeps raw observations and rewards
            new_obs_ = self._vec_normalize_env.get_original_obs()
            reward_ = self._vec_normalize_env.get_original_reward()
        else:
            self._last_original_obs, new_obs_, reward_ = self._last_obs, new_obs, reward
        next_obs = copy.deepcopy(new_obs_)
        for i in np.flatnonzero(dones):
            terminal = infos[i].get("terminal_observation")
            if terminal is not None:
                if self._vec_normalize_env is not None:
                    terminal = self._vec_normalize_env.unnormalize_obs(terminal)
                next_obs[i] = terminal
        replay_buffer.add(self._last_original_obs, next_obs, buffer_action, reward_, dones, infos)
        self._last_obs = new_obs
        if self._vec_normalize_env is not None:
            self._last_original_obs = new_obs_

    def collect_rollouts(self, env, callback, train_freq: TrainFreq, replay_buffer, action_noise=None,
                         learning_starts: int = 0, log_interval=None):
        self.policy.set_training_mode(False)
        num_collected_steps, num_collected_episodes = 0, 0
        callback.on_rollout_start()
        while should_collect_more_steps(train_freq, num_collected_steps, num_collected_episodes):
            actions, buffer_actions = self._sample_action(learning_starts, action_noise, env.num_envs)
            new_obs, rewards, dones, infos = env.step(actions)
            self.num_timesteps += env.num_envs
            num_collected_steps += 1
            callback.update_locals(locals())
            if not callback.on_step():
                return False, num_collected_steps * env.num_envs
            self._update_info_buffer(infos, dones)
            self._store_transition(replay_buffer, buffer_actions, new_obs, rewards, dones, infos)
            self._update_current_progress_remaining(self.num_timesteps, self._total_timesteps)
            self._on_step()
            for idx in np.flatnonzero(dones):
                num_collected_episodes += 1
                self._episode_num += 1
                if action_noise is not None:
                    action_noise.reset(**({"indices": [idx]} if env.num_envs > 1 else {}))
                if log_interval is not None and self._episode_num % log_interval == 0:
                    self._dump_logs()
        callback.on_rollout_end()
        return True, num_collected_steps * env.num_envs

    # action noise is part of the hyper-parameters: saved as JSON, rebuilt on load
    def _extra_json(self) -> dict:
        noise = self.action_noise
        if isinstance(noise, VectorizedActionNoise):
            noise = noise.noises[0]
        if isinstance(noise, NormalActionNoise):
            return {"action_noise": {"type": "normal", "mean": noise._mu.tolist(), "sigma": noise._sigma.tolist()}}
        if isinstance(noise, OrnsteinUhlenbeckActionNoise):
            return {"action_noise": {"type": "ornstein-uhlenbeck", "mean": noise._mu.tolist(),
                                     "sigma": noise._sigma.tolist(), "theta": noise._theta, "dt": noise._dt}}
        return {}

    def _load_extra_json(self, extra: dict) -> None:
        spec = extra.get("action_noise")
        if spec is None:
            return
        if spec["type"] == "normal":
            self.action_noise = NormalActionNoise(np.array(spec["mean"]), np.array(spec["sigma"]))
        else:
            self.action_noise = OrnsteinUhlenbeckActionNoise(np.array(spec["mean"]), np.array(spec["sigma"]),
                                                             theta=spec["theta"], dt=spec["dt"])
