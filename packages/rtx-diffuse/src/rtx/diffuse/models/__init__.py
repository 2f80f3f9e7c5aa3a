"""diffusers-shaped models: UNet2DModel, UNet2DConditionModel (lite) and their building blocks."""
from rtx.diffuse.models.modeling_utils import ModelMixin
from rtx.diffuse.models.unet_2d import UNet2DModel, UNet2DOutput
from rtx.diffuse.models.unet_2d_condition import UNet2DConditionModel, UNet2DConditionOutput

__all__ = ["ModelMixin", "UNet2DConditionModel", "UNet2DConditionOutput", "UNet2DModel", "UNet2DOutput"]
