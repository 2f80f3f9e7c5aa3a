"""Attention: scaled_dot_product_attention with a backend registry (as PyTorch's SDPA), and
multi_head_attention_forward (the math of nn.MultiheadAttention).

Backends. `math` (below, composed of rtx ops, so autograd and double backward come for free)
always exists and takes any call. A faster kernel, e.g. rtx-flash-attn's memory-efficient
attention one layer up, plugs in without an upward import: its distribution declares an entry
point in the group ``rtx.sdpa_backends``::

    [project.entry-points."rtx.sdpa_backends"]
    flash_attention = "rtx.flash_attn:register_sdpa"

The entry point names a callable taking no arguments that calls
``register_sdpa_backend(name, fn, priority, supports)``. Entry points are loaded once, lazily,
on the first SDPA call (or the first look at the registry), so `import rtx.nn` stays fast.

Dispatch: among the allowed backends (all, or those named by `sdpa_kernel(...)`), the one with
the highest priority whose `supports(query, key, value, attn_mask, dropout_p, is_causal, scale)`
returns true takes the call; `math` has priority 0 and supports everything. `scale` is handed to
`supports` and `fn` resolved (a float, 1/sqrt(E) when the caller passed None). A backend
registered with ``gqa=True`` receives `enable_gqa=` and the unexpanded key/value heads; the
others receive key/value already repeated to the query's head count.
"""
from __future__ import annotations

import contextlib
import contextvars
import enum
import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

import rtx
from rtx.autograd import is_grad_enabled
from rtx.extend import Primitive, Tensor, cast, current_hook, raw, wrap
from rtx.extend import autocast as _autocast
from rtx.nn._functional.dropout import dropout
from rtx.nn._functional.linear import linear
from rtx.runtime import array_module
from rtx.runtime.threads import keep_freed_memory

_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


# ---- softmax over the last axis ----------------------------------------------------------------


class Softmax(Primitive):
    """softmax over the last axis (rtx.kernel's fused kernel). With safe=True a row that is
    entirely -inf (every key masked out) gives zeros instead of NaN, as PyTorch's math SDPA."""

    op = "safe_softmax"
    saves_output = True

    @staticmethod
    def forward(ctx, x, *, safe):
        from rtx import kernel
        a = raw(x)
        with np.errstate(invalid="ignore"):  # an all -inf row: NaN (or zeros when safe), silently
            y = kernel.softmax(a, axis=-1)
        if safe and a.size:
            dead = (a == -np.inf).all(axis=-1, keepdims=True)
            if dead.any():
                y = np.where(dead, 0, y).astype(y.dtype, copy=False)
        return y

    @staticmethod
    def backward(ctx, grad):
        y = ctx.output()
        if not is_grad_enabled() and raw(grad).dtype == raw(y).dtype:
            # No double backward asked for: rtx.kernel's fused y * (g - sum(g * y)) on the arrays
            # (one pass per block of rows, row sums by BLAS) instead of five Tensor ops.
            from rtx import kernel
            return wrap(kernel.softmax_backward(raw(y), raw(grad), axis=-1))
        return y * (grad - (grad * y).sum(-1, keepdim=True))


def _softmax(x, safe=False):
    return Softmax.apply(x, safe=safe)


# ---- the backend registry ------------------------------------------------------------------------


class SDPBackend(str, enum.Enum):
    """Names of SDPA backends, as torch.nn.attention.SDPBackend. Any registered name (a plain
    string) works as well; only `math` always exists."""

    MATH = "math"
    FLASH_ATTENTION = "flash_attention"
    EFFICIENT_ATTENTION = "efficient_attention"
    CUDNN_ATTENTION = "cudnn_attention"

    def __str__(self):
        return self.value


@dataclass
class _Backend:
    name: str
    fn: Callable
    priority: float
    supports: Callable | None
    gqa: bool


_REGISTRY: dict[str, _Backend] = {}
_ENTRY_POINT_GROUP = "rtx.sdpa_backends"
_entry_points_loaded = False
# (names, set_priority) while inside sdpa_kernel(...); None: every registered backend may run.
_ALLOWED: contextvars.ContextVar = contextvars.ContextVar("rtx_sdpa_allowed", default=None)


def _name(backend):
    if isinstance(backend, SDPBackend):
        return backend.value
    if not isinstance(backend, str) or not backend:
        raise TypeError(f"an SDPA backend is named by a non-empty string or SDPBackend, got {backend!r}")
    return backend.lower()


def register_sdpa_backend(name, fn, priority=0, supports=None, *, gqa=False):
    """Register `fn(query, key, value, attn_mask, dropout_p, is_causal, scale)` as SDPA backend
    `name`. `supports(query, key, value, attn_mask, dropout_p, is_causal, scale) -> bool` says
    whether it can and should take a call (None: every call). Higher priority is tried first
    (on a tie the earlier registration, and any plugin before `math`); `math` has priority 0, so
    a backend with a negative priority runs only when forced by sdpa_kernel. Registering an
    existing name replaces it; `math` cannot be replaced."""
    name = _name(name)
    if name == "math":
        raise ValueError("the 'math' SDPA backend is built in and cannot be replaced")
    if not callable(fn):
        raise TypeError(f"register_sdpa_backend: fn must be callable, got {type(fn).__name__}")
    if supports is not None and not callable(supports):
        raise TypeError(f"register_sdpa_backend: supports must be callable or None, got {type(supports).__name__}")
    _REGISTRY[name] = _Backend(name, fn, float(priority), supports, bool(gqa))


def unregister_sdpa_backend(name):
    """Remove a registered backend (tests, or a kernel found broken at run time)."""
    name = _name(name)
    if name == "math":
        raise ValueError("the 'math' SDPA backend cannot be removed")
    _REGISTRY.pop(name, None)


def _load_entry_points():
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points
    for ep in entry_points(group=_ENTRY_POINT_GROUP):
        try:
            ep.load()()
        except Exception as e:  # a broken plugin must not break attention: math still works
            warnings.warn(f"rtx: the SDPA backend entry point {ep.name!r} ({ep.value}) failed to load and is "
                          f"skipped: {type(e).__name__}: {e}", RuntimeWarning, stacklevel=3)


def sdpa_backends():
    """The registered backend names, highest priority first (entry points loaded)."""
    _load_entry_points()
    return [b.name for b in _ordered(list(_REGISTRY.values()))]


def _ordered(backends):
    # Stable: among equal priorities the earlier registration wins; math sorts last among 0s.
    return sorted(backends, key=lambda b: (-b.priority, b.name == "math"))


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Within the block, SDPA may use only `backends` (one name/SDPBackend or a list), as
    torch.nn.attention.sdpa_kernel. With set_priority=True the list's order is the order tried.
    A call none of them supports raises RuntimeError."""
    if isinstance(backends, (str, SDPBackend)):
        backends = [backends]
    names = tuple(_name(b) for b in backends)
    if not names:
        raise ValueError("sdpa_kernel: expected at least one backend")
    token = _ALLOWED.set((names, bool(set_priority)))
    try:
        yield
    finally:
        _ALLOWED.reset(token)


def _select(args):
    _load_entry_points()
    allowed = _ALLOWED.get()
    if allowed is None:
        candidates = _ordered(list(_REGISTRY.values()))
    else:
        names, set_priority = allowed
        candidates = [_REGISTRY[n] for n in names if n in _REGISTRY]
        if not set_priority:
            candidates = _ordered(candidates)
    for b in candidates:
        if b.supports is None or b.supports(*args(b)):
            return b
    if allowed is None:  # unreachable while math is registered; kept for a clear message
        raise RuntimeError("scaled_dot_product_attention: no SDPA backend is registered")
    missing = [n for n in allowed[0] if n not in _REGISTRY]
    raise RuntimeError(
        f"scaled_dot_product_attention: No available kernel. None of the backends allowed by sdpa_kernel "
        f"{list(allowed[0])} supports this call (query {list(args(_MATH)[0].shape)}, "
        f"key {list(args(_MATH)[1].shape)}, dtype {args(_MATH)[0].dtype})"
        + (f"; not registered: {missing} (is the package that provides them installed?)" if missing else "")
        + ". Allow 'math', which takes every call.")


# ---- the math backend ---------------------------------------------------------------------------


def _repeat_kv(t, groups):
    """repeat_interleave(t, groups, dim=-3): each key/value head serves `groups` query heads."""
    if groups == 1:
        return t
    shape = tuple(t.shape)
    t = t.unsqueeze(-3).expand(*shape[:-2], groups, *shape[-2:])
    return t.reshape(*shape[:-3], shape[-3] * groups, *shape[-2:])


def _sdpa_math(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
               enable_gqa=False):
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    if enable_gqa:
        hq, hk = query.shape[-3], key.shape[-3]
        key, value = _repeat_kv(key, hq // hk), _repeat_kv(value, hq // value.shape[-3])
    if type(raw(query)) is np.ndarray:
        keep_freed_memory()  # score matrices are MBs: reused from malloc's heap, not page-faulted afresh
        if _numpy_path_ok(query, key, value, attn_mask, dropout_p, is_causal):
            with np.errstate(invalid="ignore"):  # inf inputs give NaN silently, as the graph path's softmax
                return wrap(_sdpa_numpy(raw(query), raw(key), raw(value), scale))
    L, S = query.shape[-2], key.shape[-2]
    scores = (query * scale) @ key.mT
    masked = False
    if is_causal:
        causal = rtx.ones((L, S), dtype=rtx.bool, device=query.device).tril()
        scores = rtx.where(causal, scores, -math.inf)
        masked = True
    if attn_mask is not None:
        if attn_mask.dtype == rtx.bool:
            scores = rtx.where(attn_mask, scores, -math.inf)
        else:
            scores = scores + attn_mask
        masked = True
    weights = _softmax(scores, safe=masked)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return weights @ value


# Score elements per chunk of the NumPy path: 256 KB of float32 stays in L2 from the QK^T product
# through exp to the product with V (measured best of 16K-256K at (8..32, 8, 64, 8)).
_CHUNK_SCORES = 1 << 16


def _numpy_path_ok(query, key, value, attn_mask, dropout_p, is_causal):
    """Whether the math backend may compute on the arrays: no graph to record (no gradient
    needed, no tracer listening), no mask or dropout, float32/float64, equal batch dims, keys."""
    return (attn_mask is None and not is_causal and dropout_p == 0.0 and current_hook() is None
            and not (is_grad_enabled() and (query.requires_grad or key.requires_grad or value.requires_grad))
            and raw(query).dtype in _BLAS_FLOATS and key.shape[-2] > 0
            and tuple(query.shape[:-2]) == tuple(key.shape[:-2]) == tuple(value.shape[:-2]))


def _sdpa_numpy(q, k, v, scale):
    """softmax(q k^T * scale) v on NumPy arrays, a chunk of (L, S) score matrices at a time so
    they stay in cache, exp'd in place, each row divided by its sum on the (L, Ev) output
    instead of the (L, S) weights. Equal to the Tensor spelling below up to float rounding.
    Chunks run along the first axis, so heads viewed out of a (N, L, H*E) projection (strided,
    as every model makes them) go to BLAS as they are, without a copy."""
    from rtx.kernel import exp_rows_
    L, S, Ev = q.shape[-2], k.shape[-2], v.shape[-1]
    flat = q.ndim == 2
    if flat:
        q, k, v = q[None], k[None], v[None]
    q = q * scale  # (query * scale) @ key.mT, as the Tensor path
    out = np.empty((*q.shape[:-1], Ev), q.dtype)
    per_entry = L * S * math.prod(q.shape[1:-2])
    step = max(1, _CHUNK_SCORES // max(1, per_entry))
    for i in range(0, q.shape[0], step):
        c = slice(i, i + step)
        w = np.matmul(q[c], k[c].swapaxes(-1, -2))
        sums = exp_rows_(w)
        o = np.matmul(w, v[c], out=out[c])
        o /= sums[..., None]
    return out[0] if flat else out


_MATH = _Backend("math", _sdpa_math, 0.0, None, True)
_REGISTRY["math"] = _MATH


def _check_sdpa(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if type(t) is not Tensor:
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
        if t.ndim < 2:
            raise RuntimeError(f"scaled_dot_product_attention(): {name} must have at least 2 dimensions "
                               f"(..., L, E), got shape {list(t.shape)}")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if not query.is_floating_point():
        raise RuntimeError(f"scaled_dot_product_attention(): expected floating point inputs, got {query.dtype}")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention(): query and key must have the same embedding size "
                           f"E, got query {list(query.shape)} and key {list(key.shape)}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention(): key and value must have the same sequence length "
                           f"S, got key {list(key.shape)} and value {list(value.shape)}")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                           "is_causal=True")
    if attn_mask is not None:
        if type(attn_mask) is not Tensor:
            raise TypeError(f"scaled_dot_product_attention(): attn_mask must be a Tensor or None, got "
                            f"{type(attn_mask).__name__}")
        if attn_mask.dtype != rtx.bool and not attn_mask.is_floating_point():
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                               f"attn_mask.dtype: {attn_mask.dtype} and query.dtype: {query.dtype} instead.")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"scaled_dot_product_attention(): dropout_p must be in [0, 1], got {dropout_p}")
    if enable_gqa:
        if query.ndim < 3 or key.ndim < 3 or value.ndim < 3:
            raise RuntimeError("scaled_dot_product_attention(): enable_gqa needs a heads dimension (..., H, L, E)")
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError(f"scaled_dot_product_attention(): with enable_gqa the number of query heads ({hq}) "
                               f"must be a multiple of the key ({hk}) and value ({hv}) heads")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(Q K^T * scale + mask) V, with PyTorch's signature and semantics.

    query (N, ..., Hq, L, E), key (N, ..., H, S, E), value (N, ..., H, S, Ev) -> (N, ..., Hq, L, Ev).
    attn_mask broadcasts to (N, ..., L, S): bool (True = takes part) or float (added to the
    scores). is_causal masks with a lower-triangular (L, S) matrix aligned to the top left (as
    PyTorch when L != S). scale defaults to 1/sqrt(E). dropout_p is applied always (as PyTorch:
    pass 0 in eval), drawing from rtx's RNG. A row whose every key is masked gives zeros (as
    PyTorch's math backend since 2.5), not NaN. enable_gqa repeats each key/value head over
    Hq/H query heads. The backend that runs is chosen by the registry described above.
    """
    if _autocast.active:  # on autocast's lower-precision list (a float mask too, a bool one is left)
        query, key, value, attn_mask = _autocast.lower(query, key, value, attn_mask)
    _check_sdpa(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    if attn_mask is not None and attn_mask.dtype != rtx.bool and raw(attn_mask).dtype != raw(query).dtype:
        attn_mask = cast(attn_mask, raw(query).dtype)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    gqa = bool(enable_gqa) and (key.shape[-3] != query.shape[-3] or value.shape[-3] != query.shape[-3])
    expanded = []

    def args(backend):
        if gqa and not backend.gqa:
            if not expanded:
                hq = query.shape[-3]
                expanded.append((_repeat_kv(key, hq // key.shape[-3]), _repeat_kv(value, hq // value.shape[-3])))
            k, v = expanded[0]
        else:
            k, v = key, value
        return query, k, v, attn_mask, dropout_p, is_causal, scale

    backend = _select(args)
    if backend.gqa:
        return backend.fn(*args(backend), enable_gqa=gqa)
    return backend.fn(*args(backend))


# ---- multi-head attention --------------------------------------------------------------------------


def _canonical_mask(mask, mask_name, target_dtype):
    """A bool mask (True = masked out, nn.MultiheadAttention's convention) becomes an additive
    float mask with -inf at the masked places; a float mask is kept."""
    if mask is None:
        return None
    if type(mask) is not Tensor:
        raise TypeError(f"{mask_name} must be a Tensor or None, got {type(mask).__name__}")
    if mask.dtype == rtx.bool:
        xp = array_module(raw(mask))
        return wrap(xp.where(raw(mask), -np.inf, 0.0).astype(target_dtype.np))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    return cast(mask, target_dtype.np)


def _pad_last(mask):
    """Append one zero column (a key that every query may attend to)."""
    return rtx.cat([mask, mask.new_zeros(*mask.shape[:-1], 1)], -1)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                                 f"but found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                         f"{tuple(attn_mask.shape)}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D "
                         f"query tensor")


def _linear(x, w, b):
    # As 2-D: the weight's gradient is then one matmul, not one per leading index plus a sum.
    return linear(x.reshape(-1, x.shape[-1]), w, b).reshape(*x.shape[:-1], w.shape[0])


def _in_projection_packed(q, k, v, w, b):
    E = q.shape[-1]
    if k is v:
        if q is k:  # self-attention: one matmul for q, k and v
            return _linear(q, w, b).chunk(3, dim=-1)
        w_q, w_kv = w[:E], w[E:]
        b_q, b_kv = (None, None) if b is None else (b[:E], b[E:])
        k_out, v_out = _linear(k, w_kv, b_kv).chunk(2, dim=-1)
        return _linear(q, w_q, b_q), k_out, v_out
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return _linear(q, w_q, b_q), _linear(k, w_k, b_k), _linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """The forward of nn.MultiheadAttention, as torch.nn.functional.multi_head_attention_forward.

    query (L, N, E) or unbatched (L, E); key/value (S, N, kdim/vdim). Masks follow
    MultiheadAttention's convention: a bool True means *masked out* (the opposite of SDPA's);
    float masks are added. attn_mask is (L, S) or (N*num_heads, L, S); key_padding_mask (N, S).
    Returns (attn_output (L, N, E), weights (N, L, S) averaged over heads, or (N, num_heads, L, S),
    or None when need_weights=False, which routes through scaled_dot_product_attention).
    With need_weights=True a row whose every key is masked gives NaN, as PyTorch.
    """
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # SDPA applies the causal mask itself
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
        if key_padding_mask is not None:
            is_causal = False  # the merged mask is no longer causal
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = (_linear(query, q_proj_weight, b_q), _linear(key, k_proj_weight, b_k),
                   _linear(value, v_proj_weight, b_v))
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key/value.")
        k = rtx.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = rtx.cat([v, bias_v.expand(1, bsz, embed_dim)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given or both be None")

    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if tuple(static_k.shape[::2]) != (bsz * num_heads, head_dim):
            raise AssertionError(f"expecting static_k of shape ({bsz * num_heads}, S, {head_dim}), got "
                                 f"{tuple(static_k.shape)}")
        k = static_k
    if static_v is None:
        v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if tuple(static_v.shape[::2]) != (bsz * num_heads, head_dim):
            raise AssertionError(f"expecting static_v of shape ({bsz * num_heads}, S, {head_dim}), got "
                                 f"{tuple(static_v.shape)}")
        v = static_v

    if add_zero_attn:
        k = rtx.cat([k, k.new_zeros(bsz * num_heads, 1, head_dim)], dim=1)
        v = rtx.cat([v, v.new_zeros(bsz * num_heads, 1, head_dim)], dim=1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)

    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        key_padding_mask = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len) \
            .reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = (q * (1.0 / math.sqrt(head_dim))) @ k.mT
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = _softmax(scores)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        out = (weights @ v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None
