"""rtx transformers: RoPE, ALiBi, KV cache, GPT-2, BERT, Llama, Mistral and Qwen2 families.

    from rtx.transformers import GPT2Config, GPT2LMHeadModel, KVCache
    model = GPT2LMHeadModel.from_pretrained("path/to/checkpoint")   # HF layout, safetensors
    out = model(input_ids, attention_mask=None, past_key_values=None, use_cache=True)
    out.logits, out.past_key_values                                   # CausalLMOutput

The interface the generation code relies on is outputs.py (CausalLMOutput) and cache.py
(KVCache); every causal LM here takes (input_ids, attention_mask, past_key_values, use_cache).
"""
__version__ = "0.1.0"

from rtx.transformers.activations import ACT2FN, get_activation
from rtx.transformers.alibi import alibi_bias, alibi_slopes
from rtx.transformers.bert import (
    BertForMaskedLM,
    BertForMultipleChoice,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
)
from rtx.transformers.blocks import Conv1D, RMSNorm, SwiGLU, attend, visibility_mask
from rtx.transformers.cache import KVCache
from rtx.transformers.configuration import (
    IGNORED_KEYS,
    BertConfig,
    GPT2Config,
    LlamaConfig,
    MistralConfig,
    PretrainedConfig,
    Qwen2Config,
    UnsupportedConfigError,
)
from rtx.transformers.gpt2 import EncoderDecoderCache, GPT2LMHeadModel, GPT2Model
from rtx.transformers.llama import LlamaForCausalLM, LlamaModel
from rtx.transformers.mistral import MistralForCausalLM, MistralModel
from rtx.transformers.modeling import CheckpointError, LoadReport, PreTrainedModel, load_safetensors
from rtx.transformers.outputs import (
    BaseModelOutput,
    CausalLMOutput,
    MaskedLMOutput,
    ModelOutput,
    MultipleChoiceModelOutput,
    QuestionAnsweringModelOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)
from rtx.transformers.qwen2 import Qwen2ForCausalLM, Qwen2Model
from rtx.transformers.rope import RotaryEmbedding, apply_rotary_pos_emb, rotate_half

__all__ = [
    "KVCache", "EncoderDecoderCache", "ModelOutput", "CausalLMOutput", "BaseModelOutput", "MaskedLMOutput",
    "SequenceClassifierOutput",
    "PretrainedConfig", "GPT2Config", "LlamaConfig", "MistralConfig", "Qwen2Config", "BertConfig",
    "UnsupportedConfigError", "IGNORED_KEYS",
    "PreTrainedModel", "LoadReport", "CheckpointError", "load_safetensors",
    "GPT2Model", "GPT2LMHeadModel", "LlamaModel", "LlamaForCausalLM",
    "MistralModel", "MistralForCausalLM", "Qwen2Model", "Qwen2ForCausalLM",
    "BertModel", "BertForMaskedLM", "BertForSequenceClassification", "BertForTokenClassification",
    "BertForQuestionAnswering", "BertForMultipleChoice", "TokenClassifierOutput", "QuestionAnsweringModelOutput",
    "MultipleChoiceModelOutput",
    "RotaryEmbedding", "apply_rotary_pos_emb", "rotate_half", "alibi_slopes", "alibi_bias",
    "attend", "visibility_mask", "SwiGLU", "Conv1D", "RMSNorm", "ACT2FN", "get_activation",
]
