"""Reinforcement learning with Stable-Baselines3's API on Gymnasium: PPO, A2C, DQN, SAC, TD3."""
__version__ = "0.1.0"

from rtx.rl.a2c import A2C
from rtx.rl.common.callbacks import (
                                     BaseCallback,
                                     CallbackList,
                                     CheckpointCallback,
                                     EvalCallback,
                                     StopTrainingOnRewardThreshold,
)
from rtx.rl.common.env_util import make_vec_env
from rtx.rl.common.evaluation import evaluate_policy
from rtx.rl.common.monitor import Monitor
from rtx.rl.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise
from rtx.rl.common.utils import linear_schedule, set_random_seed
from rtx.rl.common.vec_env import VecNormalize
from rtx.rl.dqn import DQN
from rtx.rl.ppo import PPO
from rtx.rl.sac import SAC
from rtx.rl.td3 import TD3

__all__ = ["A2C", "DQN", "PPO", "SAC", "TD3", "BaseCallback", "CallbackList", "CheckpointCallback", "EvalCallback",
           "StopTrainingOnRewardThreshold", "make_vec_env", "evaluate_policy", "Monitor", "NormalActionNoise",
           "OrnsteinUhlenbeckActionNoise", "VecNormalize", "linear_schedule", "set_random_seed"]
