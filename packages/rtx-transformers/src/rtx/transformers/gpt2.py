"""GPT-2 (Radford et al. 2019) in Hugging Face's layout: GPT2Model, GPT2LMHeadModel.

Weights load from HF's GPT-2 checkpoints as they are: `transformer.h.0.attn.c_attn.weight` is
a Conv1D weight (in_features, out_features), the transpose of nn.Linear's, and is kept so.
Checkpoints saved from the bare GPT2Model (no "transformer." prefix, as openai-community/gpt2's)
load too; the causal-mask buffers they carry (attn.bias, attn.masked_bias) are dropped.

    model = GPT2LMHeadModel(GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=100))
    out = model(input_ids, attention_mask=None, past_key_values=None, use_cache=True)
    out.logits, out.past_key_values   # (batch, seq, vocab), a KVCache

With config.add_cross_attention each block also attends to `encoder_hidden_states` (HF's
crossattention.q_attn / c_attn / c_proj and ln_cross_attn, between self-attention and the MLP), the
decoder of a VisionEncoderDecoderModel. With use_cache the cache is an EncoderDecoderCache: the
cross-attention keys and values are computed from the encoder once, at the first call, and reused.

Divergence from HF's forward: without position_ids, positions come from attention_mask when
it is given (cumsum - 1, as HF's generate() computes them), so left-padded batches generate
what each row alone would; with no mask they are past_length + arange(seq), as HF's.
"""
from __future__ import annotations

import math

import rtx
from rtx.nn import Dropout, Embedding, LayerNorm, Linear, ModuleList, init
from rtx.transformers.activations import get_activation
from rtx.transformers.blocks import Conv1D, attend
from rtx.transformers.cache import KVCache
from rtx.transformers.configuration import GPT2Config
from rtx.transformers.modeling import PreTrainedModel
from rtx.transformers.outputs import BaseModelOutput, CausalLMOutput
from rtx.transformers.utils import causal_lm_loss, check_input_ids, position_ids_from, prepare_cache

__all__ = ["GPT2Config", "GPT2Model", "GPT2LMHeadModel", "EncoderDecoderCache"]


class EncoderDecoderCache(KVCache):
    """A decoder's self-attention cache (this KVCache itself: length, crop act on it) plus
    `cross_attention_cache`, the keys and values each layer computed from the encoder's output at
    the first call (HF's EncoderDecoderCache). reorder picks batch rows in both (beam search)."""

    def __init__(self, num_layers: int | None = None):
        super().__init__(num_layers)
        self.cross_attention_cache = KVCache(num_layers)

    @property
    def self_attention_cache(self):
        return self

    def reorder(self, beam_idx) -> None:
        super().reorder(beam_idx)
        self.cross_attention_cache.reorder(beam_idx)

    select = reorder

    def __repr__(self):
        return f"EncoderDecoderCache(self={super().__repr__()}, cross={self.cross_attention_cache!r})"


class GPT2Attention(rtx.nn.Module):
    """Causal self-attention, or (is_cross_attention) attention of the decoder's queries (q_attn) to
    keys and values projected from the encoder's hidden states (c_attn makes both), no causal mask."""

    def __init__(self, config: GPT2Config, layer_idx: int, is_cross_attention: bool = False):
        super().__init__()
        self.is_cross_attention = is_cross_attention
        self.embed_dim, self.num_heads = config.n_embd, config.n_head
        self.head_dim = self.embed_dim // self.num_heads
        self.layer_idx = layer_idx
        scale = 1.0 / math.sqrt(self.head_dim) if config.scale_attn_weights else 1.0
        if config.scale_attn_by_inverse_layer_idx:
            scale /= layer_idx + 1
        self.scale = scale
        if is_cross_attention:
            self.c_attn = Conv1D(2 * self.embed_dim, self.embed_dim)
            self.q_attn = Conv1D(self.embed_dim, self.embed_dim)
        else:
            self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.attn_pdrop = config.attn_pdrop
        self.resid_dropout = Dropout(config.resid_pdrop)

    def forward(self, x, cache=None, padding_mask=None, encoder_hidden_states=None):
        B, L, _ = x.shape
        if self.is_cross_attention:
            return self._cross(x, cache, padding_mask, encoder_hidden_states)
        q, k, v = self.c_attn(x).split(self.embed_dim, dim=2)
        q, k, v = (t.reshape(B, L, self.num_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            k, v = cache.append(self.layer_idx, k, v)
        out = attend(q, k, v, causal=True, padding_mask=padding_mask, scale=self.scale,
                     dropout_p=self.attn_pdrop if self.training else 0.0)
        out = out.transpose(1, 2).reshape(B, L, self.embed_dim)
        return self.resid_dropout(self.c_proj(out))

    def _cross(self, x, cache, padding_mask, enc):
        """cache: the cross-attention KVCache (or None); a layer that holds keys reuses them, so the
        encoder's states are projected once per generation."""
        B, L, _ = x.shape
        q = self.q_attn(x).reshape(B, L, self.num_heads, self.head_dim).transpose(1, 2)
        if cache is not None and cache.length(self.layer_idx):
            k, v = cache[self.layer_idx]
        else:
            S = enc.shape[1]
            k, v = (t.reshape(B, S, self.num_heads, self.head_dim).transpose(1, 2)
                    for t in self.c_attn(enc).split(self.embed_dim, dim=2))
            if cache is not None:
                k, v = cache.append(self.layer_idx, k, v)
        out = attend(q, k, v, causal=False, padding_mask=padding_mask, scale=self.scale,
                     dropout_p=self.attn_pdrop if self.training else 0.0)
        out = out.transpose(1, 2).reshape(B, L, self.embed_dim)
        return self.resid_dropout(self.c_proj(out))


class GPT2MLP(rtx.nn.Module):
    def __init__(self, intermediate_size, config: GPT2Config):
        super().__init__()
        self.c_fc = Conv1D(intermediate_size, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, intermediate_size)
        self.act = get_activation(config.activation_function)
        self.dropout = Dropout(config.resid_pdrop)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(rtx.nn.Module):
    def __init__(self, config: GPT2Config, layer_idx: int):
        super().__init__()
        inner = config.n_inner if config.n_inner is not None else 4 * config.n_embd
        self.ln_1 = LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config, layer_idx)
        self.ln_2 = LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(inner, config)
        if config.add_cross_attention:
            self.crossattention = GPT2Attention(config, layer_idx, is_cross_attention=True)
            self.ln_cross_attn = LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)

    def forward(self, x, cache=None, padding_mask=None, encoder_hidden_states=None, encoder_mask=None):
        x = x + self.attn(self.ln_1(x), cache, padding_mask)
        if encoder_hidden_states is not None:
            cross = cache.cross_attention_cache if isinstance(cache, EncoderDecoderCache) else None
            x = x + self.crossattention(self.ln_cross_attn(x), cross, encoder_mask, encoder_hidden_states)
        return x + self.mlp(self.ln_2(x))


class GPT2PreTrainedModel(PreTrainedModel):
    config_class = GPT2Config
    base_model_prefix = "transformer"
    _ignored_keys = (r"(^|\.)attn\.bias$", r"(^|\.)attn\.masked_bias$", r"(^|\.)crossattention\.bias$",
                     r"(^|\.)crossattention\.masked_bias$")

    def _init_weights(self):
        """HF's GPT-2 init: N(0, initializer_range) for every matrix and embedding, zero biases,
        unit LayerNorms, and c_proj matrices scaled by 1/sqrt(2 n_layer) (GPT-2's residual scaling)."""
        std = self.config.initializer_range
        with rtx.no_grad():
            for m in self.modules():
                if isinstance(m, (Linear, Conv1D)):
                    init.normal_(m.weight, std=std)
                    if m.bias is not None:
                        init.zeros_(m.bias)
                elif isinstance(m, Embedding):
                    init.normal_(m.weight, std=std)
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    init.normal_(p, std=std / math.sqrt(2 * self.config.n_layer))


class GPT2Model(GPT2PreTrainedModel):
    """Embeddings, n_layer blocks and the final LayerNorm."""

    def __init__(self, config: GPT2Config):
        super().__init__(config)
        self.wte = Embedding(config.vocab_size, config.n_embd)
        self.wpe = Embedding(config.n_positions, config.n_embd)
        self.drop = Dropout(config.embd_pdrop)
        self.h = ModuleList([GPT2Block(config, i) for i in range(config.n_layer)])
        self.ln_f = LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self._init_weights()

    def forward(self, input_ids=None, attention_mask=None, past_key_values=None, use_cache=False, position_ids=None,
                token_type_ids=None, inputs_embeds=None, encoder_hidden_states=None, encoder_attention_mask=None):
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("GPT2Model: give exactly one of input_ids and inputs_embeds")
        if input_ids is not None:
            check_input_ids(input_ids, self.config.vocab_size, "GPT2Model")
            B, L = input_ids.shape
            inputs_embeds = self.wte(input_ids)
        else:
            B, L = inputs_embeds.shape[:2]
        if encoder_hidden_states is not None:
            _check_encoder(self.config, encoder_hidden_states, encoder_attention_mask, B)
        if past_key_values is None and use_cache and self.config.add_cross_attention:
            past_key_values = EncoderDecoderCache()
        cache = prepare_cache(past_key_values, use_cache)
        past = cache.length() if cache is not None else 0
        if position_ids is None:
            position_ids = position_ids_from(attention_mask, past, L, B, inputs_embeds.device)
        if int(position_ids.max()) >= self.config.n_positions:
            raise ValueError(f"GPT2Model: position {int(position_ids.max())} is past n_positions "
                             f"({self.config.n_positions}); the model was trained on shorter sequences")
        x = inputs_embeds + self.wpe(position_ids)
        if token_type_ids is not None:
            x = x + self.wte(token_type_ids)
        x = self.drop(x)
        padding = _padding(attention_mask, B, past + L)
        for block in self.h:
            x = block(x, cache, padding, encoder_hidden_states, encoder_attention_mask)
        x = self.ln_f(x)
        return BaseModelOutput(last_hidden_state=x, past_key_values=cache)


class GPT2LMHeadModel(GPT2PreTrainedModel):
    """GPT2Model with the language-modelling head (tied to the token embeddings by default)."""

    _tied_weights = {"lm_head.weight": "transformer.wte.weight"}

    def __init__(self, config: GPT2Config):
        super().__init__(config)
        self.transformer = GPT2Model(config)
        self.lm_head = Linear(config.n_embd, config.vocab_size, bias=False)
        if not config.tie_word_embeddings:
            self._tied_weights = {}
            init.normal_(self.lm_head.weight, std=config.initializer_range)
        self.tie_weights()

    def tie_weights(self):
        if self.config.tie_word_embeddings:
            self.lm_head.weight = self.transformer.wte.weight

    def forward(self, input_ids=None, attention_mask=None, past_key_values=None, use_cache=False, position_ids=None,
                labels=None, token_type_ids=None, inputs_embeds=None, output_hidden_states=False,
                encoder_hidden_states=None, encoder_attention_mask=None):
        h = self.transformer(input_ids, attention_mask, past_key_values, use_cache, position_ids, token_type_ids,
                             inputs_embeds, encoder_hidden_states, encoder_attention_mask)
        logits = self.lm_head(h.last_hidden_state)
        loss = causal_lm_loss(logits, labels) if labels is not None else None
        return CausalLMOutput(logits=logits, past_key_values=h.past_key_values, loss=loss,
                              hidden_states=h.last_hidden_state if output_hidden_states else None)


def _padding(attention_mask, B, S):
    if attention_mask is None:
        return None
    if tuple(attention_mask.shape) != (B, S):
        raise ValueError(f"attention_mask must be (batch, past + seq) = {(B, S)}, got {tuple(attention_mask.shape)}")
    return attention_mask


def _check_encoder(config, enc, enc_mask, B):
    if not config.add_cross_attention:
        raise ValueError("GPT2Model: encoder_hidden_states were given but the model has no cross-attention layers; "
                         "build it with GPT2Config(add_cross_attention=True)")
    if enc.ndim != 3 or enc.shape[0] != B or enc.shape[2] != config.n_embd:
        raise ValueError(f"GPT2Model: encoder_hidden_states must be (batch, source length, n_embd) = ({B}, S, "
                         f"{config.n_embd}), got {tuple(enc.shape)}")
    if enc_mask is not None and tuple(enc_mask.shape) != tuple(enc.shape[:2]):
        raise ValueError(f"GPT2Model: encoder_attention_mask must be (batch, source length) = "
                         f"{tuple(enc.shape[:2])}, got {tuple(enc_mask.shape)}")
