"""Llama (Touvron et al. 2023) in Hugging Face's layout: LlamaModel, LlamaForCausalLM.
RoPE, RMSNorm, SwiGLU, grouped-query attention (num_key_value_heads < num_attention_heads:
the keys/values are never repeated: SDPA's enable_gqa and the flash kernel take them as they
are), and Mistral's sliding window (config.sliding_window) as an option.

The decoder here is also Mistral's (mistral.py) and Qwen2's (qwen2.py): what differs is asked
of the config (qkv_bias(), o_bias(), layer_window(i)), so those files only name their classes.

Keys as HF's: model.embed_tokens.weight, model.layers.0.self_attn.{q,k,v,o}_proj.weight,
model.layers.0.mlp.{gate,up,down}_proj.weight, model.layers.0.{input,post_attention}_layernorm
.weight, model.norm.weight, lm_head.weight (absent when tie_word_embeddings).

    model = LlamaForCausalLM(LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, vocab_size=100))
    out = model(input_ids, attention_mask=None, past_key_values=None, use_cache=True)

Positions: as GPT-2's (from attention_mask when given, so left padding generates correctly).
"""
from __future__ import annotations

import math

import rtx
from rtx.nn import Embedding, Linear, ModuleList, RMSNorm, init
from rtx.transformers.blocks import SwiGLU, attend
from rtx.transformers.configuration import LlamaConfig
from rtx.transformers.modeling import PreTrainedModel
from rtx.transformers.outputs import BaseModelOutput, CausalLMOutput
from rtx.transformers.rope import RotaryEmbedding, apply_rotary_pos_emb
from rtx.transformers.utils import causal_lm_loss, check_input_ids, position_ids_from, prepare_cache

__all__ = ["LlamaConfig", "LlamaModel", "LlamaForCausalLM"]


class LlamaAttention(rtx.nn.Module):
    def __init__(self, config: LlamaConfig, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads, self.num_kv_heads = config.num_attention_heads, config.num_key_value_heads
        self.head_dim = config.head_dim
        self.scale = 1.0 / math.sqrt(self.head_dim)
        H, Hk, d, bias = self.num_heads, self.num_kv_heads, self.head_dim, config.qkv_bias()
        self.q_proj = Linear(config.hidden_size, H * d, bias=bias)
        self.k_proj = Linear(config.hidden_size, Hk * d, bias=bias)
        self.v_proj = Linear(config.hidden_size, Hk * d, bias=bias)
        self.o_proj = Linear(H * d, config.hidden_size, bias=config.o_bias())
        self.attention_dropout = config.attention_dropout
        window = config.layer_window(layer_idx)
        self.window = (window - 1, 0) if window else (-1, -1)

    def forward(self, x, cos, sin, cache=None, padding_mask=None):
        B, L, _ = x.shape
        q = self.q_proj(x).reshape(B, L, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).reshape(B, L, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).reshape(B, L, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        if cache is not None:
            k, v = cache.append(self.layer_idx, k, v)
        out = attend(q, k, v, causal=True, padding_mask=padding_mask, window_size=self.window, scale=self.scale,
                     dropout_p=self.attention_dropout if self.training else 0.0)
        return self.o_proj(out.transpose(1, 2).reshape(B, L, self.num_heads * self.head_dim))


class LlamaDecoderLayer(rtx.nn.Module):
    def __init__(self, config: LlamaConfig, layer_idx: int):
        super().__init__()
        self.self_attn = LlamaAttention(config, layer_idx)
        self.mlp = SwiGLU(config.hidden_size, config.intermediate_size, bias=config.mlp_bias,
                          activation=config.hidden_act)
        self.input_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, x, cos, sin, cache=None, padding_mask=None):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache, padding_mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaPreTrainedModel(PreTrainedModel):
    config_class = LlamaConfig
    base_model_prefix = "model"
    _ignored_keys = (r"rotary_emb\.inv_freq$",)

    def _init_weights(self):
        """HF's Llama init: N(0, initializer_range) for matrices and embeddings, zero biases."""
        std = self.config.initializer_range
        with rtx.no_grad():
            for m in self.modules():
                if isinstance(m, (Linear, Embedding)):
                    init.normal_(m.weight, std=std)
                    if isinstance(m, Linear) and m.bias is not None:
                        init.zeros_(m.bias)
                    if isinstance(m, Embedding) and m.padding_idx is not None:
                        m.weight[m.padding_idx] = 0.0


class LlamaModel(LlamaPreTrainedModel):
    def __init__(self, config: LlamaConfig):
        super().__init__(config)
        self.embed_tokens = Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.layers = ModuleList([LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(config.head_dim, config.rope_theta, config.rope_scaling,
                                          config.max_position_embeddings)
        self._init_weights()

    def forward(self, input_ids=None, attention_mask=None, past_key_values=None, use_cache=False, position_ids=None,
                inputs_embeds=None):
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("LlamaModel: give exactly one of input_ids and inputs_embeds")
        if input_ids is not None:
            check_input_ids(input_ids, self.config.vocab_size, "LlamaModel")
            inputs_embeds = self.embed_tokens(input_ids)
        B, L = inputs_embeds.shape[:2]
        cache = prepare_cache(past_key_values, use_cache)
        past = cache.length() if cache is not None else 0
        if position_ids is None:
            position_ids = position_ids_from(attention_mask, past, L, B, inputs_embeds.device)
        cos, sin = self.rotary_emb(position_ids)
        if attention_mask is not None and tuple(attention_mask.shape) != (B, past + L):
            raise ValueError(f"attention_mask must be (batch, past + seq) = {(B, past + L)}, got "
                             f"{tuple(attention_mask.shape)}")
        x = inputs_embeds
        for layer in self.layers:
            x = layer(x, cos, sin, cache, attention_mask)
        return BaseModelOutput(last_hidden_state=self.norm(x), past_key_values=cache)


class LlamaForCausalLM(LlamaPreTrainedModel):
    base_model_class = LlamaModel   # Mistral's and Qwen2's name theirs

    def __init__(self, config: LlamaConfig):
        super().__init__(config)
        self.model = self.base_model_class(config)
        self.lm_head = Linear(config.hidden_size, config.vocab_size, bias=False)
        init.normal_(self.lm_head.weight, std=config.initializer_range)
        self._tied_weights = {"lm_head.weight": "model.embed_tokens.weight"} if config.tie_word_embeddings else {}
        self.tie_weights()

    def tie_weights(self):
        if self.config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids=None, attention_mask=None, past_key_values=None, use_cache=False, position_ids=None,
                labels=None, inputs_embeds=None, output_hidden_states=False):
        h = self.model(input_ids, attention_mask, past_key_values, use_cache, position_ids, inputs_embeds)
        logits = self.lm_head(h.last_hidden_state)
        loss = causal_lm_loss(logits, labels) if labels is not None else None
        return CausalLMOutput(logits=logits, past_key_values=h.past_key_values, loss=loss,
                              hidden_states=h.last_hidden_state if output_hidden_states else None)
