"""rtx diffuse: diffusers-shaped schedulers (DDPM, DDIM, Euler, Euler ancestral, DPM-Solver++), UNet2DModel/UNet2DConditionModel and pipelines."""
__version__ = "0.1.0"
