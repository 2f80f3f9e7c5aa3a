"""UNet2DModel: the DDPM UNet (Ho et al. 2020) as diffusers builds it, optionally class-conditional."""
from __future__ import annotations

import rtx
import rtx.nn as nn
from rtx.diffuse.configuration import register_to_config
from rtx.diffuse.models.embeddings import TimestepEmbedding, Timesteps
from rtx.diffuse.models.modeling_utils import ModelMixin
from rtx.diffuse.models.unet_2d_blocks import UNetMidBlock2D, get_down_block, get_up_block
from rtx.diffuse.utils import BaseOutput


class UNet2DOutput(BaseOutput):
    def __init__(self, sample):
        super().__init__(sample=sample)


def timestep_batch(timestep, sample):
    """A timestep given as a number, a 0-d or a (B,) tensor, as a (B,) tensor on the sample's device."""
    if not isinstance(timestep, rtx.Tensor):
        t = rtx.tensor([timestep], dtype=rtx.int64 if float(timestep).is_integer() else rtx.float32,
                       device=sample.device)
    else:
        t = timestep.reshape(-1).to(sample.device)
    if t.shape[0] not in (1, sample.shape[0]):
        raise ValueError(f"got {t.shape[0]} timesteps for a batch of {sample.shape[0]}: give one, or one per sample")
    return t.float().expand(sample.shape[0])


class UNet2DModel(ModelMixin):
    @register_to_config
    def __init__(self, sample_size=None, in_channels=3, out_channels=3, center_input_sample=False,
                 time_embedding_type="positional", time_embedding_dim=None, freq_shift=0, flip_sin_to_cos=True,
                 down_block_types=("DownBlock2D", "AttnDownBlock2D", "AttnDownBlock2D", "AttnDownBlock2D"),
                 mid_block_type="UNetMidBlock2D",
                 up_block_types=("AttnUpBlock2D", "AttnUpBlock2D", "AttnUpBlock2D", "UpBlock2D"),
                 block_out_channels=(224, 448, 672, 896), layers_per_block=2, mid_block_scale_factor=1,
                 downsample_padding=1, downsample_type="conv", upsample_type="conv", dropout=0.0, act_fn="silu",
                 attention_head_dim=8, norm_num_groups=32, attn_norm_num_groups=None, norm_eps=1e-5,
                 resnet_time_scale_shift="default", add_attention=True, class_embed_type=None,
                 num_class_embeds=None, num_train_timesteps=None):
        super().__init__()
        if time_embedding_type != "positional":
            raise NotImplementedError(f"time_embedding_type={time_embedding_type!r}: rtx.diffuse has 'positional'")
        if downsample_type != "conv" or upsample_type != "conv":
            raise NotImplementedError("rtx.diffuse has downsample_type/upsample_type 'conv'")
        if class_embed_type is not None:
            raise NotImplementedError("class_embed_type: rtx.diffuse conditions on labels through num_class_embeds")
        if len(down_block_types) != len(up_block_types):
            raise ValueError(f"Must provide the same number of `down_block_types` as `up_block_types`. "
                             f"`down_block_types`: {down_block_types}. `up_block_types`: {up_block_types}.")
        if len(block_out_channels) != len(down_block_types):
            raise ValueError(f"Must provide the same number of `block_out_channels` as `down_block_types`. "
                             f"`block_out_channels`: {block_out_channels}. `down_block_types`: {down_block_types}.")
        self.sample_size = sample_size
        time_embed_dim = time_embedding_dim or block_out_channels[0] * 4
        self.conv_in = nn.Conv2d(in_channels, block_out_channels[0], kernel_size=3, padding=(1, 1))
        self.time_proj = Timesteps(block_out_channels[0], flip_sin_to_cos, freq_shift)
        self.time_embedding = TimestepEmbedding(block_out_channels[0], time_embed_dim)
        self.class_embedding = nn.Embedding(num_class_embeds, time_embed_dim) if num_class_embeds else None

        common = dict(temb_channels=time_embed_dim, resnet_eps=norm_eps, resnet_act_fn=act_fn,
                      resnet_groups=norm_num_groups, resnet_time_scale_shift=resnet_time_scale_shift, dropout=dropout)
        self.down_blocks = nn.ModuleList([])
        out_ch = block_out_channels[0]
        for i, kind in enumerate(down_block_types):
            in_ch, out_ch = out_ch, block_out_channels[i]
            extra = {"attention_head_dim": attention_head_dim or out_ch} if "Attn" in kind else {}
            self.down_blocks.append(get_down_block(
                kind, num_layers=layers_per_block, in_channels=in_ch, out_channels=out_ch,
                add_downsample=i < len(block_out_channels) - 1, downsample_padding=downsample_padding,
                **extra, **common))
        self.mid_block = None if mid_block_type is None else UNetMidBlock2D(
            in_channels=block_out_channels[-1], temb_channels=time_embed_dim, dropout=dropout, resnet_eps=norm_eps,
            resnet_act_fn=act_fn, output_scale_factor=mid_block_scale_factor,
            resnet_time_scale_shift=resnet_time_scale_shift,
            attention_head_dim=attention_head_dim or block_out_channels[-1], resnet_groups=norm_num_groups,
            attn_groups=attn_norm_num_groups, add_attention=add_attention)

        self.up_blocks = nn.ModuleList([])
        rev = list(reversed(block_out_channels))
        out_ch = rev[0]
        for i, kind in enumerate(up_block_types):
            prev, out_ch = out_ch, rev[i]
            in_ch = rev[min(i + 1, len(block_out_channels) - 1)]
            extra = {"attention_head_dim": attention_head_dim or out_ch} if "Attn" in kind else {}
            self.up_blocks.append(get_up_block(
                kind, num_layers=layers_per_block + 1, in_channels=in_ch, out_channels=out_ch,
                prev_output_channel=prev, add_upsample=i < len(block_out_channels) - 1, **extra, **common))
        groups_out = norm_num_groups if norm_num_groups is not None else min(block_out_channels[0] // 4, 32)
        self.conv_norm_out = nn.GroupNorm(num_channels=block_out_channels[0], num_groups=groups_out, eps=norm_eps)
        self.conv_act = nn.SiLU()
        self.conv_out = nn.Conv2d(block_out_channels[0], out_channels, kernel_size=3, padding=1)

    def time_and_class_embedding(self, sample, timestep, class_labels):
        emb = self.time_embedding(self.time_proj(timestep_batch(timestep, sample)).to(self.dtype))
        if self.class_embedding is not None:
            if class_labels is None:
                raise ValueError("class_labels should be provided when doing class conditioning")
            emb = emb + self.class_embedding(class_labels.reshape(-1).long().to(sample.device)).to(self.dtype)
        elif class_labels is not None:
            raise ValueError("class_embedding needs to be initialized in order to use class conditioning")
        return emb

    def forward(self, sample, timestep, class_labels=None, return_dict=True):
        if self.config.center_input_sample:
            sample = 2 * sample - 1.0
        emb = self.time_and_class_embedding(sample, timestep, class_labels)
        sample = self.conv_in(sample)
        skips = (sample,)
        for block in self.down_blocks:
            sample, res = block(sample, emb)
            skips += res
        if self.mid_block is not None:
            sample = self.mid_block(sample, emb)
        for block in self.up_blocks:
            n = len(block.resnets)
            skips, res = skips[:-n], skips[-n:]
            sample = block(sample, res, emb)
        sample = self.conv_out(self.conv_act(self.conv_norm_out(sample)))
        if not return_dict:
            return (sample,)
        return UNet2DOutput(sample=sample)
