"""Config dataclasses, one per family, with Hugging Face's field names and defaults, so a
checkpoint's config.json loads as it is (unknown keys are kept in `extra`, not an error: HF
configs carry many fields that do not change the forward pass).

    cfg = GPT2Config(n_embd=64, n_layer=2, n_head=4)
    cfg = LlamaConfig.from_json_file("ckpt/config.json")
    cfg.to_dict()
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

__all__ = ["PretrainedConfig", "GPT2Config", "LlamaConfig", "BertConfig"]


@dataclass
class PretrainedConfig:
    """What the families' configs share: dict/json round trips."""

    extra: dict = field(default_factory=dict, repr=False, kw_only=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any], **overrides) -> PretrainedConfig:
        if not isinstance(d, dict):
            raise TypeError(f"{cls.__name__}.from_dict expects a dict, got {type(d).__name__}")
        d = {**d, **overrides}
        kind = d.pop("model_type", None)
        if kind is not None and kind != cls.model_type:
            warnings.warn(f"{cls.__name__}: the config is of model_type {kind!r}, not {cls.model_type!r}; fields "
                          f"of the same name are read, the rest kept in .extra", stacklevel=2)
        names = {f.name for f in fields(cls)} - {"extra"}
        known = {k: v for k, v in d.items() if k in names}
        extra = {k: v for k, v in d.items() if k not in names}
        return cls(**known, extra=extra)

    @classmethod
    def from_json_file(cls, path) -> PretrainedConfig:
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))

    @classmethod
    def from_pretrained(cls, path, **overrides) -> PretrainedConfig:
        """From a checkpoint folder holding config.json (or the json file itself)."""
        p = Path(path)
        if p.is_dir():
            p = p / "config.json"
        if not p.exists():
            raise FileNotFoundError(f"{cls.__name__}.from_pretrained: no config.json at {p}")
        with open(p, encoding="utf-8") as f:
            return cls.from_dict(json.load(f), **overrides)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        return {**self.extra, **d, "model_type": self.model_type}

    def to_json_file(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)

    model_type = "base"


@dataclass
class GPT2Config(PretrainedConfig):
    """HF's GPT2Config (same names and defaults)."""

    vocab_size: int = 50257
    n_positions: int = 1024
    n_embd: int = 768
    n_layer: int = 12
    n_head: int = 12
    n_inner: int | None = None             # None: 4 * n_embd
    activation_function: str = "gelu_new"  # gelu_new (tanh approximation), gelu, relu, silu, ...
    resid_pdrop: float = 0.1
    embd_pdrop: float = 0.1
    attn_pdrop: float = 0.1
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02
    scale_attn_weights: bool = True
    scale_attn_by_inverse_layer_idx: bool = False
    reorder_and_upcast_attn: bool = False  # a numerical-stability switch of HF's; rtx's attention is already stable
    use_cache: bool = True
    bos_token_id: int = 50256
    eos_token_id: int = 50256
    pad_token_id: int | None = None
    tie_word_embeddings: bool = True

    model_type = "gpt2"

    def __post_init__(self):
        _check_heads(self.n_embd, self.n_head, "n_embd", "n_head")

    # HF's attribute_map: the common names
    @property
    def hidden_size(self):
        return self.n_embd

    @property
    def num_hidden_layers(self):
        return self.n_layer

    @property
    def num_attention_heads(self):
        return self.n_head

    @property
    def max_position_embeddings(self):
        return self.n_positions


@dataclass
class LlamaConfig(PretrainedConfig):
    """HF's LlamaConfig (same names and defaults). sliding_window (Mistral's field) limits each
    query to the last `sliding_window` keys; None: full causal attention."""

    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int | None = None  # None: num_attention_heads (no GQA)
    head_dim: int | None = None             # None: hidden_size // num_attention_heads
    hidden_act: str = "silu"
    max_position_embeddings: int = 2048
    initializer_range: float = 0.02
    rms_norm_eps: float = 1e-6
    use_cache: bool = True
    pad_token_id: int | None = None
    bos_token_id: int = 1
    eos_token_id: int | list = 2
    tie_word_embeddings: bool = False
    rope_theta: float = 10000.0
    rope_scaling: dict | None = None        # {"rope_type": "linear"|"dynamic"|"llama3", "factor": ...}
    attention_bias: bool = False
    attention_dropout: float = 0.0
    mlp_bias: bool = False
    sliding_window: int | None = None

    model_type = "llama"

    def __post_init__(self):
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        if self.head_dim is None:
            _check_heads(self.hidden_size, self.num_attention_heads, "hidden_size", "num_attention_heads")
            self.head_dim = self.hidden_size // self.num_attention_heads
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(f"LlamaConfig: num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                             f"num_key_value_heads ({self.num_key_value_heads})")


@dataclass
class BertConfig(PretrainedConfig):
    """HF's BertConfig (same names and defaults)."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    position_embedding_type: str = "absolute"
    classifier_dropout: float | None = None
    num_labels: int = 2
    problem_type: str | None = None         # None: regression if num_labels == 1, else single-label

    model_type = "bert"

    def __post_init__(self):
        _check_heads(self.hidden_size, self.num_attention_heads, "hidden_size", "num_attention_heads")
        if self.position_embedding_type != "absolute":
            raise NotImplementedError(f"BertConfig: position_embedding_type {self.position_embedding_type!r} is not "
                                      f"supported (only 'absolute')")


def _check_heads(dim, heads, dim_name, heads_name):
    if heads <= 0 or dim % heads:
        raise ValueError(f"{dim_name} ({dim}) must be divisible by {heads_name} ({heads})")
