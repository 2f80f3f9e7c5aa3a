"""ModelMixin: diffusers' model folder = `config.json` + `diffusion_pytorch_model.safetensors`."""
from __future__ import annotations

import os

import numpy as np

import rtx
import rtx.nn as nn
from rtx.diffuse.configuration import ConfigMixin

WEIGHTS_NAME = "diffusion_pytorch_model.safetensors"


class ModelMixin(nn.Module, ConfigMixin):
    config_name = "config.json"

    @property
    def dtype(self):
        return next(self.parameters()).dtype

    @property
    def device(self):
        return next(self.parameters()).device

    def save_pretrained(self, save_directory, safe_serialization=True, **kwargs):
        """Write config.json and the weights (safetensors, the state_dict's keys) into `save_directory`."""
        from safetensors.numpy import save_file

        if not safe_serialization:
            raise ValueError("rtx.diffuse writes safetensors only (diffusers' default); pickled .bin files run code")
        os.makedirs(save_directory, exist_ok=True)
        self.save_config(save_directory)
        tensors = {k: np.ascontiguousarray(v.detach().cpu().numpy()) for k, v in self.state_dict().items()}
        save_file(tensors, os.path.join(save_directory, WEIGHTS_NAME), metadata={"format": "pt"})

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, subfolder=None, torch_dtype=None, strict=True,
                        **kwargs):
        """Build from a folder's config.json (keyword arguments override it) and load its safetensors weights;
        every key must match (strict) unless strict=False."""
        from safetensors.numpy import load_file

        path = os.fspath(pretrained_model_name_or_path)
        if subfolder:
            path = os.path.join(path, subfolder)
        model = cls.from_config(cls.load_config(path), **kwargs)
        weights = os.path.join(path, WEIGHTS_NAME)
        if not os.path.isfile(weights):
            raise FileNotFoundError(f"no {WEIGHTS_NAME} in {path} (only safetensors checkpoints are read: a pickled "
                                    ".bin file can run code)")
        state = {k: rtx.from_numpy(np.ascontiguousarray(v)) for k, v in load_file(weights).items()}
        model.load_state_dict(state, strict=strict)
        if torch_dtype is not None:
            model.to(torch_dtype)
        model.eval()
        return model

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())
