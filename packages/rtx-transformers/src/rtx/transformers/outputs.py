"""What the model families return: small dataclasses with Hugging Face's field names.

Every causal LM (GPT2LMHeadModel, LlamaForCausalLM) is called as

    out = model(input_ids, attention_mask=None, past_key_values=None, use_cache=False)
    out.logits            # (batch, seq, vocab_size)
    out.past_key_values   # a KVCache when use_cache=True (or a cache was passed in), else None

input_ids is an int64 Tensor (batch, seq); attention_mask (batch, past + seq) holds 1 for real
tokens and 0 for padding (left padding is the generation case); past_key_values is the KVCache a
previous call returned, which the call extends in place and returns again.

Fields are also reachable by position (`out[0]` is the first field that is not None), as HF's
ModelOutput, so `logits, cache = out[0], out[1]` works when a cache is returned.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["ModelOutput", "CausalLMOutput", "BaseModelOutput", "MaskedLMOutput", "SequenceClassifierOutput",
           "TokenClassifierOutput", "QuestionAnsweringModelOutput", "MultipleChoiceModelOutput"]


class ModelOutput:
    """Base of the output dataclasses: attribute access, plus indexing and iteration over the
    fields that are not None (HF's ModelOutput.to_tuple), and `out["logits"]`."""

    def to_tuple(self) -> tuple:
        return tuple(getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None)

    def __getitem__(self, key):
        if isinstance(key, str):
            if key not in {f.name for f in fields(self)}:
                raise KeyError(f"{type(self).__name__} has no field {key!r}; fields: "
                               f"{[f.name for f in fields(self)]}")
            return getattr(self, key)
        return self.to_tuple()[key]

    def __iter__(self):
        return iter(self.to_tuple())

    def __len__(self):
        return len(self.to_tuple())

    def keys(self):
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]


@dataclass
class CausalLMOutput(ModelOutput):
    """logits (batch, seq, vocab); past_key_values: the KVCache (use_cache=True), else None;
    loss: the shifted next-token cross entropy when labels were given; hidden_states: the
    final hidden states (batch, seq, hidden) when output_hidden_states=True."""

    logits: Any
    past_key_values: Any = None
    loss: Any = None
    hidden_states: Any = None


@dataclass
class BaseModelOutput(ModelOutput):
    """last_hidden_state (batch, seq, hidden); pooler_output (batch, hidden) for BERT;
    past_key_values for the decoders' bare models."""

    last_hidden_state: Any
    pooler_output: Any = None
    past_key_values: Any = None


@dataclass
class MaskedLMOutput(ModelOutput):
    """logits (batch, seq, vocab); loss over the positions whose label is not -100."""

    logits: Any
    loss: Any = None


@dataclass
class SequenceClassifierOutput(ModelOutput):
    """logits (batch, num_labels); loss (cross entropy, or MSE when num_labels == 1)."""

    logits: Any
    loss: Any = None


@dataclass
class TokenClassifierOutput(ModelOutput):
    """logits (batch, seq, num_labels); loss over the tokens whose label is not -100."""

    logits: Any
    loss: Any = None


@dataclass
class QuestionAnsweringModelOutput(ModelOutput):
    """start_logits, end_logits (batch, seq); loss: the mean of the start and end cross entropies."""

    start_logits: Any
    end_logits: Any = None
    loss: Any = None


@dataclass
class MultipleChoiceModelOutput(ModelOutput):
    """logits (batch, num_choices); loss: cross entropy over the choices."""

    logits: Any
    loss: Any = None
