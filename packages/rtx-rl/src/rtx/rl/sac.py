"""SAC (Haarnoja et al. 2018) as Stable-Baselines3's SAC: squashed Gaussian actor, twin critics with
Polyak-averaged targets, automatic entropy tuning towards target_entropy = -dim(A)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.rl.common.distributions import SquashedDiagGaussianDistribution
from rtx.rl.common.off_policy_algorithm import OffPolicyAlgorithm
from rtx.rl.common.policies import ACTIVATIONS, BasePolicy, ContinuousCritic, resolve
from rtx.rl.common.preprocessing import get_action_dim
from rtx.rl.common.torch_layers import FlattenExtractor, NatureCNN, create_mlp
from rtx.rl.common.utils import frozen, polyak_update

# Bounds of the actor's log standard deviation (SB3's LOG_STD_MIN/MAX).
LOG_STD_MAX, LOG_STD_MIN = 2, -20


class Actor(BasePolicy):
    def __init__(self, observation_space, action_space, net_arch, features_extractor, features_dim,
                 activation_fn=nn.ReLU, normalize_images: bool = True):
        super().__init__(observation_space, action_space, normalize_images=normalize_images, squash_output=True)
        self.features_extractor = features_extractor
        action_dim = get_action_dim(action_space)
        self.latent_pi = nn.Sequential(*create_mlp(features_dim, -1, net_arch, activation_fn))
        last = net_arch[-1] if net_arch else features_dim
        self.action_dist = SquashedDiagGaussianDistribution(action_dim)
        self.mu = nn.Linear(last, action_dim)
        self.log_std = nn.Linear(last, action_dim)

    def get_action_dist_params(self, obs):
        latent_pi = self.latent_pi(self.extract_features(obs, self.features_extractor))
        log_std = rtx.clamp(self.log_std(latent_pi), LOG_STD_MIN, LOG_STD_MAX)
        return self.mu(latent_pi), log_std

    def forward(self, obs, deterministic: bool = False):
        mean_actions, log_std = self.get_action_dist_params(obs)
        return self.action_dist.proba_distribution(mean_actions, log_std).get_actions(deterministic=deterministic)

    def action_log_prob(self, obs):
        """Reparameterized tanh-Gaussian actions and their log-probabilities (with the tanh correction)."""
        mean_actions, log_std = self.get_action_dist_params(obs)
        return self.action_dist.log_prob_from_params(mean_actions, log_std)

    def _predict(self, observation, deterministic: bool = False):
        return self(observation, deterministic)


class SACPolicy(BasePolicy):
    def __init__(self, observation_space, action_space, lr_schedule, net_arch=None, activation_fn=nn.ReLU,
                 use_sde: bool = False, log_std_init: float = -3, use_expln: bool = False, clip_mean: float = 2.0,
                 features_extractor_class=FlattenExtractor, features_extractor_kwargs=None,
                 normalize_images: bool = True, optimizer_class="Adam", optimizer_kwargs=None, n_critics: int = 2,
                 share_features_extractor: bool = False):
        if use_sde:
            raise NotImplementedError("gSDE (use_sde=True) is not implemented in rtx.rl")
        super().__init__(observation_space, action_space, features_extractor_class, features_extractor_kwargs,
                         normalize_images, optimizer_class, optimizer_kwargs, squash_output=True)
        if net_arch is None:
            net_arch = [] if self.features_extractor_class is NatureCNN else [256, 256]
        if isinstance(net_arch, dict):
            actor_arch, critic_arch = net_arch["pi"], net_arch["qf"]
        else:
            actor_arch = critic_arch = list(net_arch)
        self.net_arch, self.activation_fn = net_arch, resolve(ACTIVATIONS, activation_fn, "activation_fn")
        self.n_critics, self.share_features_extractor = n_critics, share_features_extractor
        self._actor_arch, self._critic_arch = actor_arch, critic_arch
        self.actor = self.make_actor()
        self.actor.optimizer = self.optimizer_class(self.actor.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)
        self.critic = self.make_critic(self.actor.features_extractor if share_features_extractor else None)
        # With a shared extractor the critic's optimizer leaves the extractor's weights to the actor.
        critic_params = [p for n, p in self.critic.named_parameters()
                         if not (share_features_extractor and n.startswith("features_extractor"))]
        self.critic.optimizer = self.optimizer_class(critic_params, lr=lr_schedule(1), **self.optimizer_kwargs)
        self.critic_target = self.make_critic(None)
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.critic_target.train(False)

    def make_actor(self) -> Actor:
        fe = self.make_features_extractor()
        return Actor(self.observation_space, self.action_space, self._actor_arch, fe, fe.features_dim,
                     self.activation_fn, self.normalize_images)

    def make_critic(self, features_extractor=None) -> ContinuousCritic:
        fe = features_extractor or self.make_features_extractor()
        return ContinuousCritic(self.observation_space, self.action_space, self._critic_arch, fe, fe.features_dim,
                                self.activation_fn, self.normalize_images, self.n_critics,
                                share_features_extractor=features_extractor is not None)

    def forward(self, obs, deterministic: bool = False):
        return self._predict(obs, deterministic)

    def _predict(self, observation, deterministic: bool = False):
        return self.actor(observation, deterministic)

    def set_training_mode(self, mode: bool) -> None:
        self.actor.train(mode)
        self.critic.train(mode)
        self.training = mode


class CnnPolicy(SACPolicy):
    def __init__(self, observation_space, action_space, lr_schedule, **kwargs):
        kwargs.setdefault("features_extractor_class", NatureCNN)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)


class SAC(OffPolicyAlgorithm):
    policy_aliases = {"MlpPolicy": SACPolicy, "CnnPolicy": CnnPolicy}
    _hyperparams = ("learning_rate", "buffer_size", "learning_starts", "batch_size", "tau", "gamma", "train_freq",
                    "gradient_steps", "ent_coef", "target_update_interval", "target_entropy",
                    "stats_window_size", "verbose", "seed")
    _modules = ("policy",)
    _optimizers = ("actor.optimizer", "critic.optimizer")

    def __init__(self, policy, env, learning_rate=3e-4, buffer_size: int = 1_000_000, learning_starts: int = 100,
                 batch_size: int = 256, tau: float = 0.005, gamma: float = 0.99, train_freq=1,
                 gradient_steps: int = 1, action_noise=None, replay_buffer_class=None, replay_buffer_kwargs=None,
                 optimize_memory_usage: bool = False, n_steps: int = 1, ent_coef="auto",
                 target_update_interval: int = 1, target_entropy="auto", use_sde: bool = False,
                 sde_sample_freq: int = -1, use_sde_at_warmup: bool = False, stats_window_size: int = 100,
                 tensorboard_log=None, policy_kwargs=None, verbose: int = 0, seed=None, device="auto",
                 _init_setup_model: bool = True):
        super().__init__(policy, env, learning_rate, buffer_size, learning_starts, batch_size, tau, gamma,
                         train_freq, gradient_steps, action_noise, replay_buffer_class=replay_buffer_class,
                         replay_buffer_kwargs=replay_buffer_kwargs, optimize_memory_usage=optimize_memory_usage,
                         n_steps=n_steps, policy_kwargs=policy_kwargs, stats_window_size=stats_window_size,
                         tensorboard_log=tensorboard_log, verbose=verbose, device=device, seed=seed, use_sde=use_sde,
                         support_multi_env=True, supported_action_spaces=(gym.spaces.Box,))
        self.target_entropy, self.ent_coef = target_entropy, ent_coef
        self.target_update_interval = target_update_interval
        self.log_ent_coef = None
        self.ent_coef_optimizer = None
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        super()._setup_model()
        self.actor, self.critic, self.critic_target = self.policy.actor, self.policy.critic, self.policy.critic_target
        # the parameters the critic's optimizer updates (not a features extractor shared with the actor)
        self._critic_params = [p for group in self.critic.optimizer.param_groups for p in group["params"]]
        if self.target_entropy == "auto":
            self.target_entropy = float(-np.prod(self.action_space.shape).astype(np.float32))
        else:
            self.target_entropy = float(self.target_entropy)
        if isinstance(self.ent_coef, str) and self.ent_coef.startswith("auto"):
            init_value = float(self.ent_coef.split("_")[1]) if "_" in self.ent_coef else 1.0
            if init_value <= 0:
                raise ValueError(f"the initial entropy coefficient must be > 0, got {init_value}")
            # Optimize log(alpha) so alpha stays positive.
            self.log_ent_coef = nn.Parameter(rtx.log(rtx.ones(1, device=self.device) * init_value))
            self.ent_coef_optimizer = self.policy.optimizer_class([self.log_ent_coef], lr=self.lr_schedule(1))
            self._optimizers = ("actor.optimizer", "critic.optimizer", "ent_coef_optimizer")
        else:
            self.ent_coef_tensor = rtx.tensor(float(self.ent_coef), device=self.device)

    def _extra_tensors(self) -> dict:
        return {"log_ent_coef": self.log_ent_coef} if self.log_ent_coef is not None else {}

    def train(self, gradient_steps: int, batch_size: int = 64) -> None:
        self.policy.set_training_mode(True)
        optimizers = [self.actor.optimizer, self.critic.optimizer]
        if self.ent_coef_optimizer is not None:
            optimizers.append(self.ent_coef_optimizer)
        self._update_learning_rate(optimizers)
        ent_coef_losses, ent_coefs, actor_losses, critic_losses = [], [], [], []
        for gradient_step in range(gradient_steps):
            data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)
            actions_pi, log_prob = self.actor.action_log_prob(data.observations)
            log_prob = log_prob.reshape(-1, 1)
            ent_coef_loss = None
            if self.ent_coef_optimizer is not None:
                ent_coef = rtx.exp(self.log_ent_coef.detach())
                ent_coef_loss = -(self.log_ent_coef * (log_prob + self.target_entropy).detach()).mean()
                ent_coef_losses.append(ent_coef_loss.item())
            else:
                ent_coef = self.ent_coef_tensor
            ent_coefs.append(float(ent_coef.item()))
            if ent_coef_loss is not None:
                self.ent_coef_optimizer.zero_grad()
                ent_coef_loss.backward()
                self.ent_coef_optimizer.step()
            with rtx.no_grad():
                next_actions, next_log_prob = self.actor.action_log_prob(data.next_observations)
                next_q_values = rtx.cat(self.critic_target(data.next_observations, next_actions), dim=1)
                next_q_values = rtx.min(next_q_values, dim=1, keepdim=True)[0]
                next_q_values = next_q_values - ent_coef * next_log_prob.reshape(-1, 1)
                target_q_values = data.rewards + (1 - data.dones) * self.gamma * next_q_values
            current_q_values = self.critic(data.observations, data.actions)
            critic_loss = 0.5 * sum(F.mse_loss(q, target_q_values) for q in current_q_values)
            critic_losses.append(critic_loss.item())
            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()
            with frozen(self._critic_params):  # no critic weight gradients from the actor loss
                q_values_pi = rtx.cat(self.critic(data.observations, actions_pi), dim=1)
            min_qf_pi = rtx.min(q_values_pi, dim=1, keepdim=True)[0]
            actor_loss = (ent_coef * log_prob - min_qf_pi).mean()
            actor_losses.append(actor_loss.item())
            self.actor.optimizer.zero_grad()
            actor_loss.backward()
            self.actor.optimizer.step()
            if gradient_step % self.target_update_interval == 0:
                polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
        self._n_updates += gradient_steps
        log = self.logger.record
        log("train/n_updates", self._n_updates)
        log("train/ent_coef", float(np.mean(ent_coefs)))
        log("train/actor_loss", float(np.mean(actor_losses)))
        log("train/critic_loss", float(np.mean(critic_losses)))
        if ent_coef_losses:
            log("train/ent_coef_loss", float(np.mean(ent_coef_losses)))

    def _hyperparams_json(self) -> dict:
        out = super()._hyperparams_json()
        out["train_freq"] = list(self.train_freq.to_json())
        return out


