"""Action distributions of the policies, over rtx.distributions (stable_baselines3.common.distributions)."""
from __future__ import annotations

import gymnasium as gym

import rtx
import rtx.nn as nn
from rtx.distributions import Categorical, Normal
from rtx.rl.common.preprocessing import get_action_dim


class CategoricalDistribution:
    """Discrete actions: logits from a linear layer."""

    def __init__(self, action_dim: int):
        self.action_dim = action_dim
        self.distribution = None

    def proba_distribution_net(self, latent_dim: int) -> nn.Module:
        return nn.Linear(latent_dim, self.action_dim)

    def proba_distribution(self, action_logits):
        # validate_args=False: the logits and actions come from the policy itself, and the constraint
        # checks cost more than the log-probabilities (same values either way)
        self.distribution = Categorical(logits=action_logits, validate_args=False)
        return self

    def log_prob(self, actions):
        # Categorical.log_prob's gather without its broadcast_tensors/expand: for the policies' batches of
        # one index per row of logits (the same entries picked, the same gradient)
        logits = self.distribution.logits
        if logits.ndim != 2 or actions.ndim != 1 or actions.shape[0] != logits.shape[0]:
            return self.distribution.log_prob(actions)
        return logits.gather(-1, actions.long().reshape(-1, 1)).reshape(-1)

    def entropy(self):
        return self.distribution.entropy()

    def sample(self):
        return self.distribution.sample()

    def mode(self):
        return rtx.argmax(self.distribution.probs, dim=1)

    def get_actions(self, deterministic: bool = False):
        return self.mode() if deterministic else self.sample()


class DiagGaussianDistribution:
    """Continuous actions: a linear mean and a state-independent log standard deviation."""

    def __init__(self, action_dim: int):
        self.action_dim = action_dim
        self.distribution = None

    def proba_distribution_net(self, latent_dim: int, log_std_init: float = 0.0):
        mean_actions = nn.Linear(latent_dim, self.action_dim)
        log_std = nn.Parameter(rtx.ones(self.action_dim) * log_std_init)
        return mean_actions, log_std

    def proba_distribution(self, mean_actions, log_std):
        self.distribution = Normal(mean_actions, rtx.ones_like(mean_actions) * log_std.exp(), validate_args=False)
        return self

    def log_prob(self, actions):
        return self.distribution.log_prob(actions).sum(dim=-1)

    def entropy(self):
        return self.distribution.entropy().sum(dim=-1)

    def sample(self):
        return self.distribution.rsample()

    def mode(self):
        return self.distribution.mean

    def get_actions(self, deterministic: bool = False):
        return self.mode() if deterministic else self.sample()


class SquashedDiagGaussianDistribution(DiagGaussianDistribution):
    """tanh(Gaussian) for SAC, with the log-determinant correction of the squashing."""

    def __init__(self, action_dim: int, epsilon: float = 1e-6):
        super().__init__(action_dim)
        self.epsilon = epsilon
        self.gaussian_actions = None

    def proba_distribution(self, mean_actions, log_std):
        self.distribution = Normal(mean_actions, log_std.exp(), validate_args=False)
        return self

    def log_prob(self, actions, gaussian_actions=None):
        if gaussian_actions is None:  # invert tanh, staying inside (-1, 1) so atanh is finite
            eps = 1e-6 if actions.dtype == rtx.float32 else 1e-12
            a = actions.clamp(-1.0 + eps, 1.0 - eps)
            gaussian_actions = 0.5 * (a.log1p() - (-a).log1p())
        log_prob = super().log_prob(gaussian_actions)
        return log_prob - rtx.log(1 - actions ** 2 + self.epsilon).sum(dim=1)

    def entropy(self):
        return None  # no closed form; SAC estimates it with -log_prob

    def sample(self):
        self.gaussian_actions = super().sample()
        return rtx.tanh(self.gaussian_actions)

    def mode(self):
        self.gaussian_actions = super().mode()
        return rtx.tanh(self.gaussian_actions)

    def log_prob_from_params(self, mean_actions, log_std):
        action = self.proba_distribution(mean_actions, log_std).sample()
        return action, self.log_prob(action, self.gaussian_actions)


def make_proba_distribution(action_space: gym.Space):
    if isinstance(action_space, gym.spaces.Box):
        return DiagGaussianDistribution(get_action_dim(action_space))
    if isinstance(action_space, gym.spaces.Discrete):
        return CategoricalDistribution(int(action_space.n))
    raise NotImplementedError(f"action space {action_space} is not supported (Box and Discrete are)")
