"""torchvision.transforms.functional: the deterministic image operations behind the transform
classes, on three kinds of image:

- PIL images: through Pillow's own operations (resize, crop, rotate, ImageEnhance, ...), as
  torchvision does, so results equal Pillow's;
- rtx tensors laid out (..., C, H, W) (a 2-D tensor is one H x W channel);
- NumPy arrays laid out as np.asarray(pil_image) gives them: (H, W, C) or (H, W).

Tensors and arrays go through the NumPy kernels of _array.py and come back as the same kind,
dtype and device. These are data transforms: autograd does not record them, except normalize
(written in tensor ops, as torchvision's). A CUDA tensor is processed on the host and moved back.
"""
from __future__ import annotations

import numbers
from enum import Enum

import numpy as np
from PIL import Image, ImageEnhance

import rtx
from rtx.extend import Tensor
from rtx.nn.modules.utils import _pair as _nn_pair
from rtx.vision.transforms import _array as K

__all__ = ["InterpolationMode", "get_dimensions", "get_image_size", "get_image_num_channels", "to_tensor",
           "pil_to_tensor", "to_pil_image", "normalize", "resize", "pad", "crop", "center_crop", "resized_crop",
           "hflip", "vflip", "rotate", "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
           "rgb_to_grayscale", "to_grayscale", "erase"]


class InterpolationMode(Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


_PIL_RESAMPLE = {
    InterpolationMode.NEAREST: Image.Resampling.NEAREST,
    InterpolationMode.NEAREST_EXACT: Image.Resampling.NEAREST,
    InterpolationMode.BILINEAR: Image.Resampling.BILINEAR,
    InterpolationMode.BICUBIC: Image.Resampling.BICUBIC,
    InterpolationMode.BOX: Image.Resampling.BOX,
    InterpolationMode.HAMMING: Image.Resampling.HAMMING,
    InterpolationMode.LANCZOS: Image.Resampling.LANCZOS,
}
_FROM_PIL = {int(v): k for k, v in _PIL_RESAMPLE.items() if k is not InterpolationMode.NEAREST_EXACT}


def _interpolation(mode):
    """InterpolationMode, its string value, or a Pillow resampling constant."""
    if isinstance(mode, InterpolationMode):
        return mode
    if isinstance(mode, str):
        try:
            return InterpolationMode(mode)
        except ValueError:
            pass
    elif isinstance(mode, (int, np.integer)) and int(mode) in _FROM_PIL:
        return _FROM_PIL[int(mode)]
    raise TypeError(f"interpolation should be an InterpolationMode (or its string value), got {mode!r}")


# ---- the three image kinds --------------------------------------------------------------------


def _is_pil(img):
    return isinstance(img, Image.Image)


def _kind_error(img, op, allowed="a PIL image, an rtx tensor or a NumPy array"):
    return TypeError(f"{op}: img should be {allowed}, got {type(img).__name__}")


def _as_chw(img, op):
    """(array laid out (..., C, H, W), function turning such an array back into img's kind)."""
    if type(img) is Tensor:
        if img.ndim < 2:
            raise ValueError(f"{op}: a tensor image needs at least 2 dimensions (H, W), got shape {tuple(img.shape)}")
        device = img.device
        arr = img.detach().cpu().numpy()
        flat = arr.ndim == 2
        if flat:
            arr = arr[None]

        def back(out):
            t = rtx.from_numpy(np.ascontiguousarray(out[0] if flat else out))
            return t if device.type == "cpu" else t.to(device)
        return arr, back
    if isinstance(img, np.ndarray):
        if img.ndim == 2:
            return img[None], lambda out: np.ascontiguousarray(out[0])
        if img.ndim == 3:
            return np.moveaxis(img, -1, 0), lambda out: np.ascontiguousarray(np.moveaxis(out, 0, -1))
        raise ValueError(f"{op}: a NumPy image must be (H, W) or (H, W, C), got shape {img.shape}")
    raise _kind_error(img, op)


def _pil_from_array(arr, like):
    out = Image.fromarray(np.ascontiguousarray(arr))
    if like.mode == "P":
        out.putpalette(like.getpalette())
    elif out.mode != like.mode:
        out = out.convert(like.mode)
    return out


def _pil_fill(fill, img):
    """A fill as Pillow wants it: one number per band (a tuple for multi-band images)."""
    if fill is None:
        fill = 0
    bands = len(img.getbands())
    if isinstance(fill, numbers.Number):
        return fill if bands == 1 else tuple([fill] * bands)
    fill = tuple(fill)
    if len(fill) == 1:
        fill = fill * bands
    if len(fill) != bands:
        raise ValueError(f"The number of elements in 'fill' does not match the number of bands of the image "
                         f"({len(fill)} != {bands})")
    return fill[0] if bands == 1 else tuple(int(v) if img.mode != "F" else v for v in fill)


def get_dimensions(img):
    """[channels, height, width]."""
    if _is_pil(img):
        return [len(img.getbands()), img.height, img.width]
    arr, _ = _as_chw(img, "get_dimensions")
    return [arr.shape[-3], arr.shape[-2], arr.shape[-1]]


def get_image_size(img):
    """[width, height]."""
    _, h, w = get_dimensions(img)
    return [w, h]


def get_image_num_channels(img):
    return get_dimensions(img)[0]


# ---- conversion -------------------------------------------------------------------------------


def to_tensor(pic):
    """A PIL image or an (H, W[, C]) array -> a (C, H, W) tensor; uint8 values are scaled to
    float [0, 1], other dtypes keep their values (torchvision's rule)."""
    if _is_pil(pic):
        if pic.mode == "1":
            arr = 255 * np.asarray(pic, dtype=np.uint8)
        else:
            arr = np.array(pic, copy=True)
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2 or 3 dimensional. Got {pic.ndim} dimensions.")
        arr = pic
    else:
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if arr.ndim == 2:
        arr = arr[:, :, None]
    chw = np.ascontiguousarray(arr.transpose(2, 0, 1))
    if chw.dtype == np.uint8:
        dt = rtx.get_default_dtype()
        return rtx.from_numpy(chw).to(dt).div(255)
    return rtx.from_numpy(chw)


def pil_to_tensor(pic):
    """A PIL image -> a (C, H, W) tensor of its own dtype (uint8 for L/RGB), values unchanged."""
    if not _is_pil(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    arr = np.array(pic, copy=True)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return rtx.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def to_pil_image(pic, mode=None):
    """A (C, H, W) tensor or an (H, W[, C]) array -> a PIL image. Float tensors are taken as
    [0, 1] and scaled to uint8 (unless mode is "F")."""
    if type(pic) is Tensor:
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        arr = pic.detach().cpu().numpy()
        if arr.ndim == 2:
            arr = arr[None]
        if arr.dtype.kind == "f" and mode != "F":
            arr = (arr * 255).astype(np.uint8)
        arr = arr.transpose(1, 2, 0)
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        arr = pic if pic.ndim == 3 else pic[:, :, None]
    else:
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    if arr.shape[2] == 1:
        arr = arr[:, :, 0]
        if mode is None:
            mode = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16", np.dtype(np.int32): "I",
                    np.dtype(np.float32): "F"}.get(arr.dtype)
            if mode is None:
                raise TypeError(f"Input type {arr.dtype} is not supported")
    elif arr.dtype != np.uint8:
        raise TypeError(f"Input type {arr.dtype} is not supported for a {arr.shape[2]}-channel image (uint8 needed)")
    img = Image.fromarray(np.ascontiguousarray(arr))
    return img if mode is None or img.mode == mode else img.convert(mode)


def normalize(tensor, mean, std, inplace=False):
    """(tensor - mean) / std per channel of a float (..., C, H, W) tensor (or an (H, W, C) float
    NumPy array, normalised along its last axis). Differentiable for tensors."""
    if isinstance(tensor, np.ndarray):
        if tensor.dtype.kind != "f":
            raise TypeError(f"Input array should be a float array. Got {tensor.dtype}.")
        m, s = np.asarray(mean, dtype=tensor.dtype), np.asarray(std, dtype=tensor.dtype)
        if np.any(s == 0):
            raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by zero.")
        out = tensor if inplace else tensor.copy()
        out -= m
        out /= s
        return out
    if type(tensor) is not Tensor:
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                         f"{tuple(tensor.shape)}")
    m = rtx.as_tensor(np.asarray(mean, dtype=np.float64), dtype=tensor.dtype, device=tensor.device)
    s = rtx.as_tensor(np.asarray(std, dtype=np.float64), dtype=tensor.dtype, device=tensor.device)
    if bool((s == 0).any()):
        raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by zero.")
    if m.ndim == 1:
        m = m.view(-1, 1, 1)
    if s.ndim == 1:
        s = s.view(-1, 1, 1)
    if inplace:
        return tensor.sub_(m).div_(s)
    return (tensor - m) / s


# ---- geometry ---------------------------------------------------------------------------------


def _output_size(h, w, size, max_size):
    """torchvision's rule: an int (or 1-sequence) sets the shorter edge, keeping the aspect ratio;
    a pair is (h, w)."""
    if isinstance(size, numbers.Number):
        size = [int(size)]
    size = list(size)
    if len(size) == 1:
        short, long = (w, h) if w <= h else (h, w)
        new_short, new_long = size[0], int(size[0] * long / short)
        if max_size is not None:
            if max_size <= size[0]:
                raise ValueError(f"max_size = {max_size} must be strictly greater than the requested size for the "
                                 f"smaller edge size = {size}")
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
        return new_h, new_w
    if len(size) != 2:
        raise ValueError(f"size must be an int or a sequence of 1 or 2 ints, got {size}")
    if max_size is not None:
        raise ValueError("max_size should only be passed if size specifies the length of the smaller edge, i.e. size "
                         f"should be an int or a sequence of length 1, got {size}")
    return int(size[0]), int(size[1])


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize to size (h, w), or the shorter edge to `size`. PIL images use Pillow's resize
    (always antialiased); tensors and arrays follow antialias (default True, as torchvision)."""
    mode = _interpolation(interpolation)
    _, h, w = get_dimensions(img)
    oh, ow = _output_size(h, w, size, max_size)
    if min(oh, ow) <= 0:
        raise ValueError(f"resize: the output size must be positive, got {(oh, ow)} from size={size} for a "
                         f"{h}x{w} image")
    if _is_pil(img):
        return img if (oh, ow) == (h, w) else img.resize((ow, oh), _PIL_RESAMPLE[mode])
    arr, back = _as_chw(img, "resize")
    return back(K.resize(arr, (oh, ow), mode.value, bool(antialias)))


def _padding(padding):
    if isinstance(padding, numbers.Number):
        return (int(padding),) * 4
    padding = [int(p) for p in padding]
    if len(padding) == 1:
        return tuple(padding * 4)
    if len(padding) == 2:
        return padding[0], padding[1], padding[0], padding[1]
    if len(padding) == 4:
        return tuple(padding)
    raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad by an int (all sides), (left/right, top/bottom) or (left, top, right, bottom) with
    `fill` (constant) or by edge / reflect / symmetric continuation; negative padding crops."""
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError(f"Padding mode should be either constant, edge, reflect or symmetric, got {padding_mode!r}")
    ltrb = _padding(padding)
    if _is_pil(img):
        arr = np.asarray(img)
        chw = arr[None] if arr.ndim == 2 else np.moveaxis(arr, -1, 0)
        if img.mode == "P" and padding_mode == "constant":
            fill = _pil_fill(fill, img)
        out = K.pad(chw, ltrb, fill, padding_mode)
        return _pil_from_array(out[0] if arr.ndim == 2 else np.moveaxis(out, 0, -1), img)
    arr, back = _as_chw(img, "pad")
    return back(K.pad(arr, ltrb, fill, padding_mode))


def crop(img, top, left, height, width):
    """The box [top, top + height) x [left, left + width); zeros where it leaves the image."""
    if _is_pil(img):
        return img.crop((left, top, left + width, top + height))
    arr, back = _as_chw(img, "crop")
    return back(K.crop(arr, int(top), int(left), int(height), int(width)))


def _pair(size, name="size"):
    """torchvision's _setup_size: an (h, w) pair of ints from a number or a sequence of 1 or 2."""
    size = tuple(int(s) for s in _nn_pair(size))
    if len(size) != 2:
        raise ValueError(f"Please provide only two dimensions (h, w) for {name}, got {size}")
    return size


def center_crop(img, output_size):
    """The centred (h, w) box; an image smaller than it is first padded with zeros."""
    ch, cw = _pair(output_size, "output_size")
    _, h, w = get_dimensions(img)
    if ch > h or cw > w:
        ltrb = ((cw - w) // 2 if cw > w else 0, (ch - h) // 2 if ch > h else 0,
                (cw - w + 1) // 2 if cw > w else 0, (ch - h + 1) // 2 if ch > h else 0)
        img = pad(img, ltrb, fill=0)
        _, h, w = get_dimensions(img)
        if (ch, cw) == (h, w):
            return img
    # Python's round (half to even), as torchvision.
    return crop(img, int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0)), ch, cw)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(img):
    if _is_pil(img):
        return img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    arr, back = _as_chw(img, "hflip")
    return back(arr[..., ::-1].copy())


def vflip(img):
    if _is_pil(img):
        return img.transpose(Image.Transpose.FLIP_TOP_BOTTOM)
    arr, back = _as_chw(img, "vflip")
    return back(arr[..., ::-1, :].copy())


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None):
    """Rotate counter-clockwise by `angle` degrees about `center` (default: the image centre);
    expand=True grows the output to hold the whole rotated image; outside pixels take `fill`.
    Tensors and arrays use Pillow's geometry and sampling (nearest or bilinear)."""
    mode = _interpolation(interpolation)
    if center is not None and len(center) != 2:
        raise ValueError(f"center should be a sequence of length 2, got {center}")
    if _is_pil(img):
        return img.rotate(float(angle), _PIL_RESAMPLE[mode], expand, center, fillcolor=_pil_fill(fill, img))
    if mode not in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR):
        raise ValueError(f"rotate of tensors and arrays supports NEAREST and BILINEAR, got {mode}")
    arr, back = _as_chw(img, "rotate")
    matrix, out_size = K.rotation_matrix(float(angle), (arr.shape[-1], arr.shape[-2]), center, expand)
    return back(K.affine(arr, matrix, out_size, mode.value, fill))


# ---- colour -----------------------------------------------------------------------------------


def _check_factor(value, name):
    if value < 0:
        raise ValueError(f"{name} ({value}) is not non-negative.")


def adjust_brightness(img, brightness_factor):
    """Scale towards black: 0 gives black, 1 the image, 2 twice as bright (clipped)."""
    _check_factor(brightness_factor, "brightness_factor")
    if _is_pil(img):
        return ImageEnhance.Brightness(img).enhance(brightness_factor)
    arr, back = _as_chw(img, "adjust_brightness")
    return back(K.adjust_brightness(arr, brightness_factor))


def adjust_contrast(img, contrast_factor):
    """Blend with the mean grey level: 0 gives a flat grey image, 1 the image."""
    _check_factor(contrast_factor, "contrast_factor")
    if _is_pil(img):
        return ImageEnhance.Contrast(img).enhance(contrast_factor)
    arr, back = _as_chw(img, "adjust_contrast")
    return back(K.adjust_contrast(arr, contrast_factor))


def adjust_saturation(img, saturation_factor):
    """Blend with the greyscale image: 0 gives grey, 1 the image, 2 doubles the saturation."""
    _check_factor(saturation_factor, "saturation_factor")
    if _is_pil(img):
        return ImageEnhance.Color(img).enhance(saturation_factor)
    arr, back = _as_chw(img, "adjust_saturation")
    return back(K.adjust_saturation(arr, saturation_factor))


def adjust_hue(img, hue_factor):
    """Shift the hue by hue_factor turns of the colour wheel, in [-0.5, 0.5]."""
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if _is_pil(img):
        if img.mode in ("L", "1", "I", "F"):
            return img
        h, s, v = img.convert("HSV").split()
        np_h = np.array(h, dtype=np.uint8)
        with np.errstate(over="ignore"):
            np_h += np.array(hue_factor * 255).astype(np.int8).astype(np.uint8)
        return Image.merge("HSV", (Image.fromarray(np_h), s, v)).convert(img.mode)
    arr, back = _as_chw(img, "adjust_hue")
    return back(K.adjust_hue(arr, hue_factor))


def rgb_to_grayscale(img, num_output_channels=1):
    """Luma of an RGB image, as 1 or 3 (equal) channels."""
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels should be either 1 or 3, got {num_output_channels}")
    if _is_pil(img):
        return to_grayscale(img, num_output_channels)
    arr, back = _as_chw(img, "rgb_to_grayscale")
    return back(K.rgb_to_grayscale(arr, num_output_channels))


def to_grayscale(img, num_output_channels=1):
    """A PIL image to greyscale with Pillow's convert("L") (ITU-R 601-2 luma)."""
    if not _is_pil(img):
        raise TypeError(f"img should be PIL Image. Got {type(img)}")
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels should be either 1 or 3, got {num_output_channels}")
    gray = img.convert("L")
    if num_output_channels == 3:
        g = np.asarray(gray)
        gray = Image.fromarray(np.dstack([g, g, g]))
    return gray


def erase(img, i, j, h, w, v, inplace=False):
    """Overwrite the box [i, i + h) x [j, j + w) of a (..., C, H, W) tensor (or an (H, W, C) array)
    with v (a number, or an array broadcastable to (C, h, w))."""
    if _is_pil(img):
        raise TypeError(f"img should be Tensor Image (or a NumPy array). Got {type(img)}; apply ToTensor first")
    if type(img) is Tensor:
        if not inplace:
            img = img.clone()
        val = v if type(v) is Tensor else rtx.as_tensor(np.asarray(v))
        img[..., i:i + h, j:j + w] = val.to(dtype=img.dtype, device=img.device)
        return img
    if not isinstance(img, np.ndarray):
        raise _kind_error(img, "erase", "an rtx tensor or a NumPy array")
    out = img if inplace else img.copy()
    chw = out[None] if out.ndim == 2 else np.moveaxis(out, -1, 0)   # a view: writes land in out
    chw[..., i:i + h, j:j + w] = np.asarray(v)
    return out
