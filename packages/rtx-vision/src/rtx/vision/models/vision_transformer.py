"""Vision Transformer (Dosovitskiy et al., 2020) as torchvision.models.vision_transformer:
conv_proj (patch embedding), class_token, encoder (pos_embedding, layers.encoder_layer_<i> with
ln_1, self_attention, ln_2, mlp; final ln), heads.head; the same state_dict keys and init.

torchvision ships B/16, B/32, L/16, L/32 and H/14; rtx adds the two small sizes of DeiT/timm,
built with torchvision's classes and names: ViT-Tiny/16 (width 192, 12 layers, 3 heads, MLP 768;
5,717,416 parameters at 224x224 with 1000 classes, as timm's vit_tiny_patch16_224) and
ViT-Small/16 (384, 12, 6, 1536; 22,050,664 parameters)."""
from __future__ import annotations

import math
from collections import OrderedDict
from functools import partial

import rtx
import rtx.nn as nn
from rtx.vision.models._utils import _check_weights
from rtx.vision.ops.misc import MLP

# torchvision's default norm layer, one module-level object (not a call in each signature)
_LayerNorm = partial(nn.LayerNorm, eps=1e-6)

__all__ = ["VisionTransformer", "vit_t_16", "vit_s_16", "vit_b_16", "vit_b_32"]


class MLPBlock(MLP):
    """Transformer MLP block: Linear, GELU, Dropout, Linear, Dropout (children 0..4)."""

    def __init__(self, in_dim, mlp_dim, dropout):
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)


class EncoderBlock(nn.Module):
    """Pre-norm transformer encoder block."""

    def __init__(self, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                 norm_layer=_LayerNorm):
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout,
                                                    batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input):
        if input.dim() != 3:
            raise ValueError(f"Expected (batch_size, seq_length, hidden_dim) got {tuple(input.shape)}")
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    """Transformer encoder: learned position embedding, a stack of EncoderBlocks, a final norm."""

    def __init__(self, seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                 norm_layer=_LayerNorm):
        super().__init__()
        self.pos_embedding = nn.Parameter(rtx.empty(1, seq_length, hidden_dim))
        nn.init.normal_(self.pos_embedding, std=0.02)  # from BERT
        self.dropout = nn.Dropout(dropout)
        layers = OrderedDict()
        for i in range(num_layers):
            layers[f"encoder_layer_{i}"] = EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                                                        norm_layer)
        self.layers = nn.Sequential(layers)
        self.ln = norm_layer(hidden_dim)

    def forward(self, input):
        if input.dim() != 3:
            raise ValueError(f"Expected (batch_size, seq_length, hidden_dim) got {tuple(input.shape)}")
        input = input + self.pos_embedding
        return self.ln(self.layers(self.dropout(input)))


class VisionTransformer(nn.Module):
    def __init__(self, image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim, dropout=0.0,
                 attention_dropout=0.0, num_classes=1000, representation_size=None,
                 norm_layer=_LayerNorm, conv_stem_configs=None):
        super().__init__()
        if image_size % patch_size != 0:
            raise ValueError(f"Input shape indivisible by patch size! image_size={image_size}, "
                             f"patch_size={patch_size}")
        if conv_stem_configs is not None:
            raise NotImplementedError("conv_stem_configs (the ViT convolutional stem variant) is not supported")
        self.image_size = image_size
        self.patch_size = patch_size
        self.hidden_dim = hidden_dim
        self.mlp_dim = mlp_dim
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.num_classes = num_classes
        self.representation_size = representation_size
        self.norm_layer = norm_layer

        self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
        seq_length = (image_size // patch_size) ** 2
        self.class_token = nn.Parameter(rtx.zeros(1, 1, hidden_dim))
        seq_length += 1
        self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                               norm_layer)
        self.seq_length = seq_length

        heads_layers = OrderedDict()
        if representation_size is None:
            heads_layers["head"] = nn.Linear(hidden_dim, num_classes)
        else:
            heads_layers["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads_layers["act"] = nn.Tanh()
            heads_layers["head"] = nn.Linear(representation_size, num_classes)
        self.heads = nn.Sequential(heads_layers)

        fan_in = self.conv_proj.in_channels * self.conv_proj.kernel_size[0] * self.conv_proj.kernel_size[1]
        nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
        nn.init.zeros_(self.conv_proj.bias)
        if "pre_logits" in self.heads._modules:
            nn.init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / self.heads.pre_logits.in_features))
            nn.init.zeros_(self.heads.pre_logits.bias)
        nn.init.zeros_(self.heads.head.weight)
        nn.init.zeros_(self.heads.head.bias)

    def _process_input(self, x):
        if x.dim() != 4:
            raise ValueError(f"VisionTransformer expects images (N, 3, H, W), got shape {tuple(x.shape)}")
        n, c, h, w = x.shape
        p = self.patch_size
        if h != self.image_size:
            raise ValueError(f"Wrong image height! Expected {self.image_size} but got {h}!")
        if w != self.image_size:
            raise ValueError(f"Wrong image width! Expected {self.image_size} but got {w}!")
        n_h, n_w = h // p, w // p
        x = self.conv_proj(x)                            # (n, hidden_dim, n_h, n_w)
        x = x.reshape(n, self.hidden_dim, n_h * n_w)
        return x.permute(0, 2, 1)                        # (n, seq, hidden_dim): the layout attention expects

    def forward(self, x):
        x = self._process_input(x)
        n = x.shape[0]
        batch_class_token = self.class_token.expand(n, -1, -1)
        x = rtx.cat([batch_class_token, x], dim=1)
        x = self.encoder(x)
        return self.heads(x[:, 0])                       # the class token's output


def _vision_transformer(name, patch_size, num_layers, num_heads, hidden_dim, mlp_dim, weights, progress, **kwargs):
    _check_weights(name, weights, progress)
    image_size = kwargs.pop("image_size", 224)
    return VisionTransformer(image_size=image_size, patch_size=patch_size, num_layers=num_layers,
                             num_heads=num_heads, hidden_dim=hidden_dim, mlp_dim=mlp_dim, **kwargs)


def vit_t_16(*, weights=None, progress=True, **kwargs):
    """ViT-Tiny/16 (not in torchvision; DeiT's/timm's size with torchvision's names)."""
    return _vision_transformer("vit_t_16", 16, 12, 3, 192, 768, weights, progress, **kwargs)


def vit_s_16(*, weights=None, progress=True, **kwargs):
    """ViT-Small/16 (not in torchvision; DeiT's/timm's size with torchvision's names)."""
    return _vision_transformer("vit_s_16", 16, 12, 6, 384, 1536, weights, progress, **kwargs)


def vit_b_16(*, weights=None, progress=True, **kwargs):
    """ViT-Base/16; 86,567,656 parameters."""
    return _vision_transformer("vit_b_16", 16, 12, 12, 768, 3072, weights, progress, **kwargs)


def vit_b_32(*, weights=None, progress=True, **kwargs):
    """ViT-Base/32; 88,224,232 parameters."""
    return _vision_transformer("vit_b_32", 32, 12, 12, 768, 3072, weights, progress, **kwargs)
