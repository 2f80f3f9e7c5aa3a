"""PPO (Schulman et al. 2017) with the clipped surrogate objective, as Stable-Baselines3's PPO."""
from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np

import rtx
import rtx.nn.functional as F
from rtx.nn.utils import clip_grad_norm_
from rtx.rl.common.on_policy_algorithm import OnPolicyAlgorithm
from rtx.rl.common.policies import ActorCriticCnnPolicy, ActorCriticPolicy
from rtx.rl.common.utils import actor_critic_loss, explained_variance, get_schedule_fn, normalize_advantages

MlpPolicy, CnnPolicy = ActorCriticPolicy, ActorCriticCnnPolicy


class PPO(OnPolicyAlgorithm):
    policy_aliases = {"MlpPolicy": ActorCriticPolicy, "CnnPolicy": ActorCriticCnnPolicy}
    _hyperparams = ("learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range",
                    "clip_range_vf", "normalize_advantage", "ent_coef", "vf_coef", "max_grad_norm", "target_kl",
                    "stats_window_size", "verbose", "seed")

    def __init__(self, policy, env, learning_rate=3e-4, n_steps: int = 2048, batch_size: int = 64,
                 n_epochs: int = 10, gamma: float = 0.99, gae_lambda: float = 0.95, clip_range=0.2,
                 clip_range_vf=None, normalize_advantage: bool = True, ent_coef: float = 0.0, vf_coef: float = 0.5,
                 max_grad_norm: float = 0.5, use_sde: bool = False, sde_sample_freq: int = -1,
                 rollout_buffer_class=None, rollout_buffer_kwargs=None, target_kl=None,
                 stats_window_size: int = 100, tensorboard_log=None, policy_kwargs=None, verbose: int = 0,
                 seed=None, device="auto", _init_setup_model: bool = True):
        super().__init__(policy, env, learning_rate=learning_rate, n_steps=n_steps, gamma=gamma,
                         gae_lambda=gae_lambda, ent_coef=ent_coef, vf_coef=vf_coef, max_grad_norm=max_grad_norm,
                         use_sde=use_sde, sde_sample_freq=sde_sample_freq, rollout_buffer_class=rollout_buffer_class,
                         rollout_buffer_kwargs=rollout_buffer_kwargs, stats_window_size=stats_window_size,
                         tensorboard_log=tensorboard_log, policy_kwargs=policy_kwargs, verbose=verbose, seed=seed,
                         device=device, _init_setup_model=False,
                         supported_action_spaces=(gym.spaces.Box, gym.spaces.Discrete))
        if normalize_advantage and batch_size <= 1:
            raise ValueError(f"batch_size must be > 1 with normalize_advantage=True, got {batch_size}")
        if self.env is not None and _init_setup_model:  # load() rebuilds quietly
            buffer_size = self.env.num_envs * n_steps
            if buffer_size <= 1:
                raise ValueError(f"n_steps * n_envs must be > 1, got n_steps={n_steps}, n_envs={self.env.num_envs}")
            if buffer_size % batch_size > 0:
                warnings.warn(f"the minibatch size {batch_size} does not divide the rollout size "
                              f"n_steps * n_envs = {buffer_size}: the last minibatch has {buffer_size % batch_size} "
                              "samples", stacklevel=2)
        self.batch_size, self.n_epochs = batch_size, n_epochs
        self.clip_range, self.clip_range_vf = clip_range, clip_range_vf
        self.normalize_advantage, self.target_kl = normalize_advantage, target_kl
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        super()._setup_model()
        self.clip_range_schedule = get_schedule_fn(self.clip_range)
        if self.clip_range_vf is not None:
            if isinstance(self.clip_range_vf, (float, int)) and self.clip_range_vf <= 0:
                raise ValueError("clip_range_vf must be positive; pass None to disable value clipping")
            self.clip_range_vf_schedule = get_schedule_fn(self.clip_range_vf)

    def train(self) -> None:
        """n_epochs passes of minibatch Adam steps on the clipped surrogate + value + entropy loss."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip_range = self.clip_range_schedule(self._current_progress_remaining)
        clip_range_vf = (self.clip_range_vf_schedule(self._current_progress_remaining)
                         if self.clip_range_vf is not None else None)
        entropy_losses, pg_losses, value_losses, clip_fractions, approx_kl_divs = [], [], [], [], []
        continue_training = True
        discrete = isinstance(self.action_space, gym.spaces.Discrete)
        params = list(self.policy.parameters())  # walked once, not per minibatch
        for epoch in range(self.n_epochs):
            for data in self.rollout_buffer.get(self.batch_size):
                actions = data.actions.long().flatten() if discrete else data.actions
                values, log_prob, entropy = self.policy.evaluate_actions(data.observations, actions)
                values = values.flatten()
                advantages = data.advantages
                if self.normalize_advantage and len(advantages) > 1:
                    advantages = normalize_advantages(advantages)
                ratio = rtx.exp(log_prob - data.old_log_prob)
                policy_loss_1 = advantages * ratio
                policy_loss_2 = advantages * rtx.clamp(ratio, 1 - clip_range, 1 + clip_range)
                policy_loss = -rtx.minimum(policy_loss_1, policy_loss_2).mean()
                pg_losses.append(policy_loss.item())
                # The logged statistics (and target_kl's test) on arrays: a handful of NumPy calls instead
                # of a dozen graph-less rtx ops per minibatch; same float32 values as the Tensor spelling.
                ratio_np = ratio.detach().cpu().numpy()
                clip_fractions.append(float((np.abs(ratio_np - 1) > clip_range).astype(np.float32).mean()))
                if clip_range_vf is None:
                    values_pred = values
                else:
                    values_pred = data.old_values + rtx.clamp(values - data.old_values, -clip_range_vf, clip_range_vf)
                value_loss = F.mse_loss(data.returns, values_pred)
                value_losses.append(value_loss.item())
                entropy_loss = -rtx.mean(-log_prob) if entropy is None else -rtx.mean(entropy)
                entropy_losses.append(entropy_loss.item())
                loss = actor_critic_loss(policy_loss, entropy_loss, value_loss, self.ent_coef, self.vf_coef)
                log_ratio = log_prob.detach().cpu().numpy() - data.old_log_prob.cpu().numpy()
                approx_kl_div = float(((np.exp(log_ratio) - 1) - log_ratio).mean())
                approx_kl_divs.append(approx_kl_div)
                if self.target_kl is not None and approx_kl_div > 1.5 * self.target_kl:
                    continue_training = False
                    if self.verbose >= 1:
                        print(f"Early stopping at step {epoch} due to reaching max kl: {approx_kl_div:.2f}")
                    break
                self.policy.optimizer.zero_grad()
                loss.backward()
                clip_grad_norm_(params, self.max_grad_norm)
                self.policy.optimizer.step()
            self._n_updates += 1
            if not continue_training:
                break
        explained_var = explained_variance(self.rollout_buffer.values.flatten(), self.rollout_buffer.returns.flatten())
        log = self.logger.record
        log("train/entropy_loss", float(np.mean(entropy_losses)))
        log("train/policy_gradient_loss", float(np.mean(pg_losses)))
        log("train/value_loss", float(np.mean(value_losses)))
        log("train/approx_kl", float(np.mean(approx_kl_divs)))
        log("train/clip_fraction", float(np.mean(clip_fractions)))
        log("train/loss", float(loss.item()))
        log("train/explained_variance", explained_var)
        if hasattr(self.policy, "log_std"):
            log("train/std", float(rtx.exp(self.policy.log_std).mean().item()))
        log("train/n_updates", self._n_updates)
        log("train/clip_range", clip_range)

    def learn(self, total_timesteps: int, callback=None, log_interval: int = 1, tb_log_name: str = "PPO",
              reset_num_timesteps: bool = True, progress_bar: bool = False):
        return super().learn(total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, progress_bar)
