"""make_vec_env lives in vec_env; this module keeps SB3's import path (stable_baselines3.common.env_util)."""
from rtx.rl.common.vec_env import make_vec_env

__all__ = ["make_vec_env"]
