"""CLIPImageProcessor: images to CLIP's pixel_values, step for step as transformers' PIL backend.

    proc = CLIPImageProcessor()                      # or .from_pretrained("ckpt/") (preprocessor_config.json)
    proc(images=[pil_image, hwc_uint8_array], return_tensors="rtx")["pixel_values"]   # (2, 3, 224, 224) float32

Steps: RGB conversion (alpha composited onto white), resize so the shortest side is size["shortest_edge"]
(PIL bicubic; the long side is int(short * long / short_old), truncated), center crop to crop_size
(zero-padded when the image is smaller), rescale by 1/255 and normalise with CLIP's mean and std.
Inputs: PIL images, NumPy arrays (HWC or CHW; uint8 in [0, 255] or floats in [0, 1]) and rtx Tensors.
As in transformers, float inputs are rescaled by 1/255 again unless do_rescale=False is passed.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rtx.nlg.tokenizers import BatchEncoding

__all__ = ["CLIPImageProcessor", "OPENAI_CLIP_MEAN", "OPENAI_CLIP_STD"]

OPENAI_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
OPENAI_CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


class CLIPImageProcessor:
    """transformers' CLIPImageProcessor options, names and defaults."""

    model_input_names = ["pixel_values"]

    def __init__(self, do_resize=True, size=None, resample=3, do_center_crop=True, crop_size=None, do_rescale=True,
                 rescale_factor=1 / 255, do_normalize=True, image_mean=None, image_std=None, do_convert_rgb=True,
                 **kwargs):
        unknown = set(kwargs) - {"image_processor_type", "processor_class", "feature_extractor_type",
                                 "default_to_square"}
        if unknown:
            raise TypeError(f"CLIPImageProcessor: unknown option(s) {sorted(unknown)}")
        self.do_resize, self.resample = do_resize, int(resample)
        if isinstance(size, int):
            size = {"shortest_edge": size}
        self.size = dict(size) if size is not None else {"shortest_edge": 224}
        if "shortest_edge" not in self.size and not {"height", "width"} <= set(self.size):
            raise ValueError(f"size must hold 'shortest_edge' or 'height' and 'width', got {self.size}")
        self.do_center_crop = do_center_crop
        if isinstance(crop_size, int):
            crop_size = {"height": crop_size, "width": crop_size}
        self.crop_size = dict(crop_size) if crop_size is not None else {"height": 224, "width": 224}
        self.do_rescale, self.rescale_factor = do_rescale, float(rescale_factor)
        self.do_normalize = do_normalize
        self.image_mean = list(image_mean) if image_mean is not None else list(OPENAI_CLIP_MEAN)
        self.image_std = list(image_std) if image_std is not None else list(OPENAI_CLIP_STD)
        self.do_convert_rgb = do_convert_rgb

    # ---- files ----------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, path, **overrides) -> CLIPImageProcessor:
        p = Path(path)
        f = p / "preprocessor_config.json" if p.is_dir() else p
        if not f.exists():
            raise FileNotFoundError(f"CLIPImageProcessor.from_pretrained: no preprocessor_config.json at {f}")
        with open(f, encoding="utf-8") as fh:
            cfg = json.load(fh)
        return cls(**{**cfg, **overrides})

    def to_dict(self) -> dict:
        return {"do_resize": self.do_resize, "size": self.size, "resample": self.resample,
                "do_center_crop": self.do_center_crop, "crop_size": self.crop_size, "do_rescale": self.do_rescale,
                "rescale_factor": self.rescale_factor, "do_normalize": self.do_normalize,
                "image_mean": self.image_mean, "image_std": self.image_std, "do_convert_rgb": self.do_convert_rgb,
                "image_processor_type": "CLIPImageProcessor"}

    def save_pretrained(self, directory) -> None:
        p = Path(directory)
        p.mkdir(parents=True, exist_ok=True)
        with open(p / "preprocessor_config.json", "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)

    # ---- processing -----------------------------------------------------------------------
    def __call__(self, images, return_tensors: str | None = "rtx", **kwargs) -> BatchEncoding:
        return self.preprocess(images, return_tensors=return_tensors, **kwargs)

    def preprocess(self, images, return_tensors: str | None = "rtx", do_rescale=None, do_normalize=None,
                   do_resize=None, do_center_crop=None) -> BatchEncoding:
        """pixel_values (batch, 3, height, width) float32: an rtx Tensor ("rtx"/"pt"), a NumPy array
        ("np") or a list of arrays (None)."""
        do_rescale = self.do_rescale if do_rescale is None else do_rescale
        do_normalize = self.do_normalize if do_normalize is None else do_normalize
        do_resize = self.do_resize if do_resize is None else do_resize
        do_center_crop = self.do_center_crop if do_center_crop is None else do_center_crop
        out = []
        for image in _as_list(images):
            x = self._to_chw(image)
            if do_resize:
                x = self.resize(x)
            if do_center_crop:
                x = center_crop(x, self.crop_size["height"], self.crop_size["width"])
            if do_rescale:
                x = (x.astype(np.float64) * self.rescale_factor).astype(np.float32)
            if do_normalize:
                x = normalize(x, self.image_mean, self.image_std)
            out.append(x)
        if return_tensors is None:
            return BatchEncoding(pixel_values=out)
        if len({a.shape for a in out}) > 1:
            raise ValueError(f"images ended in different shapes {sorted({a.shape for a in out})}; enable "
                             f"do_center_crop (or pass return_tensors=None)")
        batch = np.stack(out)
        if return_tensors == "np":
            return BatchEncoding(pixel_values=batch)
        if return_tensors not in ("rtx", "pt"):
            raise ValueError(f"return_tensors must be 'rtx' (or 'pt'), 'np' or None, got {return_tensors!r}")
        import rtx
        return BatchEncoding(pixel_values=rtx.from_numpy(np.ascontiguousarray(batch)))

    def _to_chw(self, image) -> np.ndarray:
        from PIL import Image
        if isinstance(image, Image.Image):
            if self.do_convert_rgb:
                has_alpha = "A" in image.getbands() or image.info.get("transparency") is not None
                if has_alpha:
                    white = Image.new("RGBA", image.size, (255, 255, 255, 255))
                    image = Image.alpha_composite(white, image.convert("RGBA")).convert("RGB")
                else:
                    image = image.convert("RGB")
            a = np.array(image)
            return a[None] if a.ndim == 2 else np.moveaxis(a, -1, 0)
        if hasattr(image, "numpy") and not isinstance(image, np.ndarray):   # rtx (or torch) tensors
            image = image.detach().cpu().numpy() if hasattr(image, "detach") else image.numpy()
        if not isinstance(image, np.ndarray):
            raise TypeError(f"CLIPImageProcessor: an image must be a PIL image, a NumPy array or a Tensor, got "
                            f"{type(image).__name__}")
        if image.ndim == 2:
            image = image[None]
        elif image.ndim != 3:
            raise ValueError(f"CLIPImageProcessor: an array image must be (H, W), (H, W, C) or (C, H, W), got "
                             f"shape {image.shape}")
        elif image.shape[0] in (1, 3, 4):      # channels first (transformers' choice when ambiguous too)
            pass
        elif image.shape[-1] in (1, 3, 4):
            image = np.moveaxis(image, -1, 0)
        else:
            raise ValueError(f"CLIPImageProcessor: cannot tell the channel axis of shape {image.shape} "
                             f"(1, 3 or 4 channels first or last)")
        if self.do_convert_rgb:
            if image.shape[0] == 1:
                image = np.repeat(image, 3, axis=0)
            elif image.shape[0] == 4:
                white = 255 if np.issubdtype(image.dtype, np.integer) else 1.0
                alpha = image[3:4] / white
                comp = alpha * image[:3] + (1 - alpha) * white
                image = np.round(comp).astype(image.dtype) if white == 255 else comp.astype(image.dtype)
        return image

    def resize(self, x: np.ndarray) -> np.ndarray:
        """PIL resize of a CHW array, as transformers does it (floats in [0, 1] go through uint8)."""
        from PIL import Image
        h, w = x.shape[1:]
        if "shortest_edge" in self.size:
            s = self.size["shortest_edge"]
            short, long = (w, h) if w <= h else (h, w)
            new_long = int(s * long / short)
            oh, ow = (new_long, s) if w <= h else (s, new_long)
        else:
            oh, ow = self.size["height"], self.size["width"]
        rescaled = _needs_rescale(x)
        hwc = np.moveaxis(x, 0, -1)
        if hwc.shape[-1] == 1:
            hwc = hwc[..., 0]
        if rescaled:
            hwc = (hwc.astype(np.float64) * 255).astype(np.float32)
        pil = Image.fromarray(hwc.astype(np.uint8)).resize((ow, oh), resample=Image.Resampling(self.resample))
        out = np.array(pil)
        out = out[None] if out.ndim == 2 else np.moveaxis(out, -1, 0)
        if rescaled:
            out = (out.astype(np.float64) * (1 / 255)).astype(np.float32)
        return out

    def __repr__(self):
        return f"CLIPImageProcessor({self.to_dict()})"


def center_crop(x: np.ndarray, height: int, width: int) -> np.ndarray:
    """Crop the middle (height, width) of a CHW array; pad with zeros where it is smaller."""
    H, W = x.shape[1:]
    top, left = (H - height) // 2, (W - width) // 2
    if top >= 0 and left >= 0:
        return x[:, top:top + height, left:left + width]
    nh, nw = max(height, H), max(width, W)
    canvas = np.zeros(x.shape[:1] + (nh, nw), dtype=x.dtype)
    tp, lp = -(-(nh - H) // 2), -(-(nw - W) // 2)
    canvas[:, tp:tp + H, lp:lp + W] = x
    top, left = top + tp, left + lp
    return canvas[:, max(0, top):min(nh, top + height), max(0, left):min(nw, left + width)]


def normalize(x: np.ndarray, mean, std) -> np.ndarray:
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float32)
    if len(mean) != x.shape[0] or len(std) != x.shape[0]:
        raise ValueError(f"image_mean/image_std need {x.shape[0]} values (one per channel), got {len(mean)}/{len(std)}")
    mean, std = np.array(mean, dtype=x.dtype), np.array(std, dtype=x.dtype)
    return ((x.T - mean) / std).T


def _needs_rescale(x: np.ndarray) -> bool:
    if x.dtype == np.uint8:
        return False
    if np.allclose(x, x.astype(int)):
        if x.min() >= 0 and x.max() <= 255:
            return False
        raise ValueError(f"an integer-valued image must lie in [0, 255], got [{x.min()}, {x.max()}]")
    if x.min() >= 0 and x.max() <= 1:
        return True
    raise ValueError(f"a float image must lie in [0, 1], got [{x.min()}, {x.max()}]")


def _as_list(images):
    if isinstance(images, (list, tuple)):
        if not images:
            raise ValueError("CLIPImageProcessor: no images given")
        return list(images)
    if isinstance(images, np.ndarray) and images.ndim == 4:
        return list(images)
    if hasattr(images, "ndim") and images.ndim == 4 and not isinstance(images, np.ndarray):
        return [images[i] for i in range(images.shape[0])]
    return [images]
