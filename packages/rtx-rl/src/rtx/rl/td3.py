"""TD3 (Fujimoto et al. 2018) as Stable-Baselines3's TD3: deterministic tanh actor, twin critics, delayed
policy updates and target policy smoothing."""
from __future__ import annotations

import gymnasium as gym
import numpy as np

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.rl.common.off_policy_algorithm import OffPolicyAlgorithm
from rtx.rl.common.policies import ACTIVATIONS, BasePolicy, ContinuousCritic, resolve
from rtx.rl.common.preprocessing import get_action_dim
from rtx.rl.common.torch_layers import FlattenExtractor, NatureCNN, create_mlp
from rtx.rl.common.utils import frozen, polyak_update


class Actor(BasePolicy):
    """a = tanh(MLP(features)), in [-1, 1]; the policy rescales it to the action space."""

    def __init__(self, observation_space, action_space, net_arch, features_extractor, features_dim,
                 activation_fn=nn.ReLU, normalize_images: bool = True):
        super().__init__(observation_space, action_space, normalize_images=normalize_images, squash_output=True)
        self.features_extractor = features_extractor
        self.mu = nn.Sequential(*create_mlp(features_dim, get_action_dim(action_space), net_arch, activation_fn,
                                            squash_output=True))

    def forward(self, obs):
        return self.mu(self.extract_features(obs, self.features_extractor))

    def _predict(self, observation, deterministic: bool = False):
        return self(observation)  # the actor is deterministic; exploration noise is added outside


class TD3Policy(BasePolicy):
    def __init__(self, observation_space, action_space, lr_schedule, net_arch=None, activation_fn=nn.ReLU,
                 features_extractor_class=FlattenExtractor, features_extractor_kwargs=None,
                 normalize_images: bool = True, optimizer_class="Adam", optimizer_kwargs=None, n_critics: int = 2,
                 share_features_extractor: bool = False):
        super().__init__(observation_space, action_space, features_extractor_class, features_extractor_kwargs,
                         normalize_images, optimizer_class, optimizer_kwargs, squash_output=True)
        if net_arch is None:
            net_arch = [256, 256] if self.features_extractor_class is NatureCNN else [400, 300]
        if isinstance(net_arch, dict):
            self._actor_arch, self._critic_arch = net_arch["pi"], net_arch["qf"]
        else:
            self._actor_arch = self._critic_arch = list(net_arch)
        self.net_arch, self.activation_fn = net_arch, resolve(ACTIVATIONS, activation_fn, "activation_fn")
        self.n_critics = n_critics
        if share_features_extractor:
            raise NotImplementedError("share_features_extractor=True is not implemented for TD3 in rtx.rl")
        self.share_features_extractor = False
        self.actor, self.actor_target = self.make_actor(), self.make_actor()
        self.actor_target.load_state_dict(self.actor.state_dict())
        self.actor.optimizer = self.optimizer_class(self.actor.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)
        self.critic, self.critic_target = self.make_critic(), self.make_critic()
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.critic.optimizer = self.optimizer_class(self.critic.parameters(), lr=lr_schedule(1),
                                                     **self.optimizer_kwargs)
        self.actor_target.train(False)
        self.critic_target.train(False)

    def make_actor(self) -> Actor:
        fe = self.make_features_extractor()
        return Actor(self.observation_space, self.action_space, self._actor_arch, fe, fe.features_dim,
                     self.activation_fn, self.normalize_images)

    def make_critic(self) -> ContinuousCritic:
        fe = self.make_features_extractor()
        return ContinuousCritic(self.observation_space, self.action_space, self._critic_arch, fe, fe.features_dim,
                                self.activation_fn, self.normalize_images, self.n_critics,
                                share_features_extractor=False)

    def forward(self, observation, deterministic: bool = False):
        return self._predict(observation, deterministic)

    def _predict(self, observation, deterministic: bool = False):
        return self.actor(observation)

    def set_training_mode(self, mode: bool) -> None:
        self.actor.train(mode)
        self.critic.train(mode)
        self.training = mode


class CnnPolicy(TD3Policy):
    def __init__(self, observation_space, action_space, lr_schedule, **kwargs):
        kwargs.setdefault("features_extractor_class", NatureCNN)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)


class TD3(OffPolicyAlgorithm):
    policy_aliases = {"MlpPolicy": TD3Policy, "CnnPolicy": CnnPolicy}
    _hyperparams = ("learning_rate", "buffer_size", "learning_starts", "batch_size", "tau", "gamma", "train_freq",
                    "gradient_steps", "policy_delay", "target_policy_noise", "target_noise_clip",
                    "stats_window_size", "verbose", "seed")
    _optimizers = ("actor.optimizer", "critic.optimizer")

    def __init__(self, policy, env, learning_rate=1e-3, buffer_size: int = 1_000_000, learning_starts: int = 100,
                 batch_size: int = 256, tau: float = 0.005, gamma: float = 0.99, train_freq=1,
                 gradient_steps: int = 1, action_noise=None, replay_buffer_class=None, replay_buffer_kwargs=None,
                 optimize_memory_usage: bool = False, n_steps: int = 1, policy_delay: int = 2,
                 target_policy_noise: float = 0.2, target_noise_clip: float = 0.5, stats_window_size: int = 100,
                 tensorboard_log=None, policy_kwargs=None, verbose: int = 0, seed=None, device="auto",
                 _init_setup_model: bool = True):
        super().__init__(policy, env, learning_rate, buffer_size, learning_starts, batch_size, tau, gamma,
                         train_freq, gradient_steps, action_noise, replay_buffer_class=replay_buffer_class,
                         replay_buffer_kwargs=replay_buffer_kwargs, optimize_memory_usage=optimize_memory_usage,
                         n_steps=n_steps, policy_kwargs=policy_kwargs, stats_window_size=stats_window_size,
                         tensorboard_log=tensorboard_log, verbose=verbose, device=device, seed=seed,
                         sde_support=False, support_multi_env=True, supported_action_spaces=(gym.spaces.Box,))
        self.policy_delay, self.target_noise_clip = policy_delay, target_noise_clip
        self.target_policy_noise = target_policy_noise
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        super()._setup_model()
        self.actor, self.actor_target = self.policy.actor, self.policy.actor_target
        self.critic, self.critic_target = self.policy.critic, self.policy.critic_target
        self._critic_params = [p for group in self.critic.optimizer.param_groups for p in group["params"]]

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate([self.actor.optimizer, self.critic.optimizer])
        actor_losses, critic_losses = [], []
        for _ in range(gradient_steps):
            self._n_updates += 1
            data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)
            with rtx.no_grad():
                # Target policy smoothing: clipped Gaussian noise on the target action.
                noise = rtx.clamp(rtx.randn(*data.actions.shape, device=self.device) * self.target_policy_noise,
                                  -self.target_noise_clip, self.target_noise_clip)
                next_actions = rtx.clamp(self.actor_target(data.next_observations) + noise, -1, 1)
                next_q_values = rtx.cat(self.critic_target(data.next_observations, next_actions), dim=1)
                next_q_values = rtx.min(next_q_values, dim=1, keepdim=True)[0]
                target_q_values = data.rewards + (1 - data.dones) * self.gamma * next_q_values
            current_q_values = self.critic(data.observations, data.actions)
            critic_loss = sum(F.mse_loss(q, target_q_values) for q in current_q_values)
            critic_losses.append(critic_loss.item())
            self.critic.optimizer.zero_grad()
            critic_loss.backward()
            self.critic.optimizer.step()
            if self._n_updates % self.policy_delay == 0:
                with frozen(self._critic_params):  # no critic weight gradients from the actor loss
                    actor_loss = -self.critic.q1_forward(data.observations, self.actor(data.observations)).mean()
                actor_losses.append(actor_loss.item())
                self.actor.optimizer.zero_grad()
                actor_loss.backward()
                self.actor.optimizer.step()
                polyak_update(self.critic.parameters(), self.critic_target.parameters(), self.tau)
                polyak_update(self.actor.parameters(), self.actor_target.parameters(), self.tau)
        log = self.logger.record
        log("train/n_updates", self._n_updates)
        if actor_losses:
            log("train/actor_loss", float(np.mean(actor_losses)))
        log("train/critic_loss", float(np.mean(critic_losses)))

    def _hyperparams_json(self) -> dict:
        out = super()._hyperparams_json()
        out["train_freq"] = list(self.train_freq.to_json())
        return out
