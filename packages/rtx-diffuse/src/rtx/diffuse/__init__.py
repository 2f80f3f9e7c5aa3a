"""rtx diffuse: diffusers-shaped schedulers (DDPM, DDIM, Euler, Euler ancestral, DPM-Solver++),
UNet2DModel/UNet2DConditionModel and pipelines."""
from rtx.diffuse.configuration import ConfigMixin, FrozenDict, register_to_config
from rtx.diffuse.models import ModelMixin, UNet2DConditionModel, UNet2DModel
from rtx.diffuse.pipelines import (
    ClassConditionalPipeline,
    DDIMPipeline,
    DDPMPipeline,
    DiffusionPipeline,
    ImagePipelineOutput,
)
from rtx.diffuse.schedulers import (
    DDIMScheduler,
    DDPMScheduler,
    DPMSolverMultistepScheduler,
    EulerAncestralDiscreteScheduler,
    EulerDiscreteScheduler,
    SchedulerMixin,
    SchedulerOutput,
)
from rtx.diffuse.training_utils import EMAModel
from rtx.diffuse.utils import randn_tensor

__version__ = "0.1.0"

__all__ = [
    "ClassConditionalPipeline", "ConfigMixin", "DDIMPipeline", "DDIMScheduler", "DDPMPipeline", "DDPMScheduler",
    "DPMSolverMultistepScheduler", "DiffusionPipeline", "EMAModel", "EulerAncestralDiscreteScheduler",
    "EulerDiscreteScheduler", "FrozenDict", "ImagePipelineOutput", "ModelMixin", "SchedulerMixin", "SchedulerOutput",
    "UNet2DConditionModel", "UNet2DModel", "randn_tensor", "register_to_config",
]
