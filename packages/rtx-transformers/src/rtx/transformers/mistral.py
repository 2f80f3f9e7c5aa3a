"""Mistral (Jiang et al. 2023) in Hugging Face's layout: MistralModel, MistralForCausalLM.

Llama's decoder (llama.py) with a sliding window on every layer: each query sees the last
`sliding_window` keys (itself included), in the prompt and through the KV cache alike. Keys as
Llama's (model.layers.0.self_attn.q_proj.weight, ...); config.json as transformers writes it
(MistralConfig, 4.x or 5.x layout).

    model = MistralForCausalLM(MistralConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                             num_attention_heads=4, num_key_value_heads=2, vocab_size=100,
                                             sliding_window=16))
"""
from __future__ import annotations

from rtx.transformers.configuration import MistralConfig
from rtx.transformers.llama import LlamaForCausalLM, LlamaModel

__all__ = ["MistralConfig", "MistralModel", "MistralForCausalLM"]


class MistralModel(LlamaModel):
    config_class = MistralConfig


class MistralForCausalLM(LlamaForCausalLM):
    config_class = MistralConfig
    base_model_class = MistralModel
