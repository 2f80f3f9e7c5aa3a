"""DDPMScheduler: ancestral sampling of Ho et al. 2020 (eq. 6-7), with diffusers' options."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.diffuse.configuration import register_to_config
from rtx.diffuse.schedulers.scheduling_utils import (
    SchedulerMixin,
    SchedulerOutput,
    check_num_inference_steps,
    make_betas,
    per_sample,
    rescale_zero_terminal_snr,
    spaced_timesteps,
    threshold_sample,
    timesteps_array,
    to_float,
)
from rtx.diffuse.utils import randn_tensor

_VARIANCE_TYPES = ("fixed_small", "fixed_small_log", "fixed_large", "fixed_large_log", "learned", "learned_range")
_PREDICTION_TYPES = ("epsilon", "sample", "v_prediction")


def predict_x0(prediction_type, model_output, sample, alpha_prod_t, cls):
    """x_0 from the model's output: the noise (eps), x_0 itself, or v = sqrt(a) eps - sqrt(1-a) x_0."""
    beta_prod_t = 1 - alpha_prod_t
    if prediction_type == "epsilon":
        return (sample - beta_prod_t ** 0.5 * model_output) / alpha_prod_t ** 0.5
    if prediction_type == "sample":
        return model_output
    if prediction_type == "v_prediction":
        return alpha_prod_t ** 0.5 * sample - beta_prod_t ** 0.5 * model_output
    raise ValueError(f"prediction_type given as {prediction_type} must be one of `epsilon`, `sample` or "
                     f"`v_prediction` for the {cls}.")


class AlphasCumprodMixin:
    """add_noise / get_velocity on the alpha_bar table (DDPM, DDIM)."""

    def add_noise(self, original_samples, noise, timesteps):
        """q(x_t | x_0) = N(sqrt(a_t) x_0, (1 - a_t) I): one timestep per batch element."""
        a = self.alphas_cumprod[timesteps_array(timesteps).astype(np.int64)]
        return per_sample(a ** 0.5, original_samples) * original_samples + per_sample((1 - a) ** 0.5, noise) * noise

    def get_velocity(self, sample, noise, timesteps):
        """v = sqrt(a_t) eps - sqrt(1 - a_t) x_0 (Salimans & Ho 2022), the v_prediction training target."""
        a = self.alphas_cumprod[timesteps_array(timesteps).astype(np.int64)]
        return per_sample(a ** 0.5, noise) * noise - per_sample((1 - a) ** 0.5, sample) * sample


class DDPMScheduler(AlphasCumprodMixin, SchedulerMixin):
    @register_to_config
    def __init__(self, num_train_timesteps=1000, beta_start=0.0001, beta_end=0.02, beta_schedule="linear",
                 trained_betas=None, variance_type="fixed_small", clip_sample=True, prediction_type="epsilon",
                 thresholding=False, dynamic_thresholding_ratio=0.995, clip_sample_range=1.0, sample_max_value=1.0,
                 timestep_spacing="leading", steps_offset=0, rescale_betas_zero_snr=False):
        if variance_type not in _VARIANCE_TYPES:
            raise ValueError(f"variance_type must be one of {_VARIANCE_TYPES}, got {variance_type!r}")
        if prediction_type not in _PREDICTION_TYPES:
            raise ValueError(f"prediction_type must be one of {_PREDICTION_TYPES}, got {prediction_type!r}")
        self.betas = make_betas(type(self).__name__, num_train_timesteps, beta_start, beta_end, beta_schedule,
                                trained_betas)
        if rescale_betas_zero_snr:
            self.betas = rescale_zero_terminal_snr(self.betas)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = np.cumprod(self.alphas)
        self.one = 1.0
        self.init_noise_sigma = 1.0
        self.custom_timesteps = False
        self.num_inference_steps = None
        self.variance_type = variance_type
        self._as_timesteps(np.arange(0, num_train_timesteps)[::-1], rtx.int64)

    def scale_model_input(self, sample, timestep=None):
        return sample

    def set_timesteps(self, num_inference_steps=None, device=None, timesteps=None):
        T = self.config.num_train_timesteps
        if num_inference_steps is not None and timesteps is not None:
            raise ValueError("Can only pass one of `num_inference_steps` or `custom_timesteps`.")
        if timesteps is not None:
            timesteps = [int(t) for t in timesteps]
            if any(b >= a for a, b in zip(timesteps, timesteps[1:])):
                raise ValueError("`custom_timesteps` must be in descending order.")
            if timesteps[0] >= T:
                raise ValueError(f"`timesteps` must start before `self.config.train_timesteps`: {T}.")
            self.custom_timesteps = True
            ts = np.array(timesteps, dtype=np.int64)
        else:
            check_num_inference_steps(num_inference_steps, T)
            self.num_inference_steps = num_inference_steps
            self.custom_timesteps = False
            ts = spaced_timesteps(self.config.timestep_spacing, T, num_inference_steps, 0)
            ts = ts.round().astype(np.int64) + (self.config.steps_offset
                                                if self.config.timestep_spacing == "leading" else 0)
        self._as_timesteps(ts, rtx.int64)

    def previous_timestep(self, timestep):
        t = int(to_float(timestep))
        if self.custom_timesteps or self.num_inference_steps:
            ts = self.timesteps.numpy()
            (index,) = np.nonzero(ts == t)
            if len(index) == 0:
                raise ValueError(f"timestep {t} is not in this scheduler's timesteps {ts.tolist()}")
            return -1 if index[0] == len(ts) - 1 else int(ts[index[0] + 1])
        return t - 1

    def _get_variance(self, t, predicted_variance=None, variance_type=None):
        prev_t = self.previous_timestep(t)
        alpha_prod_t = self.alphas_cumprod[t]
        alpha_prod_t_prev = self.alphas_cumprod[prev_t] if prev_t >= 0 else self.one
        current_beta_t = 1 - alpha_prod_t / alpha_prod_t_prev
        # the posterior variance beta~_t of eq. 7, floored so that its log stays finite at t = 0
        variance = max((1 - alpha_prod_t_prev) / (1 - alpha_prod_t) * current_beta_t, 1e-20)
        variance_type = variance_type or self.config.variance_type
        if variance_type == "fixed_small":
            return variance
        if variance_type == "fixed_small_log":
            return float(np.exp(0.5 * np.log(variance)))
        if variance_type == "fixed_large":
            return current_beta_t
        if variance_type == "fixed_large_log":
            return float(np.log(current_beta_t))
        if variance_type == "learned":
            return predicted_variance
        # learned_range (Nichol & Dhariwal 2021): the model interpolates log-variance between beta~_t and beta_t
        frac = (predicted_variance + 1) / 2
        return frac * float(np.log(current_beta_t)) + (1 - frac) * float(np.log(variance))

    def step(self, model_output, timestep, sample, generator=None, return_dict=True):
        t = int(to_float(timestep))
        prev_t = self.previous_timestep(t)
        c = sample.shape[1]
        if model_output.shape[1] == 2 * c and self.variance_type in ("learned", "learned_range"):
            model_output, predicted_variance = model_output[:, :c], model_output[:, c:]
        else:
            predicted_variance = None
        alpha_prod_t = float(self.alphas_cumprod[t])
        alpha_prod_t_prev = float(self.alphas_cumprod[prev_t]) if prev_t >= 0 else self.one
        beta_prod_t, beta_prod_t_prev = 1 - alpha_prod_t, 1 - alpha_prod_t_prev
        current_alpha_t = alpha_prod_t / alpha_prod_t_prev
        current_beta_t = 1 - current_alpha_t

        pred_original_sample = predict_x0(self.config.prediction_type, model_output, sample, alpha_prod_t,
                                          type(self).__name__)
        if self.config.thresholding:
            pred_original_sample = threshold_sample(pred_original_sample, self.config.dynamic_thresholding_ratio,
                                                    self.config.sample_max_value)
        elif self.config.clip_sample:
            r = self.config.clip_sample_range
            pred_original_sample = pred_original_sample.clamp(-r, r)

        # the mean of q(x_{t-1} | x_t, x_0), eq. 7
        pred_original_sample_coeff = alpha_prod_t_prev ** 0.5 * current_beta_t / beta_prod_t
        current_sample_coeff = current_alpha_t ** 0.5 * beta_prod_t_prev / beta_prod_t
        pred_prev_sample = pred_original_sample_coeff * pred_original_sample + current_sample_coeff * sample

        if t > 0:
            noise = randn_tensor(model_output.shape, generator=generator, device=model_output.device,
                                 dtype=model_output.dtype)
            if self.variance_type == "fixed_small_log":
                pred_prev_sample = pred_prev_sample + self._get_variance(t, predicted_variance) * noise
            elif self.variance_type == "learned_range":
                variance = self._get_variance(t, predicted_variance)
                pred_prev_sample = pred_prev_sample + (0.5 * variance).exp() * noise
            else:
                pred_prev_sample = pred_prev_sample + self._get_variance(t, predicted_variance) ** 0.5 * noise
        if not return_dict:
            return pred_prev_sample, pred_original_sample
        return SchedulerOutput(prev_sample=pred_prev_sample, pred_original_sample=pred_original_sample)
