"""Small pieces the model families share: input checks, positions, the cache argument, and
the losses of the heads (written with rtx ops, so rtx-transformers needs no loss package)."""
from __future__ import annotations

import numpy as np

import rtx
import rtx.nn.functional as F
from rtx.extend import Tensor, raw, wrap
from rtx.runtime import array_module
from rtx.transformers.cache import KVCache

IGNORE_INDEX = -100


def check_input_ids(input_ids, vocab_size, model):
    if type(input_ids) is not Tensor:
        raise TypeError(f"{model}: input_ids must be an integer Tensor (batch, seq), got {type(input_ids).__name__}")
    if input_ids.ndim != 2:
        raise ValueError(f"{model}: input_ids must be (batch, seq), got shape {tuple(input_ids.shape)}")
    if input_ids.is_floating_point():
        raise TypeError(f"{model}: input_ids must hold integer token ids, got {input_ids.dtype}")
    if input_ids.numel() and (int(input_ids.max()) >= vocab_size or int(input_ids.min()) < 0):
        raise ValueError(f"{model}: token ids must be in [0, {vocab_size}), got ids from {int(input_ids.min())} to "
                         f"{int(input_ids.max())}")


def prepare_cache(past_key_values, use_cache):
    """The KVCache to fill: the one given (a legacy tuple is converted), a new one for
    use_cache=True, else None."""
    if past_key_values is None:
        return KVCache() if use_cache else None
    if isinstance(past_key_values, KVCache):
        return past_key_values
    if isinstance(past_key_values, (tuple, list)):
        return KVCache.from_legacy_cache(past_key_values)
    raise TypeError(f"past_key_values must be a KVCache (or a tuple of (key, value) per layer), got "
                    f"{type(past_key_values).__name__}")


def position_ids_from(attention_mask, past, L, B, device):
    """(B, L) int64 positions of the new tokens: cumsum(mask) - 1 over past + new when a mask is
    given (padding takes position 0... of its row, as HF's generate), else past + arange(L)."""
    if attention_mask is None:
        pos = rtx.arange(past, past + L, device=device, dtype=rtx.int64)
        return pos.unsqueeze(0).expand(B, L)
    m = raw(attention_mask)
    xp = array_module(m)
    if m.shape != (B, past + L):
        raise ValueError(f"attention_mask must be (batch, past + seq) = {(B, past + L)}, got {tuple(m.shape)}")
    pos = xp.cumsum(m != 0, axis=-1, dtype=np.int64) - 1
    pos = xp.where(m != 0, pos, 1)  # HF's generate: masked_fill_(attention_mask == 0, 1)
    return wrap(xp.ascontiguousarray(pos[:, past:]))


def causal_lm_loss(logits, labels):
    """Mean next-token cross entropy: logits[:, :-1] predict labels[:, 1:]; label -100 is skipped."""
    V = logits.shape[-1]
    shifted = logits[:, :-1].reshape(-1, V)
    target = labels[:, 1:].reshape(-1)
    return cross_entropy(shifted, target)


def cross_entropy(logits, target, ignore_index=IGNORE_INDEX):
    """Mean cross entropy over the targets that are not ignore_index (F.cross_entropy's default)."""
    if type(target) is not Tensor or target.is_floating_point():
        raise TypeError("labels must be an integer Tensor")
    keep = target != ignore_index
    n = int(keep.sum())
    if n == 0:
        return (logits * 0).sum()  # nothing to learn from: zero, still connected to the graph
    safe = rtx.where(keep, target, target.new_zeros(()))
    logp = F.log_softmax(logits.float() if logits.dtype != rtx.float64 else logits, dim=-1)
    picked = logp.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    return -(picked * keep.to(picked.dtype)).sum() / n
