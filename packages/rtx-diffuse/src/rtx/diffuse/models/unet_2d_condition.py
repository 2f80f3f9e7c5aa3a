"""UNet2DConditionModel (lite): diffusers' conditional UNet with its constructor arguments, config.json and
state_dict keys, conditioned on encoder_hidden_states through cross-attention (Transformer2DModel blocks)
and on class labels through `num_class_embeds`. The Stable-Diffusion extras (additional embeddings, ControlNet
residuals, adapters, dual cross-attention, ...) are not here; configs that turn them on are refused."""
from __future__ import annotations

import rtx.nn as nn
from rtx.diffuse.configuration import register_to_config
from rtx.diffuse.models.embeddings import TimestepEmbedding, Timesteps
from rtx.diffuse.models.modeling_utils import ModelMixin
from rtx.diffuse.models.unet_2d import UNet2DOutput, timestep_batch
from rtx.diffuse.models.unet_2d_blocks import UNetMidBlock2DCrossAttn, get_down_block, get_up_block

UNet2DConditionOutput = UNet2DOutput

# diffusers options this lite model does not implement: accepted in a config only at these values
_UNSUPPORTED_DEFAULTS = {
    "encoder_hid_dim": None, "encoder_hid_dim_type": None, "addition_embed_type": None,
    "addition_time_embed_dim": None, "time_cond_proj_dim": None, "time_embedding_act_fn": None,
    "timestep_post_act": None, "projection_class_embeddings_input_dim": None, "class_embeddings_concat": False,
    "dual_cross_attention": False, "only_cross_attention": False, "upcast_attention": False,
    "resnet_skip_time_act": False, "resnet_out_scale_factor": 1.0, "mid_block_only_cross_attention": None,
    "cross_attention_norm": None, "addition_embed_type_num_heads": 64, "reverse_transformer_layers_per_block": None,
    "attention_type": "default", "time_embedding_type": "positional", "time_embedding_dim": None,
    "class_embed_type": None, "conv_in_kernel": 3, "conv_out_kernel": 3,
}


def _per_block(value, n, name):
    if isinstance(value, (int, float)) or value is None:
        return [value] * n
    if len(value) != n:
        raise ValueError(f"`{name}` must have one entry per down block ({n}), got {value}")
    return list(value)


class UNet2DConditionModel(ModelMixin):
    @register_to_config
    def __init__(self, sample_size=None, in_channels=4, out_channels=4, center_input_sample=False,
                 flip_sin_to_cos=True, freq_shift=0,
                 down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D",
                                   "DownBlock2D"),
                 mid_block_type="UNetMidBlock2DCrossAttn",
                 up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"),
                 block_out_channels=(320, 640, 1280, 1280), layers_per_block=2, downsample_padding=1,
                 mid_block_scale_factor=1, dropout=0.0, act_fn="silu", norm_num_groups=32, norm_eps=1e-5,
                 cross_attention_dim=1280, transformer_layers_per_block=1, attention_head_dim=8,
                 num_attention_heads=None, use_linear_projection=False, num_class_embeds=None,
                 resnet_time_scale_shift="default", **unsupported):
        super().__init__()
        bad = {k: v for k, v in unsupported.items() if k not in _UNSUPPORTED_DEFAULTS or
               v != _UNSUPPORTED_DEFAULTS[k]}
        if bad:
            raise NotImplementedError(f"UNet2DConditionModel (lite) does not implement {bad}; supported are the "
                                      "constructor's named arguments")
        if len(down_block_types) != len(up_block_types):
            raise ValueError(f"Must provide the same number of `down_block_types` as `up_block_types`. "
                             f"`down_block_types`: {down_block_types}. `up_block_types`: {up_block_types}.")
        n = len(down_block_types)
        if len(block_out_channels) != n:
            raise ValueError(f"Must provide the same number of `block_out_channels` as `down_block_types`. "
                             f"`block_out_channels`: {block_out_channels}. `down_block_types`: {down_block_types}.")
        # diffusers' historical naming: attention_head_dim is used as the number of heads when
        # num_attention_heads is not given
        heads = _per_block(num_attention_heads or attention_head_dim, n, "num_attention_heads")
        cross = _per_block(cross_attention_dim, n, "cross_attention_dim")
        layers = _per_block(layers_per_block, n, "layers_per_block")
        tlayers = _per_block(transformer_layers_per_block, n, "transformer_layers_per_block")

        self.sample_size = sample_size
        time_embed_dim = block_out_channels[0] * 4
        self.conv_in = nn.Conv2d(in_channels, block_out_channels[0], kernel_size=3, padding=1)
        self.time_proj = Timesteps(block_out_channels[0], flip_sin_to_cos, freq_shift)
        self.time_embedding = TimestepEmbedding(block_out_channels[0], time_embed_dim, act_fn=act_fn)
        self.class_embedding = nn.Embedding(num_class_embeds, time_embed_dim) if num_class_embeds else None

        common = dict(temb_channels=time_embed_dim, resnet_eps=norm_eps, resnet_act_fn=act_fn,
                      resnet_groups=norm_num_groups, resnet_time_scale_shift=resnet_time_scale_shift, dropout=dropout)
        self.down_blocks = nn.ModuleList([])
        out_ch = block_out_channels[0]
        for i, kind in enumerate(down_block_types):
            in_ch, out_ch = out_ch, block_out_channels[i]
            extra = (dict(transformer_layers_per_block=tlayers[i], num_attention_heads=heads[i],
                          cross_attention_dim=cross[i], use_linear_projection=use_linear_projection)
                     if "CrossAttn" in kind else {"attention_head_dim": heads[i]} if "Attn" in kind else {})
            self.down_blocks.append(get_down_block(
                kind, num_layers=layers[i], in_channels=in_ch, out_channels=out_ch, add_downsample=i < n - 1,
                downsample_padding=downsample_padding, **extra, **common))
        if mid_block_type == "UNetMidBlock2DCrossAttn":
            self.mid_block = UNetMidBlock2DCrossAttn(
                in_channels=block_out_channels[-1], temb_channels=time_embed_dim, dropout=dropout,
                transformer_layers_per_block=tlayers[-1], resnet_eps=norm_eps, resnet_act_fn=act_fn,
                output_scale_factor=mid_block_scale_factor, resnet_time_scale_shift=resnet_time_scale_shift,
                cross_attention_dim=cross[-1], num_attention_heads=heads[-1], resnet_groups=norm_num_groups,
                use_linear_projection=use_linear_projection)
        elif mid_block_type is None:
            self.mid_block = None
        else:
            raise NotImplementedError(f"mid_block_type={mid_block_type!r}: rtx.diffuse has UNetMidBlock2DCrossAttn")

        self.up_blocks = nn.ModuleList([])
        rev = list(reversed(block_out_channels))
        rheads, rcross, rlayers, rtl = heads[::-1], cross[::-1], layers[::-1], tlayers[::-1]
        out_ch = rev[0]
        for i, kind in enumerate(up_block_types):
            prev, out_ch = out_ch, rev[i]
            in_ch = rev[min(i + 1, n - 1)]
            extra = (dict(transformer_layers_per_block=rtl[i], num_attention_heads=rheads[i],
                          cross_attention_dim=rcross[i], use_linear_projection=use_linear_projection)
                     if "CrossAttn" in kind else {"attention_head_dim": rheads[i]} if "Attn" in kind else {})
            self.up_blocks.append(get_up_block(
                kind, num_layers=rlayers[i] + 1, in_channels=in_ch, out_channels=out_ch, prev_output_channel=prev,
                add_upsample=i < n - 1, **extra, **common))
        self.conv_norm_out = nn.GroupNorm(num_channels=block_out_channels[0], num_groups=norm_num_groups,
                                          eps=norm_eps)
        self.conv_act = nn.SiLU()
        self.conv_out = nn.Conv2d(block_out_channels[0], out_channels, kernel_size=3, padding=1)

    @classmethod
    def extract_init_dict(cls, config, **kwargs):
        init, unused = super().extract_init_dict(config, **kwargs)
        # diffusers' options this model lacks go to __init__, which refuses them unless at their defaults
        for k in [k for k in unused if k in _UNSUPPORTED_DEFAULTS]:
            init[k] = unused.pop(k)
        return init, unused

    def forward(self, sample, timestep, encoder_hidden_states=None, class_labels=None, return_dict=True, **_):
        if self.config.center_input_sample:
            sample = 2 * sample - 1.0
        emb = self.time_embedding(self.time_proj(timestep_batch(timestep, sample)).to(self.dtype))
        if self.class_embedding is not None:
            if class_labels is None:
                raise ValueError("class_labels should be provided when num_class_embeds > 0")
            emb = emb + self.class_embedding(class_labels.reshape(-1).long().to(sample.device)).to(self.dtype)
        if encoder_hidden_states is not None and encoder_hidden_states.dim() != 3:
            raise ValueError(f"encoder_hidden_states must be (batch, sequence, cross_attention_dim), got shape "
                             f"{tuple(encoder_hidden_states.shape)}")
        sample = self.conv_in(sample)
        skips = (sample,)
        for block in self.down_blocks:
            sample, res = block(sample, emb, encoder_hidden_states=encoder_hidden_states)
            skips += res
        if self.mid_block is not None:
            sample = self.mid_block(sample, emb, encoder_hidden_states=encoder_hidden_states)
        for i, block in enumerate(self.up_blocks):
            k = len(block.resnets)
            skips, res = skips[:-k], skips[-k:]
            # odd sizes: upsample to the size of the next skip connection, as diffusers does
            size = skips[-1].shape[2:] if i < len(self.up_blocks) - 1 and skips else None
            sample = block(sample, res, emb, encoder_hidden_states=encoder_hidden_states,
                           upsample_size=tuple(size) if size is not None else None)
        sample = self.conv_out(self.conv_act(self.conv_norm_out(sample)))
        if not return_dict:
            return (sample,)
        return UNet2DConditionOutput(sample=sample)
