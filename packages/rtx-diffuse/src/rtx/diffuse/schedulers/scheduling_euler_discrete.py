"""EulerDiscreteScheduler: Euler steps of the probability-flow ODE dx/dsigma = (x - x_0) / sigma in the
sigma parameterisation of Karras et al. 2022 (Algorithm 2, with the optional churn)."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.diffuse.configuration import register_to_config
from rtx.diffuse.schedulers.scheduling_utils import (
    SchedulerMixin,
    SchedulerOutput,
    make_betas,
    per_sample,
    rescale_zero_terminal_snr,
    spaced_timesteps,
    timesteps_array,
)
from rtx.diffuse.schedulers.sigmas import (
    StepIndexMixin,
    exponential_sigmas,
    karras_sigmas,
    sigma_to_t,
    sigmas_of,
)
from rtx.diffuse.utils import randn_tensor


def sigma_x0(prediction_type, model_output, sample, sigma):
    """x_0 from the model output at noise level sigma (the input was scaled by 1/sqrt(sigma^2 + 1))."""
    if prediction_type in ("original_sample", "sample"):
        return model_output
    if prediction_type == "epsilon":
        return sample - sigma * model_output
    if prediction_type == "v_prediction":
        return model_output * (-sigma / (sigma ** 2 + 1) ** 0.5) + sample / (sigma ** 2 + 1)
    raise ValueError(f"prediction_type given as {prediction_type} must be one of `epsilon`, or `v_prediction`")


class SigmaSchedulerMixin(StepIndexMixin):
    @property
    def init_noise_sigma(self):
        max_sigma = float(np.max(self.sigmas))
        if self.config.timestep_spacing in ("linspace", "trailing"):
            return max_sigma
        return (max_sigma ** 2 + 1) ** 0.5

    def scale_model_input(self, sample, timestep):
        """x / sqrt(sigma^2 + 1): the model sees unit-variance inputs (Karras et al.'s c_in)."""
        if self.step_index is None:
            self._init_step_index(timestep)
        sigma = float(self.sigmas[self.step_index])
        self.is_scale_input_called = True
        return sample / (sigma ** 2 + 1) ** 0.5

    def add_noise(self, original_samples, noise, timesteps):
        return original_samples + noise * self._sigmas_per_sample(timesteps, original_samples)

    def _check_float_timestep(self, timestep):
        if isinstance(timestep, int) or (isinstance(timestep, rtx.Tensor) and not timestep.is_floating_point()):
            raise ValueError("Passing integer indices (e.g. from `enumerate(timesteps)`) as timesteps to "
                             f"`{type(self).__name__}.step()` is not supported. Make sure to pass one of the "
                             "`scheduler.timesteps` as a timestep.")


class EulerDiscreteScheduler(SigmaSchedulerMixin, SchedulerMixin):
    @register_to_config
    def __init__(self, num_train_timesteps=1000, beta_start=0.0001, beta_end=0.02, beta_schedule="linear",
                 trained_betas=None, prediction_type="epsilon", interpolation_type="linear", use_karras_sigmas=False,
                 use_exponential_sigmas=False, use_beta_sigmas=False, sigma_min=None, sigma_max=None,
                 timestep_spacing="linspace", timestep_type="discrete", steps_offset=0, rescale_betas_zero_snr=False,
                 final_sigmas_type="zero"):
        if use_beta_sigmas:
            raise NotImplementedError("use_beta_sigmas is not supported by rtx.diffuse: use use_karras_sigmas or "
                                      "use_exponential_sigmas")
        if sum([bool(use_exponential_sigmas), bool(use_karras_sigmas)]) > 1:
            raise ValueError("Only one of `config.use_beta_sigmas`, `config.use_exponential_sigmas`, "
                             "`config.use_karras_sigmas` can be used.")
        self.betas = make_betas(type(self).__name__, num_train_timesteps, beta_start, beta_end, beta_schedule,
                                trained_betas)
        if rescale_betas_zero_snr:
            self.betas = rescale_zero_terminal_snr(self.betas)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = np.cumprod(self.alphas)
        if rescale_betas_zero_snr:
            self.alphas_cumprod[-1] = 2 ** -24  # a zero alpha_bar would make sigma infinite
        sigmas = sigmas_of(self.alphas_cumprod)[::-1]
        self.num_inference_steps = None
        if timestep_type == "continuous" and prediction_type == "v_prediction":
            self._as_timesteps(0.25 * np.log(sigmas), rtx.float64)
        else:
            self._as_timesteps(np.linspace(0, num_train_timesteps - 1, num_train_timesteps)[::-1], rtx.float64)
        self.sigmas = np.concatenate([sigmas, [0.0]])
        self.is_scale_input_called = False
        self.use_karras_sigmas = use_karras_sigmas
        self._step_index = None
        self._begin_index = None

    def set_timesteps(self, num_inference_steps=None, device=None, timesteps=None, sigmas=None):
        c = self.config
        if sigmas is not None:
            raise NotImplementedError("custom sigmas are not supported by rtx.diffuse: pass num_inference_steps")
        if (num_inference_steps is None) == (timesteps is None):
            raise ValueError("Must pass exactly one of `num_inference_steps` or `timesteps`.")
        if timesteps is not None and (c.use_karras_sigmas or c.use_exponential_sigmas):
            raise ValueError("Cannot set `timesteps` with `config.use_karras_sigmas = True`.")
        if num_inference_steps is None:
            num_inference_steps = len(timesteps)
        self.num_inference_steps = num_inference_steps
        if timesteps is not None:
            ts = np.asarray(timesteps, dtype=np.float64)
        else:
            ts = spaced_timesteps(c.timestep_spacing, c.num_train_timesteps, num_inference_steps, c.steps_offset)
        train_sigmas = sigmas_of(self.alphas_cumprod)
        log_sigmas = np.log(train_sigmas)
        if c.interpolation_type == "linear":
            sig = np.interp(ts, np.arange(0, len(train_sigmas)), train_sigmas)
        elif c.interpolation_type == "log_linear":
            sig = np.exp(np.linspace(np.log(train_sigmas[-1]), np.log(train_sigmas[0]), num_inference_steps + 1))
        else:
            raise ValueError(f"{c.interpolation_type} is not implemented. Please specify interpolation_type to either "
                             "'linear' or 'log_linear'")
        if c.use_karras_sigmas or c.use_exponential_sigmas:
            lo = c.sigma_min if c.sigma_min is not None else float(sig[-1])
            hi = c.sigma_max if c.sigma_max is not None else float(sig[0])
            sig = (karras_sigmas if c.use_karras_sigmas else exponential_sigmas)(lo, hi, num_inference_steps)
            ts = sigma_to_t(sig, log_sigmas)
        if c.final_sigmas_type == "sigma_min":
            last = float(train_sigmas[0])
        elif c.final_sigmas_type == "zero":
            last = 0.0
        else:
            raise ValueError(f"`final_sigmas_type` must be one of 'zero', or 'sigma_min', but got "
                             f"{c.final_sigmas_type}")
        self.sigmas = np.concatenate([sig, [last]])
        if c.timestep_type == "continuous" and c.prediction_type == "v_prediction":
            ts = 0.25 * np.log(self.sigmas[:-1])
        self._as_timesteps(ts, rtx.float64)
        self._step_index = None
        self._begin_index = None

    def step(self, model_output, timestep, sample, s_churn=0.0, s_tmin=0.0, s_tmax=float("inf"), s_noise=1.0,
             generator=None, return_dict=True):
        self._check_float_timestep(timestep)
        if self.step_index is None:
            self._init_step_index(timestep)
        sigma = float(self.sigmas[self.step_index])
        # Algorithm 2's churn: raise the noise level to sigma_hat by adding fresh noise
        gamma = min(s_churn / (len(self.sigmas) - 1), 2 ** 0.5 - 1) if s_tmin <= sigma <= s_tmax else 0.0
        sigma_hat = sigma * (gamma + 1)
        if gamma > 0:
            noise = randn_tensor(model_output.shape, dtype=model_output.dtype, device=model_output.device,
                                 generator=generator)
            sample = sample + noise * s_noise * (sigma_hat ** 2 - sigma ** 2) ** 0.5
        pt = self.config.prediction_type
        # v_prediction's x_0 uses sigma, not sigma_hat, as diffusers does
        pred_original_sample = sigma_x0(pt, model_output, sample, sigma if pt == "v_prediction" else sigma_hat)
        derivative = (sample - pred_original_sample) / sigma_hat
        dt = float(self.sigmas[self.step_index + 1]) - sigma_hat
        prev_sample = sample + derivative * dt
        self._step_index += 1
        if not return_dict:
            return prev_sample, pred_original_sample
        return SchedulerOutput(prev_sample=prev_sample, pred_original_sample=pred_original_sample)

    def get_velocity(self, sample, noise, timesteps):
        self._check_float_timestep(timesteps)
        idx = [self.index_for_timestep(t) for t in timesteps_array(timesteps)]
        a = self.alphas_cumprod[idx]
        return per_sample(a ** 0.5, noise) * noise - per_sample((1 - a) ** 0.5, sample) * sample
