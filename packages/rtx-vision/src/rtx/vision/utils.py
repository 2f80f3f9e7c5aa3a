"""torchvision.utils: make_grid (a batch of images tiled into one) and save_image."""
from __future__ import annotations

import math

import numpy as np
from PIL import Image

import rtx
from rtx.extend import Tensor

__all__ = ["make_grid", "save_image"]


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False, pad_value=0.0):
    """Tile a (B, C, H, W) tensor (or a list of (C, H, W) tensors) into one (3, H', W') image,
    nrow images per row, `padding` pixels of pad_value between them. One-channel images are
    repeated to three; normalize=True maps value_range (default: min..max) to [0, 1]."""
    if isinstance(tensor, (list, tuple)):
        tensor = rtx.stack(list(tensor), dim=0)
    if type(tensor) is not Tensor:
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor).__name__}")
    arr = tensor.detach().cpu().numpy()
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim == 3:
        arr = arr[None]
    if arr.ndim != 4:
        raise ValueError(f"make_grid expects (B, C, H, W), (C, H, W) or (H, W), got shape {tuple(tensor.shape)}")
    if arr.shape[1] == 1:
        arr = np.repeat(arr, 3, axis=1)
    if normalize:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")
        arr = arr.astype(np.float32 if arr.dtype.kind != "f" else arr.dtype)

        def norm(a):
            low, high = value_range if value_range is not None else (float(a.min()), float(a.max()))
            return (np.clip(a, low, high) - low) / max(high - low, 1e-5)
        arr = np.stack([norm(a) for a in arr]) if scale_each else norm(arr)
    if arr.shape[0] == 1:
        return rtx.from_numpy(np.ascontiguousarray(arr[0]))
    nmaps = arr.shape[0]
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(nmaps / xmaps))
    height, width = arr.shape[2] + padding, arr.shape[3] + padding
    grid = np.full((arr.shape[1], height * ymaps + padding, width * xmaps + padding), pad_value, dtype=arr.dtype)
    for k in range(nmaps):
        y, x = divmod(k, xmaps)
        grid[:, y * height + padding:(y + 1) * height, x * width + padding:(x + 1) * width] = arr[k]
    return rtx.from_numpy(grid)


def save_image(tensor, fp, format=None, **kwargs):
    """make_grid(tensor, **kwargs) written as an 8-bit image file (values in [0, 1])."""
    grid = make_grid(tensor, **kwargs).numpy().astype(np.float64)
    ndarr = np.clip(grid * 255 + 0.5, 0, 255).astype(np.uint8).transpose(1, 2, 0)
    Image.fromarray(ndarr).save(fp, format=format)
