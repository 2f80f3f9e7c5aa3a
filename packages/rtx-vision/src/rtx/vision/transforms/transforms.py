"""The transform classes of torchvision.transforms, on PIL images, rtx tensors (..., C, H, W) and
NumPy arrays (H, W[, C]); see functional.py for what each kind goes through.

Random transforms draw from an rtx Generator: the one passed as `generator=` (an rtx addition),
else rtx's default CPU generator, which rtx.manual_seed seeds and which each DataLoader worker
seeds differently, so augmentation is reproducible. The draws follow torchvision's order and
distributions (not its numbers: the generators differ)."""
from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence

import numpy as np

import rtx.nn as nn
from rtx.runtime.random import generator_for
from rtx.vision.transforms import functional as F
from rtx.vision.transforms.functional import InterpolationMode, _interpolation, _pair

__all__ = ["Compose", "ToTensor", "PILToTensor", "ToPILImage", "Lambda", "Normalize", "Resize", "CenterCrop", "Pad",
           "RandomCrop", "RandomResizedCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "RandomRotation",
           "ColorJitter", "Grayscale", "RandomGrayscale", "RandomErasing", "RandomApply"]


def _rng(generator):
    return (generator if generator is not None else generator_for("cpu")).np


def _uniform(generator, a, b):
    return float(a + (b - a) * _rng(generator).random())


def _randint(generator, low, high):
    """An int in [low, high)."""
    return int(_rng(generator).integers(low, high))


class Compose:
    """Apply transforms in order."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({body}\n)"


class ToTensor:
    """PIL image or (H, W[, C]) array -> (C, H, W) tensor; uint8 scaled to [0, 1]."""

    def __call__(self, pic):
        return F.to_tensor(pic)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class PILToTensor:
    """PIL image -> (C, H, W) tensor of the image's dtype, values unchanged."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class ToPILImage:
    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)

    def __repr__(self):
        return f"{self.__class__.__name__}(mode={self.mode})" if self.mode else f"{self.__class__.__name__}()"


class Lambda:
    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self):
        return f"{self.__class__.__name__}()"


class _Transform(nn.Module):
    """A transform is a Module (as torchvision's), so it fits in nn.Sequential too."""

    def __call__(self, *args, **kwargs):
        # Skip Module's hook machinery: transforms run per sample, in data-loading loops.
        return self.forward(*args, **kwargs)


class Normalize(_Transform):
    """(x - mean) / std per channel of a float tensor image (or an (H, W, C) float array)."""

    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean, self.std, self.inplace = mean, std, inplace

    def forward(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def __repr__(self):
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


class Resize(_Transform):
    """Resize to (h, w), or the shorter edge to `size` keeping the aspect ratio."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        super().__init__()
        if not isinstance(size, (int, Sequence)) or isinstance(size, str):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, Sequence) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size = size
        self.max_size = max_size
        self.interpolation = _interpolation(interpolation)
        self.antialias = antialias

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self):
        return (f"{self.__class__.__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")


class CenterCrop(_Transform):
    def __init__(self, size):
        super().__init__()
        self.size = _pair(size)

    def forward(self, img):
        return F.center_crop(img, self.size)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size})"


class Pad(_Transform):
    def __init__(self, padding, fill=0, padding_mode="constant"):
        super().__init__()
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        if isinstance(padding, Sequence) and len(padding) not in (1, 2, 4):
            raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element "
                             "tuple")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self):
        return f"{self.__class__.__name__}(padding={self.padding}, fill={self.fill}, padding_mode={self.padding_mode})"


class RandomCrop(_Transform):
    """A random (h, w) crop, after optional padding (pad_if_needed pads images smaller than it)."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant", generator=None):
        super().__init__()
        self.size = _pair(size)
        self.padding, self.pad_if_needed = padding, pad_if_needed
        self.fill, self.padding_mode = fill, padding_mode
        self.generator = generator

    @staticmethod
    def get_params(img, output_size, generator=None):
        """(top, left, h, w) of a random crop of output_size."""
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        return _randint(generator, 0, h - th + 1), _randint(generator, 0, w - tw + 1), th, tw

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, height, width = F.get_dimensions(img)
        if self.pad_if_needed and width < self.size[1]:
            img = F.pad(img, [self.size[1] - width, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and height < self.size[0]:
            img = F.pad(img, [0, self.size[0] - height], self.fill, self.padding_mode)
        i, j, h, w = self.get_params(img, self.size, self.generator)
        return F.crop(img, i, j, h, w)

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class RandomResizedCrop(_Transform):
    """A crop of random area (scale of the image's) and aspect ratio, resized to `size`."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True, generator=None):
        super().__init__()
        self.size = _pair(size)
        if not isinstance(scale, Sequence) or not isinstance(ratio, Sequence):
            raise TypeError("Scale and ratio should be sequences of two numbers (min, max)")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)", stacklevel=2)
        self.scale, self.ratio = scale, ratio
        self.interpolation = _interpolation(interpolation)
        self.antialias = antialias
        self.generator = generator

    @staticmethod
    def get_params(img, scale, ratio, generator=None):
        """(top, left, h, w): ten tries at a random area and log-uniform aspect ratio that fit,
        then the largest centred crop within the ratio bounds."""
        _, height, width = F.get_dimensions(img)
        area = height * width
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            target_area = area * _uniform(generator, scale[0], scale[1])
            aspect_ratio = math.exp(_uniform(generator, log_ratio[0], log_ratio[1]))
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                return _randint(generator, 0, height - h + 1), _randint(generator, 0, width - w + 1), h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w = width
            h = int(round(w / min(ratio)))
        elif in_ratio > max(ratio):
            h = height
            w = int(round(h * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio, self.generator)
        return F.resized_crop(img, i, j, h, w, self.size, self.interpolation, antialias=self.antialias)

    def __repr__(self):
        return (f"{self.__class__.__name__}(size={self.size}, scale={tuple(round(s, 4) for s in self.scale)}, "
                f"ratio={tuple(round(r, 4) for r in self.ratio)}, interpolation={self.interpolation.value}, "
                f"antialias={self.antialias})")


class _RandomFlip(_Transform):
    _fn = None

    def __init__(self, p=0.5, generator=None):
        super().__init__()
        self.p = p
        self.generator = generator

    def forward(self, img):
        if _rng(self.generator).random() < self.p:
            return type(self)._fn(img)
        return img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class RandomHorizontalFlip(_RandomFlip):
    _fn = staticmethod(F.hflip)


class RandomVerticalFlip(_RandomFlip):
    _fn = staticmethod(F.vflip)


def _degrees(degrees, name):
    if isinstance(degrees, numbers.Number):
        if degrees < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        return [-float(degrees), float(degrees)]
    if not isinstance(degrees, Sequence) or len(degrees) != 2:
        raise ValueError(f"If {name} is a sequence, it must be of len 2.")
    return [float(d) for d in degrees]


class RandomRotation(_Transform):
    """Rotate by an angle drawn uniformly from degrees (d -> [-d, d])."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=0,
                 generator=None):
        super().__init__()
        self.degrees = _degrees(degrees, "degrees")
        if center is not None and (not isinstance(center, Sequence) or len(center) != 2):
            raise ValueError("If center is a sequence, it must be of len 2.")
        self.interpolation = _interpolation(interpolation)
        self.expand, self.center, self.fill = expand, center, fill
        self.generator = generator

    @staticmethod
    def get_params(degrees, generator=None):
        return _uniform(generator, degrees[0], degrees[1])

    def forward(self, img):
        angle = self.get_params(self.degrees, self.generator)
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, self.fill)

    def __repr__(self):
        return (f"{self.__class__.__name__}(degrees={self.degrees}, interpolation={self.interpolation.value}, "
                f"expand={self.expand}, fill={self.fill})")


class ColorJitter(_Transform):
    """Random brightness, contrast, saturation and hue, applied in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0, generator=None):
        super().__init__()
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)
        self.generator = generator

    @staticmethod
    def _check_input(value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            value = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        if value[0] == value[1] == center:
            return None
        return tuple(value)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue, generator=None):
        """(order of the four adjustments, and each factor or None)."""
        fn_idx = _rng(generator).permutation(4)
        b = None if brightness is None else _uniform(generator, *brightness)
        c = None if contrast is None else _uniform(generator, *contrast)
        s = None if saturation is None else _uniform(generator, *saturation)
        h = None if hue is None else _uniform(generator, *hue)
        return fn_idx, b, c, s, h

    def forward(self, img):
        fn_idx, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation, self.hue,
                                             self.generator)
        for fn_id in fn_idx:
            if fn_id == 0 and b is not None:
                img = F.adjust_brightness(img, b)
            elif fn_id == 1 and c is not None:
                img = F.adjust_contrast(img, c)
            elif fn_id == 2 and s is not None:
                img = F.adjust_saturation(img, s)
            elif fn_id == 3 and h is not None:
                img = F.adjust_hue(img, h)
        return img

    def __repr__(self):
        return (f"{self.__class__.__name__}(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")


class Grayscale(_Transform):
    def __init__(self, num_output_channels=1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, num_output_channels=self.num_output_channels)

    def __repr__(self):
        return f"{self.__class__.__name__}(num_output_channels={self.num_output_channels})"


class RandomGrayscale(_Transform):
    """Greyscale with probability p, keeping the number of channels."""

    def __init__(self, p=0.1, generator=None):
        super().__init__()
        self.p = p
        self.generator = generator

    def forward(self, img):
        if _rng(self.generator).random() < self.p:
            return F.rgb_to_grayscale(img, num_output_channels=F.get_dimensions(img)[0])
        return img

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p})"


class RandomErasing(_Transform):
    """With probability p, overwrite a random box (area fraction in scale, aspect ratio in ratio)
    of a tensor image (or an (H, W, C) array) with `value`: a number, one per channel, or
    "random" (standard normal noise)."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False, generator=None):
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, Sequence) or not isinstance(ratio, Sequence):
            raise TypeError("Scale and ratio should be sequences")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)", stacklevel=2)
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if p < 0 or p > 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace
        self.generator = generator

    @staticmethod
    def get_params(img, scale, ratio, value=None, generator=None):
        """(top, left, h, w, values) of the box, or the whole image unchanged after ten misses."""
        img_c, img_h, img_w = F.get_dimensions(img)
        area = img_h * img_w
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            erase_area = area * _uniform(generator, scale[0], scale[1])
            aspect_ratio = math.exp(_uniform(generator, log_ratio[0], log_ratio[1]))
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if not (h < img_h and w < img_w):
                continue
            if value is None:
                v = _rng(generator).standard_normal((img_c, h, w)).astype(np.float32)
            else:
                v = np.asarray(value, dtype=np.float32)[:, None, None]
            return _randint(generator, 0, img_h - h + 1), _randint(generator, 0, img_w - w + 1), h, w, v
        return 0, 0, img_h, img_w, None

    def forward(self, img):
        if F._is_pil(img):
            raise TypeError(f"img should be Tensor Image (or a NumPy array). Got {type(img)}; apply ToTensor first")
        if _rng(self.generator).random() >= self.p:
            return img
        if isinstance(self.value, numbers.Number):
            value = [float(self.value)]
        elif isinstance(self.value, str):
            value = None
        else:
            value = [float(v) for v in self.value]
        channels = F.get_dimensions(img)[0]
        if value is not None and len(value) not in (1, channels):
            raise ValueError(f"If value is a sequence, it should have either a single value or {channels} "
                             "(number of input channels)")
        i, j, h, w, v = self.get_params(img, self.scale, self.ratio, value, self.generator)
        if v is None:
            return img
        return F.erase(img, i, j, h, w, v, self.inplace)

    def __repr__(self):
        return (f"{self.__class__.__name__}(p={self.p}, scale={self.scale}, ratio={self.ratio}, "
                f"value={self.value}, inplace={self.inplace})")


class RandomApply(_Transform):
    """Apply a list of transforms, all or none, with probability p."""

    def __init__(self, transforms, p=0.5, generator=None):
        super().__init__()
        self.transforms = list(transforms)
        self.p = p
        self.generator = generator

    def forward(self, img):
        if self.p < _rng(self.generator).random():
            return img
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self):
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}(\n    p={self.p}{body}\n)"
