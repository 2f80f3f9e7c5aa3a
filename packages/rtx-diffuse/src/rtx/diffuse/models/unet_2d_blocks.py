"""The UNet's down, mid and up blocks with diffusers' names and state_dict layout:
resnets.{i}, attentions.{i}, downsamplers.0.conv / upsamplers.0.conv."""
from __future__ import annotations

import rtx
import rtx.nn as nn
from rtx.diffuse.models.attention import Attention, Transformer2DModel
from rtx.diffuse.models.resnet import Downsample2D, ResnetBlock2D, Upsample2D


def _resnet(cin, cout, temb, eps, groups, dropout, act, scale_shift, output_scale_factor=1.0):
    return ResnetBlock2D(in_channels=cin, out_channels=cout, temb_channels=temb, eps=eps, groups=groups,
                         dropout=dropout, non_linearity=act, time_embedding_norm=scale_shift,
                         output_scale_factor=output_scale_factor)


def _self_attention(channels, head_dim, eps, groups, output_scale_factor=1.0):
    # the UNet2DModel's spatial self-attention (diffusers' former AttentionBlock): GroupNorm inside, residual
    return Attention(channels, heads=channels // head_dim, dim_head=head_dim, rescale_output_factor=output_scale_factor,
                     eps=eps, norm_num_groups=groups, residual_connection=True, bias=True, upcast_softmax=True)


class _Down(nn.Module):
    def __init__(self, in_channels, out_channels, temb_channels, num_layers, resnet_eps, resnet_act_fn,
                 resnet_groups, dropout, resnet_time_scale_shift, add_downsample, downsample_padding, attention):
        super().__init__()
        self.resnets = nn.ModuleList([
            _resnet(in_channels if i == 0 else out_channels, out_channels, temb_channels, resnet_eps, resnet_groups,
                    dropout, resnet_act_fn, resnet_time_scale_shift) for i in range(num_layers)])
        if attention is not None:
            self.attentions = nn.ModuleList([attention() for _ in range(num_layers)])
        self.downsamplers = (nn.ModuleList([Downsample2D(out_channels, use_conv=True, out_channels=out_channels,
                                                         padding=downsample_padding, name="op")])
                             if add_downsample else None)

    def forward(self, hidden_states, temb=None, encoder_hidden_states=None, **_):
        output_states = ()
        attentions = getattr(self, "attentions", [None] * len(self.resnets))
        for resnet, attn in zip(self.resnets, attentions):
            hidden_states = resnet(hidden_states, temb)
            if attn is not None:
                hidden_states = attn(hidden_states, encoder_hidden_states=encoder_hidden_states)
            output_states += (hidden_states,)
        if self.downsamplers is not None:
            hidden_states = self.downsamplers[0](hidden_states)
            output_states += (hidden_states,)
        return hidden_states, output_states


class _Up(nn.Module):
    def __init__(self, in_channels, prev_output_channel, out_channels, temb_channels, num_layers, resnet_eps,
                 resnet_act_fn, resnet_groups, dropout, resnet_time_scale_shift, add_upsample, attention):
        super().__init__()
        resnets = []
        for i in range(num_layers):
            # each resnet takes the running features plus one skip connection from the down path
            skip = in_channels if i == num_layers - 1 else out_channels
            cin = prev_output_channel if i == 0 else out_channels
            resnets.append(_resnet(cin + skip, out_channels, temb_channels, resnet_eps, resnet_groups, dropout,
                                   resnet_act_fn, resnet_time_scale_shift))
        self.resnets = nn.ModuleList(resnets)
        if attention is not None:
            self.attentions = nn.ModuleList([attention() for _ in range(num_layers)])
        self.upsamplers = (nn.ModuleList([Upsample2D(out_channels, use_conv=True, out_channels=out_channels)])
                           if add_upsample else None)

    def forward(self, hidden_states, res_hidden_states_tuple, temb=None, encoder_hidden_states=None,
                upsample_size=None, **_):
        attentions = getattr(self, "attentions", [None] * len(self.resnets))
        for resnet, attn in zip(self.resnets, attentions):
            res_hidden_states_tuple, skip = res_hidden_states_tuple[:-1], res_hidden_states_tuple[-1]
            hidden_states = resnet(rtx.cat([hidden_states, skip], dim=1), temb)
            if attn is not None:
                hidden_states = attn(hidden_states, encoder_hidden_states=encoder_hidden_states)
        if self.upsamplers is not None:
            hidden_states = self.upsamplers[0](hidden_states, upsample_size)
        return hidden_states


class DownBlock2D(_Down):
    def __init__(self, in_channels, out_channels, temb_channels, dropout=0.0, num_layers=1, resnet_eps=1e-6,
                 resnet_time_scale_shift="default", resnet_act_fn="swish", resnet_groups=32, add_downsample=True,
                 downsample_padding=1):
        super().__init__(in_channels, out_channels, temb_channels, num_layers, resnet_eps, resnet_act_fn,
                         resnet_groups, dropout, resnet_time_scale_shift, add_downsample, downsample_padding, None)


class AttnDownBlock2D(_Down):
    def __init__(self, in_channels, out_channels, temb_channels, dropout=0.0, num_layers=1, resnet_eps=1e-6,
                 resnet_time_scale_shift="default", resnet_act_fn="swish", resnet_groups=32, attention_head_dim=1,
                 add_downsample=True, downsample_padding=1):
        super().__init__(in_channels, out_channels, temb_channels, num_layers, resnet_eps, resnet_act_fn,
                         resnet_groups, dropout, resnet_time_scale_shift, add_downsample, downsample_padding,
                         lambda: _self_attention(out_channels, attention_head_dim or out_channels, resnet_eps,
                                                 resnet_groups))


class CrossAttnDownBlock2D(_Down):
    has_cross_attention = True

    def __init__(self, in_channels, out_channels, temb_channels, dropout=0.0, num_layers=1,
                 transformer_layers_per_block=1, resnet_eps=1e-6, resnet_time_scale_shift="default",
                 resnet_act_fn="swish", resnet_groups=32, num_attention_heads=1, cross_attention_dim=1280,
                 downsample_padding=1, add_downsample=True, use_linear_projection=False):
        super().__init__(in_channels, out_channels, temb_channels, num_layers, resnet_eps, resnet_act_fn,
                         resnet_groups, dropout, resnet_time_scale_shift, add_downsample, downsample_padding,
                         lambda: Transformer2DModel(num_attention_heads, out_channels // num_attention_heads,
                                                    in_channels=out_channels, num_layers=transformer_layers_per_block,
                                                    cross_attention_dim=cross_attention_dim,
                                                    norm_num_groups=resnet_groups,
                                                    use_linear_projection=use_linear_projection))


class UpBlock2D(_Up):
    def __init__(self, in_channels, prev_output_channel, out_channels, temb_channels, dropout=0.0, num_layers=1,
                 resnet_eps=1e-6, resnet_time_scale_shift="default", resnet_act_fn="swish", resnet_groups=32,
                 add_upsample=True):
        super().__init__(in_channels, prev_output_channel, out_channels, temb_channels, num_layers, resnet_eps,
                         resnet_act_fn, resnet_groups, dropout, resnet_time_scale_shift, add_upsample, None)


class AttnUpBlock2D(_Up):
    def __init__(self, in_channels, prev_output_channel, out_channels, temb_channels, dropout=0.0, num_layers=1,
                 resnet_eps=1e-6, resnet_time_scale_shift="default", resnet_act_fn="swish", resnet_groups=32,
                 attention_head_dim=1, add_upsample=True):
        super().__init__(in_channels, prev_output_channel, out_channels, temb_channels, num_layers, resnet_eps,
                         resnet_act_fn, resnet_groups, dropout, resnet_time_scale_shift, add_upsample,
                         lambda: _self_attention(out_channels, attention_head_dim or out_channels, resnet_eps,
                                                 resnet_groups))


class CrossAttnUpBlock2D(_Up):
    has_cross_attention = True

    def __init__(self, in_channels, out_channels, prev_output_channel, temb_channels, dropout=0.0, num_layers=1,
                 transformer_layers_per_block=1, resnet_eps=1e-6, resnet_time_scale_shift="default",
                 resnet_act_fn="swish", resnet_groups=32, num_attention_heads=1, cross_attention_dim=1280,
                 add_upsample=True, use_linear_projection=False):
        super().__init__(in_channels, prev_output_channel, out_channels, temb_channels, num_layers, resnet_eps,
                         resnet_act_fn, resnet_groups, dropout, resnet_time_scale_shift, add_upsample,
                         lambda: Transformer2DModel(num_attention_heads, out_channels // num_attention_heads,
                                                    in_channels=out_channels, num_layers=transformer_layers_per_block,
                                                    cross_attention_dim=cross_attention_dim,
                                                    norm_num_groups=resnet_groups,
                                                    use_linear_projection=use_linear_projection))


class UNetMidBlock2D(nn.Module):
    def __init__(self, in_channels, temb_channels, dropout=0.0, num_layers=1, resnet_eps=1e-6,
                 resnet_time_scale_shift="default", resnet_act_fn="swish", resnet_groups=32, attn_groups=None,
                 add_attention=True, attention_head_dim=1, output_scale_factor=1.0):
        super().__init__()
        resnet_groups = resnet_groups if resnet_groups is not None else min(in_channels // 4, 32)
        if attn_groups is None:  # diffusers' rule: a scale-shift UNet's mid attention has no GroupNorm
            attn_groups = resnet_groups if resnet_time_scale_shift == "default" else None
        self.add_attention = add_attention
        r = lambda: _resnet(in_channels, in_channels, temb_channels, resnet_eps, resnet_groups, dropout,  # noqa: E731
                            resnet_act_fn, resnet_time_scale_shift, output_scale_factor)
        self.resnets = nn.ModuleList([r() for _ in range(num_layers + 1)])
        if add_attention:
            self.attentions = nn.ModuleList([
                _self_attention(in_channels, attention_head_dim or in_channels, resnet_eps, attn_groups,
                                output_scale_factor) for _ in range(num_layers)])

    def forward(self, hidden_states, temb=None, **_):
        hidden_states = self.resnets[0](hidden_states, temb)
        for i, resnet in enumerate(self.resnets[1:]):
            if self.add_attention:
                hidden_states = self.attentions[i](hidden_states)
            hidden_states = resnet(hidden_states, temb)
        return hidden_states


class UNetMidBlock2DCrossAttn(nn.Module):
    has_cross_attention = True

    def __init__(self, in_channels, temb_channels, dropout=0.0, num_layers=1, transformer_layers_per_block=1,
                 resnet_eps=1e-6, resnet_time_scale_shift="default", resnet_act_fn="swish", resnet_groups=32,
                 num_attention_heads=1, output_scale_factor=1.0, cross_attention_dim=1280,
                 use_linear_projection=False):
        super().__init__()
        r = lambda: _resnet(in_channels, in_channels, temb_channels, resnet_eps, resnet_groups, dropout,  # noqa: E731
                            resnet_act_fn, resnet_time_scale_shift, output_scale_factor)
        self.resnets = nn.ModuleList([r() for _ in range(num_layers + 1)])
        self.attentions = nn.ModuleList([
            Transformer2DModel(num_attention_heads, in_channels // num_attention_heads, in_channels=in_channels,
                               num_layers=transformer_layers_per_block, cross_attention_dim=cross_attention_dim,
                               norm_num_groups=resnet_groups, use_linear_projection=use_linear_projection)
            for _ in range(num_layers)])

    def forward(self, hidden_states, temb=None, encoder_hidden_states=None, **_):
        hidden_states = self.resnets[0](hidden_states, temb)
        for attn, resnet in zip(self.attentions, self.resnets[1:]):
            hidden_states = attn(hidden_states, encoder_hidden_states=encoder_hidden_states)
            hidden_states = resnet(hidden_states, temb)
        return hidden_states


DOWN_BLOCKS = {"DownBlock2D": DownBlock2D, "AttnDownBlock2D": AttnDownBlock2D,
               "CrossAttnDownBlock2D": CrossAttnDownBlock2D}
UP_BLOCKS = {"UpBlock2D": UpBlock2D, "AttnUpBlock2D": AttnUpBlock2D, "CrossAttnUpBlock2D": CrossAttnUpBlock2D}


def _block_class(table, name):
    name = name[7:] if name.startswith("UNetRes") else name
    if name not in table:
        raise ValueError(f"{name} does not exist in rtx.diffuse: expected one of {sorted(table)}")
    return table[name]


def get_down_block(down_block_type, **kw):
    return _block_class(DOWN_BLOCKS, down_block_type)(**kw)


def get_up_block(up_block_type, **kw):
    return _block_class(UP_BLOCKS, up_block_type)(**kw)
