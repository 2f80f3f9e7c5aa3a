"""FlashAttention-2 over NumPy blocks: the CPU path (and the reference the CUDA kernels are
checked against).

Layout: q (*batch, Hq, L, D), k (*batch, Hk, S, D), v (*batch, Hk, S, Dv), with Hq = Hk * G
(grouped-query attention; G = 1 is plain multi-head, Hk = 1 multi-query). Each key/value head
serves G query heads, so a tile multiplies the G * Br query rows of one key/value head against
Bc keys in one batched matmul, and no key/value is ever repeated.

Forward (Algorithm 1 of FlashAttention-2): for each block of Br queries, walk the key blocks
keeping a running row max m, row sum l and unnormalised output; only O and the log-sum-exp
L = m + log l are kept. Backward (Algorithm 2): D = rowsum(dO * O); for each key block
(outer) and query block (inner) recompute P = exp(S - L), then dV += P^T dO, dP = dO V^T,
dS = P * (dP - D), dQ += dS K, dK += dS^T Q. Tiles hold Br x Bc scores per (batch, head): the
memory beyond the inputs and gradients is O(batch * heads * Br * Bc), never L x S.

Masks: `mask` broadcasts to (*batch, Hq, L, S); bool (True = takes part) or additive float.
It is sliced per tile without being expanded (a key padding mask (N, 1, 1, S) stays that size).
window (left, right): key j is visible to query i when -left <= j - (i + offset) <= right, -1
meaning unbounded; causal attention is window (-1, 0); offset 0 aligns the diagonal to the top
left (PyTorch's SDPA), S - L to the bottom right (the flash-attn library, a KV-cache decoder).
Key tiles a query block cannot see are skipped, so causal attention costs about half and
sliding-window attention O(L x window). alibi (slopes broadcasting to (*batch, Hq)) adds
-slope * |i + offset - j| to the scores, computed per tile. A query that sees no key gives
zeros (and a log-sum-exp of -inf), as PyTorch's math SDPA.

Dropout: the mask of each tile is regenerated from `seed` (_dropout.py) in forward and
backward; the softmax statistics are those of the undropped weights, as the paper's.

Half precision inputs (float16, bfloat16) are computed in float32 and the results cast back;
float64 stays float64.
"""
from __future__ import annotations

import math

import numpy as np

from rtx.flash_attn import _dropout
from rtx.runtime import threads as _threads
from rtx.runtime import tuning as _tuning

# Scores per tile, over all (batch, head) pairs: big enough that NumPy's per-call overhead
# vanishes behind the matmuls, small enough to stay near the caches (measured: see README).
TILE_ELEMENTS = 1 << 19
MAX_BLOCK = 512
MIN_BLOCK = 16


def work_dtype(dtype) -> np.dtype:
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def block_sizes(heads: int, L: int, S: int, block_q=None, block_k=None) -> tuple[int, int]:
    """(Br, Bc): query rows and keys per tile. `heads` = batch * query heads."""
    if block_q is None or block_k is None:
        per_head = max(TILE_ELEMENTS // max(heads, 1), MIN_BLOCK * MIN_BLOCK)
        bk = min(MAX_BLOCK, _pow2_at_least(S), max(MIN_BLOCK, _pow2_at_most(math.isqrt(per_head))))
        bq = min(MAX_BLOCK, _pow2_at_least(L), max(MIN_BLOCK, _pow2_at_most(per_head // bk)))
        block_q = block_q or bq
        block_k = block_k or bk
    if block_q < 1 or block_k < 1:
        raise ValueError(f"flash attention: block sizes must be positive, got ({block_q}, {block_k})")
    return int(block_q), int(block_k)


def tuned_blocks(heads: int, L: int, S: int, D: int, dtype):
    """(block_q, block_k) that `rtx automeasure tune` measured fastest for this problem size on
    this machine (rtx.runtime.tuning, op "flash_attn", shape (heads, L, S, D)), or (None, None):
    block_sizes' rule then decides."""
    cfg = _tuning.lookup("flash_attn", (heads, L, S, D), dtype, "cpu")
    bq, bk = (cfg.get("block_q"), cfg.get("block_k")) if cfg else (None, None)
    if isinstance(bq, int) and isinstance(bk, int) and bq > 0 and bk > 0:
        return bq, bk
    return None, None


def _pow2_at_least(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def _pow2_at_most(n: int) -> int:
    return 1 << max(int(n).bit_length() - 1, 0)


class _Problem:
    """Shapes and the views of q/k/v/mask in the grouped layout, shared by forward and backward."""

    def __init__(self, q, k, v, mask, scale, window, offset, dropout_p, seed, alibi, block_q, block_k):
        *batch, Hq, L, D = q.shape
        Hk, S = k.shape[-3], k.shape[-2]
        if Hq % Hk:
            raise ValueError(f"flash attention: query heads ({Hq}) must be a multiple of key/value heads ({Hk})")
        self.batch, self.Hq, self.Hk, self.G = tuple(batch), Hq, Hk, Hq // Hk
        self.L, self.S, self.D, self.Dv = L, S, D, v.shape[-1]
        self.wd = work_dtype(q.dtype)
        self.scale = scale
        self.left, self.right = (int(w) for w in window)
        self.offset = int(offset)
        self.p, self.seed = float(dropout_p), int(seed)
        if block_q is None and block_k is None and isinstance(q, np.ndarray):
            block_q, block_k = tuned_blocks(math.prod(batch) * Hq, L, S, D, q.dtype)
        self.bq, self.bk = block_sizes(math.prod(batch) * Hq, L, S, block_q, block_k)
        self.qg = q.reshape(*batch, Hk, self.G, L, D)
        self.k = k.astype(self.wd, copy=False)
        self.v = v.astype(self.wd, copy=False)
        self.kT = self.k.swapaxes(-1, -2)
        self.mask_kind = None
        if mask is not None:
            self.mask_shape = mask.shape
            full = (*batch, Hq, mask.shape[-2] if mask.ndim >= 2 else 1, mask.shape[-1])
            if mask.dtype == np.bool_:
                self.mask_kind = "bool"
                mask = ~mask  # True where masked out; computed once, the size of the caller's mask
            else:
                self.mask_kind = "add"
            m = np.broadcast_to(mask, full)
            self.mask = m.reshape(*batch, Hk, self.G, full[-2], full[-1])
        self.alibi = None
        if alibi is not None:
            slopes = np.broadcast_to(np.asarray(alibi, dtype=self.wd), (*batch, Hq))
            self.alibi = slopes.reshape(*batch, Hk, self.G, 1, 1)
        if self.p > 0:
            rows = np.arange(math.prod(batch) * Hq, dtype=np.uint64) * np.uint64(L)
            self.row_base = rows.reshape(*batch, Hk, self.G, 1, 1)

    def rows(self, i0, i1):
        """The scaled query rows i0:i1 of every head, as (*batch, Hk, G * br, D)."""
        qi = self.qg[..., i0:i1, :].astype(self.wd) * self.wd.type(self.scale)
        return qi.reshape(*self.batch, self.Hk, self.G * (i1 - i0), self.D)

    def grouped(self, a, i0, i1):
        """(*batch, Hq, L, X) array's rows i0:i1 as (*batch, Hk, G * br, X), in the work dtype."""
        X = a.shape[-1]
        a = a.reshape(*self.batch, self.Hk, self.G, self.L, X)[..., i0:i1, :]
        return a.astype(self.wd, copy=False).reshape(*self.batch, self.Hk, self.G * (i1 - i0), X)

    def key_range(self, i0, i1):
        """The keys that some query of rows i0:i1 may see (the window), as (start, end)."""
        lo = 0 if self.left < 0 else min(self.S, max(i0 + self.offset - self.left, 0))
        hi = self.S if self.right < 0 else min(self.S, max(i1 - 1 + self.offset + self.right + 1, 0))
        return lo, max(lo, hi)

    def row_range(self, j0, j1):
        """The queries that may see some key of j0:j1 (the window), as (start, end)."""
        lo = 0 if self.right < 0 else min(self.L, max(j0 - self.offset - self.right, 0))
        hi = self.L if self.left < 0 else min(self.L, max(j1 - 1 - self.offset + self.left + 1, 0))
        return lo, max(lo, hi)

    def mask_tile(self, s5, i0, i1, j0, j1):
        """Add ALiBi and apply the caller's mask and the window to a tile of scores (*b, Hk, G, br, bc)."""
        if self.alibi is not None:
            dist = np.abs(np.arange(i0, i1)[:, None] + self.offset - np.arange(j0, j1)[None, :]).astype(self.wd)
            s5 -= self.alibi * dist
        if self.mask_kind is not None:
            m = self.mask
            m = m[..., i0:i1, :] if m.shape[-2] != 1 else m
            m = m[..., j0:j1] if m.shape[-1] != 1 else m
            if self.mask_kind == "bool":
                np.copyto(s5, -np.inf, where=m)
            else:
                s5 += m
        d_lo, d_hi = j0 - (i1 - 1) - self.offset, (j1 - 1) - i0 - self.offset  # extremes of j - i - offset
        if (self.right >= 0 and d_hi > self.right) or (self.left >= 0 and d_lo < -self.left):
            i = np.arange(i0, i1)[:, None] + self.offset  # compared by broadcasting: no int (br, bc) matrix
            j = np.arange(j0, j1)[None, :]
            hidden = np.zeros((i1 - i0, j1 - j0), dtype=bool)
            if self.right >= 0:
                hidden |= j > i + self.right
            if self.left >= 0:
                hidden |= j < i - self.left
            np.copyto(s5, -np.inf, where=hidden)

    def dropout_tile(self, i0, i1, j0, j1):
        return _dropout.keep_scale(self.seed, self.p, self.row_base, np.arange(i0, i1), np.arange(j0, j1),
                                   self.S, self.wd)

    def five(self, t, br):
        return t.reshape(*self.batch, self.Hk, self.G, br, t.shape[-1])


def forward(q, k, v, mask=None, *, scale, window=(-1, -1), offset=0, dropout_p=0.0, seed=0, alibi=None,
            block_q=None, block_k=None):
    """Returns (out (*batch, Hq, L, Dv) in q's dtype, lse (*batch, Hq, L) in the work dtype)."""
    pb = _Problem(q, k, v, mask, scale, window, offset, dropout_p, seed, alibi, block_q, block_k)
    b, Hk, G, L, Dv, wd = pb.batch, pb.Hk, pb.G, pb.L, pb.Dv, pb.wd
    out = np.empty((*b, Hk, G, L, Dv), dtype=q.dtype)
    lse = np.empty((*b, Hk, G, L), dtype=wd)
    blocks = [(i0, min(i0 + pb.bq, L)) for i0 in range(0, L, pb.bq)]

    def run(mine):  # query blocks are independent: each writes its own rows of out and lse
        for i0, i1 in mine:
            _forward_block(pb, i0, i1, out, lse)
    _parallel(run, blocks)
    return out.reshape(*b, pb.Hq, L, Dv), lse.reshape(*b, pb.Hq, L)


def _forward_block(pb, i0, i1, out, lse):
    b, Hk, G, Dv, wd = pb.batch, pb.Hk, pb.G, pb.Dv, pb.wd
    br = i1 - i0
    qi = pb.rows(i0, i1)
    m = np.full(qi.shape[:-1], -np.inf, dtype=wd)
    msafe = np.zeros_like(m)
    l = np.zeros_like(m)
    acc = np.zeros((*qi.shape[:-1], Dv), dtype=wd)
    lo, hi = pb.key_range(i0, i1)
    for j0 in range(lo, hi, pb.bk):
        j1 = min(j0 + pb.bk, hi)
        s = qi @ pb.kT[..., j0:j1]
        pb.mask_tile(pb.five(s, br), i0, i1, j0, j1)
        m_new = np.maximum(m, s.max(axis=-1))
        msafe = np.where(m_new == -np.inf, 0, m_new).astype(wd, copy=False)
        s -= msafe[..., None]
        np.exp(s, out=s)
        alpha = np.exp(m - msafe)
        l *= alpha
        l += s.sum(axis=-1)
        if pb.p > 0:
            pb.five(s, br)[...] *= pb.dropout_tile(i0, i1, j0, j1)
        acc *= alpha[..., None]
        acc += s @ pb.v[..., j0:j1, :]
        m = m_new
    seen = l > 0
    np.divide(acc, l[..., None], out=acc, where=seen[..., None])
    acc[~seen] = 0
    out[..., i0:i1, :] = pb.five(acc, br)
    with np.errstate(divide="ignore"):
        lse[..., i0:i1] = np.where(seen, msafe + np.log(np.where(seen, l, 1)), -np.inf).reshape(*b, Hk, G, br)


def backward(dout, q, k, v, out, lse, mask=None, *, scale, window=(-1, -1), offset=0, dropout_p=0.0, seed=0,
             alibi=None, block_q=None, block_k=None, mask_grad=False):
    """Returns (dq, dk, dv, dmask) in the inputs' dtypes; dmask (the gradient of an additive mask,
    summed to the mask's shape) only when mask_grad, else None."""
    pb = _Problem(q, k, v, mask, scale, window, offset, dropout_p, seed, alibi, block_q, block_k)
    b, Hk, G, L, S, D, Dv, wd = pb.batch, pb.Hk, pb.G, pb.L, pb.S, pb.D, pb.Dv, pb.wd
    pb.delta = np.einsum("...d,...d->...", dout.astype(wd, copy=False), out.astype(wd, copy=False))[..., None]
    pb.lse_safe = np.where(lse == -np.inf, np.inf, lse).astype(wd, copy=False)[..., None]
    pb.dout = dout
    dk = np.empty((*b, Hk, S, D), dtype=wd)
    dv = np.empty((*b, Hk, S, Dv), dtype=wd)
    want_dmask = mask_grad and pb.mask_kind == "add"
    blocks = [(j0, min(j0 + pb.bk, S)) for j0 in range(0, S, pb.bk)]

    def run(mine):  # key blocks write their own rows of dk, dv; dq and dmask are summed per worker
        dq = np.zeros((*b, Hk, G, L, D), dtype=wd)
        dmask = np.zeros(pb.mask_shape, dtype=wd) if want_dmask else None
        for j0, j1 in mine:
            _backward_block(pb, j0, j1, dq, dk, dv, dmask)
        return dq, dmask
    parts = _parallel(run, blocks)
    dq, dmask = parts[0]
    for more_dq, more_dmask in parts[1:]:
        dq += more_dq
        if dmask is not None:
            dmask += more_dmask
    return (dq.reshape(q.shape).astype(q.dtype, copy=False), dk.astype(k.dtype, copy=False),
            dv.astype(v.dtype, copy=False), dmask)


def _backward_block(pb, j0, j1, dq, dk, dv, dmask):
    wd = pb.wd
    kj, vj = pb.k[..., j0:j1, :], pb.v[..., j0:j1, :]
    dk_acc = np.zeros(kj.shape, dtype=wd)
    dv_acc = np.zeros(vj.shape, dtype=wd)
    lo, hi = pb.row_range(j0, j1)
    for i0 in range(lo, hi, pb.bq):
        i1 = min(i0 + pb.bq, hi)
        br = i1 - i0
        qi = pb.rows(i0, i1)
        doi = pb.grouped(pb.dout, i0, i1)
        p = qi @ kj.swapaxes(-1, -2)
        pb.mask_tile(pb.five(p, br), i0, i1, j0, j1)
        p -= pb.grouped(pb.lse_safe, i0, i1)
        np.exp(p, out=p)
        dp = doi @ vj.swapaxes(-1, -2)
        if pb.p > 0:
            z = pb.dropout_tile(i0, i1, j0, j1)
            dv_acc += (pb.five(p, br) * z).reshape(p.shape).swapaxes(-1, -2) @ doi
            pb.five(dp, br)[...] *= z
        else:
            dv_acc += p.swapaxes(-1, -2) @ doi
        dp -= pb.grouped(pb.delta, i0, i1)
        dp *= p  # dS
        if dmask is not None:
            _add_mask_grad(dmask, pb, dp, i0, i1, j0, j1)
        dq[..., i0:i1, :] += pb.five(dp @ kj, br) * wd.type(pb.scale)
        dk_acc += dp.swapaxes(-1, -2) @ qi
    dk[..., j0:j1, :] = dk_acc
    dv[..., j0:j1, :] = dv_acc


# ---- running blocks side by side -----------------------------------------------------------------------

def workers() -> int:
    """As many as BLAS has threads (rtx.runtime.threads.cpu_workers; each worker then runs
    single-threaded BLAS); 1 when threadpoolctl or a BLAS it can control is missing.

    Why: a tile's matmuls are small, and a multi-threaded BLAS call waits for all its threads;
    on a machine where another process holds a core, each call then waits for the scheduler
    (measured: forward + backward at seq 1024, 8 heads: 115 ms at load 2, 800 ms at load 5-6 with
    two-thread BLAS, 330 ms there on two single-threaded workers). Whole blocks on separate threads
    (NumPy releases the GIL in matmuls and ufuncs) keep both cores busy without that handshake."""
    return _threads.cpu_workers()


def _parallel(fn, blocks):
    """[fn(share) for each worker's share of `blocks`], blocks dealt round-robin (a causal mask
    makes early query blocks and late key blocks cheap: dealing mixes them); the shares run on
    rtx.runtime.threads' shared pool and the calling thread."""
    n = min(workers(), len(blocks))
    if n <= 1:
        return [fn(blocks)]
    return _threads.parallel_map(fn, [blocks[w::n] for w in range(n)], n)


def _add_mask_grad(dmask, pb, ds, i0, i1, j0, j1):
    """Sum the tile's dS (the gradient of the scores, hence of an additive mask) to the mask's shape."""
    br = i1 - i0
    ds = ds.reshape(*pb.batch, pb.Hq, br, j1 - j0)
    full_nd = ds.ndim
    shape = (1,) * (full_nd - dmask.ndim) + dmask.shape
    rows = slice(i0, i1) if shape[-2] != 1 else slice(None)
    cols = slice(j0, j1) if shape[-1] != 1 else slice(None)
    axes = tuple(a for a in range(full_nd) if shape[a] == 1 and ds.shape[a] != 1)
    red = ds.sum(axis=axes, keepdims=True) if axes else ds
    red = red.reshape(red.shape[full_nd - dmask.ndim:])
    dmask[..., rows, cols] += red
