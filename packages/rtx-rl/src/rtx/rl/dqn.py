"""DQN (Mnih et al. 2015) as Stable-Baselines3's DQN, plus a double-DQN option (van Hasselt et al. 2016)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.nn.utils import clip_grad_norm_
from rtx.rl.common.off_policy_algorithm import OffPolicyAlgorithm
from rtx.rl.common.policies import ACTIVATIONS, BasePolicy, resolve
from rtx.rl.common.torch_layers import FlattenExtractor, NatureCNN, create_mlp
from rtx.rl.common.utils import get_linear_fn, polyak_update


class QNetwork(BasePolicy):
    """Q(s, .) for every discrete action: features -> MLP -> n actions."""

    def __init__(self, observation_space, action_space, features_extractor, features_dim, net_arch=None,
                 activation_fn=nn.ReLU, normalize_images: bool = True):
        super().__init__(observation_space, action_space, normalize_images=normalize_images)
        self.net_arch = [64, 64] if net_arch is None else net_arch
        self.features_extractor = features_extractor
        self.q_net = nn.Sequential(*create_mlp(features_dim, int(action_space.n), self.net_arch, activation_fn))

    def forward(self, obs):
        return self.q_net(self.extract_features(obs, self.features_extractor))

    def _predict(self, observation, deterministic: bool = True):
        return self(observation).argmax(dim=1).reshape(-1)


class DQNPolicy(BasePolicy):
    def __init__(self, observation_space, action_space, lr_schedule, net_arch=None, activation_fn=nn.ReLU,
                 features_extractor_class=FlattenExtractor, features_extractor_kwargs=None,
                 normalize_images: bool = True, optimizer_class="Adam", optimizer_kwargs=None):
        super().__init__(observation_space, action_space, features_extractor_class, features_extractor_kwargs,
                         normalize_images, optimizer_class, optimizer_kwargs)
        if net_arch is None:
            net_arch = [] if self.features_extractor_class is NatureCNN else [64, 64]
        self.net_arch, self.activation_fn = net_arch, resolve(ACTIVATIONS, activation_fn, "activation_fn")
        self.q_net = self.make_q_net()
        self.q_net_target = self.make_q_net()
        self.q_net_target.load_state_dict(self.q_net.state_dict())
        self.q_net_target.set_training_mode(False)
        self.optimizer = self.optimizer_class(self.q_net.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def make_q_net(self) -> QNetwork:
        fe = self.make_features_extractor()
        return QNetwork(self.observation_space, self.action_space, fe, fe.features_dim, self.net_arch,
                        self.activation_fn, self.normalize_images)

    def forward(self, obs, deterministic: bool = True):
        return self._predict(obs, deterministic)

    def _predict(self, obs, deterministic: bool = True):
        return self.q_net._predict(obs, deterministic)

    def set_training_mode(self, mode: bool) -> None:
        self.q_net.set_training_mode(mode)
        self.training = mode


class CnnPolicy(DQNPolicy):
    def __init__(self, observation_space, action_space, lr_schedule, **kwargs):
        kwargs.setdefault("features_extractor_class", NatureCNN)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)


class DQN(OffPolicyAlgorithm):
    policy_aliases = {"MlpPolicy": DQNPolicy, "CnnPolicy": CnnPolicy}
    _hyperparams = ("learning_rate", "buffer_size", "learning_starts", "batch_size", "tau", "gamma", "train_freq",
                    "gradient_steps", "target_update_interval", "exploration_fraction", "exploration_initial_eps",
                    "exploration_final_eps", "max_grad_norm", "double_q", "stats_window_size", "verbose", "seed")

    def __init__(self, policy, env, learning_rate=1e-4, buffer_size: int = 1_000_000, learning_starts: int = 100,
                 batch_size: int = 32, tau: float = 1.0, gamma: float = 0.99, train_freq=4, gradient_steps: int = 1,
                 replay_buffer_class=None, replay_buffer_kwargs=None, optimize_memory_usage: bool = False,
                 n_steps: int = 1, target_update_interval: int = 10000, exploration_fraction: float = 0.1,
                 exploration_initial_eps: float = 1.0, exploration_final_eps: float = 0.05,
                 max_grad_norm: float = 10, double_q: bool = False, stats_window_size: int = 100,
                 tensorboard_log=None, policy_kwargs=None, verbose: int = 0, seed=None, device="auto",
                 _init_setup_model: bool = True):
        super().__init__(policy, env, learning_rate, buffer_size, learning_starts, batch_size, tau, gamma,
                         train_freq, gradient_steps, action_noise=None, replay_buffer_class=replay_buffer_class,
                         replay_buffer_kwargs=replay_buffer_kwargs, optimize_memory_usage=optimize_memory_usage,
                         n_steps=n_steps, policy_kwargs=policy_kwargs, stats_window_size=stats_window_size,
                         tensorboard_log=tensorboard_log, verbose=verbose, device=device, support_multi_env=True,
                         seed=seed, sde_support=False, supported_action_spaces=(gym.spaces.Discrete,))
        self.exploration_initial_eps, self.exploration_final_eps = exploration_initial_eps, exploration_final_eps
        self.exploration_fraction, self.target_update_interval = exploration_fraction, target_update_interval
        self.max_grad_norm, self.double_q = max_grad_norm, double_q
        self.exploration_rate = 0.0
        self._n_calls = 0
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        super()._setup_model()
        self.q_net, self.q_net_target = self.policy.q_net, self.policy.q_net_target
        self.exploration_schedule = get_linear_fn(self.exploration_initial_eps, self.exploration_final_eps,
                                                  self.exploration_fraction)
        if self.n_envs > 1 and self.n_envs > self.target_update_interval:
            import warnings
            warnings.warn(f"target_update_interval ({self.target_update_interval}) is below the number of envs "
                          f"({self.n_envs}): the target network is updated every step", stacklevel=2)

    def _on_step(self) -> None:
        """Copy (tau=1) or average the target network every target_update_interval env steps; decay epsilon."""
        self._n_calls += 1
        if self._n_calls % max(self.target_update_interval // self.n_envs, 1) == 0:
            polyak_update(self.q_net.parameters(), self.q_net_target.parameters(), self.tau)
        self.exploration_rate = self.exploration_schedule(self._current_progress_remaining)
        self.logger.record("rollout/exploration_rate", self.exploration_rate)

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        losses = []
        params = list(self.policy.parameters())  # walked once, not per minibatch
        for _ in range(gradient_steps):
            data = self.replay_buffer.sample(batch_size, env=self._vec_normalize_env)
            with rtx.no_grad():
                next_q_values = self.q_net_target(data.next_observations)
                if self.double_q:  # the online net picks the action, the target net values it
                    next_actions = self.q_net(data.next_observations).argmax(dim=1, keepdim=True)
                    next_q_values = next_q_values.gather(1, next_actions)
                else:
                    next_q_values = next_q_values.max(dim=1)[0].reshape(-1, 1)
                target_q_values = data.rewards + (1 - data.dones) * self.gamma * next_q_values
            current_q_values = self.q_net(data.observations).gather(1, data.actions.long())
            loss = F.smooth_l1_loss(current_q_values, target_q_values)
            losses.append(loss.item())
            self.policy.optimizer.zero_grad()
            loss.backward()
            clip_grad_norm_(params, self.max_grad_norm)
            self.policy.optimizer.step()
        self._n_updates += gradient_steps
        self.logger.record("train/n_updates", self._n_updates)
        self.logger.record("train/loss", float(np.mean(losses)))

    def predict(self, observation, state=None, episode_start=None, deterministic: bool = False):
        """epsilon-greedy unless deterministic: a random action with probability exploration_rate."""
        if not deterministic and np.random.rand() < self.exploration_rate:
            obs = np.asarray(observation)
            if obs.shape != self.observation_space.shape:  # a batch: one random action per env
                return np.array([self.action_space.sample() for _ in range(obs.shape[0])]), state
            return np.array(self.action_space.sample()), state
        return self.policy.predict(observation, state, episode_start, deterministic)
