"""Rotary position embeddings (RoPE, Su et al. 2021) in the Hugging Face / Llama convention:
the head dim is split in halves (rotate_half), not interleaved pairs, so checkpoints in HF's
layout need no permutation.

    rope = RotaryEmbedding(head_dim, base=10000.0)
    cos, sin = rope(position_ids)               # (batch, seq, head_dim) each
    q, k = apply_rotary_pos_emb(q, k, cos, sin)  # q, k: (batch, heads, seq, head_dim)

Scalings (HF's rope_scaling): "linear" (positions / factor), "dynamic" (NTK-aware: the base
grows once positions pass max_position_embeddings), "llama3" (Llama 3.1's per-frequency
blend) and "yarn" (Peng et al. 2023: a ramp between interpolated and original frequencies, and
cos/sin scaled by an attention factor), each as transformers computes it. cos and sin are
computed in float64 with NumPy from the integer positions (they carry no gradient) and cast to
the activations' dtype when applied.
"""
from __future__ import annotations

import math

import numpy as np

import rtx
from rtx.extend import Tensor, raw, wrap
from rtx.runtime import array_module

__all__ = ["RotaryEmbedding", "rotate_half", "apply_rotary_pos_emb", "rope_inv_freq", "yarn_inv_freq"]


def rope_inv_freq(dim: int, base: float = 10000.0, scaling: dict | None = None) -> np.ndarray:
    """The rotation frequencies theta_i = base^(-2i/dim), i < dim/2, with llama3 / linear scaling."""
    if dim % 2:
        raise ValueError(f"RoPE needs an even head dim, got {dim}")
    inv = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    kind = _kind(scaling)
    if kind == "linear":
        inv = inv / float(scaling["factor"])
    elif kind == "llama3":
        factor = float(scaling["factor"])
        low, high = float(scaling.get("low_freq_factor", 1.0)), float(scaling.get("high_freq_factor", 4.0))
        old = float(scaling.get("original_max_position_embeddings", 8192))
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > old / low, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old / high) & ~(wavelen > old / low)
        inv = np.where(medium, smoothed, scaled)
    return inv


def yarn_inv_freq(dim: int, base: float, scaling: dict, max_position_embeddings: int) -> tuple[np.ndarray, float]:
    """YaRN's (inv_freq, attention_factor), with transformers' keys and defaults: frequencies
    that turn fewer than beta_slow times over original_max_position_embeddings are divided by
    `factor`, those turning more than beta_fast times kept, a linear ramp between (over
    dimension indices, rounded outwards unless truncate=false); cos/sin are multiplied by
    attention_factor (default 0.1 ln(factor) + 1, or DeepSeek's mscale / mscale_all_dim ratio)."""
    orig = scaling.get("original_max_position_embeddings") or max_position_embeddings
    factor = scaling.get("factor")
    factor = float(factor) if factor is not None else max_position_embeddings / orig

    def mscale(scale, m=1.0):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    att = scaling.get("attention_factor")
    if att is None:
        m, m_all = scaling.get("mscale"), scaling.get("mscale_all_dim")
        att = mscale(factor, m) / mscale(factor, m_all) if m and m_all else mscale(factor)

    def correction_dim(rotations):  # the dimension index whose frequency turns `rotations` times over orig
        return dim * math.log(orig / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(scaling.get("beta_fast") or 32), correction_dim(scaling.get("beta_slow") or 1)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # transformers' guard against a zero-width ramp
    keep = 1 - np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    pos = base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    return (1 / (factor * pos)) * (1 - keep) + (1 / pos) * keep, float(att)


def _kind(scaling):
    if not scaling:
        return "default"
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind not in ("default", "linear", "dynamic", "llama3", "yarn"):
        raise NotImplementedError(f"rope_scaling type {kind!r} is not supported (default, linear, dynamic, llama3, "
                                  f"yarn)")
    return kind


class RotaryEmbedding:
    """cos/sin tables for positions. Not a Module: it has no parameters and nothing in the
    state_dict (HF's inv_freq buffer is not persistent either)."""

    def __init__(self, dim: int, base: float = 10000.0, scaling: dict | None = None,
                 max_position_embeddings: int = 2048):
        self.dim, self.base, self.scaling = dim, float(base), scaling
        self.kind = _kind(scaling)
        self.max_position_embeddings = max_position_embeddings
        self.attention_scaling = 1.0  # cos and sin are multiplied by it (YaRN's attention factor)
        if self.kind == "yarn":
            self.inv_freq, self.attention_scaling = yarn_inv_freq(dim, self.base, scaling, max_position_embeddings)
        else:
            self.inv_freq = rope_inv_freq(dim, base, scaling if self.kind != "dynamic" else None)

    def _inv_freq_for(self, seq_len):
        if self.kind != "dynamic" or seq_len <= self.max_position_embeddings:
            return self.inv_freq
        factor = float(self.scaling["factor"])
        base = self.base * ((factor * seq_len / self.max_position_embeddings) - (factor - 1)) ** (
            self.dim / (self.dim - 2))
        return rope_inv_freq(self.dim, base)

    def __call__(self, position_ids) -> tuple[Tensor, Tensor]:
        """position_ids: (batch, seq) integer Tensor or array -> (cos, sin), each (batch, seq, dim)."""
        pos = raw(position_ids) if type(position_ids) is Tensor else np.asarray(position_ids)
        xp = array_module(pos)
        inv = self._inv_freq_for(int(pos.max()) + 1 if pos.size else 0)
        freqs = pos.astype(np.float64)[..., None] * xp.asarray(inv)
        emb = xp.concatenate([freqs, freqs], axis=-1)
        cos, sin = xp.cos(emb), xp.sin(emb)
        if self.attention_scaling != 1.0:
            cos, sin = cos * self.attention_scaling, sin * self.attention_scaling
        return wrap(cos), wrap(sin)


def rotate_half(x):
    """(x1, x2) -> (-x2, x1) over the two halves of the last dim."""
    half = x.shape[-1] // 2
    return rtx.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """Rotate q and k (batch, heads, seq, dim) by the positions' angles; cos/sin (batch, seq, dim)
    get a heads axis at `unsqueeze_dim`."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    cq, sq = cos.to(q.dtype), sin.to(q.dtype)
    ck, sk = (cq, sq) if k.dtype == q.dtype else (cos.to(k.dtype), sin.to(k.dtype))
    return q * cq + rotate_half(q) * sq, k * ck + rotate_half(k) * sk
