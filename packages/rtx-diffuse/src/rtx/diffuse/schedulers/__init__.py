"""Schedulers with diffusers' class names, arguments, defaults, `scheduler_config.json` and numbers."""
from rtx.diffuse.schedulers.scheduling_ddim import DDIMScheduler
from rtx.diffuse.schedulers.scheduling_ddpm import DDPMScheduler
from rtx.diffuse.schedulers.scheduling_dpmsolver_multistep import DPMSolverMultistepScheduler
from rtx.diffuse.schedulers.scheduling_euler_ancestral_discrete import EulerAncestralDiscreteScheduler
from rtx.diffuse.schedulers.scheduling_euler_discrete import EulerDiscreteScheduler
from rtx.diffuse.schedulers.scheduling_utils import SchedulerMixin, SchedulerOutput

__all__ = ["DDIMScheduler", "DDPMScheduler", "DPMSolverMultistepScheduler", "EulerAncestralDiscreteScheduler",
           "EulerDiscreteScheduler", "SchedulerMixin", "SchedulerOutput"]
