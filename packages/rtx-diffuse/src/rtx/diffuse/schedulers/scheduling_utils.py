"""What every scheduler shares: beta schedules, the config file, outputs, thresholding and the
per-batch-element gathering of `add_noise`. Tables are kept in float64 NumPy arrays: diffusers keeps
them in float32, so its numbers differ from these (exact) ones by up to ~3e-5 (see the tests)."""
from __future__ import annotations

import math
import os

import numpy as np

import rtx
from rtx.diffuse.configuration import ConfigMixin
from rtx.diffuse.utils import BaseOutput

SCHEDULER_CONFIG_NAME = "scheduler_config.json"


class SchedulerOutput(BaseOutput):
    """`prev_sample` (x_{t-1}) and, for schedulers that form it, `pred_original_sample` (x_0)."""

    def __init__(self, prev_sample, pred_original_sample=None):
        super().__init__(prev_sample=prev_sample, pred_original_sample=pred_original_sample)


def betas_for_alpha_bar(num_diffusion_timesteps, max_beta=0.999, alpha_transform_type="cosine"):
    """Betas that discretise a cumulative alpha_bar(t) on [0, 1] (Nichol & Dhariwal's cosine schedule)."""
    if alpha_transform_type == "cosine":
        def alpha_bar_fn(t):
            return math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2
    elif alpha_transform_type == "exp":
        def alpha_bar_fn(t):
            return math.exp(t * -12.0)
    else:
        raise ValueError(f"Unsupported alpha_transform_type: {alpha_transform_type}")
    n = num_diffusion_timesteps
    return np.array([min(1 - alpha_bar_fn((i + 1) / n) / alpha_bar_fn(i / n), max_beta) for i in range(n)])


def rescale_zero_terminal_snr(betas):
    """Lin et al. 2023, Algorithm 1: shift and scale sqrt(alpha_bar) so the last step has zero SNR."""
    alphas_bar_sqrt = np.sqrt(np.cumprod(1.0 - betas))
    s0, sT = alphas_bar_sqrt[0], alphas_bar_sqrt[-1]
    alphas_bar_sqrt = (alphas_bar_sqrt - sT) * (s0 / (s0 - sT))
    alphas_bar = alphas_bar_sqrt ** 2
    alphas = np.concatenate([alphas_bar[:1], alphas_bar[1:] / alphas_bar[:-1]])
    return 1 - alphas


def make_betas(cls, num_train_timesteps, beta_start, beta_end, beta_schedule, trained_betas):
    if trained_betas is not None:
        return np.asarray(trained_betas, dtype=np.float64)
    if beta_schedule == "linear":
        return np.linspace(beta_start, beta_end, num_train_timesteps, dtype=np.float64)
    if beta_schedule == "scaled_linear":  # the latent-diffusion schedule: linear in sqrt(beta)
        return np.linspace(beta_start ** 0.5, beta_end ** 0.5, num_train_timesteps, dtype=np.float64) ** 2
    if beta_schedule == "squaredcos_cap_v2":
        return betas_for_alpha_bar(num_train_timesteps)
    raise NotImplementedError(f"{beta_schedule} is not implemented for {cls}: use 'linear', 'scaled_linear' or "
                              "'squaredcos_cap_v2'")


def spaced_timesteps(spacing, num_train_timesteps, num_inference_steps, steps_offset):
    """The inference timesteps (descending, float64) of diffusers' `timestep_spacing` options (Lin et al.
    2023, Table 2); integer schedulers round them."""
    n, T = num_inference_steps, num_train_timesteps
    if spacing == "linspace":
        return np.linspace(0, T - 1, n)[::-1].copy()
    if spacing == "leading":
        return (np.arange(0, n) * (T // n)).round()[::-1].astype(np.float64) + steps_offset
    if spacing == "trailing":
        return np.round(np.arange(T, 0, -T / n)) - 1
    raise ValueError(f"{spacing} is not supported. Please make sure to choose one of 'linspace', 'leading' or "
                     "'trailing'.")


def check_num_inference_steps(num_inference_steps, num_train_timesteps):
    if not isinstance(num_inference_steps, (int, np.integer)) or num_inference_steps < 1:
        raise ValueError(f"num_inference_steps must be a positive int, got {num_inference_steps!r}")
    if num_inference_steps > num_train_timesteps:
        raise ValueError(f"`num_inference_steps`: {num_inference_steps} cannot be larger than "
                         f"`self.config.train_timesteps`: {num_train_timesteps} as the unet model trained with this "
                         f"scheduler can only handle maximal {num_train_timesteps} timesteps.")


def threshold_sample(sample, ratio, max_value):
    """Imagen's dynamic thresholding: per sample, s = quantile(|x0|, ratio) clamped to [1, max_value];
    x0 is clamped to [-s, s] and divided by s."""
    b = sample.shape[0]
    flat = sample.reshape(b, -1)
    # the quantile is a per-sample scalar: NumPy's (linear interpolation, as torch.quantile) on the host
    s = np.clip(np.quantile(np.abs(flat.detach().cpu().numpy().astype(np.float64)), ratio, axis=1), 1, max_value)
    s = rtx.as_tensor(s[:, None], dtype=sample.dtype, device=sample.device)
    return (rtx.clamp(flat, -s, s) / s).reshape(sample.shape)


def to_float(t):
    """A timestep given as a Python number, NumPy scalar or 0-d/1-element tensor, as a float."""
    if isinstance(t, rtx.Tensor):
        if t.numel() != 1:
            raise ValueError(f"step takes one timestep, got a tensor of shape {tuple(t.shape)}")
        return float(t.item())
    return float(t)


def per_sample(values, like):
    """values (one per batch element, float64) as a tensor shaped to broadcast against `like`."""
    v = rtx.as_tensor(np.asarray(values, dtype=np.float64), dtype=like.dtype, device=like.device)
    return v.reshape(-1, *([1] * (like.dim() - 1)))


def timesteps_array(timesteps):
    if isinstance(timesteps, rtx.Tensor):
        return timesteps.detach().cpu().numpy().reshape(-1)
    return np.asarray(timesteps).reshape(-1)


class SchedulerMixin(ConfigMixin):
    """Loading and saving through `scheduler_config.json`, diffusers' file."""

    config_name = SCHEDULER_CONFIG_NAME
    order = 1

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, subfolder=None, **kwargs):
        path = os.fspath(pretrained_model_name_or_path)
        if subfolder:
            path = os.path.join(path, subfolder)
        return cls.from_config(cls.load_config(path), **kwargs)

    def save_pretrained(self, save_directory, **kwargs):
        self.save_config(save_directory)

    def __len__(self):
        return self.config.num_train_timesteps

    def _as_timesteps(self, timesteps, dtype):
        self.timesteps = rtx.as_tensor(np.ascontiguousarray(timesteps), dtype=dtype)
