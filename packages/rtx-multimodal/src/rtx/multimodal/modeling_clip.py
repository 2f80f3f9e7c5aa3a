"""CLIP (Radford et al. 2021) in transformers' layout: CLIPModel, CLIPTextModel, CLIPVisionModel,
CLIPTextModelWithProjection, CLIPVisionModelWithProjection.

    model = CLIPModel.from_pretrained("ckpt/")             # config.json + model.safetensors (or shards)
    out = model(input_ids=ids, pixel_values=px, attention_mask=mask, return_loss=True)
    out.logits_per_image, out.logits_per_text, out.text_embeds, out.image_embeds, out.loss

State-dict keys are transformers' (text_model.encoder.layers.0.self_attn.q_proj.weight,
vision_model.pre_layrnorm.weight with its misspelling, visual_projection.weight, logit_scale), so
checkpoints load and save unrenamed.

Divergence: get_text_features / get_image_features return the projected features as a Tensor
(transformers 4.x, and what user code does arithmetic on); transformers 5.x wraps them in an output
object's pooler_output.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import rtx
import rtx.nn.functional as F
from rtx.multimodal.configuration_clip import CLIPConfig, CLIPTextConfig, CLIPVisionConfig
from rtx.nn import Conv2d, Embedding, LayerNorm, Linear, Module, ModuleList, Parameter, init
from rtx.transformers.activations import get_activation
from rtx.transformers.modeling import PreTrainedModel
from rtx.transformers.outputs import ModelOutput

__all__ = ["CLIPModel", "CLIPTextModel", "CLIPVisionModel", "CLIPTextModelWithProjection",
           "CLIPVisionModelWithProjection", "CLIPOutput", "BaseModelOutputWithPooling", "clip_loss",
           "contrastive_loss"]


# ---- outputs --------------------------------------------------------------------------------------
@dataclass
class BaseModelOutputWithPooling(ModelOutput):
    last_hidden_state: Any
    pooler_output: Any = None


@dataclass
class CLIPTextModelOutput(ModelOutput):
    text_embeds: Any
    last_hidden_state: Any = None


@dataclass
class CLIPVisionModelOutput(ModelOutput):
    image_embeds: Any
    last_hidden_state: Any = None


@dataclass
class CLIPOutput(ModelOutput):
    loss: Any = None
    logits_per_image: Any = None    # (images, texts): scaled cosine similarities
    logits_per_text: Any = None     # (texts, images): its transpose
    text_embeds: Any = None         # (texts, projection_dim), unit length
    image_embeds: Any = None        # (images, projection_dim), unit length
    text_model_output: Any = None
    vision_model_output: Any = None


# ---- loss -----------------------------------------------------------------------------------------
def contrastive_loss(logits):
    """Cross entropy of each row against its own index (the matching pair is on the diagonal)."""
    return F.cross_entropy(logits, rtx.arange(logits.shape[0], device=logits.device))


def clip_loss(similarity):
    """CLIP's symmetric InfoNCE: the mean of the text->image and image->text cross entropies.
    similarity: logits_per_text (texts, images) of matching pairs."""
    return (contrastive_loss(similarity) + contrastive_loss(similarity.t())) / 2.0


# ---- blocks ---------------------------------------------------------------------------------------
class CLIPAttention(Module):
    def __init__(self, config):
        super().__init__()
        self.embed_dim, self.num_heads = config.hidden_size, config.num_attention_heads
        self.head_dim = self.embed_dim // self.num_heads
        self.scale = self.head_dim ** -0.5
        self.dropout = config.attention_dropout
        self.k_proj = Linear(self.embed_dim, self.embed_dim)
        self.v_proj = Linear(self.embed_dim, self.embed_dim)
        self.q_proj = Linear(self.embed_dim, self.embed_dim)
        self.out_proj = Linear(self.embed_dim, self.embed_dim)

    def forward(self, x, attn_mask=None, causal=False):
        B, L, _ = x.shape
        q, k, v = (p(x).reshape(B, L, self.num_heads, self.head_dim).transpose(1, 2)
                   for p in (self.q_proj, self.k_proj, self.v_proj))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask, self.dropout if self.training else 0.0,
                                             causal and attn_mask is None, self.scale)
        return self.out_proj(out.transpose(1, 2).reshape(B, L, self.embed_dim))


class CLIPMLP(Module):
    def __init__(self, config):
        super().__init__()
        self.activation_fn = get_activation(config.hidden_act)
        self.fc1 = Linear(config.hidden_size, config.intermediate_size)
        self.fc2 = Linear(config.intermediate_size, config.hidden_size)

    def forward(self, x):
        return self.fc2(self.activation_fn(self.fc1(x)))


class CLIPEncoderLayer(Module):
    """Pre-LayerNorm transformer block."""

    def __init__(self, config):
        super().__init__()
        self.self_attn = CLIPAttention(config)
        self.layer_norm1 = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.mlp = CLIPMLP(config)
        self.layer_norm2 = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x, attn_mask=None, causal=False):
        x = x + self.self_attn(self.layer_norm1(x), attn_mask, causal)
        return x + self.mlp(self.layer_norm2(x))


class CLIPEncoder(Module):
    def __init__(self, config):
        super().__init__()
        self.layers = ModuleList([CLIPEncoderLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, x, attn_mask=None, causal=False):
        for layer in self.layers:
            x = layer(x, attn_mask, causal)
        return x


class CLIPTextEmbeddings(Module):
    def __init__(self, config: CLIPTextConfig):
        super().__init__()
        self.token_embedding = Embedding(config.vocab_size, config.hidden_size)
        self.position_embedding = Embedding(config.max_position_embeddings, config.hidden_size)

    def forward(self, input_ids, position_ids=None):
        L = input_ids.shape[-1]
        if L > self.position_embedding.num_embeddings:
            raise ValueError(f"CLIP text: sequence length {L} is past max_position_embeddings "
                             f"({self.position_embedding.num_embeddings}); truncate (the tokenizer's truncation=True)")
        if position_ids is None:
            position_ids = rtx.arange(L, device=input_ids.device).reshape(1, L)
        return self.token_embedding(input_ids) + self.position_embedding(position_ids)


class CLIPVisionEmbeddings(Module):
    def __init__(self, config: CLIPVisionConfig):
        super().__init__()
        self.embed_dim, self.image_size, self.patch_size = config.hidden_size, config.image_size, config.patch_size
        self.class_embedding = Parameter(rtx.randn(self.embed_dim))
        self.patch_embedding = Conv2d(config.num_channels, self.embed_dim, kernel_size=self.patch_size,
                                      stride=self.patch_size, bias=False)
        self.num_positions = config.num_patches + 1
        self.position_embedding = Embedding(self.num_positions, self.embed_dim)

    def forward(self, pixel_values):
        if pixel_values.ndim != 4 or tuple(pixel_values.shape[2:]) != (self.image_size, self.image_size):
            raise ValueError(f"CLIP vision: pixel_values must be (batch, channels, {self.image_size}, "
                             f"{self.image_size}), got {tuple(pixel_values.shape)}; CLIPImageProcessor makes them")
        B = pixel_values.shape[0]
        patches = self.patch_embedding(pixel_values.to(self.patch_embedding.weight.dtype))
        patches = patches.flatten(2).transpose(1, 2)                      # (B, patches, dim)
        cls = self.class_embedding.reshape(1, 1, -1).expand(B, 1, self.embed_dim)
        return rtx.cat([cls, patches], 1) + self.position_embedding.weight.unsqueeze(0)


class CLIPTextTransformer(Module):
    def __init__(self, config: CLIPTextConfig):
        super().__init__()
        self.config = config
        self.embeddings = CLIPTextEmbeddings(config)
        self.encoder = CLIPEncoder(config)
        self.final_layer_norm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.eos_token_id = config.eos_token_id

    def forward(self, input_ids, attention_mask=None, position_ids=None):
        if input_ids is None:
            raise ValueError("CLIP text model: input_ids are required")
        if input_ids.ndim != 2:
            raise ValueError(f"CLIP text model: input_ids must be (batch, seq), got shape {tuple(input_ids.shape)}")
        B, L = input_ids.shape
        vocab = self.embeddings.token_embedding.num_embeddings
        if bool((input_ids < 0).any()) or bool((input_ids >= vocab).any()):
            raise ValueError(f"CLIP text model: input_ids must lie in [0, {vocab}), got "
                             f"[{int(input_ids.min())}, {int(input_ids.max())}]")
        x = self.embeddings(input_ids, position_ids)
        mask = None
        if attention_mask is not None and not bool((attention_mask != 0).all()):
            # the text encoder is causal (CLIP's), and padded keys are hidden too
            causal = rtx.ones(L, L, dtype=rtx.bool, device=x.device).tril()
            mask = causal.reshape(1, 1, L, L) & (attention_mask != 0).reshape(B, 1, 1, L)
        x = self.final_layer_norm(self.encoder(x, mask, causal=True))
        if self.eos_token_id == 2:
            # checkpoints made before transformers' PR #24773 say eos_token_id=2: the end token is the
            # highest id of each row
            eos = input_ids.argmax(-1)
        else:
            eos = (input_ids == self.eos_token_id).to(rtx.int64).argmax(-1)
        pooled = x[rtx.arange(B, device=x.device), eos]
        return BaseModelOutputWithPooling(last_hidden_state=x, pooler_output=pooled)


class CLIPVisionTransformer(Module):
    def __init__(self, config: CLIPVisionConfig):
        super().__init__()
        self.config = config
        self.embeddings = CLIPVisionEmbeddings(config)
        self.pre_layrnorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)   # transformers' spelling
        self.encoder = CLIPEncoder(config)
        self.post_layernorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, pixel_values):
        if pixel_values is None:
            raise ValueError("CLIP vision model: pixel_values are required")
        x = self.encoder(self.pre_layrnorm(self.embeddings(pixel_values)))
        return BaseModelOutputWithPooling(last_hidden_state=x, pooler_output=self.post_layernorm(x[:, 0, :]))


# ---- models ---------------------------------------------------------------------------------------
class CLIPPreTrainedModel(PreTrainedModel):
    config_class = CLIPConfig
    base_model_prefix = "clip"
    _ignored_keys = (r"position_ids$",)   # a buffer older checkpoints carry

    @classmethod
    def from_pretrained(cls, path, config=None, **kwargs):
        """As PreTrainedModel.from_pretrained; a tower model (CLIPTextModel, ...) also loads from a
        full CLIPModel folder, taking its sub-config and the top-level projection_dim (the other tower's
        weights are reported unused, as transformers does)."""
        p = Path(path)
        if config is None and cls.config_class is not CLIPConfig:
            cfg_file = (p if p.is_dir() else p.parent) / "config.json"
            if cfg_file.exists():
                with open(cfg_file, encoding="utf-8") as f:
                    d = json.load(f)
                if d.get("model_type") == "clip":
                    strict = kwargs.get("strict", None) is not False
                    full = CLIPConfig.from_dict(d, strict=strict)
                    config = full.text_config if cls.config_class is CLIPTextConfig else full.vision_config
                    config.projection_dim = full.projection_dim   # the projection the full model was saved with
        return super().from_pretrained(path, config, **kwargs)

    def _init_weights(self):
        """transformers' CLIP init (CLIPPreTrainedModel._init_weights, initializer_factor 1)."""
        cfg = self.config
        factor = cfg.initializer_factor
        with rtx.no_grad():
            for m in self.modules():
                if isinstance(m, CLIPTextEmbeddings):
                    init.normal_(m.token_embedding.weight, std=0.02 * factor)
                    init.normal_(m.position_embedding.weight, std=0.02 * factor)
                elif isinstance(m, CLIPVisionEmbeddings):
                    std = m.embed_dim ** -0.5 * factor
                    init.normal_(m.class_embedding, std=std)
                    init.normal_(m.patch_embedding.weight, std=0.02 * factor)
                    init.normal_(m.position_embedding.weight, std=0.02 * factor)
                elif isinstance(m, CLIPEncoder):
                    n = len(m.layers)
                    for layer in m.layers:
                        a, mlp = layer.self_attn, layer.mlp
                        in_std = a.embed_dim ** -0.5 * (2 * n) ** -0.5 * factor
                        for lin in (a.q_proj, a.k_proj, a.v_proj):
                            init.normal_(lin.weight, std=a.embed_dim ** -0.5 * factor)
                        init.normal_(a.out_proj.weight, std=in_std)
                        init.normal_(mlp.fc1.weight, std=(2 * mlp.fc1.in_features) ** -0.5 * factor)
                        init.normal_(mlp.fc2.weight, std=in_std)
                        for lin in (a.q_proj, a.k_proj, a.v_proj, a.out_proj, mlp.fc1, mlp.fc2):
                            init.zeros_(lin.bias)
            for name in ("text_projection", "visual_projection"):
                lin = getattr(self, name, None)
                if lin is not None:
                    init.normal_(lin.weight, std=lin.in_features ** -0.5 * factor)

    def save_pretrained(self, path, *, safe_serialization=True, max_shard_size=None):
        """config.json and model.safetensors; with max_shard_size (bytes, or "10MB"/"2GB") the
        weights go to model-0000i-of-0000n.safetensors shards with model.safetensors.index.json,
        transformers' sharded layout."""
        from safetensors.numpy import save_file
        super().save_pretrained(path, safe_serialization=safe_serialization)
        p = Path(path)
        # written again from the state dict: np.ascontiguousarray (the base class's) makes the 0-d
        # logit_scale 1-d, and transformers' checkpoints hold it as a scalar
        tensors = {k: np.array(t.detach().cpu().numpy(), order="C") for k, t in self.state_dict().items()}
        if max_shard_size is None:
            save_file(tensors, str(p / "model.safetensors"), metadata={"format": "pt"})
            return
        limit = _parse_size(max_shard_size)
        shards, current, size = [], {}, 0
        for key in sorted(tensors):
            nbytes = tensors[key].nbytes
            if current and size + nbytes > limit:
                shards.append(current)
                current, size = {}, 0
            current[key] = tensors[key]
            size += nbytes
        shards.append(current)
        if len(shards) == 1:
            save_file(tensors, str(p / "model.safetensors"), metadata={"format": "pt"})
            return
        (p / "model.safetensors").unlink()
        weight_map = {}
        for i, shard in enumerate(shards, 1):
            name = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
            save_file(shard, str(p / name), metadata={"format": "pt"})
            weight_map.update({k: name for k in shard})
        index = {"metadata": {"total_size": int(sum(t.nbytes for t in tensors.values()))}, "weight_map": weight_map}
        with open(p / "model.safetensors.index.json", "w", encoding="utf-8") as f:
            json.dump(index, f, indent=2, sort_keys=True)


def _parse_size(size) -> int:
    if isinstance(size, int):
        return size
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]i?B)?\s*", str(size), re.IGNORECASE)
    if not m:
        raise ValueError(f"max_shard_size must be a byte count or a string like '10MB', got {size!r}")
    unit = (m.group(2) or "B").upper()
    scale = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}[unit]
    return int(float(m.group(1)) * scale)


class CLIPTextModel(CLIPPreTrainedModel):
    """The text tower: last_hidden_state and the pooled (end-token) state."""

    config_class = CLIPTextConfig

    def __init__(self, config: CLIPTextConfig):
        super().__init__(config)
        self.text_model = CLIPTextTransformer(config)
        self._init_weights()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None):
        return self.text_model(input_ids, attention_mask, position_ids)


class CLIPVisionModel(CLIPPreTrainedModel):
    """The vision tower: last_hidden_state and the pooled (class-token) state."""

    config_class = CLIPVisionConfig

    def __init__(self, config: CLIPVisionConfig):
        super().__init__(config)
        self.vision_model = CLIPVisionTransformer(config)
        self._init_weights()

    def forward(self, pixel_values=None):
        return self.vision_model(pixel_values)


class CLIPTextModelWithProjection(CLIPPreTrainedModel):
    config_class = CLIPTextConfig

    def __init__(self, config: CLIPTextConfig):
        super().__init__(config)
        self.text_model = CLIPTextTransformer(config)
        self.text_projection = Linear(config.hidden_size, config.projection_dim, bias=False)
        self._init_weights()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None):
        out = self.text_model(input_ids, attention_mask, position_ids)
        return CLIPTextModelOutput(text_embeds=self.text_projection(out.pooler_output),
                                   last_hidden_state=out.last_hidden_state)


class CLIPVisionModelWithProjection(CLIPPreTrainedModel):
    config_class = CLIPVisionConfig

    def __init__(self, config: CLIPVisionConfig):
        super().__init__(config)
        self.vision_model = CLIPVisionTransformer(config)
        self.visual_projection = Linear(config.hidden_size, config.projection_dim, bias=False)
        self._init_weights()

    def forward(self, pixel_values=None):
        out = self.vision_model(pixel_values)
        return CLIPVisionModelOutput(image_embeds=self.visual_projection(out.pooler_output),
                                     last_hidden_state=out.last_hidden_state)


class CLIPModel(CLIPPreTrainedModel):
    """Both towers, their projections to a shared space, and the learnable temperature."""

    config_class = CLIPConfig

    def __init__(self, config: CLIPConfig):
        super().__init__(config)
        t, v = config.text_config, config.vision_config
        self.projection_dim = config.projection_dim
        self.text_model = CLIPTextTransformer(t)
        self.vision_model = CLIPVisionTransformer(v)
        self.visual_projection = Linear(v.hidden_size, config.projection_dim, bias=False)
        self.text_projection = Linear(t.hidden_size, config.projection_dim, bias=False)
        self.logit_scale = Parameter(rtx.tensor(float(config.logit_scale_init_value)))
        self._init_weights()

    def get_text_features(self, input_ids=None, attention_mask=None, position_ids=None):
        """Projected text features (texts, projection_dim), not normalised."""
        return self.text_projection(self.text_model(input_ids, attention_mask, position_ids).pooler_output)

    def get_image_features(self, pixel_values=None):
        """Projected image features (images, projection_dim), not normalised."""
        return self.visual_projection(self.vision_model(pixel_values).pooler_output)

    def forward(self, input_ids=None, pixel_values=None, attention_mask=None, position_ids=None, return_loss=False):
        vision = self.vision_model(pixel_values)
        text = self.text_model(input_ids, attention_mask, position_ids)
        image_embeds = _unit(self.visual_projection(vision.pooler_output))
        text_embeds = _unit(self.text_projection(text.pooler_output))
        logits_per_text = (text_embeds @ image_embeds.t()) * self.logit_scale.exp()
        logits_per_image = logits_per_text.t()
        loss = None
        if return_loss:
            if logits_per_text.shape[0] != logits_per_text.shape[1]:
                raise ValueError(f"CLIPModel: return_loss pairs text i with image i, so it needs as many texts as "
                                 f"images; got {logits_per_text.shape[0]} texts and {logits_per_text.shape[1]} images")
            loss = clip_loss(logits_per_text)
        return CLIPOutput(loss=loss, logits_per_image=logits_per_image, logits_per_text=logits_per_text,
                          text_embeds=text_embeds, image_embeds=image_embeds, text_model_output=text,
                          vision_model_output=vision)


def _unit(x):
    # transformers divides by the plain L2 norm (no epsilon)
    return x / (x * x).sum(-1, keepdim=True).sqrt()
