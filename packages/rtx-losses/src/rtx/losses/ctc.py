"""CTC loss (Graves et al. 2006): the forward-backward recursions in log space over the
extended label sequence (blanks between labels), vectorised over the batch; the gradient with
respect to the log-probabilities is -exp(log alpha + log beta - log p - log y) summed per class.

The gradient is the true derivative with respect to `log_probs` (checked by finite
differences), not PyTorch's fused form that assumes a log_softmax in front; composed with
log_softmax both give the same gradient with respect to the logits."""
from __future__ import annotations

import numpy as np

from rtx.extend import Primitive, Tensor, raw, wrap
from rtx.extend import autocast as _autocast
from rtx.losses._reduction import apply_reduction

__all__ = ["ctc_loss"]

NEG_INF = -np.inf


def _logsumexp2(a, b):
    m = np.maximum(a, b)
    safe = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(m), safe + np.log(np.exp(a - safe) + np.exp(b - safe)), NEG_INF)


def _extended(targets, target_lengths, blank):
    n = len(target_lengths)
    s_max = 2 * (max(target_lengths) if n else 0) + 1
    ext = np.full((n, s_max), blank, dtype=np.int64)
    for i, (t, length) in enumerate(zip(targets, target_lengths)):
        ext[i, 1:2 * length:2] = t[:length]
    return ext


def _forward_backward(lp, ext, input_lengths, target_lengths, blank):
    """lp: (T, N, C) float64 log-probs. Returns log alpha, log beta (T, N, S), log p (N)."""
    T, N, _ = lp.shape
    S = ext.shape[1]
    s_len = 2 * np.asarray(target_lengths) + 1
    emit = np.take_along_axis(lp, np.broadcast_to(ext[None], (T, N, S)), axis=2)  # (T, N, S)
    # a label may skip the blank before it unless it repeats the label two steps back
    skip = np.zeros((N, S), dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    valid_s = np.arange(S)[None, :] < s_len[:, None]
    alpha = np.full((T, N, S), NEG_INF)
    alpha[0, :, 0] = emit[0, :, 0]
    alpha[0, :, 1] = np.where(s_len > 1, emit[0, :, 1], NEG_INF)
    for t in range(1, T):
        prev = alpha[t - 1]
        a = prev.copy()
        a[:, 1:] = _logsumexp2(a[:, 1:], prev[:, :-1])
        two = np.full_like(prev, NEG_INF)
        two[:, 2:] = np.where(skip[:, 2:], prev[:, :-2], NEG_INF)
        a = _logsumexp2(a, two) + emit[t]
        active = (t < np.asarray(input_lengths))[:, None]
        alpha[t] = np.where(active & valid_s, a, NEG_INF)
    beta = np.full((T, N, S), NEG_INF)
    last_t = np.asarray(input_lengths) - 1
    idx = np.arange(N)
    beta[last_t, idx, s_len - 1] = emit[last_t, idx, s_len - 1]
    has_two = s_len > 1
    beta[last_t[has_two], idx[has_two], s_len[has_two] - 2] = emit[last_t[has_two], idx[has_two], s_len[has_two] - 2]
    skip_next = np.zeros((N, S), dtype=bool)
    skip_next[:, :-2] = skip[:, 2:]
    for t in range(T - 2, -1, -1):
        nxt = beta[t + 1]
        b = nxt.copy()
        b[:, :-1] = _logsumexp2(b[:, :-1], nxt[:, 1:])
        two = np.full_like(nxt, NEG_INF)
        two[:, :-2] = np.where(skip_next[:, :-2], nxt[:, 2:], NEG_INF)
        b = _logsumexp2(b, two) + emit[t]
        active = (t < last_t)[:, None]
        beta[t] = np.where(active & valid_s, b, beta[t])
    end = alpha[last_t, idx, s_len - 1]
    end2 = np.where(has_two, alpha[last_t, idx, np.maximum(s_len - 2, 0)], NEG_INF)
    logp = _logsumexp2(end, end2)
    return alpha, beta, logp


class CTC(Primitive):
    op = "ctc_loss"

    @staticmethod
    def forward(ctx, log_probs, *, targets, input_lengths, target_lengths, blank, zero_infinity):
        data = raw(log_probs)
        xp_is_np = type(data) is np.ndarray
        lp = (data if xp_is_np else data.get()).astype(np.float64)
        ext = _extended(targets, target_lengths, blank)
        alpha, beta, logp = _forward_backward(lp, ext, input_lengths, target_lengths, blank)
        nll = -logp
        inf = ~np.isfinite(nll)
        if zero_infinity:
            nll = np.where(inf, 0.0, nll)
        ctx.saved = (lp, ext, alpha, beta, logp, inf, zero_infinity, data.dtype, xp_is_np, input_lengths)
        out = nll.astype(data.dtype)
        return out if xp_is_np else __import__("cupy").asarray(out)

    @staticmethod
    def backward(ctx, grad):
        lp, ext, alpha, beta, logp, inf, zero_infinity, dtype, xp_is_np, input_lengths = ctx.saved
        T, N, C = lp.shape
        ab = alpha + beta  # (T, N, S), both include the emission at t
        g = np.full((T, N, C), NEG_INF)
        for s in range(ext.shape[1]):
            cls = ext[:, s]
            cur = g[:, np.arange(N), cls]
            g[:, np.arange(N), cls] = _logsumexp2(cur, ab[:, :, s])
        with np.errstate(invalid="ignore", over="ignore"):
            dlp = -np.exp(g - logp[None, :, None] - lp)
        dlp = np.where(np.isfinite(dlp), dlp, 0.0)
        if zero_infinity:
            dlp[:, inf, :] = 0.0
        else:  # an impossible alignment: PyTorch's gradient is NaN over the sample's input length
            for n in np.flatnonzero(inf):
                dlp[:int(input_lengths[n]), n, :] = np.nan
        gw = raw(grad) if xp_is_np else raw(grad).get()
        dlp = dlp * np.asarray(gw, dtype=np.float64)[None, :, None]
        out = dlp.astype(dtype)
        return wrap(out if xp_is_np else __import__("cupy").asarray(out))


def _as_list(x):
    if type(x) is Tensor:
        return x.detach().cpu().tolist()
    return [int(v) for v in x]


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """log_probs (T, N, C) or unbatched (T, C); targets (N, S) padded or 1-D concatenated."""
    if _autocast.active:  # on autocast's float32 list
        (log_probs,) = _autocast.fp32("ctc_loss", log_probs)
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if type(targets) is Tensor and targets.ndim == 1 else targets
        input_lengths = [int(input_lengths) if not isinstance(input_lengths, (list, tuple, Tensor)) else
                         _as_list(input_lengths)[0]]
        target_lengths = [int(target_lengths) if not isinstance(target_lengths, (list, tuple, Tensor)) else
                          _as_list(target_lengths)[0]]
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape {tuple(log_probs.shape)}")
    T, N, C = log_probs.shape
    in_len, tg_len = _as_list(input_lengths), _as_list(target_lengths)
    if len(in_len) != N or len(tg_len) != N:
        raise RuntimeError(f"ctc_loss: expected {N} input_lengths and target_lengths, got {len(in_len)} and "
                           f"{len(tg_len)}")
    if any(l > T or l < 1 for l in in_len):
        raise RuntimeError(f"ctc_loss: input_lengths must be in [1, {T}], got {in_len}")
    tg = np.asarray(targets.detach().cpu().numpy() if type(targets) is Tensor else targets, dtype=np.int64)
    if tg.ndim == 1:  # concatenated targets
        offsets = np.concatenate([[0], np.cumsum(tg_len)])
        if offsets[-1] > tg.size:
            raise RuntimeError(f"ctc_loss: target_lengths sum to {offsets[-1]} but only {tg.size} targets given")
        rows = [tg[offsets[i]:offsets[i + 1]] for i in range(N)]
    else:
        if tg.shape[0] != N or any(l > tg.shape[1] for l in tg_len):
            raise RuntimeError(f"ctc_loss: targets of shape {tg.shape} do not fit target_lengths {tg_len}")
        rows = [tg[i, :tg_len[i]] for i in range(N)]
    for r in rows:
        if r.size and (r.min() < 0 or r.max() >= C or (r == blank).any()):
            raise RuntimeError(f"ctc_loss: targets must be class indices in [0, {C}) other than blank={blank}")
    loss = CTC.apply(log_probs, targets=rows, input_lengths=in_len, target_lengths=tg_len, blank=blank,
                     zero_infinity=zero_infinity)
    if reduction == "mean":
        lengths = log_probs.new_tensor([max(l, 1) for l in tg_len])
        return (loss / lengths).mean()
    if unbatched and reduction == "none":
        loss = loss.squeeze(0)
    return apply_reduction(loss, reduction)
