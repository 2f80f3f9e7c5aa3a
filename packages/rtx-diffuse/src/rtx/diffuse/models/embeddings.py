"""Timestep embeddings: the sinusoidal projection of DDPM/Transformers and its MLP."""
from __future__ import annotations

import math

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.diffuse.models.activations import get_activation


def get_timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos=False, downscale_freq_shift=1, scale=1,
                           max_period=10000):
    """(N,) timesteps -> (N, embedding_dim) sinusoids with frequencies max_period^(-i / (half - shift))."""
    if timesteps.dim() != 1:
        raise ValueError(f"Timesteps should be a 1d-array, got shape {tuple(timesteps.shape)}")
    half = embedding_dim // 2
    exponent = -math.log(max_period) * rtx.arange(0, half, dtype=rtx.float32, device=timesteps.device)
    exponent = exponent / (half - downscale_freq_shift)
    emb = timesteps[:, None].float() * rtx.exp(exponent)[None, :] * scale
    emb = rtx.cat([rtx.sin(emb), rtx.cos(emb)], dim=-1)
    if flip_sin_to_cos:
        emb = rtx.cat([emb[:, half:], emb[:, :half]], dim=-1)
    if embedding_dim % 2 == 1:
        emb = F.pad(emb, (0, 1, 0, 0))
    return emb


class Timesteps(nn.Module):
    def __init__(self, num_channels, flip_sin_to_cos, downscale_freq_shift, scale=1):
        super().__init__()
        self.num_channels = num_channels
        self.flip_sin_to_cos = flip_sin_to_cos
        self.downscale_freq_shift = downscale_freq_shift
        self.scale = scale

    def forward(self, timesteps):
        return get_timestep_embedding(timesteps, self.num_channels, flip_sin_to_cos=self.flip_sin_to_cos,
                                      downscale_freq_shift=self.downscale_freq_shift, scale=self.scale)


class TimestepEmbedding(nn.Module):
    def __init__(self, in_channels, time_embed_dim, act_fn="silu", out_dim=None):
        super().__init__()
        self.linear_1 = nn.Linear(in_channels, time_embed_dim)
        self.act = get_activation(act_fn)
        self.linear_2 = nn.Linear(time_embed_dim, out_dim or time_embed_dim)

    def forward(self, sample):
        return self.linear_2(self.act(self.linear_1(sample)))
