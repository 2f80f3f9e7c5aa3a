"""ViT (Dosovitskiy et al. 2021) in transformers' layout: ViTConfig and ViTModel, the image encoder of
VisionEncoderDecoderModel.

    model = ViTModel(ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, image_size=32,
                               patch_size=8))
    out = model(pixel_values)             # (batch, 3, 32, 32)
    out.last_hidden_state, out.pooler_output

rtx-vision's VisionTransformer is torchvision's (conv_proj, encoder.layers.encoder_layer_0...); this
one carries the names transformers' checkpoints hold (embeddings.patch_embeddings.projection,
encoder.layer.0.attention.attention.query, layernorm_before, pooler.dense, ...), which is what a
VisionEncoderDecoder checkpoint needs. Pre-LayerNorm blocks, final LayerNorm, tanh pooler on the
[CLS] token, as transformers' ViTModel(add_pooling_layer=True).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import rtx
import rtx.nn.functional as F
from rtx.multimodal.modeling_clip import BaseModelOutputWithPooling
from rtx.nn import Conv2d, Dropout, LayerNorm, Linear, Module, ModuleList, Parameter, init
from rtx.transformers.activations import ACT2FN, get_activation
from rtx.transformers.configuration import PretrainedConfig, UnsupportedConfigError
from rtx.transformers.modeling import PreTrainedModel

__all__ = ["ViTConfig", "ViTModel"]


@dataclass
class ViTConfig(PretrainedConfig):
    """transformers' ViTConfig (same names and defaults)."""

    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    image_size: int = 224
    patch_size: int = 16
    num_channels: int = 3
    qkv_bias: bool = True
    pooler_output_size: int | None = None   # None: hidden_size
    pooler_act: str = "tanh"

    model_type = "vit"
    architecture = "ViTModel"
    # encoder_stride: the masked-image-modelling head's upsampling, not part of ViTModel
    _ignored: ClassVar[frozenset] = frozenset({"encoder_stride"})

    def __post_init__(self):
        if self.num_attention_heads <= 0 or self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size ({self.hidden_size}) must be divisible by num_attention_heads "
                             f"({self.num_attention_heads})")
        for name in ("image_size", "patch_size"):
            if not isinstance(getattr(self, name), int):
                raise UnsupportedConfigError(f"ViTConfig: {name} must be one int (square images), got "
                                                 f"{getattr(self, name)!r}")
        if self.image_size % self.patch_size:
            raise ValueError(f"image_size ({self.image_size}) must be a multiple of patch_size ({self.patch_size})")
        if self.pooler_output_size is None:
            self.pooler_output_size = self.hidden_size
        super().__post_init__()

    def unsupported(self):
        return [f"{name}={getattr(self, name)!r} is not an activation rtx has ({', '.join(sorted(ACT2FN))})"
                for name in ("hidden_act", "pooler_act") if getattr(self, name) not in ACT2FN]


class ViTPatchEmbeddings(Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.projection = Conv2d(config.num_channels, config.hidden_size, kernel_size=config.patch_size,
                                 stride=config.patch_size)

    def forward(self, pixel_values):
        return self.projection(pixel_values).flatten(2).transpose(1, 2)   # (B, patches, hidden)


class ViTEmbeddings(Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.image_size, self.num_channels = config.image_size, config.num_channels
        n = (config.image_size // config.patch_size) ** 2
        self.cls_token = Parameter(rtx.zeros(1, 1, config.hidden_size))
        self.patch_embeddings = ViTPatchEmbeddings(config)
        self.position_embeddings = Parameter(rtx.zeros(1, n + 1, config.hidden_size))
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, pixel_values):
        want = (self.num_channels, self.image_size, self.image_size)
        if pixel_values.ndim != 4 or tuple(pixel_values.shape[1:]) != want:
            raise ValueError(f"ViTModel: pixel_values must be (batch, {want[0]}, {want[1]}, {want[2]}), got "
                             f"{tuple(pixel_values.shape)}")
        x = self.patch_embeddings(pixel_values.to(self.cls_token.dtype))
        cls = self.cls_token.expand(x.shape[0], 1, x.shape[2])
        return self.dropout(rtx.cat([cls, x], 1) + self.position_embeddings)


class ViTSelfAttention(Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // self.num_heads
        self.dropout = config.attention_probs_dropout_prob
        self.query = Linear(config.hidden_size, config.hidden_size, bias=config.qkv_bias)
        self.key = Linear(config.hidden_size, config.hidden_size, bias=config.qkv_bias)
        self.value = Linear(config.hidden_size, config.hidden_size, bias=config.qkv_bias)

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = (p(x).reshape(B, L, self.num_heads, self.head_dim).transpose(1, 2)
                   for p in (self.query, self.key, self.value))
        out = F.scaled_dot_product_attention(q, k, v, None, self.dropout if self.training else 0.0)
        return out.transpose(1, 2).reshape(B, L, D)


class ViTSelfOutput(Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.hidden_size)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, x):
        return self.dropout(self.dense(x))


class ViTAttention(Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.attention = ViTSelfAttention(config)
        self.output = ViTSelfOutput(config)

    def forward(self, x):
        return self.output(self.attention(x))


class ViTIntermediate(Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.intermediate_size)
        self.act = get_activation(config.hidden_act)

    def forward(self, x):
        return self.act(self.dense(x))


class ViTOutput(Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.dense = Linear(config.intermediate_size, config.hidden_size)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, x):
        return self.dropout(self.dense(x))


class ViTLayer(Module):
    """Pre-LayerNorm block: x + attention(LN(x)), then + MLP(LN(x))."""

    def __init__(self, config: ViTConfig):
        super().__init__()
        self.attention = ViTAttention(config)
        self.intermediate = ViTIntermediate(config)
        self.output = ViTOutput(config)
        self.layernorm_before = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.layernorm_after = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x):
        x = x + self.attention(self.layernorm_before(x))
        return x + self.output(self.intermediate(self.layernorm_after(x)))


class ViTEncoder(Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.layer = ModuleList([ViTLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


class ViTPooler(Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.pooler_output_size)
        self.activation = get_activation(config.pooler_act)

    def forward(self, x):
        return self.activation(self.dense(x[:, 0]))


class ViTModel(PreTrainedModel):
    """Patch embeddings + [CLS] + positions, pre-LN encoder, final LayerNorm, pooler (optional)."""

    config_class = ViTConfig
    base_model_prefix = "vit"

    def __init__(self, config: ViTConfig, add_pooling_layer: bool = True):
        super().__init__(config)
        self.embeddings = ViTEmbeddings(config)
        self.encoder = ViTEncoder(config)
        self.layernorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.pooler = ViTPooler(config) if add_pooling_layer else None
        self._init_weights()

    def _init_weights(self):
        """transformers' ViT init: truncated N(0, initializer_range) for Linear / Conv2d weights and the
        position / [CLS] embeddings, zero biases, unit LayerNorms."""
        std = self.config.initializer_range
        with rtx.no_grad():
            for m in self.modules():
                if isinstance(m, (Linear, Conv2d)):
                    init.trunc_normal_(m.weight, std=std)
                    if m.bias is not None:
                        init.zeros_(m.bias)
                elif isinstance(m, ViTEmbeddings):
                    init.trunc_normal_(m.position_embeddings, std=std)
                    init.trunc_normal_(m.cls_token, std=std)

    def forward(self, pixel_values=None):
        if pixel_values is None:
            raise ValueError("ViTModel: pixel_values are required")
        x = self.layernorm(self.encoder(self.embeddings(pixel_values)))
        return BaseModelOutputWithPooling(last_hidden_state=x,
                                          pooler_output=self.pooler(x) if self.pooler is not None else None)
