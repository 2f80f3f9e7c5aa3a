"""Attention with diffusers' parameter names (to_q/to_k/to_v/to_out.0, optional group_norm) and the
spatial transformer (Transformer2DModel of BasicTransformerBlocks) that UNet2DConditionModel uses for
cross-attention on encoder_hidden_states."""
from __future__ import annotations

import rtx.nn as nn
import rtx.nn.functional as F
from rtx.diffuse.models.activations import GEGLU


class Attention(nn.Module):
    def __init__(self, query_dim, cross_attention_dim=None, heads=8, dim_head=64, dropout=0.0, bias=False,
                 upcast_softmax=False, norm_num_groups=None, eps=1e-5, rescale_output_factor=1.0,
                 residual_connection=False, out_bias=True, **_ignored):
        super().__init__()
        inner_dim = dim_head * heads
        self.heads, self.dim_head = heads, dim_head
        self.rescale_output_factor = rescale_output_factor
        self.residual_connection = residual_connection
        self.group_norm = (nn.GroupNorm(num_channels=query_dim, num_groups=norm_num_groups, eps=eps, affine=True)
                           if norm_num_groups is not None else None)
        kv_dim = cross_attention_dim if cross_attention_dim is not None else query_dim
        self.to_q = nn.Linear(query_dim, inner_dim, bias=bias)
        self.to_k = nn.Linear(kv_dim, inner_dim, bias=bias)
        self.to_v = nn.Linear(kv_dim, inner_dim, bias=bias)
        self.to_out = nn.ModuleList([nn.Linear(inner_dim, query_dim, bias=out_bias), nn.Dropout(dropout)])

    def forward(self, hidden_states, encoder_hidden_states=None, attention_mask=None, **_):
        residual = hidden_states
        spatial = hidden_states.dim() == 4
        if spatial:  # (B, C, H, W) -> (B, H*W, C) tokens, normalised while still channels-first
            b, c, h, w = hidden_states.shape
            hidden_states = hidden_states.reshape(b, c, h * w)
            if self.group_norm is not None:
                hidden_states = self.group_norm(hidden_states)
            hidden_states = hidden_states.transpose(1, 2)
        elif self.group_norm is not None:
            hidden_states = self.group_norm(hidden_states.transpose(1, 2)).transpose(1, 2)
        context = hidden_states if encoder_hidden_states is None else encoder_hidden_states
        b, n = hidden_states.shape[:2]

        def heads(x):
            return x.reshape(b, x.shape[1], self.heads, self.dim_head).transpose(1, 2)

        out = F.scaled_dot_product_attention(heads(self.to_q(hidden_states)), heads(self.to_k(context)),
                                             heads(self.to_v(context)), attn_mask=attention_mask)
        out = out.transpose(1, 2).reshape(b, n, self.heads * self.dim_head)
        out = self.to_out[1](self.to_out[0](out))
        if spatial:
            out = out.transpose(1, 2).reshape(residual.shape)
        if self.residual_connection:
            out = out + residual
        # x / 1.0 is x: skip a whole-tensor op and its backward node for the default factor
        return out if self.rescale_output_factor == 1.0 else out / self.rescale_output_factor


class FeedForward(nn.Module):
    def __init__(self, dim, dim_out=None, mult=4, dropout=0.0):
        super().__init__()
        inner = int(dim * mult)
        self.net = nn.ModuleList([GEGLU(dim, inner), nn.Dropout(dropout), nn.Linear(inner, dim_out or dim)])

    def forward(self, hidden_states):
        for module in self.net:
            hidden_states = module(hidden_states)
        return hidden_states


class BasicTransformerBlock(nn.Module):
    """Pre-norm self-attention, cross-attention on the encoder states, GEGLU feed-forward."""

    def __init__(self, dim, num_attention_heads, attention_head_dim, dropout=0.0, cross_attention_dim=None,
                 attention_bias=False, norm_eps=1e-5):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=norm_eps)
        self.attn1 = Attention(dim, heads=num_attention_heads, dim_head=attention_head_dim, dropout=dropout,
                               bias=attention_bias)
        self.norm2 = nn.LayerNorm(dim, eps=norm_eps)
        self.attn2 = Attention(dim, cross_attention_dim=cross_attention_dim, heads=num_attention_heads,
                               dim_head=attention_head_dim, dropout=dropout, bias=attention_bias)
        self.norm3 = nn.LayerNorm(dim, eps=norm_eps)
        self.ff = FeedForward(dim, dropout=dropout)

    def forward(self, hidden_states, encoder_hidden_states=None, encoder_attention_mask=None):
        hidden_states = self.attn1(self.norm1(hidden_states)) + hidden_states
        hidden_states = self.attn2(self.norm2(hidden_states), encoder_hidden_states=encoder_hidden_states,
                                   attention_mask=encoder_attention_mask) + hidden_states
        return self.ff(self.norm3(hidden_states)) + hidden_states


class Transformer2DModel(nn.Module):
    """GroupNorm, 1x1 conv (or linear) in, transformer blocks over the H*W tokens, projection out, residual."""

    def __init__(self, num_attention_heads=16, attention_head_dim=88, in_channels=None, num_layers=1, dropout=0.0,
                 norm_num_groups=32, cross_attention_dim=None, attention_bias=False, use_linear_projection=False):
        super().__init__()
        inner_dim = num_attention_heads * attention_head_dim
        self.use_linear_projection = use_linear_projection
        self.norm = nn.GroupNorm(num_groups=norm_num_groups, num_channels=in_channels, eps=1e-6, affine=True)
        if use_linear_projection:
            self.proj_in = nn.Linear(in_channels, inner_dim)
            self.proj_out = nn.Linear(inner_dim, in_channels)
        else:
            self.proj_in = nn.Conv2d(in_channels, inner_dim, kernel_size=1, stride=1, padding=0)
            self.proj_out = nn.Conv2d(inner_dim, in_channels, kernel_size=1, stride=1, padding=0)
        self.transformer_blocks = nn.ModuleList([
            BasicTransformerBlock(inner_dim, num_attention_heads, attention_head_dim, dropout=dropout,
                                  cross_attention_dim=cross_attention_dim, attention_bias=attention_bias)
            for _ in range(num_layers)])

    def forward(self, hidden_states, encoder_hidden_states=None, encoder_attention_mask=None, **_):
        b, _c, h, w = hidden_states.shape
        residual = hidden_states
        hidden_states = self.norm(hidden_states)
        if not self.use_linear_projection:
            hidden_states = self.proj_in(hidden_states)
        inner = hidden_states.shape[1] if not self.use_linear_projection else None
        hidden_states = hidden_states.permute(0, 2, 3, 1).reshape(b, h * w, -1)
        if self.use_linear_projection:
            hidden_states = self.proj_in(hidden_states)
            inner = hidden_states.shape[-1]
        for block in self.transformer_blocks:
            hidden_states = block(hidden_states, encoder_hidden_states, encoder_attention_mask)
        if self.use_linear_projection:
            hidden_states = self.proj_out(hidden_states)
            hidden_states = hidden_states.reshape(b, h, w, -1).permute(0, 3, 1, 2)
        else:
            hidden_states = hidden_states.reshape(b, h, w, inner).permute(0, 3, 1, 2)
            hidden_states = self.proj_out(hidden_states)
        return hidden_states + residual
