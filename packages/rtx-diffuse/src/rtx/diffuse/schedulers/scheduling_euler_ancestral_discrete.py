"""EulerAncestralDiscreteScheduler: an Euler step down to sigma_down, then fresh noise of size sigma_up,
so each step samples from the reverse SDE's marginal (k-diffusion's sample_euler_ancestral)."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.diffuse.configuration import register_to_config
from rtx.diffuse.schedulers.scheduling_euler_discrete import SigmaSchedulerMixin, sigma_x0
from rtx.diffuse.schedulers.scheduling_utils import (
    SchedulerMixin,
    SchedulerOutput,
    check_num_inference_steps,
    make_betas,
    rescale_zero_terminal_snr,
    spaced_timesteps,
)
from rtx.diffuse.schedulers.sigmas import sigmas_of
from rtx.diffuse.utils import randn_tensor


class EulerAncestralDiscreteScheduler(SigmaSchedulerMixin, SchedulerMixin):
    @register_to_config
    def __init__(self, num_train_timesteps=1000, beta_start=0.0001, beta_end=0.02, beta_schedule="linear",
                 trained_betas=None, prediction_type="epsilon", timestep_spacing="linspace", steps_offset=0,
                 rescale_betas_zero_snr=False):
        self.betas = make_betas(type(self).__name__, num_train_timesteps, beta_start, beta_end, beta_schedule,
                                trained_betas)
        if rescale_betas_zero_snr:
            self.betas = rescale_zero_terminal_snr(self.betas)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = np.cumprod(self.alphas)
        if rescale_betas_zero_snr:
            self.alphas_cumprod[-1] = 2 ** -24
        self.sigmas = np.concatenate([sigmas_of(self.alphas_cumprod)[::-1], [0.0]])
        self.num_inference_steps = None
        self._as_timesteps(np.linspace(0, num_train_timesteps - 1, num_train_timesteps)[::-1], rtx.float64)
        self.is_scale_input_called = False
        self._step_index = None
        self._begin_index = None

    def set_timesteps(self, num_inference_steps, device=None):
        c = self.config
        check_num_inference_steps(num_inference_steps, c.num_train_timesteps)
        self.num_inference_steps = num_inference_steps
        ts = spaced_timesteps(c.timestep_spacing, c.num_train_timesteps, num_inference_steps, c.steps_offset)
        train_sigmas = sigmas_of(self.alphas_cumprod)
        self.sigmas = np.concatenate([np.interp(ts, np.arange(0, len(train_sigmas)), train_sigmas), [0.0]])
        self._as_timesteps(ts, rtx.float64)
        self._step_index = None
        self._begin_index = None

    def step(self, model_output, timestep, sample, generator=None, return_dict=True):
        self._check_float_timestep(timestep)
        if self.step_index is None:
            self._init_step_index(timestep)
        if self.config.prediction_type == "sample":
            raise NotImplementedError("prediction_type not implemented yet: sample")
        sigma_from = float(self.sigmas[self.step_index])
        sigma_to = float(self.sigmas[self.step_index + 1])
        pred_original_sample = sigma_x0(self.config.prediction_type, model_output, sample, sigma_from)
        sigma_up = (sigma_to ** 2 * (sigma_from ** 2 - sigma_to ** 2) / sigma_from ** 2) ** 0.5
        sigma_down = (sigma_to ** 2 - sigma_up ** 2) ** 0.5
        derivative = (sample - pred_original_sample) / sigma_from
        prev_sample = sample + derivative * (sigma_down - sigma_from)
        noise = randn_tensor(model_output.shape, dtype=model_output.dtype, device=model_output.device,
                             generator=generator)
        prev_sample = prev_sample + noise * sigma_up
        self._step_index += 1
        if not return_dict:
            return prev_sample, pred_original_sample
        return SchedulerOutput(prev_sample=prev_sample, pred_original_sample=pred_original_sample)
