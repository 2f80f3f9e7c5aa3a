"""RoIAlign (He et al., Mask R-CNN) as torchvision.ops.roi_align, with its sampling rules:
each output bin averages grid_h x grid_w bilinear samples (grid = sampling_ratio, or
ceil(roi size / output size) when sampling_ratio <= 0); a sample more than one pixel outside
the map counts as zero; aligned=True shifts the box by half a pixel.

How it runs: bilinear sampling and bin averaging are separable, so for one box the output is
A_y @ X @ A_x^T, A_y (out_h, H) and A_x (out_w, W) holding the averaged interpolation weights.
The op is linear in the input; its backward is the adjoint, A_y^T @ G @ A_x, and the adjoint's
backward is the op again (so double backward works). Boxes get no gradient, as in torchvision."""
from __future__ import annotations

import math

import numpy as np

import rtx.nn as nn
from rtx.extend import Primitive, Tensor, raw
from rtx.runtime.devices import array_module

__all__ = ["roi_align", "RoIAlign"]

# Boxes per einsum chunk: bounds the (boxes, C, out_h, W) intermediate.
_CHUNK = 64


def _axis_weights(start, bin_size, grid, pooled, size):
    """(pooled, size) averaged bilinear weights along one axis for one box (torchvision's
    bilinear_interpolate, one coordinate at a time)."""
    w = np.zeros((pooled, size), dtype=np.float64)
    if grid <= 0:
        return w
    p = np.arange(pooled)[:, None]
    i = np.arange(grid)[None, :]
    c = start + p * bin_size + (i + 0.5) * bin_size / grid           # (pooled, grid) sample coordinates
    valid = (c >= -1.0) & (c <= size)
    c = np.maximum(c, 0.0)
    low = np.floor(c).astype(np.int64)
    at_end = low >= size - 1
    low = np.where(at_end, size - 1, low)
    high = np.where(at_end, size - 1, low + 1)
    c = np.where(at_end, low, c)
    frac = c - low
    rows = np.broadcast_to(p, c.shape)
    scale = valid / grid
    np.add.at(w, (rows, low), (1.0 - frac) * scale)
    np.add.at(w, (rows, high), frac * scale)
    return w


def _weights(rois, out_hw, size_hw, spatial_scale, sampling_ratio, aligned, dtype):
    """Per box: its image index and the (out_h, H), (out_w, W) weight matrices."""
    ph, pw = out_hw
    H, W = size_hw
    offset = 0.5 if aligned else 0.0
    K = rois.shape[0]
    ay = np.zeros((K, ph, H), dtype=np.float64)
    ax = np.zeros((K, pw, W), dtype=np.float64)
    for k in range(K):
        x1, y1, x2, y2 = (float(v) * spatial_scale - offset for v in rois[k, 1:])
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh = sampling_ratio if sampling_ratio > 0 else math.ceil(rh / ph)
        gw = sampling_ratio if sampling_ratio > 0 else math.ceil(rw / pw)
        ay[k] = _axis_weights(y1, rh / ph, gh, ph, H)
        ax[k] = _axis_weights(x1, rw / pw, gw, pw, W)
    return rois[:, 0].astype(np.int64), ay.astype(dtype), ax.astype(dtype)


class _RoIAlign(Primitive):
    op = "roi_align"

    @staticmethod
    def forward(ctx, x, *, bidx, hidx, ay, ax):
        x = raw(x)
        xp = array_module(x)
        K, C = len(bidx), x.shape[1]
        out = xp.zeros((K, C, ay.shape[1], ax.shape[1]), dtype=x.dtype)
        for k0 in range(0, K, _CHUNK):
            sl = slice(k0, k0 + _CHUNK)
            out[sl] = xp.einsum("kph,kchw,kqw->kcpq", ay[sl], x[bidx[sl]], ax[sl], optimize=True)
        ctx.attrs = (bidx, hidx, ay, ax, x.shape)
        return out

    @staticmethod
    def backward(ctx, g):
        bidx, hidx, ay, ax, shape = ctx.attrs
        return _RoIAlignAdjoint.apply(g, bidx=bidx, hidx=hidx, ay=ay, ax=ax, shape=shape)


class _RoIAlignAdjoint(Primitive):
    @staticmethod
    def forward(ctx, g, *, bidx, hidx, ay, ax, shape):
        g = raw(g)
        xp = array_module(g)
        gx = xp.zeros(shape, dtype=g.dtype)
        for k0 in range(0, len(bidx), _CHUNK):
            sl = slice(k0, k0 + _CHUNK)
            contrib = xp.einsum("kph,kcpq,kqw->kchw", ay[sl], g[sl], ax[sl], optimize=True)
            # scatter-add by image; a loop over the (few) images stays device-neutral
            for b in np.unique(hidx[sl]):
                gx[int(b)] += contrib[xp.asarray(hidx[sl] == b)].sum(axis=0)
        ctx.attrs = (bidx, hidx, ay, ax)
        return gx

    @staticmethod
    def backward(ctx, gg):
        bidx, hidx, ay, ax = ctx.attrs
        return _RoIAlign.apply(gg, bidx=bidx, hidx=hidx, ay=ay, ax=ax)


def _rois(boxes, input):
    """Boxes as one (K, 5) array (image index, x1, y1, x2, y2), from a (K, 5) tensor or a list of
    (L_i, 4) tensors, one per image (torchvision's two accepted forms)."""
    if isinstance(boxes, (list, tuple)):
        parts = []
        for i, b in enumerate(boxes):
            if type(b) is not Tensor or b.ndim != 2 or b.shape[1] != 4:
                got = tuple(b.shape) if type(b) is Tensor else type(b).__name__
                raise ValueError(f"roi_align(): boxes given as a list must hold Tensors of shape (L, 4), got {got} "
                                 f"at position {i}")
            arr = b.detach().cpu().numpy().astype(np.float64)
            parts.append(np.concatenate([np.full((arr.shape[0], 1), i, dtype=np.float64), arr], axis=1))
        return np.concatenate(parts) if parts else np.zeros((0, 5))
    if type(boxes) is not Tensor or boxes.ndim != 2 or boxes.shape[1] != 5:
        got = tuple(boxes.shape) if type(boxes) is Tensor else type(boxes).__name__
        raise ValueError(f"roi_align(): boxes must be a Tensor of shape (K, 5) (image index, x1, y1, x2, y2) or a "
                         f"list of (L, 4) Tensors, got {got}")
    rois = boxes.detach().cpu().numpy().astype(np.float64)
    n = input.shape[0]
    if rois.size and (rois[:, 0].min() < 0 or rois[:, 0].max() >= n or np.any(rois[:, 0] % 1)):
        raise ValueError(f"roi_align(): the first column of boxes must hold image indices in [0, {n}), got "
                         f"{np.unique(rois[:, 0]).tolist()}")
    return rois


def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    """Pool each box of `boxes` from the (N, C, H, W) feature map to (C, *output_size):
    returns (K, C, out_h, out_w). spatial_scale maps box coordinates to the map's (e.g. 1/16)."""
    if type(input) is not Tensor or input.ndim != 4:
        got = tuple(input.shape) if type(input) is Tensor else type(input).__name__
        raise ValueError(f"roi_align(): input must be a Tensor of shape (N, C, H, W), got {got}")
    out_hw = (output_size, output_size) if isinstance(output_size, int) else tuple(int(s) for s in output_size)
    if len(out_hw) != 2 or min(out_hw) <= 0:
        raise ValueError(f"roi_align(): output_size must be a positive int or (h, w), got {output_size}")
    rois = _rois(boxes, input)
    bidx, ay, ax = _weights(rois, out_hw, tuple(input.shape[2:]), float(spatial_scale), int(sampling_ratio),
                            bool(aligned), raw(input).dtype)
    xp = array_module(raw(input))
    # the weights live on the input's device; the image indices also stay on the host (hidx)
    return _RoIAlign.apply(input, bidx=xp.asarray(bidx), hidx=bidx, ay=xp.asarray(ay), ax=xp.asarray(ax))


class RoIAlign(nn.Module):
    """Module form of roi_align."""

    def __init__(self, output_size, spatial_scale, sampling_ratio, aligned=False):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input, rois):
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def __repr__(self):
        return (f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned})")
