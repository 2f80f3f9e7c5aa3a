"""CLIP's configs with transformers' field names and defaults (CLIPTextConfig, CLIPVisionConfig,
CLIPConfig), reading and writing config.json as transformers 4.x and 5.x do.

    cfg = CLIPConfig(text_config={"hidden_size": 64}, vision_config={"image_size": 32}, projection_dim=16)
    cfg = CLIPConfig.from_pretrained("ckpt/")            # config.json with text_config / vision_config
    cfg.text_config.hidden_act                             # "quick_gelu" (OpenAI's CLIP) or "gelu"

Keys rtx does not know are refused as rtx-transformers' configs refuse them (UnsupportedConfigError
naming each; strict=False warns instead).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from rtx.transformers.activations import ACT2FN
from rtx.transformers.configuration import PretrainedConfig

__all__ = ["CLIPTextConfig", "CLIPVisionConfig", "CLIPConfig"]


def _check_heads(dim, heads, dim_name, heads_name):
    if heads <= 0 or dim % heads:
        raise ValueError(f"{dim_name} ({dim}) must be divisible by {heads_name} ({heads})")


def _check_act(name, value, problems):
    if value not in ACT2FN:
        problems.append(f"{name}={value!r} is not an activation rtx has ({', '.join(sorted(ACT2FN))})")

# Keys transformers writes that do not change the forward pass (initialisation scales, the
# sub-config's own projection_dim, which CLIPModel ignores in favour of the top-level one).
_CLIP_IGNORED = frozenset({"initializer_factor", "projection_dim", "model_type", "dropout"})


@dataclass
class CLIPTextConfig(PretrainedConfig):
    vocab_size: int = 49408
    hidden_size: int = 512
    intermediate_size: int = 2048
    projection_dim: int = 512
    num_hidden_layers: int = 12
    num_attention_heads: int = 8
    max_position_embeddings: int = 77
    hidden_act: str = "quick_gelu"
    layer_norm_eps: float = 1e-5
    attention_dropout: float = 0.0
    initializer_range: float = 0.02
    initializer_factor: float = 1.0
    pad_token_id: int | None = 1
    bos_token_id: int | None = 49406
    eos_token_id: int | None = 49407

    model_type = "clip_text_model"
    architecture = "CLIPTextModel"
    _ignored: ClassVar[frozenset] = _CLIP_IGNORED

    def __post_init__(self):
        _check_heads(self.hidden_size, self.num_attention_heads, "hidden_size", "num_attention_heads")
        super().__post_init__()

    def unsupported(self):
        problems = []
        _check_act("hidden_act", self.hidden_act, problems)
        return problems


@dataclass
class CLIPVisionConfig(PretrainedConfig):
    hidden_size: int = 768
    intermediate_size: int = 3072
    projection_dim: int = 512
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    num_channels: int = 3
    image_size: int = 224
    patch_size: int = 32
    hidden_act: str = "quick_gelu"
    layer_norm_eps: float = 1e-5
    attention_dropout: float = 0.0
    initializer_range: float = 0.02
    initializer_factor: float = 1.0

    model_type = "clip_vision_model"
    architecture = "CLIPVisionModel"
    _ignored: ClassVar[frozenset] = _CLIP_IGNORED

    def __post_init__(self):
        _check_heads(self.hidden_size, self.num_attention_heads, "hidden_size", "num_attention_heads")
        if self.image_size % self.patch_size:
            raise ValueError(f"CLIPVisionConfig: image_size ({self.image_size}) must be a multiple of patch_size "
                             f"({self.patch_size})")
        super().__post_init__()

    def unsupported(self):
        problems = []
        _check_act("hidden_act", self.hidden_act, problems)
        return problems

    @property
    def num_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2


@dataclass
class CLIPConfig(PretrainedConfig):
    """text_config / vision_config: a dict (as in config.json) or the config object."""

    text_config: Any = field(default_factory=dict)
    vision_config: Any = field(default_factory=dict)
    projection_dim: int = 512
    logit_scale_init_value: float = 2.6592   # log(1 / 0.07), CLIP's initial temperature
    initializer_factor: float = 1.0

    model_type = "clip"
    architecture = "CLIPModel"
    _ignored: ClassVar[frozenset] = frozenset({"text_config_dict", "vision_config_dict"})

    def __post_init__(self):
        if self.text_config is None:
            self.text_config = {}
        if self.vision_config is None:
            self.vision_config = {}
        if isinstance(self.text_config, dict):
            self.text_config = CLIPTextConfig.from_dict(self.text_config, strict=self.strict)
        if isinstance(self.vision_config, dict):
            self.vision_config = CLIPVisionConfig.from_dict(self.vision_config, strict=self.strict)
        if not isinstance(self.text_config, CLIPTextConfig) or not isinstance(self.vision_config, CLIPVisionConfig):
            raise TypeError(f"CLIPConfig: text_config / vision_config must be dicts or CLIPTextConfig / "
                            f"CLIPVisionConfig, got {type(self.text_config).__name__} / "
                            f"{type(self.vision_config).__name__}")
        super().__post_init__()

    @classmethod
    def from_text_vision_configs(cls, text_config: CLIPTextConfig, vision_config: CLIPVisionConfig, **kwargs):
        return cls(text_config=text_config, vision_config=vision_config, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["text_config"] = self.text_config.to_dict()
        d["vision_config"] = self.vision_config.to_dict()
        return d
