"""Observation preprocessing by space: images to [0, 1], Discrete to one-hot, Box to float32."""
from __future__ import annotations

import gymnasium as gym
import numpy as np

import rtx
import rtx.nn.functional as F


def is_image_space(space: gym.Space) -> bool:
    """uint8 Box of rank 3 with values in [0, 255], channels first (SB3 checks the same)."""
    return (isinstance(space, gym.spaces.Box) and space.dtype == np.uint8 and len(space.shape) == 3
            and bool(np.all(space.low == 0)) and bool(np.all(space.high == 255)))


def get_flattened_obs_dim(space: gym.Space) -> int:
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.Box):
        return int(np.prod(space.shape))
    raise NotImplementedError(f"observation space {space} is not supported (Box and Discrete are)")


def get_action_dim(space: gym.Space) -> int:
    if isinstance(space, gym.spaces.Discrete):
        return 1
    if isinstance(space, gym.spaces.Box):
        return int(np.prod(space.shape))
    raise NotImplementedError(f"action space {space} is not supported (Box and Discrete are)")


def preprocess_obs(obs: rtx.Tensor, space: gym.Space, normalize_images: bool = True) -> rtx.Tensor:
    if isinstance(space, gym.spaces.Box):
        if normalize_images and is_image_space(space):
            return obs.float() / 255.0
        return obs.float()
    if isinstance(space, gym.spaces.Discrete):
        return F.one_hot(obs.long().reshape(-1), int(space.n)).float()
    raise NotImplementedError(f"observation space {space} is not supported (Box and Discrete are)")
