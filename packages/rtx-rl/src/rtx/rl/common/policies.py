"""Policies (stable_baselines3.common.policies): the base class and the actor-critic of PPO and A2C."""
from __future__ import annotations

import math
from functools import partial

import gymnasium as gym
import numpy as np

import rtx
import rtx.nn as nn
import rtx.optim as optim
from rtx.rl.common.distributions import CategoricalDistribution, DiagGaussianDistribution, make_proba_distribution
from rtx.rl.common.preprocessing import get_action_dim, is_image_space, preprocess_obs
from rtx.rl.common.torch_layers import FlattenExtractor, MlpExtractor, NatureCNN, create_mlp

ACTIVATIONS = {"Tanh": nn.Tanh, "ReLU": nn.ReLU, "ELU": nn.ELU, "LeakyReLU": nn.LeakyReLU, "GELU": nn.GELU,
               "SiLU": nn.SiLU, "Sigmoid": nn.Sigmoid}
EXTRACTORS = {"FlattenExtractor": FlattenExtractor, "NatureCNN": NatureCNN}
OPTIMIZERS = {"Adam": optim.Adam, "RMSprop": optim.RMSprop, "AdamW": optim.AdamW, "SGD": optim.SGD}


def resolve(table: dict, value, what: str):
    """Class from its name (policy_kwargs read back from JSON) or the class itself."""
    if isinstance(value, str):
        if value not in table:
            raise ValueError(f"unknown {what} {value!r}; expected one of {sorted(table)}")
        return table[value]
    return value


def init_weights(module: nn.Module, gain: float = 1.0) -> None:
    """Orthogonal weights with `gain`, zero biases, on Linear and Conv2d layers (SB3's init)."""
    if isinstance(module, (nn.Linear, nn.Conv2d)):
        nn.init.orthogonal_(module.weight, gain=gain)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


class BasePolicy(nn.Module):
    def __init__(self, observation_space, action_space, features_extractor_class=FlattenExtractor,
                 features_extractor_kwargs=None, normalize_images: bool = True, optimizer_class=optim.Adam,
                 optimizer_kwargs=None, squash_output: bool = False):
        super().__init__()
        self.observation_space, self.action_space = observation_space, action_space
        self.features_extractor_class = resolve(EXTRACTORS, features_extractor_class, "features_extractor_class")
        self.features_extractor_kwargs = features_extractor_kwargs or {}
        self.normalize_images = normalize_images
        self.optimizer_class = resolve(OPTIMIZERS, optimizer_class, "optimizer_class")
        self.optimizer_kwargs = optimizer_kwargs or {}
        self.squash_output = squash_output

    @property
    def device(self):
        for p in self.parameters():
            return p.device
        return rtx.device("cpu")

    def make_features_extractor(self):
        return self.features_extractor_class(self.observation_space, **self.features_extractor_kwargs)

    def extract_features(self, obs, features_extractor):
        return features_extractor(preprocess_obs(obs, self.observation_space, self.normalize_images))

    def set_training_mode(self, mode: bool) -> None:
        self.train(mode)

    def obs_to_tensor(self, observation):
        """Batch a single observation if needed; returns (tensor, was_vectorized)."""
        observation = np.asarray(observation)
        shape = self.observation_space.shape
        vectorized = observation.shape != shape
        if vectorized and observation.shape[1:] != shape:
            raise ValueError(f"observation of shape {observation.shape} does not fit the observation space "
                             f"{self.observation_space} (expected {shape} or (n_envs, *{shape}))")
        if not vectorized:
            observation = observation.reshape((1, *shape))
        if observation.dtype == np.float64:
            observation = observation.astype(np.float32)
        return rtx.as_tensor(observation, device=self.device), vectorized

    def predict(self, observation, state=None, episode_start=None, deterministic: bool = False):
        """Actions for observations as NumPy, clipped (or unscaled) to the action space; (actions, state)."""
        self.set_training_mode(False)
        obs_tensor, vectorized = self.obs_to_tensor(observation)
        with rtx.no_grad():
            actions = self._predict(obs_tensor, deterministic=deterministic)
        actions = actions.numpy().reshape((-1, *self.action_space.shape))
        if isinstance(self.action_space, gym.spaces.Box):
            if self.squash_output:
                actions = self.unscale_action(actions)
            else:
                actions = np.clip(actions, self.action_space.low, self.action_space.high)
        if not vectorized:
            actions = actions.squeeze(axis=0)
        return actions, state

    def scale_action(self, action):
        low, high = self.action_space.low, self.action_space.high
        return 2.0 * ((action - low) / (high - low)) - 1.0

    def unscale_action(self, scaled_action):
        low, high = self.action_space.low, self.action_space.high
        return low + 0.5 * (scaled_action + 1.0) * (high - low)


class ActorCriticPolicy(BasePolicy):
    """Shared features, separate policy/value MLPs, an action distribution head and a value head."""

    def __init__(self, observation_space, action_space, lr_schedule, net_arch=None, activation_fn=nn.Tanh,
                 ortho_init: bool = True, use_sde: bool = False, log_std_init: float = 0.0,
                 full_std: bool = True, use_expln: bool = False, squash_output: bool = False,
                 features_extractor_class=FlattenExtractor, features_extractor_kwargs=None,
                 share_features_extractor: bool = True, normalize_images: bool = True,
                 optimizer_class=optim.Adam, optimizer_kwargs=None):
        if use_sde:
            raise NotImplementedError("gSDE (use_sde=True) is not implemented in rtx.rl")
        optimizer_class = resolve(OPTIMIZERS, optimizer_class, "optimizer_class")
        if optimizer_kwargs is None:
            optimizer_kwargs = {"eps": 1e-5} if optimizer_class is optim.Adam else {}
        super().__init__(observation_space, action_space, features_extractor_class, features_extractor_kwargs,
                         normalize_images, optimizer_class, optimizer_kwargs, squash_output)
        if net_arch is None:
            net_arch = [] if self.features_extractor_class is NatureCNN else dict(pi=[64, 64], vf=[64, 64])
        self.net_arch = net_arch
        self.activation_fn = resolve(ACTIVATIONS, activation_fn, "activation_fn")
        self.ortho_init, self.log_std_init = ortho_init, log_std_init
        self.share_features_extractor = share_features_extractor
        self.features_extractor = self.make_features_extractor()
        self.features_dim = self.features_extractor.features_dim
        if share_features_extractor:
            self.pi_features_extractor = self.vf_features_extractor = self.features_extractor
        else:
            self.pi_features_extractor = self.features_extractor
            self.vf_features_extractor = self.make_features_extractor()
        self.action_dist = make_proba_distribution(action_space)
        self._build(lr_schedule)

    def _build(self, lr_schedule) -> None:
        self.mlp_extractor = MlpExtractor(self.features_dim, self.net_arch, self.activation_fn)
        latent_dim_pi = self.mlp_extractor.latent_dim_pi
        if isinstance(self.action_dist, DiagGaussianDistribution):
            self.action_net, self.log_std = self.action_dist.proba_distribution_net(latent_dim_pi, self.log_std_init)
        else:
            self.action_net = self.action_dist.proba_distribution_net(latent_dim_pi)
        self.value_net = nn.Linear(self.mlp_extractor.latent_dim_vf, 1)
        if self.ortho_init:
            gains = {self.features_extractor: math.sqrt(2), self.mlp_extractor: math.sqrt(2),
                     self.action_net: 0.01, self.value_net: 1.0}
            if not self.share_features_extractor:
                del gains[self.features_extractor]
                gains[self.pi_features_extractor] = gains[self.vf_features_extractor] = math.sqrt(2)
            for module, gain in gains.items():
                module.apply(partial(init_weights, gain=gain))
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _features(self, obs):
        if self.share_features_extractor:
            f = self.extract_features(obs, self.features_extractor)
            return f, f
        return (self.extract_features(obs, self.pi_features_extractor),
                self.extract_features(obs, self.vf_features_extractor))

    def _distribution(self, latent_pi):
        mean_actions = self.action_net(latent_pi)
        if isinstance(self.action_dist, DiagGaussianDistribution):
            return self.action_dist.proba_distribution(mean_actions, self.log_std)
        if isinstance(self.action_dist, CategoricalDistribution):
            return self.action_dist.proba_distribution(mean_actions)
        raise TypeError(f"unsupported action distribution {type(self.action_dist).__name__}")

    def forward(self, obs, deterministic: bool = False):
        """(actions, values, log_prob) for a batch of observations."""
        pi_features, vf_features = self._features(obs)
        latent_pi = self.mlp_extractor.forward_actor(pi_features)
        latent_vf = self.mlp_extractor.forward_critic(vf_features)
        values = self.value_net(latent_vf)
        distribution = self._distribution(latent_pi)
        actions = distribution.get_actions(deterministic=deterministic)
        log_prob = distribution.log_prob(actions)
        return actions.reshape((-1, *self.action_space.shape)), values, log_prob

    def evaluate_actions(self, obs, actions):
        """(values, log_prob, entropy) of given actions: what PPO and A2C differentiate."""
        pi_features, vf_features = self._features(obs)
        latent_pi = self.mlp_extractor.forward_actor(pi_features)
        latent_vf = self.mlp_extractor.forward_critic(vf_features)
        distribution = self._distribution(latent_pi)
        return self.value_net(latent_vf), distribution.log_prob(actions), distribution.entropy()

    def get_distribution(self, obs):
        pi_features = self.extract_features(obs, self.pi_features_extractor)
        return self._distribution(self.mlp_extractor.forward_actor(pi_features))

    def predict_values(self, obs):
        vf_features = self.extract_features(obs, self.vf_features_extractor)
        return self.value_net(self.mlp_extractor.forward_critic(vf_features))

    def _predict(self, observation, deterministic: bool = False):
        return self.get_distribution(observation).get_actions(deterministic=deterministic)


class ActorCriticCnnPolicy(ActorCriticPolicy):
    def __init__(self, observation_space, action_space, lr_schedule, **kwargs):
        kwargs.setdefault("features_extractor_class", NatureCNN)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)


class ContinuousCritic(nn.Module):
    """n_critics Q-networks Q(s, a) on [features, action] (SAC and TD3's twin critics)."""

    def __init__(self, observation_space, action_space, net_arch, features_extractor, features_dim,
                 activation_fn=nn.ReLU, normalize_images: bool = True, n_critics: int = 2,
                 share_features_extractor: bool = True):
        super().__init__()
        self.observation_space, self.normalize_images = observation_space, normalize_images
        self.features_extractor = features_extractor
        self.share_features_extractor = share_features_extractor
        self.n_critics = n_critics
        action_dim = get_action_dim(action_space)
        self.q_networks = nn.ModuleList([nn.Sequential(*create_mlp(features_dim + action_dim, 1, net_arch,
                                                                   activation_fn)) for _ in range(n_critics)])

    def _features(self, obs):
        with rtx.set_grad_enabled(not self.share_features_extractor):
            return self.features_extractor(preprocess_obs(obs, self.observation_space, self.normalize_images))

    def forward(self, obs, actions):
        qvalue_input = rtx.cat([self._features(obs), actions], dim=1)
        return tuple(q_net(qvalue_input) for q_net in self.q_networks)

    def q1_forward(self, obs, actions):
        with rtx.no_grad():
            features = self._features(obs)
        return self.q_networks[0](rtx.cat([features, actions], dim=1))


def check_image_policy(policy_name: str, observation_space) -> None:
    if policy_name == "CnnPolicy" and not is_image_space(observation_space):
        raise ValueError(f"CnnPolicy expects channel-first uint8 image observations, got {observation_space}")
