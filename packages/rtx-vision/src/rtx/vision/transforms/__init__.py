"""torchvision.transforms: image transforms on PIL images, rtx tensors (..., C, H, W) and NumPy
arrays (H, W[, C]); the functional forms are in rtx.vision.transforms.functional."""
# ruff: noqa: F401,F403
from rtx.vision.transforms import functional
from rtx.vision.transforms.functional import InterpolationMode
from rtx.vision.transforms.transforms import *
