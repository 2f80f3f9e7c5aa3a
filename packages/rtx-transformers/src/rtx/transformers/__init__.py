"""rtx transformers: RoPE, ALiBi, KV cache, GPT-2, BERT and Llama families."""
__version__ = "0.1.0"

from rtx.transformers.cache import KVCache
from rtx.transformers.outputs import (
    BaseModelOutput,
    CausalLMOutput,
    MaskedLMOutput,
    ModelOutput,
    SequenceClassifierOutput,
)

__all__ = ["KVCache", "ModelOutput", "CausalLMOutput", "BaseModelOutput", "MaskedLMOutput",
           "SequenceClassifierOutput"]
