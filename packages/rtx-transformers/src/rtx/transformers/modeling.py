"""What the model families share: loading Hugging Face checkpoints (safetensors or PyTorch
.bin, one file or sharded with an index) with a clear report of missing and unexpected keys,
and saving in the same layout.

    model = GPT2LMHeadModel.from_pretrained("ckpt/")           # config.json + model.safetensors
    model, report = LlamaForCausalLM.from_pretrained("ckpt/", output_loading_info=True)
    report.missing_keys, report.unexpected_keys
    model.save_pretrained("out/")

Key names are HF's, so a checkpoint needs no renaming. Accepted variations, as HF's loader:
the base-model prefix may be present or absent ("transformer.h.0..." or "h.0..." for GPT-2);
TF-era names LayerNorm.gamma/beta load as weight/bias; buffers some checkpoints carry
(GPT-2's attn.bias and attn.masked_bias, Llama's rotary inv_freq, BERT's position_ids) are
dropped silently; a tied weight missing from the file (lm_head.weight) is taken from the one
it is tied to. Anything else missing or unexpected is reported: a warning listing the keys by
default, an error with strict=True. A shape that disagrees with the config is always an error.
"""
from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import rtx
from rtx.extend import raw
from rtx.nn import Module

__all__ = ["PreTrainedModel", "LoadReport", "load_safetensors", "CheckpointError"]


class CheckpointError(RuntimeError):
    """A checkpoint that does not fit the model (strict loading, or a shape mismatch)."""


@dataclass
class LoadReport:
    missing_keys: list[str] = field(default_factory=list)
    unexpected_keys: list[str] = field(default_factory=list)
    ignored_keys: list[str] = field(default_factory=list)   # known buffers, dropped on purpose
    tied_keys: list[str] = field(default_factory=list)      # filled from the weight they are tied to

    def __str__(self):
        parts = []
        if self.missing_keys:
            parts.append(f"missing from the checkpoint ({len(self.missing_keys)}): {_listing(self.missing_keys)}")
        if self.unexpected_keys:
            parts.append(f"in the checkpoint but not in the model ({len(self.unexpected_keys)}): "
                         f"{_listing(self.unexpected_keys)}")
        return "; ".join(parts) if parts else "all keys matched"


def _listing(keys, n=12):
    keys = sorted(keys)
    return ", ".join(keys[:n]) + (f", ... ({len(keys) - n} more)" if len(keys) > n else "")


def load_safetensors(path) -> dict[str, np.ndarray]:
    """All tensors of a checkpoint: a .safetensors or PyTorch .bin file, or a folder holding
    model.safetensors, a sharded model.safetensors.index.json, or (when neither exists)
    pytorch_model.bin or a sharded pytorch_model.bin.index.json. .bin files are read through
    rtx.load's restricted unpickler (weights_only: no code the file names is run)."""
    from safetensors.numpy import load_file
    p = Path(path)
    if p.is_dir():
        for single, index in (("model.safetensors", "model.safetensors.index.json"),
                              ("pytorch_model.bin", "pytorch_model.bin.index.json")):
            if (p / single).exists():
                return _load_file(p / single, load_file)
            if (p / index).exists():
                with open(p / index, encoding="utf-8") as f:
                    weight_map = json.load(f)["weight_map"]
                out = {}
                for shard in sorted(set(weight_map.values())):
                    out.update(_load_file(p / shard, load_file))
                return out
        found = sorted(x.name for x in p.iterdir())
        raise FileNotFoundError(f"no model.safetensors, pytorch_model.bin or an index of their shards in {p} "
                                f"(found: {found})")
    if not p.exists():
        raise FileNotFoundError(f"no checkpoint at {p}")
    return _load_file(p, load_file)


def _load_file(p, load_file):
    if p.suffix == ".safetensors":
        return load_file(str(p))
    state = rtx.load(str(p), map_location="cpu", weights_only=True)
    if not isinstance(state, dict) or not all(type(v) is rtx.Tensor for v in state.values()):
        raise CheckpointError(f"{p} holds a {type(state).__name__}, not a state_dict of tensors")
    return {k: v.numpy() for k, v in state.items()}


class PreTrainedModel(Module):
    """Base of every model class: config, HF-layout loading and saving."""

    config_class = None
    base_model_prefix = ""          # "transformer" (GPT-2), "model" (Llama), "bert"
    _ignored_keys: tuple[str, ...] = ()           # regexes of buffers some checkpoints carry
    _tied_weights: dict[str, str] = {}            # key -> the key it shares storage with

    def __init__(self, config):
        super().__init__()
        if self.config_class is not None and not isinstance(config, self.config_class):
            raise TypeError(f"{type(self).__name__} expects a {self.config_class.__name__}, got "
                            f"{type(config).__name__}")
        self.config = config

    # ---- loading ------------------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, path, config=None, *, strict=None, dtype=None, output_loading_info=False):
        """Build from `path` (a folder with config.json and the weights: model.safetensors, an
        index of shards, or PyTorch's pytorch_model.bin; or a weights file with `config` given).

        strict: None (default) refuses config keys rtx does not compute (UnsupportedConfigError)
        and warns about missing / unexpected weights; True refuses both; False warns about both.
        dtype: None keeps float32; "auto" takes config.json's dtype / torch_dtype; or an rtx dtype."""
        p = Path(path)
        if config is None:
            config = cls.config_class.from_pretrained(p if p.is_dir() else p.parent, strict=strict is not False)
        model = cls(config)
        if dtype == "auto":
            dtype = getattr(rtx, config.torch_dtype) if config.torch_dtype else None
        if dtype is not None:
            model.to(dtype)
        report = model.load_hf_state_dict(load_safetensors(p), strict=bool(strict))
        model.eval()
        return (model, report) if output_loading_info else model

    def load_hf_state_dict(self, weights: dict, strict=False) -> LoadReport:
        """Load a dict of arrays (or Tensors) in HF's layout; returns the LoadReport. Missing or
        unexpected keys warn (strict=False) or raise CheckpointError (strict=True)."""
        own = self.state_dict()
        report = LoadReport()
        renamed = {}
        for key, value in weights.items():
            key = _tf_names(key)
            if any(re.search(pat, key) for pat in self._ignored_keys):
                report.ignored_keys.append(key)
                continue
            renamed[self._fit_prefix(key, own)] = value
        for key, source in self._tied_weights.items():
            if key in own and key not in renamed and source in renamed:
                report.tied_keys.append(key)
        report.missing_keys = [k for k in own if k not in renamed and k not in report.tied_keys]
        report.unexpected_keys = [k for k in renamed if k not in own]
        bad = []
        for key, value in renamed.items():
            if key in own and tuple(own[key].shape) != tuple(np.shape(_array(value))):
                bad.append(f"{key}: checkpoint {tuple(np.shape(_array(value)))}, model {tuple(own[key].shape)}")
        if bad:
            raise CheckpointError(f"{type(self).__name__}: {len(bad)} weight(s) have a shape the config does not "
                                  f"give (is config.json the checkpoint's?): " + "; ".join(bad[:8]))
        if strict and (report.missing_keys or report.unexpected_keys):
            raise CheckpointError(f"{type(self).__name__}: the checkpoint does not match the model: {report}")
        if report.missing_keys or report.unexpected_keys:
            warnings.warn(f"{type(self).__name__}: {report}" + (
                "; missing weights keep their random initialisation" if report.missing_keys else ""),
                stacklevel=3)
        targets = {**dict(self.named_buffers()), **dict(self.named_parameters(remove_duplicate=False))}
        with rtx.no_grad():
            for key, value in renamed.items():
                target = targets.get(key)
                if target is not None:
                    src = value if type(value) is rtx.Tensor else rtx.from_numpy(np.ascontiguousarray(value))
                    raw(target)[...] = raw(src.to(device=target.device, dtype=target.dtype))
        self.tie_weights()
        return report

    def _fit_prefix(self, key, own):
        """Add or drop the base-model prefix so the key names one of ours when it can."""
        if key in own or not self.base_model_prefix:
            return key
        prefix = self.base_model_prefix + "."
        if key.startswith(prefix) and key[len(prefix):] in own:
            return key[len(prefix):]
        if prefix + key in own:
            return prefix + key
        return key

    def tie_weights(self):
        """Make tied weights share storage again (after loading or .to())."""

    # ---- saving -------------------------------------------------------------------------------------
    def save_pretrained(self, path, *, safe_serialization=True):
        """config.json and model.safetensors in HF's layout (tied copies left out, as HF), with
        `architectures`, `model_type` and the weights' dtype in the config."""
        from safetensors.numpy import save_file
        if not safe_serialization:
            raise ValueError("save_pretrained writes safetensors only")
        p = Path(path)
        p.mkdir(parents=True, exist_ok=True)
        config = self.config.to_dict()
        config["architectures"] = [type(self).__name__]
        dtypes = {str(t.dtype).removeprefix("rtx.") for t in self.state_dict().values() if t.is_floating_point()}
        if len(dtypes) == 1:
            config["dtype" if "dtype" in config else "torch_dtype"] = dtypes.pop()
        with open(p / "config.json", "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2, sort_keys=True)
        tensors = {}
        for key, t in self.state_dict().items():
            if key in self._tied_weights:
                continue
            # np.asarray(order="C"), not np.ascontiguousarray, which makes a 0-d tensor 1-d
            tensors[key] = np.asarray(t.detach().cpu().numpy(), order="C")
        save_file(tensors, str(p / "model.safetensors"), metadata={"format": "pt"})

    # ---- misc ---------------------------------------------------------------------------------------
    def num_parameters(self) -> int:
        seen, n = set(), 0
        for p in self.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                n += p.numel()
        return n


def _tf_names(key):
    return re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", key))


def _array(value):
    return raw(value) if type(value) is rtx.Tensor else value
