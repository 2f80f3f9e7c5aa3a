"""DPMSolverMultistepScheduler: DPM-Solver++ (Lu et al. 2022), a multistep exponential integrator in
log-SNR lambda = log(alpha_t / sigma_t) on the model's x_0 prediction, of order 1 (= DDIM), 2 or 3."""
from __future__ import annotations

import math

import numpy as np

import rtx
from rtx.diffuse.configuration import register_to_config
from rtx.diffuse.schedulers.scheduling_utils import (
    SchedulerMixin,
    SchedulerOutput,
    make_betas,
    per_sample,
    rescale_zero_terminal_snr,
    threshold_sample,
    timesteps_array,
    to_float,
)
from rtx.diffuse.schedulers.sigmas import StepIndexMixin, exponential_sigmas, karras_sigmas, sigma_to_t, sigmas_of


def alpha_sigma(sigma):
    """(alpha_t, sigma_t) of the variance-preserving process for Karras' sigma = sigma_t / alpha_t."""
    alpha_t = 1 / (sigma ** 2 + 1) ** 0.5
    return alpha_t, sigma * alpha_t


def log_snr(sigma):
    alpha_t, sigma_t = alpha_sigma(sigma)
    return math.log(alpha_t) - math.log(sigma_t)


class DPMSolverMultistepScheduler(StepIndexMixin, SchedulerMixin):
    @register_to_config
    def __init__(self, num_train_timesteps=1000, beta_start=0.0001, beta_end=0.02, beta_schedule="linear",
                 trained_betas=None, solver_order=2, prediction_type="epsilon", thresholding=False,
                 dynamic_thresholding_ratio=0.995, sample_max_value=1.0, algorithm_type="dpmsolver++",
                 solver_type="midpoint", lower_order_final=True, euler_at_final=False, use_karras_sigmas=False,
                 use_exponential_sigmas=False, use_beta_sigmas=False, use_lu_lambdas=False, use_flow_sigmas=False,
                 flow_shift=1.0, final_sigmas_type="zero", lambda_min_clipped=-float("inf"), variance_type=None,
                 timestep_spacing="linspace", steps_offset=0, rescale_betas_zero_snr=False,
                 use_dynamic_shifting=False, time_shift_type="exponential"):
        if algorithm_type != "dpmsolver++":
            raise NotImplementedError(f"{algorithm_type} is not implemented for {type(self).__name__}: rtx.diffuse "
                                      "has algorithm_type='dpmsolver++'")
        if solver_type not in ("midpoint", "heun"):
            raise NotImplementedError(f"{solver_type} is not implemented for {type(self).__name__}")
        if solver_order not in (1, 2, 3):
            raise ValueError(f"solver_order must be 1, 2 or 3, got {solver_order}")
        if prediction_type not in ("epsilon", "sample", "v_prediction"):
            raise ValueError(f"prediction_type given as {prediction_type} must be one of `epsilon`, `sample` or "
                             "`v_prediction`")
        for flag in ("use_beta_sigmas", "use_lu_lambdas", "use_flow_sigmas", "use_dynamic_shifting"):
            if locals()[flag]:
                raise NotImplementedError(f"{flag} is not supported by rtx.diffuse")
        if use_karras_sigmas and use_exponential_sigmas:
            raise ValueError("Only one of `config.use_beta_sigmas`, `config.use_exponential_sigmas`, "
                             "`config.use_karras_sigmas` can be used.")
        self.betas = make_betas(type(self).__name__, num_train_timesteps, beta_start, beta_end, beta_schedule,
                                trained_betas)
        if rescale_betas_zero_snr:
            self.betas = rescale_zero_terminal_snr(self.betas)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = np.cumprod(self.alphas)
        if rescale_betas_zero_snr:
            self.alphas_cumprod[-1] = 2 ** -24
        self.alpha_t = np.sqrt(self.alphas_cumprod)
        self.sigma_t = np.sqrt(1 - self.alphas_cumprod)
        self.lambda_t = np.log(self.alpha_t) - np.log(self.sigma_t)
        self.sigmas = sigmas_of(self.alphas_cumprod)
        self.init_noise_sigma = 1.0
        self.num_inference_steps = None
        self._as_timesteps(np.linspace(0, num_train_timesteps - 1, num_train_timesteps)[::-1], rtx.float64)
        self.model_outputs = [None] * solver_order
        self.lower_order_nums = 0
        self._step_index = None
        self._begin_index = None

    def set_timesteps(self, num_inference_steps=None, device=None, timesteps=None):
        c = self.config
        if (num_inference_steps is None) == (timesteps is None):
            raise ValueError("Must pass exactly one of `num_inference_steps` or `timesteps`.")
        if timesteps is not None and (c.use_karras_sigmas or c.use_exponential_sigmas):
            raise ValueError("Cannot use `timesteps` with `config.use_karras_sigmas = True`")
        T = c.num_train_timesteps
        if timesteps is not None:
            ts = np.asarray(timesteps).astype(np.int64)
        else:
            n = num_inference_steps
            # timesteps whose log-SNR is below lambda_min_clipped are never visited (cosine schedules' tail)
            clipped_idx = int(np.searchsorted(self.lambda_t[::-1], c.lambda_min_clipped))
            last = T - clipped_idx
            if c.timestep_spacing == "linspace":
                ts = np.linspace(0, last - 1, n + 1).round()[::-1][:-1].astype(np.int64)
            elif c.timestep_spacing == "leading":
                ts = (np.arange(0, n + 1) * (last // (n + 1))).round()[::-1][:-1].astype(np.int64) + c.steps_offset
            elif c.timestep_spacing == "trailing":
                ts = np.arange(last, 0, -T / n).round().astype(np.int64) - 1
            else:
                raise ValueError(f"{c.timestep_spacing} is not supported. Please make sure to choose one of "
                                 "'linspace', 'leading' or 'trailing'.")
        train_sigmas = sigmas_of(self.alphas_cumprod)
        log_sigmas = np.log(train_sigmas)
        if c.use_karras_sigmas or c.use_exponential_sigmas:
            flipped = train_sigmas[::-1]
            sig = (karras_sigmas if c.use_karras_sigmas else exponential_sigmas)(
                float(flipped[-1]), float(flipped[0]), num_inference_steps)
            ts = sigma_to_t(sig, log_sigmas)
            if c.use_karras_sigmas and c.beta_schedule != "squaredcos_cap_v2":
                ts = ts.round()
        else:
            sig = np.interp(ts, np.arange(0, len(train_sigmas)), train_sigmas)
        if c.final_sigmas_type == "sigma_min":
            last_sigma = float(train_sigmas[0])
        elif c.final_sigmas_type == "zero":
            last_sigma = 0.0
        else:
            raise ValueError(f"`final_sigmas_type` must be one of 'zero', or 'sigma_min', but got "
                             f"{c.final_sigmas_type}")
        self.sigmas = np.concatenate([sig, [last_sigma]])
        self._as_timesteps(np.asarray(ts).astype(np.int64), rtx.int64)
        self.num_inference_steps = len(ts)
        self.model_outputs = [None] * c.solver_order
        self.lower_order_nums = 0
        self._step_index = None
        self._begin_index = None

    def index_for_timestep(self, timestep, schedule_timesteps=None):
        schedule = timesteps_array(self.timesteps if schedule_timesteps is None else schedule_timesteps)
        (indices,) = np.nonzero(schedule == to_float(timestep))
        if len(indices) == 0:
            return len(schedule) - 1
        return int(indices[1] if len(indices) > 1 else indices[0])

    def scale_model_input(self, sample, *args, **kwargs):
        return sample

    def convert_model_output(self, model_output, sample):
        """DPM-Solver++ works on the x_0 prediction, whatever the model predicts."""
        c = self.config
        sigma = float(self.sigmas[self.step_index])
        alpha_t, sigma_t = alpha_sigma(sigma)
        if c.prediction_type == "epsilon":
            if c.variance_type in ("learned", "learned_range"):
                model_output = model_output[:, :3]
            x0 = (sample - sigma_t * model_output) / alpha_t
        elif c.prediction_type == "sample":
            x0 = model_output
        else:
            x0 = alpha_t * sample - sigma_t * model_output
        if c.thresholding:
            x0 = threshold_sample(x0, c.dynamic_thresholding_ratio, c.sample_max_value)
        return x0

    def _update(self, order, sample):
        """One DPM-Solver++ step of the given order from the stored x_0 predictions (Lu et al. 2022,
        Algorithms 1-2; the third order is the multistep formula of diffusers)."""
        i = self.step_index
        s = [float(self.sigmas[i + 1 - k]) for k in range(order + 1)]  # sigma_t, sigma_s0, sigma_s1, ...
        alpha_t, sigma_t = alpha_sigma(s[0])
        _, sigma_s0 = alpha_sigma(s[1])
        lam = [log_snr(x) if x > 0 else math.inf for x in s]
        h = lam[0] - lam[1]
        em = math.expm1(-h) if math.isfinite(h) else -1.0  # exp(-h) - 1
        m0 = self.model_outputs[-1]
        if order == 1:
            return (sigma_t / sigma_s0) * sample - (alpha_t * em) * m0
        m1 = self.model_outputs[-2]
        if order == 2:
            r0 = (lam[1] - lam[2]) / h
            D0, D1 = m0, (1.0 / r0) * (m0 - m1)
            if self.config.solver_type == "midpoint":
                return (sigma_t / sigma_s0) * sample - (alpha_t * em) * D0 - (0.5 * alpha_t * em) * D1
            return (sigma_t / sigma_s0) * sample - (alpha_t * em) * D0 + (alpha_t * (em / h + 1.0)) * D1
        m2 = self.model_outputs[-3]
        h_0, h_1 = lam[1] - lam[2], lam[2] - lam[3]
        r0, r1 = h_0 / h, h_1 / h
        D1_0, D1_1 = (1.0 / r0) * (m0 - m1), (1.0 / r1) * (m1 - m2)
        D1 = D1_0 + (r0 / (r0 + r1)) * (D1_0 - D1_1)
        D2 = (1.0 / (r0 + r1)) * (D1_0 - D1_1)
        return ((sigma_t / sigma_s0) * sample - (alpha_t * em) * m0 + (alpha_t * (em / h + 1.0)) * D1
                - (alpha_t * ((em + h) / h ** 2 - 0.5)) * D2)

    def step(self, model_output, timestep, sample, generator=None, variance_noise=None, return_dict=True):
        if self.num_inference_steps is None:
            raise ValueError("Number of inference steps is 'None', you need to run 'set_timesteps' after creating "
                             "the scheduler")
        if self.step_index is None:
            self._init_step_index(timestep)
        c = self.config
        n = len(self.timesteps)
        # short schedules end with lower orders: the higher-order formulas are unstable over few, long steps
        lower_order_final = self.step_index == n - 1 and (
            c.euler_at_final or (c.lower_order_final and n < 15) or c.final_sigmas_type == "zero")
        lower_order_second = self.step_index == n - 2 and c.lower_order_final and n < 15
        x0 = self.convert_model_output(model_output, sample=sample)
        self.model_outputs = self.model_outputs[1:] + [x0]
        if c.solver_order == 1 or self.lower_order_nums < 1 or lower_order_final:
            order = 1
        elif c.solver_order == 2 or self.lower_order_nums < 2 or lower_order_second:
            order = 2
        else:
            order = 3
        prev_sample = self._update(order, sample)
        if self.lower_order_nums < c.solver_order:
            self.lower_order_nums += 1
        self._step_index += 1
        if not return_dict:
            return (prev_sample,)
        return SchedulerOutput(prev_sample=prev_sample)

    def add_noise(self, original_samples, noise, timesteps):
        sigma = self._noise_sigmas(timesteps, original_samples.shape[0])
        alpha_t, sigma_t = alpha_sigma(sigma)
        return per_sample(alpha_t, original_samples) * original_samples + per_sample(sigma_t, noise) * noise
