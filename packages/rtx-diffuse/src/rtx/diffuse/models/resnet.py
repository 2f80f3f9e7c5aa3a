"""The UNet's residual block (GroupNorm, SiLU, conv, plus the projected time embedding) and its
down/up-sampling convolutions, with diffusers' parameter names."""
from __future__ import annotations

import rtx.nn as nn
import rtx.nn.functional as F
from rtx.diffuse.models.activations import get_activation


class Downsample2D(nn.Module):
    def __init__(self, channels, use_conv=False, out_channels=None, padding=1, name="conv"):
        super().__init__()
        self.channels = channels
        self.out_channels = out_channels or channels
        self.use_conv = use_conv
        self.padding = padding
        if use_conv:
            self.conv = nn.Conv2d(channels, self.out_channels, kernel_size=3, stride=2, padding=padding)
        else:
            if self.channels != self.out_channels:
                raise ValueError("Downsample2D without a conv keeps the channel count")
            self.conv = nn.AvgPool2d(kernel_size=2, stride=2)

    def forward(self, hidden_states):
        if self.use_conv and self.padding == 0:
            hidden_states = F.pad(hidden_states, (0, 1, 0, 1))
        return self.conv(hidden_states)


class Upsample2D(nn.Module):
    def __init__(self, channels, use_conv=False, out_channels=None, name="conv"):
        super().__init__()
        self.channels = channels
        self.out_channels = out_channels or channels
        self.use_conv = use_conv
        self.conv = nn.Conv2d(channels, self.out_channels, kernel_size=3, padding=1) if use_conv else None

    def forward(self, hidden_states, output_size=None):
        if output_size is None:
            hidden_states = F.interpolate(hidden_states, scale_factor=2.0, mode="nearest")
        else:
            hidden_states = F.interpolate(hidden_states, size=output_size, mode="nearest")
        return self.conv(hidden_states) if self.conv is not None else hidden_states


class ResnetBlock2D(nn.Module):
    def __init__(self, *, in_channels, out_channels=None, conv_shortcut=False, dropout=0.0, temb_channels=512,
                 groups=32, groups_out=None, pre_norm=True, eps=1e-6, non_linearity="swish",
                 time_embedding_norm="default", output_scale_factor=1.0, use_in_shortcut=None,
                 conv_shortcut_bias=True):
        super().__init__()
        out_channels = in_channels if out_channels is None else out_channels
        self.in_channels, self.out_channels = in_channels, out_channels
        self.output_scale_factor = output_scale_factor
        self.time_embedding_norm = time_embedding_norm
        self.norm1 = nn.GroupNorm(num_groups=groups, num_channels=in_channels, eps=eps, affine=True)
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1)
        if temb_channels is None:
            self.time_emb_proj = None
        elif time_embedding_norm == "default":
            self.time_emb_proj = nn.Linear(temb_channels, out_channels)
        elif time_embedding_norm == "scale_shift":
            self.time_emb_proj = nn.Linear(temb_channels, 2 * out_channels)
        else:
            raise ValueError(f"unknown time_embedding_norm : {time_embedding_norm} ")
        self.norm2 = nn.GroupNorm(num_groups=groups_out or groups, num_channels=out_channels, eps=eps, affine=True)
        self.dropout = nn.Dropout(dropout)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1)
        self.nonlinearity = get_activation(non_linearity)
        self.use_in_shortcut = in_channels != out_channels if use_in_shortcut is None else use_in_shortcut
        self.conv_shortcut = (nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0,
                                        bias=conv_shortcut_bias) if self.use_in_shortcut else None)

    def forward(self, input_tensor, temb):
        h = self.conv1(self.nonlinearity(self.norm1(input_tensor)))
        if self.time_emb_proj is not None and temb is not None:
            temb = self.time_emb_proj(self.nonlinearity(temb))[:, :, None, None]
        if self.time_embedding_norm == "default":
            if temb is not None:
                h = h + temb
            h = self.norm2(h)
        else:  # scale_shift: the time embedding modulates the normalised features (FiLM)
            scale, shift = temb.chunk(2, dim=1)
            h = self.norm2(h) * (1 + scale) + shift
        h = self.conv2(self.dropout(self.nonlinearity(h)))
        if self.conv_shortcut is not None:
            input_tensor = self.conv_shortcut(input_tensor)
        out = input_tensor + h
        # x / 1.0 is x: skip a whole-tensor op and its backward node for the default factor
        return out if self.output_scale_factor == 1.0 else out / self.output_scale_factor
