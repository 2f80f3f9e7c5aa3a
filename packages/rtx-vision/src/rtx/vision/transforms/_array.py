"""The array kernels behind the transforms: NumPy on images laid out (..., C, H, W), any dtype.

Resampling follows Pillow's algorithm (ImagingResample): output pixel i covers input
[i * s, (i + 1) * s), s = in / out, and takes the filter's weights around its centre, normalised
over the taps inside the image. With antialias (and s > 1) the filter is widened by s, which is
what Pillow always does and what torchvision's antialias=True reproduces; without it the
bilinear weights are exactly those of interpolate(mode="bilinear", align_corners=False).
Affine warps (rotation) map each output pixel centre through the inverse matrix, as Pillow's
Image.transform does. Integer images are computed in float32 and rounded back (resampling) or
truncated (colour blends), as torchvision does for uint8 tensors.
"""
from __future__ import annotations

import math

import numpy as np

# ---- dtypes -----------------------------------------------------------------------------------


def work_dtype(arr):
    return arr.dtype if arr.dtype.kind == "f" and arr.dtype.itemsize >= 4 else np.dtype(np.float32)


def max_value(dtype):
    """The value of "white": 1.0 for floats, the top of the range for integers (uint8: 255)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return 1.0
    if dtype.kind == "b":
        return 1
    return np.iinfo(dtype).max


def round_back(out, dtype):
    """Resampled float values back to the image dtype: integers are rounded and clipped."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iub":
        info = np.iinfo(dtype) if dtype.kind != "b" else None
        out = np.rint(out)
        if info is not None:
            out = np.clip(out, info.min, info.max)
    return out.astype(dtype, copy=False)


# ---- resampling -------------------------------------------------------------------------------


def _triangle(x):
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _cubic(a):
    def f(x):
        x = np.abs(x)
        near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        far = (((x - 5.0) * x + 8.0) * x - 4.0) * a
        return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))
    return f


def _weights(in_size, out_size, kind, antialias):
    """(out_size, in_size) resampling matrix along one axis."""
    scale = in_size / out_size
    centers = (np.arange(out_size) + 0.5) * scale
    taps = np.arange(in_size) + 0.5
    if kind == "bilinear":
        support, filt, clamp = 1.0, _triangle, False
    elif kind == "bicubic":
        # Pillow's (and antialiased PyTorch's) cubic has a = -0.5; PyTorch's plain bicubic has
        # a = -0.75 and reads clamped border pixels instead of dropping outside taps.
        support, filt, clamp = 2.0, _cubic(-0.5 if antialias else -0.75), not antialias
    else:
        raise ValueError(f"resize of arrays and tensors supports nearest, nearest-exact, bilinear and bicubic, "
                         f"got {kind!r}")
    fscale = max(scale, 1.0) if antialias else 1.0
    if not clamp:
        w = filt((taps[None, :] - centers[:, None]) / fscale)
        total = w.sum(axis=1, keepdims=True)
        return w / np.where(total == 0, 1.0, total)
    # Clamped taps: the filter's 2 * support neighbours, indices clipped into the image.
    src = centers - 0.5
    base = np.floor(src).astype(np.int64)
    w = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    for k in range(-int(support) + 1, int(support) + 1):
        idx = base + k
        np.add.at(w, (rows, np.clip(idx, 0, in_size - 1)), filt(idx - src))
    return w


def resize(arr, size, kind="bilinear", antialias=True):
    """arr (..., H, W) resampled to size (h, w)."""
    h, w = arr.shape[-2:]
    oh, ow = size
    if (oh, ow) == (h, w):
        return arr.copy()
    dt = work_dtype(arr)
    out = arr.astype(dt, copy=False)
    if kind in ("nearest", "nearest-exact"):
        # PyTorch's two nearest rules: source floor(i * s) and floor((i + 0.5) * s).
        ys = np.minimum(np.floor(np.arange(oh) * (h / oh) if kind == "nearest" else
                                 (np.arange(oh) + 0.5) * (h / oh)).astype(np.int64), h - 1)
        xs = np.minimum(np.floor(np.arange(ow) * (w / ow) if kind == "nearest" else
                                 (np.arange(ow) + 0.5) * (w / ow)).astype(np.int64), w - 1)
        return arr[..., ys[:, None], xs[None, :]]
    if oh != h:
        out = np.matmul(_weights(h, oh, kind, antialias).astype(dt), out)
    if ow != w:
        out = np.matmul(out, _weights(w, ow, kind, antialias).T.astype(dt))
    if kind == "bicubic" and arr.dtype == np.uint8:
        out = np.clip(out, 0, 255)
    return round_back(out, arr.dtype)


# ---- geometry ---------------------------------------------------------------------------------


def _fill_array(fill, channels, dtype):
    """A fill value as a (C, 1, 1) array (a number, or one value per channel)."""
    if fill is None:
        fill = 0
    f = np.asarray(fill, dtype=np.float64).reshape(-1)
    if f.size not in (1, channels):
        raise ValueError(f"fill must be a number or a sequence of {channels} values (one per channel), "
                         f"got {fill!r}")
    f = np.broadcast_to(f, (channels,)).reshape(channels, 1, 1)
    return round_back(f, dtype) if np.dtype(dtype).kind != "f" else f.astype(dtype)


def pad(arr, padding, fill=0, mode="constant"):
    """padding = (left, top, right, bottom); mode: constant, edge, reflect, symmetric (NumPy's
    np.pad modes). Negative padding crops."""
    left, top, right, bottom = padding
    crop_sl = (slice(-top if top < 0 else None, bottom if bottom < 0 else None),
               slice(-left if left < 0 else None, right if right < 0 else None))
    if min(padding) < 0:
        arr = arr[..., crop_sl[0], crop_sl[1]]
        left, top, right, bottom = (max(p, 0) for p in (left, top, right, bottom))
    widths = [(0, 0)] * (arr.ndim - 2) + [(top, bottom), (left, right)]
    if mode == "constant":
        h, w = arr.shape[-2:]
        c = arr.shape[-3] if arr.ndim >= 3 else 1
        out = np.empty(arr.shape[:-2] + (h + top + bottom, w + left + right), dtype=arr.dtype)
        f = _fill_array(fill, c, arr.dtype)
        out[...] = f if arr.ndim >= 3 else f[0]
        out[..., top:top + h, left:left + w] = arr
        return out
    if mode not in ("edge", "reflect", "symmetric"):
        raise ValueError(f"Padding mode should be either constant, edge, reflect or symmetric, got {mode!r}")
    return np.pad(arr, widths, mode=mode)


def crop(arr, top, left, height, width):
    """arr[..., top:top+height, left:left+width], zeros where the box leaves the image."""
    h, w = arr.shape[-2:]
    if top >= 0 and left >= 0 and top + height <= h and left + width <= w:
        return arr[..., top:top + height, left:left + width].copy()
    out = np.zeros(arr.shape[:-2] + (height, width), dtype=arr.dtype)
    y0, y1 = max(top, 0), min(top + height, h)
    x0, x1 = max(left, 0), min(left + width, w)
    if y0 < y1 and x0 < x1:
        out[..., y0 - top:y1 - top, x0 - left:x1 - left] = arr[..., y0:y1, x0:x1]
    return out


def rotation_matrix(angle, size, center=None, expand=False):
    """Pillow's Image.rotate geometry: the inverse affine matrix (a, b, c, d, e, f) taking output
    coordinates to input ones (x_in = a x + b y + c, y_in = d x + e y + f, pixel edges at
    integers) and the output size (w, h). Counter-clockwise by `angle` degrees about `center`
    (default: the image centre)."""
    w, h = size
    cx, cy = (w / 2.0, h / 2.0) if center is None else (float(center[0]), float(center[1]))
    rad = -math.radians(angle % 360.0)
    a, b = round(math.cos(rad), 15), round(math.sin(rad), 15)
    d, e = round(-math.sin(rad), 15), round(math.cos(rad), 15)
    c = a * -cx + b * -cy + cx
    f = d * -cx + e * -cy + cy
    if expand:
        xs, ys = [], []
        for x, y in ((0, 0), (w, 0), (w, h), (0, h)):
            xs.append(a * x + b * y + c)
            ys.append(d * x + e * y + f)
        nw = math.ceil(max(xs)) - math.floor(min(xs))
        nh = math.ceil(max(ys)) - math.floor(min(ys))
        tx, ty = -(nw - w) / 2.0, -(nh - h) / 2.0
        c, f = a * tx + b * ty + c, d * tx + e * ty + f
        w, h = nw, nh
    return (a, b, c, d, e, f), (w, h)


def affine(arr, matrix, out_size, kind="nearest", fill=0):
    """Warp arr (..., C, H, W) to out_size (w, h): output pixel (x, y) reads the input at
    matrix applied to its centre (x + 0.5, y + 0.5). Points outside the input take `fill`;
    bilinear reads clamped neighbours inside the image (Pillow's rule)."""
    a, b, c, d, e, f = matrix
    ow, oh = out_size
    h, w = arr.shape[-2:]
    ys, xs = np.meshgrid(np.arange(oh) + 0.5, np.arange(ow) + 0.5, indexing="ij")
    xin = a * xs + b * ys + c
    yin = d * xs + e * ys + f
    channels = arr.shape[-3] if arr.ndim >= 3 else 1
    fill_arr = _fill_array(fill, channels, work_dtype(arr) if kind != "nearest" else arr.dtype)
    if arr.ndim < 3:
        fill_arr = fill_arr[0]
    inside = (xin >= 0) & (xin < w) & (yin >= 0) & (yin < h)
    if kind == "nearest":
        xi = np.clip(np.floor(xin).astype(np.int64), 0, w - 1)
        yi = np.clip(np.floor(yin).astype(np.int64), 0, h - 1)
        out = arr[..., yi, xi]
        return np.where(inside, out, fill_arr).astype(arr.dtype, copy=False)
    if kind != "bilinear":
        raise ValueError(f"rotation of arrays and tensors supports nearest and bilinear, got {kind!r}")
    dt = work_dtype(arr)
    src = arr.astype(dt, copy=False)
    xf, yf = xin - 0.5, yin - 0.5
    x0, y0 = np.floor(xf).astype(np.int64), np.floor(yf).astype(np.int64)
    dx, dy = (xf - x0).astype(dt), (yf - y0).astype(dt)
    xa, xb = np.clip(x0, 0, w - 1), np.clip(x0 + 1, 0, w - 1)
    ya, yb = np.clip(y0, 0, h - 1), np.clip(y0 + 1, 0, h - 1)
    top = src[..., ya, xa] + (src[..., ya, xb] - src[..., ya, xa]) * dx
    bottom = src[..., yb, xa] + (src[..., yb, xb] - src[..., yb, xa]) * dx
    out = top + (bottom - top) * dy
    out = np.where(inside, out, fill_arr)
    return round_back(out, arr.dtype)


# ---- colour -----------------------------------------------------------------------------------


def rgb_to_grayscale(arr, num_output_channels=1):
    """ITU-R 601-2 luma (torchvision's weights 0.2989, 0.587, 0.114); integer images truncate,
    as torchvision's .to(dtype) does."""
    c = arr.shape[-3]
    if c == 1:
        gray = arr
    elif c == 3:
        r, g, b = (arr[..., i, :, :].astype(work_dtype(arr)) for i in range(3))
        gray = (0.2989 * r + 0.587 * g + 0.114 * b)[..., None, :, :]
        gray = gray.astype(arr.dtype) if arr.dtype.kind == "f" else np.trunc(gray).astype(arr.dtype)
    else:
        raise ValueError(f"Grayscale expects an image with 1 or 3 channels, got {c} channels")
    reps = [1] * arr.ndim
    reps[-3] = num_output_channels
    return np.tile(gray, reps) if num_output_channels > 1 else gray.copy()


def blend(img1, img2, ratio):
    """ratio * img1 + (1 - ratio) * img2, clipped to [0, white], back in img1's dtype."""
    dt = work_dtype(img1)
    out = ratio * img1.astype(dt) + (1.0 - ratio) * np.asarray(img2, dtype=dt)
    out = np.clip(out, 0, max_value(img1.dtype))
    return out.astype(img1.dtype) if img1.dtype.kind == "f" else np.trunc(out).astype(img1.dtype)


def adjust_brightness(arr, factor):
    return blend(arr, np.zeros((), dtype=work_dtype(arr)), factor)


def adjust_contrast(arr, factor):
    dt = work_dtype(arr)
    gray = rgb_to_grayscale(arr) if arr.shape[-3] == 3 else arr
    mean = gray.astype(dt).mean(axis=(-3, -2, -1), keepdims=True)
    return blend(arr, mean, factor)


def adjust_saturation(arr, factor):
    if arr.shape[-3] == 1:
        return arr.copy()
    return blend(arr, rgb_to_grayscale(arr), factor)


def rgb_to_hsv(img):
    """img (..., 3, H, W) floats in [0, 1] -> hue, saturation, value in [0, 1] (colorsys's formulas)."""
    r, g, b = img[..., 0, :, :], img[..., 1, :, :], img[..., 2, :, :]
    maxc, minc = img.max(axis=-3), img.min(axis=-3)
    eqc = maxc == minc
    cr = maxc - minc
    s = cr / np.where(eqc, 1.0, maxc)
    div = np.where(eqc, 1.0, cr)
    rc, gc, bc = (maxc - r) / div, (maxc - g) / div, (maxc - b) / div
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
    h = np.fmod((hr + hg + hb) / 6.0 + 1.0, 1.0)
    return np.stack((h, s, maxc), axis=-3)


def hsv_to_rgb(img):
    h, s, v = img[..., 0, :, :], img[..., 1, :, :], img[..., 2, :, :]
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    i = i.astype(np.int64) % 6
    p = np.clip(v * (1.0 - s), 0.0, 1.0)
    q = np.clip(v * (1.0 - s * f), 0.0, 1.0)
    t = np.clip(v * (1.0 - s * (1.0 - f)), 0.0, 1.0)
    r = np.choose(i, (v, q, p, p, t, v))
    g = np.choose(i, (t, v, v, q, p, p))
    b = np.choose(i, (p, p, t, v, v, q))
    return np.stack((r, g, b), axis=-3)


def adjust_hue(arr, hue_factor):
    """Rotate the hue by hue_factor (in turns, [-0.5, 0.5]) in HSV space."""
    if arr.shape[-3] == 1:
        return arr.copy()
    if arr.shape[-3] != 3:
        raise ValueError(f"adjust_hue expects an image with 1 or 3 channels, got {arr.shape[-3]}")
    dt = work_dtype(arr)
    x = arr.astype(dt)
    if arr.dtype.kind != "f":
        x = x / max_value(arr.dtype)
    hsv = rgb_to_hsv(x)
    hsv[..., 0, :, :] = np.mod(hsv[..., 0, :, :] + hue_factor, 1.0)
    out = hsv_to_rgb(hsv).astype(dt)
    if arr.dtype.kind == "f":
        return out.astype(arr.dtype)
    # torchvision's float -> integer conversion: scale by (max + 1 - eps), then truncate.
    return (out * (max_value(arr.dtype) + 1.0 - 1e-3)).astype(arr.dtype)
