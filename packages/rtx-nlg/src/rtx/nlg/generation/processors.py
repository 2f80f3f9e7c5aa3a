"""Score processing for one decoding step, on arrays (NumPy or CuPy) of shape (batch, vocab).

Each function follows the Hugging Face logits processor of the same job, so the numbers match
HF's for the same scores; they work on the raw arrays because generation needs no autograd and
runs once per token. Masked-out tokens get -inf.
"""
from __future__ import annotations

import numpy as np

from rtx.runtime import array_module

__all__ = ["repetition_penalty", "temperature", "top_k_filter", "top_p_filter", "suppress_tokens", "sample",
           "log_softmax", "softmax"]


def repetition_penalty(scores, input_ids, attention_mask, penalty: float):
    """HF's RepetitionPenaltyLogitsProcessor: for every token present in a row's sequence, a
    positive score is divided by `penalty` and a negative one multiplied by it. Padding positions
    (attention_mask 0) do not count (HF counts them; rtx does not, so a padded prompt behaves as
    the same prompt alone)."""
    if penalty == 1.0:
        return scores
    xp = array_module(scores)
    b, v = scores.shape
    seen = xp.zeros((b, v + 1), dtype=bool)
    ids = xp.where(attention_mask.astype(bool), input_ids, v)  # padding -> a spare column
    rows = xp.broadcast_to(xp.arange(b)[:, None], ids.shape)
    seen[rows, ids] = True
    seen = seen[:, :v]
    penalized = xp.where(scores < 0, scores * penalty, scores / penalty)
    return xp.where(seen, penalized, scores)


def temperature(scores, t: float):
    """HF's TemperatureLogitsWarper: scores / t."""
    return scores if t == 1.0 else scores / t


def top_k_filter(scores, k: int | None, min_tokens_to_keep: int = 1):
    """HF's TopKLogitsWarper: keep the scores >= the k-th largest (ties at the k-th are kept)."""
    if not k:
        return scores
    xp = array_module(scores)
    k = min(max(int(k), min_tokens_to_keep), scores.shape[-1])
    kth = xp.partition(scores, scores.shape[-1] - k, axis=-1)[..., scores.shape[-1] - k, None]
    return xp.where(scores < kth, -xp.inf, scores)


def top_p_filter(scores, p: float, min_tokens_to_keep: int = 1):
    """HF's TopPLogitsWarper (nucleus): sort ascending, drop the tokens whose cumulative
    probability is <= 1 - p; the `min_tokens_to_keep` most likely always stay."""
    if p >= 1.0:
        return scores
    xp = array_module(scores)
    order = xp.argsort(scores, axis=-1, kind="stable")
    sorted_scores = xp.take_along_axis(scores, order, axis=-1)
    cum = xp.cumsum(softmax(sorted_scores.astype(xp.float64)), axis=-1)
    remove_sorted = cum <= 1 - p
    remove_sorted[..., -min_tokens_to_keep:] = False
    remove = xp.empty_like(remove_sorted)
    remove[xp.arange(scores.shape[0])[:, None], order] = remove_sorted
    return xp.where(remove, -xp.inf, scores)


def suppress_tokens(scores, token_ids):
    """-inf for `token_ids` (HF's MinNewTokensLengthLogitsProcessor uses this for eos)."""
    if not token_ids:
        return scores
    scores = scores.copy()
    scores[:, list(token_ids)] = -np.inf
    return scores


def softmax(x):
    xp = array_module(x)
    m = x.max(axis=-1, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    e = xp.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def log_softmax(x):
    xp = array_module(x)
    m = x.max(axis=-1, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    z = x - m
    return z - xp.log(xp.exp(z).sum(axis=-1, keepdims=True))


def sample(scores, generator):
    """One token per row from softmax(scores), by inverting the cumulative distribution at a
    uniform number drawn from `generator` (an rtx.Generator): same seed, same tokens."""
    xp = array_module(scores)
    probs = softmax(scores.astype(xp.float64))
    cdf = xp.cumsum(probs, axis=-1)
    u = generator.np.random(scores.shape[0])
    if array_module(u) is not xp:  # a CPU generator for GPU scores, or the other way round
        u = u.get() if hasattr(u, "get") else u
        u = xp.asarray(u)
    x = u * cdf[:, -1]
    idx = (cdf <= x[:, None]).sum(axis=-1)
    # u * total can round up to the total: fall back on the last token with probability > 0
    last = scores.shape[-1] - 1 - xp.argmax((probs > 0)[:, ::-1], axis=-1)
    return xp.minimum(idx, last).astype(xp.int64)
