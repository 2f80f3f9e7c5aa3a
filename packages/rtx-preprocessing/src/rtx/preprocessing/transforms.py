"""Transforms on NumPy arrays and rtx tensors: Compose, Lambda, ToTensor, Normalize, and
augmentations that draw from an rtx Generator (so DataLoader workers, which seed rtx per worker,
give reproducible augmentation)."""
from __future__ import annotations

import numpy as np

import rtx
from rtx.extend import Tensor
from rtx.runtime.random import generator_for


def _as_array(x):
    if type(x) is Tensor:
        return x.detach().cpu().numpy(), True
    return np.asarray(x), False


def _back(arr, was_tensor):
    return rtx.as_tensor(np.ascontiguousarray(arr)) if was_tensor else arr


class Compose:
    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x

    def __repr__(self):
        inner = "".join(f"\n    {t!r}" for t in self.transforms)
        return f"{type(self).__name__}({inner}\n)"


class Lambda:
    def __init__(self, fn):
        if not callable(fn):
            raise TypeError(f"Lambda expects a callable, got {type(fn).__name__}")
        self.fn = fn

    def __call__(self, x):
        return self.fn(x)


class ToTensor:
    """Array (any numeric dtype) -> float tensor of the default dtype; integer images in [0, 255]
    are scaled to [0, 1] when scale_uint8 is set (as torchvision does for uint8)."""

    def __init__(self, dtype=None, scale_uint8=True):
        self.dtype, self.scale_uint8 = dtype, scale_uint8

    def __call__(self, x):
        arr, _ = _as_array(x)
        out = arr.astype(np.float32)
        if self.scale_uint8 and arr.dtype == np.uint8:
            out /= 255.0
        t = rtx.as_tensor(out)
        return t.to(self.dtype) if self.dtype is not None else t


class Normalize:
    """(x - mean) / std along `axis` (the channel axis; default 0 as torchvision's C×H×W)."""

    def __init__(self, mean, std, axis=0, eps=0.0):
        self.mean, self.std = np.asarray(mean, dtype=np.float64), np.asarray(std, dtype=np.float64)
        if np.any(self.std == 0) and eps == 0:
            raise ValueError(f"std evaluated to zero after conversion to float, leading to division by zero: {std}")
        self.axis, self.eps = axis, eps

    def __call__(self, x):
        arr, was = _as_array(x)
        shape = [1] * arr.ndim
        if self.mean.ndim:
            shape[self.axis] = -1
        out = (arr - self.mean.reshape(shape)) / (self.std.reshape(shape) + self.eps)
        return _back(out.astype(arr.dtype if arr.dtype.kind == "f" else np.float32), was)

    def __repr__(self):
        return f"Normalize(mean={self.mean.tolist()}, std={self.std.tolist()})"


class _Random:
    def __init__(self, generator=None):
        self.generator = generator

    def rng(self):
        return (self.generator or generator_for("cpu")).np


class RandomNoise(_Random):
    """Add Gaussian noise of standard deviation `std`."""

    def __init__(self, std=0.1, generator=None):
        super().__init__(generator)
        self.std = std

    def __call__(self, x):
        arr, was = _as_array(x)
        return _back(arr + self.rng().normal(0, self.std, arr.shape).astype(arr.dtype), was)


class RandomFlip(_Random):
    """Flip along `axis` with probability p (the last axis: horizontal flip of an image)."""

    def __init__(self, p=0.5, axis=-1, generator=None):
        super().__init__(generator)
        self.p, self.axis = p, axis

    def __call__(self, x):
        arr, was = _as_array(x)
        if self.rng().random() < self.p:
            arr = np.flip(arr, axis=self.axis)
        return _back(arr, was)


class RandomShift(_Random):
    """Shift the last two axes by up to `max_shift` pixels, filling with `fill`."""

    def __init__(self, max_shift=1, fill=0, generator=None):
        super().__init__(generator)
        self.max_shift, self.fill = max_shift, fill

    def __call__(self, x):
        arr, was = _as_array(x)
        dy, dx = self.rng().integers(-self.max_shift, self.max_shift + 1, size=2)
        out = np.full_like(arr, self.fill)
        h, w = arr.shape[-2:]
        ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
        xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
        out[..., yd, xd] = arr[..., ys, xs]
        return _back(out, was)
