"""A2C (Mnih et al. 2016), synchronous, as Stable-Baselines3's A2C: RMSprop, n_steps=5, no minibatches."""
from __future__ import annotations

import gymnasium as gym

import rtx
import rtx.nn.functional as F
import rtx.optim as optim
from rtx.nn.utils import clip_grad_norm_
from rtx.rl.common.on_policy_algorithm import OnPolicyAlgorithm
from rtx.rl.common.policies import ActorCriticCnnPolicy, ActorCriticPolicy
from rtx.rl.common.utils import actor_critic_loss, explained_variance, normalize_advantages


class A2C(OnPolicyAlgorithm):
    policy_aliases = {"MlpPolicy": ActorCriticPolicy, "CnnPolicy": ActorCriticCnnPolicy}
    _hyperparams = ("learning_rate", "n_steps", "gamma", "gae_lambda", "ent_coef", "vf_coef", "max_grad_norm",
                    "rms_prop_eps", "use_rms_prop", "normalize_advantage", "stats_window_size", "verbose", "seed")

    def __init__(self, policy, env, learning_rate=7e-4, n_steps: int = 5, gamma: float = 0.99,
                 gae_lambda: float = 1.0, ent_coef: float = 0.0, vf_coef: float = 0.5, max_grad_norm: float = 0.5,
                 rms_prop_eps: float = 1e-5, use_rms_prop: bool = True, use_sde: bool = False,
                 sde_sample_freq: int = -1, rollout_buffer_class=None, rollout_buffer_kwargs=None,
                 normalize_advantage: bool = False, stats_window_size: int = 100, tensorboard_log=None,
                 policy_kwargs=None, verbose: int = 0, seed=None, device="auto", _init_setup_model: bool = True):
        super().__init__(policy, env, learning_rate=learning_rate, n_steps=n_steps, gamma=gamma,
                         gae_lambda=gae_lambda, ent_coef=ent_coef, vf_coef=vf_coef, max_grad_norm=max_grad_norm,
                         use_sde=use_sde, sde_sample_freq=sde_sample_freq, rollout_buffer_class=rollout_buffer_class,
                         rollout_buffer_kwargs=rollout_buffer_kwargs, stats_window_size=stats_window_size,
                         tensorboard_log=tensorboard_log, policy_kwargs=policy_kwargs, verbose=verbose, seed=seed,
                         device=device, _init_setup_model=False,
                         supported_action_spaces=(gym.spaces.Box, gym.spaces.Discrete))
        self.normalize_advantage = normalize_advantage
        self.rms_prop_eps, self.use_rms_prop = rms_prop_eps, use_rms_prop
        # SB3 uses PyTorch's RMSprop (alpha=0.99, eps=rms_prop_eps, weight_decay=0) unless told otherwise.
        if use_rms_prop and "optimizer_class" not in self.policy_kwargs:
            self.policy_kwargs["optimizer_class"] = optim.RMSprop
            self.policy_kwargs["optimizer_kwargs"] = dict(alpha=0.99, eps=rms_prop_eps, weight_decay=0)
        if _init_setup_model:
            self._setup_model()

    def train(self) -> None:
        """One gradient step on the whole rollout: -A log pi + vf_coef (R - V)^2 - ent_coef H."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        discrete = isinstance(self.action_space, gym.spaces.Discrete)
        for data in self.rollout_buffer.get(batch_size=None):
            actions = data.actions.long().flatten() if discrete else data.actions
            values, log_prob, entropy = self.policy.evaluate_actions(data.observations, actions)
            values = values.flatten()
            advantages = data.advantages
            if self.normalize_advantage:
                advantages = normalize_advantages(advantages)
            policy_loss = -(advantages * log_prob).mean()
            value_loss = F.mse_loss(data.returns, values)
            entropy_loss = -rtx.mean(-log_prob) if entropy is None else -rtx.mean(entropy)
            loss = actor_critic_loss(policy_loss, entropy_loss, value_loss, self.ent_coef, self.vf_coef)
            self.policy.optimizer.zero_grad()
            loss.backward()
            clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()
        self._n_updates += 1
        log = self.logger.record
        log("train/n_updates", self._n_updates)
        log("train/explained_variance",
            explained_variance(self.rollout_buffer.values.flatten(), self.rollout_buffer.returns.flatten()))
        log("train/entropy_loss", float(entropy_loss.item()))
        log("train/policy_loss", float(policy_loss.item()))
        log("train/value_loss", float(value_loss.item()))

    def learn(self, total_timesteps: int, callback=None, log_interval: int = 100, tb_log_name: str = "A2C",
              reset_num_timesteps: bool = True, progress_bar: bool = False):
        return super().learn(total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, progress_bar)
