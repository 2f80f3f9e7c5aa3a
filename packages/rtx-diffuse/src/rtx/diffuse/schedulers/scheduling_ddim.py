"""DDIMScheduler: the non-Markovian sampler of Song et al. 2021 (eq. 12); eta = 0 is deterministic,
eta = 1 is DDPM's variance."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.diffuse.configuration import register_to_config
from rtx.diffuse.schedulers.scheduling_ddpm import AlphasCumprodMixin
from rtx.diffuse.schedulers.scheduling_utils import (
    SchedulerMixin,
    SchedulerOutput,
    check_num_inference_steps,
    make_betas,
    rescale_zero_terminal_snr,
    spaced_timesteps,
    threshold_sample,
    to_float,
)
from rtx.diffuse.utils import randn_tensor


class DDIMScheduler(AlphasCumprodMixin, SchedulerMixin):
    @register_to_config
    def __init__(self, num_train_timesteps=1000, beta_start=0.0001, beta_end=0.02, beta_schedule="linear",
                 trained_betas=None, clip_sample=True, set_alpha_to_one=True, steps_offset=0,
                 prediction_type="epsilon", thresholding=False, dynamic_thresholding_ratio=0.995,
                 clip_sample_range=1.0, sample_max_value=1.0, timestep_spacing="leading",
                 rescale_betas_zero_snr=False):
        if prediction_type not in ("epsilon", "sample", "v_prediction"):
            raise ValueError(f"prediction_type must be one of 'epsilon', 'sample', 'v_prediction', got "
                             f"{prediction_type!r}")
        self.betas = make_betas(type(self).__name__, num_train_timesteps, beta_start, beta_end, beta_schedule,
                                trained_betas)
        if rescale_betas_zero_snr:
            self.betas = rescale_zero_terminal_snr(self.betas)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = np.cumprod(self.alphas)
        # the alpha_bar "before" step 0: 1 (a clean image) or alpha_bar_0
        self.final_alpha_cumprod = 1.0 if set_alpha_to_one else float(self.alphas_cumprod[0])
        self.init_noise_sigma = 1.0
        self.num_inference_steps = None
        self._as_timesteps(np.arange(0, num_train_timesteps)[::-1], rtx.int64)

    def scale_model_input(self, sample, timestep=None):
        return sample

    def set_timesteps(self, num_inference_steps, device=None):
        T = self.config.num_train_timesteps
        check_num_inference_steps(num_inference_steps, T)
        self.num_inference_steps = num_inference_steps
        ts = spaced_timesteps(self.config.timestep_spacing, T, num_inference_steps, 0).round().astype(np.int64)
        if self.config.timestep_spacing == "leading":
            ts += self.config.steps_offset
        self._as_timesteps(ts, rtx.int64)

    def _alpha_prod(self, t):
        return float(self.alphas_cumprod[t]) if t >= 0 else self.final_alpha_cumprod

    def _get_variance(self, timestep, prev_timestep):
        a_t, a_prev = self._alpha_prod(timestep), self._alpha_prod(prev_timestep)
        return (1 - a_prev) / (1 - a_t) * (1 - a_t / a_prev)

    def step(self, model_output, timestep, sample, eta=0.0, use_clipped_model_output=False, generator=None,
             variance_noise=None, return_dict=True):
        if self.num_inference_steps is None:
            raise ValueError("Number of inference steps is 'None', you need to run 'set_timesteps' after creating "
                             "the scheduler")
        t = int(to_float(timestep))
        # the previous timestep is a fixed stride back, as in diffusers (not the next entry of self.timesteps)
        prev_t = t - self.config.num_train_timesteps // self.num_inference_steps
        alpha_prod_t, alpha_prod_t_prev = self._alpha_prod(t), self._alpha_prod(prev_t)
        beta_prod_t = 1 - alpha_prod_t
        pt = self.config.prediction_type
        if pt == "epsilon":
            pred_original_sample = (sample - beta_prod_t ** 0.5 * model_output) / alpha_prod_t ** 0.5
            pred_epsilon = model_output
        elif pt == "sample":
            pred_original_sample = model_output
            pred_epsilon = (sample - alpha_prod_t ** 0.5 * pred_original_sample) / beta_prod_t ** 0.5
        else:
            pred_original_sample = alpha_prod_t ** 0.5 * sample - beta_prod_t ** 0.5 * model_output
            pred_epsilon = alpha_prod_t ** 0.5 * model_output + beta_prod_t ** 0.5 * sample

        if self.config.thresholding:
            pred_original_sample = threshold_sample(pred_original_sample, self.config.dynamic_thresholding_ratio,
                                                    self.config.sample_max_value)
        elif self.config.clip_sample:
            r = self.config.clip_sample_range
            pred_original_sample = pred_original_sample.clamp(-r, r)

        std_dev_t = eta * self._get_variance(t, prev_t) ** 0.5  # sigma_t of eq. 16
        if use_clipped_model_output:
            pred_epsilon = (sample - alpha_prod_t ** 0.5 * pred_original_sample) / beta_prod_t ** 0.5
        pred_sample_direction = (1 - alpha_prod_t_prev - std_dev_t ** 2) ** 0.5 * pred_epsilon
        prev_sample = alpha_prod_t_prev ** 0.5 * pred_original_sample + pred_sample_direction

        if eta > 0:
            if variance_noise is not None and generator is not None:
                raise ValueError("Cannot pass both generator and variance_noise. Please make sure that either "
                                 "`generator` or `variance_noise` stays `None`.")
            if variance_noise is None:
                variance_noise = randn_tensor(model_output.shape, generator=generator, device=model_output.device,
                                              dtype=model_output.dtype)
            prev_sample = prev_sample + std_dev_t * variance_noise
        if not return_dict:
            return prev_sample, pred_original_sample
        return SchedulerOutput(prev_sample=prev_sample, pred_original_sample=pred_original_sample)
