"""Feature extractors and MLP builders (stable_baselines3.common.torch_layers)."""
from __future__ import annotations

import gymnasium as gym

import rtx
import rtx.nn as nn
from rtx.rl.common.preprocessing import get_flattened_obs_dim, is_image_space


class BaseFeaturesExtractor(nn.Module):
    def __init__(self, observation_space: gym.Space, features_dim: int = 0):
        super().__init__()
        self._observation_space = observation_space
        self._features_dim = features_dim

    @property
    def features_dim(self) -> int:
        return self._features_dim


class FlattenExtractor(BaseFeaturesExtractor):
    def __init__(self, observation_space: gym.Space):
        super().__init__(observation_space, get_flattened_obs_dim(observation_space))
        self.flatten = nn.Flatten()

    def forward(self, observations):
        return self.flatten(observations)


class NatureCNN(BaseFeaturesExtractor):
    """Mnih et al. 2015's convolutional torso: three convolutions, then a linear layer to features_dim."""

    def __init__(self, observation_space: gym.spaces.Box, features_dim: int = 512, normalized_image: bool = False):
        if not (is_image_space(observation_space) or normalized_image):
            raise ValueError(f"NatureCNN expects channel-first uint8 image observations, got {observation_space}")
        super().__init__(observation_space, features_dim)
        n_input_channels = observation_space.shape[0]
        self.cnn = nn.Sequential(
            nn.Conv2d(n_input_channels, 32, kernel_size=8, stride=4, padding=0), nn.ReLU(),
            nn.Conv2d(32, 64, kernel_size=4, stride=2, padding=0), nn.ReLU(),
            nn.Conv2d(64, 64, kernel_size=3, stride=1, padding=0), nn.ReLU(),
            nn.Flatten())
        with rtx.no_grad():
            n_flatten = self.cnn(rtx.zeros(1, *observation_space.shape)).shape[1]
        self.linear = nn.Sequential(nn.Linear(n_flatten, features_dim), nn.ReLU())

    def forward(self, observations):
        return self.linear(self.cnn(observations))


def create_mlp(input_dim: int, output_dim: int, net_arch: list, activation_fn=nn.ReLU,
               squash_output: bool = False) -> list:
    """Linear/activation layers input_dim -> net_arch... -> output_dim (no output layer when output_dim < 0)."""
    modules, last = [], input_dim
    for width in net_arch:
        modules += [nn.Linear(last, width), activation_fn()]
        last = width
    if output_dim > 0:
        modules.append(nn.Linear(last, output_dim))
    if squash_output:
        modules.append(nn.Tanh())
    return modules


class MlpExtractor(nn.Module):
    """Separate policy and value MLPs on the features: net_arch is a list (same for both) or dict(pi=, vf=)."""

    def __init__(self, feature_dim: int, net_arch, activation_fn, device="cpu"):
        super().__init__()
        if isinstance(net_arch, dict):
            pi_arch, vf_arch = net_arch.get("pi", []), net_arch.get("vf", [])
        elif isinstance(net_arch, (list, tuple)):
            pi_arch = vf_arch = list(net_arch)
        else:
            raise TypeError(f"net_arch must be a list of widths or dict(pi=[...], vf=[...]), got {net_arch!r}")
        self.policy_net = nn.Sequential(*create_mlp(feature_dim, -1, pi_arch, activation_fn))
        self.value_net = nn.Sequential(*create_mlp(feature_dim, -1, vf_arch, activation_fn))
        self.latent_dim_pi = pi_arch[-1] if pi_arch else feature_dim
        self.latent_dim_vf = vf_arch[-1] if vf_arch else feature_dim

    def forward(self, features):
        return self.policy_net(features), self.value_net(features)

    def forward_actor(self, features):
        return self.policy_net(features)

    def forward_critic(self, features):
        return self.value_net(features)
