"""Qwen2 (Qwen team 2024) in Hugging Face's layout: Qwen2Model, Qwen2ForCausalLM.

Llama's decoder (llama.py) with biases on the q/k/v projections (o_proj has none), tied
embeddings in the small sizes (tie_word_embeddings), and a sliding window on the layers
config.layer_types marks "sliding_attention" (transformers' rule when the config has no
layer_types: layers from max_window_layers on, when use_sliding_window). Keys as Llama's plus
model.layers.0.self_attn.{q,k,v}_proj.bias.

    model = Qwen2ForCausalLM(Qwen2Config(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, vocab_size=100,
                                         tie_word_embeddings=True))
"""
from __future__ import annotations

from rtx.transformers.configuration import Qwen2Config
from rtx.transformers.llama import LlamaForCausalLM, LlamaModel

__all__ = ["Qwen2Config", "Qwen2Model", "Qwen2ForCausalLM"]


class Qwen2Model(LlamaModel):
    config_class = Qwen2Config


class Qwen2ForCausalLM(LlamaForCausalLM):
    config_class = Qwen2Config
    base_model_class = Qwen2Model
