"""What the sigma-parameterised schedulers (Euler, Euler ancestral, DPM-Solver) share: x_t = x_0 + sigma eps
with sigma = sqrt((1 - alpha_bar) / alpha_bar) (Karras et al. 2022), the sigma schedules (Karras rho = 7,
exponential), sigma -> fractional timestep, and the step index a sampling loop walks along."""
from __future__ import annotations

import math

import numpy as np

from rtx.diffuse.schedulers.scheduling_utils import per_sample, timesteps_array, to_float


def sigmas_of(alphas_cumprod):
    return np.sqrt((1 - alphas_cumprod) / alphas_cumprod)


def sigma_to_t(sigma, log_sigmas):
    """The fractional timestep whose log-sigma is `sigma`'s, by linear interpolation in log-sigma."""
    sigma = np.asarray(sigma, dtype=np.float64)
    log_sigma = np.log(np.maximum(sigma, 1e-10))
    dists = log_sigma - log_sigmas[:, None]
    low_idx = np.cumsum(dists >= 0, axis=0).argmax(axis=0).clip(max=log_sigmas.shape[0] - 2)
    high_idx = low_idx + 1
    low, high = log_sigmas[low_idx], log_sigmas[high_idx]
    w = np.clip((low - log_sigma) / (low - high), 0, 1)
    return ((1 - w) * low_idx + w * high_idx).reshape(sigma.shape)


def karras_sigmas(sigma_min, sigma_max, n, rho=7.0):
    """Karras et al. 2022, eq. 5: sigmas evenly spaced in sigma^(1/rho)."""
    ramp = np.linspace(0, 1, n)
    lo, hi = sigma_min ** (1 / rho), sigma_max ** (1 / rho)
    return (hi + ramp * (lo - hi)) ** rho


def exponential_sigmas(sigma_min, sigma_max, n):
    return np.exp(np.linspace(math.log(sigma_max), math.log(sigma_min), n))


class StepIndexMixin:
    """The index into `sigmas` of the current step: found from the first timestep a loop passes in
    (or `set_begin_index` for img2img-style partial loops), then advanced by each `step`."""

    _step_index = None
    _begin_index = None

    @property
    def step_index(self):
        return self._step_index

    @property
    def begin_index(self):
        return self._begin_index

    def set_begin_index(self, begin_index=0):
        self._begin_index = begin_index

    def index_for_timestep(self, timestep, schedule_timesteps=None):
        schedule = timesteps_array(self.timesteps if schedule_timesteps is None else schedule_timesteps)
        (indices,) = np.nonzero(schedule == to_float(timestep))
        if len(indices) == 0:
            raise ValueError(f"timestep {to_float(timestep)} is not one of this scheduler's timesteps; pass the "
                             "values of scheduler.timesteps")
        # the second match when a timestep repeats, so an image-to-image loop that starts mid-schedule does not
        # skip a sigma (diffusers' rule)
        return int(indices[1] if len(indices) > 1 else indices[0])

    def _init_step_index(self, timestep):
        self._step_index = self.index_for_timestep(timestep) if self._begin_index is None else self._begin_index

    def _noise_sigmas(self, timesteps, batch):
        if self._begin_index is None:
            return self.sigmas[[self.index_for_timestep(t) for t in timesteps_array(timesteps)]]
        index = self._step_index if self._step_index is not None else self._begin_index
        return np.full(batch, self.sigmas[index])

    def _sigmas_per_sample(self, timesteps, like):
        return per_sample(self._noise_sigmas(timesteps, like.shape[0]), like)
