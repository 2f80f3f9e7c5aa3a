"""Pipelines: DDPMPipeline, DDIMPipeline and ClassConditionalPipeline (classifier-free guidance, Ho & Salimans
2022), with diffusers' call arguments; outputs as NumPy arrays or PIL images; a pipeline folder is diffusers'
(model_index.json, unet/, scheduler/)."""
from __future__ import annotations

import json
import os

import numpy as np

import rtx
from rtx.diffuse.configuration import DIFFUSERS_LAYOUT_VERSION
from rtx.diffuse.utils import BaseOutput, randn_tensor


class ImagePipelineOutput(BaseOutput):
    def __init__(self, images):
        super().__init__(images=images)


def numpy_to_pil(images):
    """(N, H, W, C) floats in [0, 1] -> PIL images ('L' for one channel)."""
    from PIL import Image

    images = (images * 255).round().astype("uint8")
    if images.shape[-1] == 1:
        return [Image.fromarray(im[..., 0], mode="L") for im in images]
    return [Image.fromarray(im) for im in images]


def _progress(iterable, enabled, desc):
    if not enabled:
        return iterable
    from tqdm import tqdm
    return tqdm(iterable, desc=desc, leave=False)


class DiffusionPipeline:
    """A UNet and a scheduler. `save_pretrained` / `from_pretrained` read and write diffusers' folder layout."""

    def __init__(self, unet, scheduler):
        self.unet, self.scheduler = unet, scheduler
        self._progress = True

    def set_progress_bar_config(self, disable=False, **_):
        self._progress = not disable

    @property
    def device(self):
        return self.unet.device

    def to(self, device):
        self.unet.to(device)
        return self

    def save_pretrained(self, save_directory):
        os.makedirs(save_directory, exist_ok=True)
        self.unet.save_pretrained(os.path.join(save_directory, "unet"))
        self.scheduler.save_pretrained(os.path.join(save_directory, "scheduler"))
        index = {"_class_name": type(self).__name__, "_diffusers_version": DIFFUSERS_LAYOUT_VERSION,
                 "unet": ["diffusers", type(self.unet).__name__],
                 "scheduler": ["diffusers", type(self.scheduler).__name__]}
        with open(os.path.join(save_directory, "model_index.json"), "w", encoding="utf-8") as f:
            json.dump(index, f, indent=2, sort_keys=True)

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        """Load unet/ and scheduler/ with the classes model_index.json names (looked up among rtx.diffuse's
        own classes only: a file never chooses code to run)."""
        import rtx.diffuse as diffuse

        with open(os.path.join(path, "model_index.json"), encoding="utf-8") as f:
            index = json.load(f)
        parts = {}
        for name in ("unet", "scheduler"):
            cls_name = index[name][1]
            klass = getattr(diffuse, cls_name, None)
            if klass is None or not hasattr(klass, "from_pretrained"):
                raise ValueError(f"model_index.json names {cls_name!r} for {name}: rtx.diffuse has no such class")
            parts[name] = klass.from_pretrained(os.path.join(path, name))
        return cls(**parts, **kwargs)

    def _initial_noise(self, batch_size, generator):
        size = self.unet.config.sample_size
        size = (size, size) if isinstance(size, int) else tuple(size)
        shape = (batch_size, self.unet.config.in_channels, *size)
        return randn_tensor(shape, generator=generator, device=self.device, dtype=self.unet.dtype)

    def _postprocess(self, image, output_type, return_dict):
        image = (image / 2 + 0.5).clamp(0, 1).permute(0, 2, 3, 1).cpu().numpy()
        if output_type == "pil":
            image = numpy_to_pil(image)
        elif output_type not in ("np", "numpy"):
            raise ValueError(f"output_type must be 'pil' or 'np', got {output_type!r}")
        if not return_dict:
            return (image,)
        return ImagePipelineOutput(images=image)


class DDPMPipeline(DiffusionPipeline):
    def __call__(self, batch_size=1, generator=None, num_inference_steps=1000, output_type="pil", return_dict=True):
        image = self._initial_noise(batch_size, generator)
        self.scheduler.set_timesteps(num_inference_steps)
        with rtx.no_grad():
            for t in _progress(self.scheduler.timesteps, self._progress, "DDPM"):
                model_output = self.unet(image, t).sample
                image = self.scheduler.step(model_output, t, image, generator=generator).prev_sample
        return self._postprocess(image, output_type, return_dict)


class DDIMPipeline(DiffusionPipeline):
    def __call__(self, batch_size=1, generator=None, eta=0.0, num_inference_steps=50, use_clipped_model_output=None,
                 output_type="pil", return_dict=True):
        image = self._initial_noise(batch_size, generator)
        self.scheduler.set_timesteps(num_inference_steps)
        with rtx.no_grad():
            for t in _progress(self.scheduler.timesteps, self._progress, "DDIM"):
                model_output = self.unet(image, t).sample
                image = self.scheduler.step(model_output, t, image, eta=eta, generator=generator,
                                            use_clipped_model_output=bool(use_clipped_model_output)).prev_sample
        return self._postprocess(image, output_type, return_dict)


class ClassConditionalPipeline(DiffusionPipeline):
    """Class-conditional sampling with classifier-free guidance: the UNet has num_class_embeds = classes + 1, the
    last label meaning "no label" (trained by dropping labels); each step uses
    eps = eps(x, null) + guidance_scale * (eps(x, label) - eps(x, null))."""

    @property
    def null_class(self):
        return self.unet.config.num_class_embeds - 1

    def __call__(self, class_labels, guidance_scale=3.0, generator=None, num_inference_steps=50, eta=0.0,
                 output_type="pil", return_dict=True):
        if self.unet.config.num_class_embeds is None:
            raise ValueError("ClassConditionalPipeline needs a UNet built with num_class_embeds (classes + 1)")
        labels = [int(c) for c in (class_labels if isinstance(class_labels, (list, tuple, np.ndarray, rtx.Tensor))
                                   else [class_labels])]
        if any(not 0 <= c < self.null_class for c in labels):
            raise ValueError(f"class labels must be in [0, {self.null_class}), got {labels}")
        n = len(labels)
        image = self._initial_noise(n, generator) * self.scheduler.init_noise_sigma
        cond = rtx.tensor(labels + [self.null_class] * n, dtype=rtx.int64, device=self.device)
        self.scheduler.set_timesteps(num_inference_steps)
        kwargs = {"eta": eta} if "eta" in _step_args(self.scheduler) else {}
        with rtx.no_grad():
            for t in _progress(self.scheduler.timesteps, self._progress, "sampling"):
                x = self.scheduler.scale_model_input(image, t)
                guided = guidance_scale != 1.0
                inp = rtx.cat([x, x]) if guided else x
                out = self.unet(inp, t, class_labels=cond if guided else cond[:n]).sample
                if guided:
                    eps_c, eps_u = out[:n], out[n:]
                    out = eps_u + guidance_scale * (eps_c - eps_u)
                image = self.scheduler.step(out, t, image, generator=generator, **kwargs).prev_sample
        return self._postprocess(image, output_type, return_dict)


def _step_args(scheduler):
    import inspect
    return inspect.signature(scheduler.step).parameters
