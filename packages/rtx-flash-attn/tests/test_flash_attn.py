"""Flash attention against the naive formula in float64 (values and gradients), finite
differences, the math SDPA backend, and the memory it promises to save."""
import math

import numpy as np
import pytest

import rtx
import rtx.nn.functional as F
from rtx.flash_attn import _cpu, flash_attention, flash_attn_func, flash_attn_kvpacked_func, flash_attn_qkvpacked_func
from rtx.flash_attn.sdpa import CPU_MIN_SCORES, supports
from rtx.nn.attention import sdpa_kernel

# ---- the reference: softmax(Q K^T * scale + bias) V in float64, with its gradients -------------------


def reference(q, k, v, mask=None, scale=None, window=(-1, -1), offset=0, alibi=None, keep=None, dout=None):
    """Naive attention on NumPy float64 arrays. keep: the dropout factor (0 or 1/(1-p)) per score.
    Returns out, and (dq, dk, dv, dscores) when dout is given."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    G = q.shape[-3] // k.shape[-3]
    kr, vr = np.repeat(k, G, axis=-3), np.repeat(v, G, axis=-3)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    L, S = q.shape[-2], k.shape[-2]
    s = q @ kr.swapaxes(-1, -2) * scale
    i, j = np.arange(L)[:, None], np.arange(S)[None, :]
    if alibi is not None:
        s = s - np.asarray(alibi, dtype=np.float64)[..., None, None] * np.abs(i + offset - j)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    d = j - i - offset
    visible = np.ones((L, S), dtype=bool)
    if window[1] >= 0:
        visible &= d <= window[1]
    if window[0] >= 0:
        visible &= d >= -window[0]
    s = np.where(visible, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    p = np.exp(s - m)
    den = p.sum(-1, keepdims=True)
    p = np.divide(p, den, out=np.zeros_like(p), where=den > 0)
    pd = p if keep is None else p * keep
    out = pd @ vr
    if dout is None:
        return out
    dout = np.asarray(dout, dtype=np.float64)
    dvr = pd.swapaxes(-1, -2) @ dout
    dp = dout @ vr.swapaxes(-1, -2)
    if keep is not None:
        dp = dp * keep
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = ds @ kr * scale
    dkr = ds.swapaxes(-1, -2) @ q * scale

    def fold(t):  # sum the G query heads each key/value head served
        return t.reshape(*t.shape[:-3], t.shape[-3] // G, G, *t.shape[-2:]).sum(-3)
    return out, (dq, fold(dkr), fold(dvr), ds)


def _t(a, grad=True, dtype=rtx.float64):
    return rtx.tensor(a, dtype=dtype, requires_grad=grad)


def _close(got, want, tol=1e-10):
    got = got.detach().numpy() if isinstance(got, rtx.Tensor) else got
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=tol, atol=tol)


# ---- values and gradients in float64 -----------------------------------------------------------------

CASES = {
    # name: (B, Hq, Hk, L, S, D, Dv, kwargs)
    "plain": (2, 3, 3, 37, 53, 8, 8, {}),
    "causal": (1, 2, 2, 64, 64, 16, 16, {"is_causal": True}),
    "causal L<S top-left": (2, 2, 2, 20, 45, 8, 8, {"is_causal": True}),
    "causal L<S bottom-right": (2, 2, 2, 20, 45, 8, 8, {"is_causal": True, "causal_alignment": "bottom_right"}),
    "causal L>S bottom-right (rows see nothing)": (1, 2, 2, 50, 20, 4, 4,
                                                   {"is_causal": True, "causal_alignment": "bottom_right"}),
    "gqa 4/2": (2, 4, 2, 29, 41, 8, 8, {"enable_gqa": True}),
    "mqa 6/1 causal": (2, 6, 1, 33, 33, 8, 8, {"enable_gqa": True, "is_causal": True}),
    "value dim differs": (1, 2, 2, 30, 31, 8, 5, {}),
    "bool mask (L, S)": (2, 2, 2, 30, 40, 8, 8, {"mask": "bool"}),
    "additive mask (B, 1, L, S)": (2, 2, 2, 30, 40, 8, 8, {"mask": "add"}),
    "key padding (B, 1, 1, S)": (3, 2, 2, 17, 23, 8, 8, {"mask": "pad"}),
    "fully masked rows": (1, 2, 2, 12, 16, 4, 4, {"mask": "dead"}),
    "sliding window (9, 0)": (1, 2, 2, 70, 70, 4, 4, {"window_size": (9, 0)}),
    "window (5, 7) bottom-right": (1, 2, 2, 60, 70, 4, 4, {"window_size": (5, 7), "causal_alignment": "bottom_right"}),
    "alibi causal": (2, 4, 4, 40, 40, 8, 8, {"alibi": True, "is_causal": True}),
    "scale given": (1, 2, 2, 25, 25, 8, 8, {"scale": 0.37}),
    "batch dims (2, 3)": (None, 2, 2, 19, 21, 4, 4, {}),
}


def _case(name, rng):
    B, Hq, Hk, L, S, D, Dv, kw = CASES[name]
    kw = dict(kw)
    batch = (2, 3) if B is None else (B,)
    q = rng.standard_normal((*batch, Hq, L, D))
    k = rng.standard_normal((*batch, Hk, S, D))
    v = rng.standard_normal((*batch, Hk, S, Dv))
    mask = None
    kind = kw.pop("mask", None)
    if kind == "bool":
        mask = rng.random((L, S)) > 0.3
    elif kind == "add":
        mask = rng.standard_normal((B, 1, L, S))
    elif kind == "pad":
        mask = np.ones((B, 1, 1, S), dtype=bool)
        mask[0, ..., :7] = False
        mask[2, ..., -5:] = False
    elif kind == "dead":
        mask = rng.random((B, Hq, L, S)) > 0.5
        mask[0, 1, 3] = False  # a query that sees no key: zeros, and no NaN in any gradient
    alibi = rng.random(Hq) if kw.pop("alibi", False) else None
    return q, k, v, mask, alibi, kw


def _ref_kwargs(q, k, kw):
    L, S = q.shape[-2], k.shape[-2]
    offset = S - L if kw.get("causal_alignment") == "bottom_right" else 0
    left, right = kw.get("window_size", (-1, -1))
    if kw.get("is_causal"):
        right = 0
    return {"scale": kw.get("scale"), "window": (left, right), "offset": offset}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_naive_attention_and_its_gradients(name):
    rng = np.random.default_rng(7)
    q, k, v, mask, alibi, kw = _case(name, rng)
    dout = rng.standard_normal((*q.shape[:-1], v.shape[-1]))
    want, (dq, dk, dv, ds) = reference(q, k, v, mask, alibi=alibi, dout=dout, **_ref_kwargs(q, k, kw))
    tq, tk, tv = _t(q), _t(k), _t(v)
    tm = None if mask is None else (rtx.tensor(mask) if mask.dtype == bool else _t(mask))
    out = flash_attention(tq, tk, tv, tm, alibi_slopes=alibi, block_q=8, block_k=16, **kw)
    assert out.shape == want.shape and out.dtype == rtx.float64
    _close(out, want)
    out.backward(rtx.tensor(dout))
    _close(tq.grad, dq)
    _close(tk.grad, dk)
    _close(tv.grad, dv)
    if tm is not None and tm.requires_grad:
        _close(tm.grad, ds.sum(axis=1, keepdims=True))  # the mask broadcast over the heads
    assert np.isfinite(tq.grad.numpy()).all()


@pytest.mark.parametrize("blocks", [(1, 1), (3, 5), (16, 8), (64, 64), (None, None)])
def test_any_tiling_gives_the_same_result(blocks):
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((2, 2, 23, 4)), rng.standard_normal((2, 2, 31, 4)), rng.standard_normal((2, 2, 31, 4))
    out, lse = _cpu.forward(q, k, v, scale=0.5, window=(-1, 0), offset=8, block_q=blocks[0], block_k=blocks[1])
    _close(out, reference(q, k, v, scale=0.5, window=(-1, 0), offset=8))
    s = 0.5 * q @ k.swapaxes(-1, -2)
    s = np.where(np.arange(31)[None, :] <= np.arange(23)[:, None] + 8, s, -np.inf)
    _close(lse, np.log(np.exp(s).sum(-1)))


def test_gradcheck_and_double_backward():
    rng = np.random.default_rng(3)
    q, k, v = _t(rng.standard_normal((1, 4, 6, 3))), _t(rng.standard_normal((1, 2, 7, 3))), _t(
        rng.standard_normal((1, 2, 7, 2)))
    m = _t(rng.standard_normal((1, 1, 6, 7)))

    def f(q, k, v, m):
        return flash_attention(q, k, v, m, enable_gqa=True, block_q=4, block_k=3)

    def fc(q, k, v):
        return flash_attention(q, k, v, is_causal=True, enable_gqa=True, block_q=2, block_k=2,
                               alibi_slopes=[0.5, 0.25, 0.1, 0.3])
    assert rtx.autograd.gradcheck(f, (q, k, v, m))
    assert rtx.autograd.gradgradcheck(f, (q, k, v, m))
    assert rtx.autograd.gradcheck(fc, (q, k, v))
    assert rtx.autograd.gradgradcheck(fc, (q, k, v))


# ---- dropout ----------------------------------------------------------------------------------------------


def _splitmix_keep(seed, p, n_bh, L, S):
    """The documented dropout rule, written independently with Python integers."""
    keep = np.zeros((n_bh, L, S))
    M = (1 << 64) - 1
    for bh in range(n_bh):
        for i in range(L):
            for j in range(S):
                x = (((bh * L + i) * S + j) * 0x9E3779B97F4A7C15 + seed) & M
                x ^= x >> 30
                x = (x * 0xBF58476D1CE4E5B9) & M
                x ^= x >> 27
                x = (x * 0x94D049BB133111EB) & M
                x ^= x >> 31
                keep[bh, i, j] = (x >> 40) / (1 << 24) >= np.float32(p)
    return keep / (1 - p)


def test_dropout_drops_the_documented_elements_in_forward_and_backward():
    rng = np.random.default_rng(5)
    q, k, v = rng.standard_normal((2, 2, 9, 4)), rng.standard_normal((2, 1, 11, 4)), rng.standard_normal((2, 1, 11, 4))
    dout = rng.standard_normal((2, 2, 9, 4))
    p, seed = 0.3, 123456789
    keep = _splitmix_keep(seed, p, 4, 9, 11).reshape(2, 2, 9, 11)
    want, (dq, dk, dv, _) = reference(q, k, v, keep=keep, dout=dout, window=(-1, 0))
    out, lse = _cpu.forward(q, k, v, scale=0.5, window=(-1, 0), dropout_p=p, seed=seed, block_q=4, block_k=4)
    _close(out, want)
    got = _cpu.backward(dout, q, k, v, out, lse, scale=0.5, window=(-1, 0), dropout_p=p, seed=seed, block_q=3,
                        block_k=5)
    for g, w in zip(got[:3], (dq, dk, dv)):
        _close(g, w)


def test_dropout_rate_seed_and_gradcheck():
    rtx.manual_seed(0)
    q = rtx.randn(1, 4, 64, 8)
    ones = rtx.ones(1, 4, 64, 1)
    # with v = 1 every output is (kept weights) / (1 - p): its mean is 1, its spread shows the drops
    out = flash_attention(q, q, ones.expand(1, 4, 64, 8).contiguous(), dropout_p=0.25)
    assert abs(out.mean().item() - 1) < 0.05 and out.std().item() > 0.05
    rtx.manual_seed(1)
    a = flash_attention(q, q, q, dropout_p=0.5)
    rtx.manual_seed(1)
    b = flash_attention(q, q, q, dropout_p=0.5)
    c = flash_attention(q, q, q, dropout_p=0.5)
    assert np.array_equal(a.numpy(), b.numpy()) and not np.array_equal(b.numpy(), c.numpy())

    rng = np.random.default_rng(2)
    tq, tk, tv = (_t(rng.standard_normal((1, 2, 5, 3))) for _ in range(3))

    def f(q, k, v):
        rtx.manual_seed(9)  # the same mask on every evaluation
        return flash_attention(q, k, v, dropout_p=0.4, block_q=2, block_k=2)
    assert rtx.autograd.gradcheck(f, (tq, tk, tv))
    assert rtx.autograd.gradgradcheck(f, (tq, tk, tv))


# ---- dtypes --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,tol", [(rtx.float32, 2e-5), (rtx.float16, 2e-2), (rtx.bfloat16, 6e-2)])
def test_low_precision_inputs(dtype, tol):
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((2, 4, 40, 16)), rng.standard_normal((2, 2, 50, 16)), rng.standard_normal(
        (2, 2, 50, 16))
    dout = rng.standard_normal((2, 4, 40, 16))
    tq, tk, tv = (rtx.tensor(a, dtype=dtype, requires_grad=True) for a in (q, k, v))
    # the reference sees the same rounded inputs
    q, k, v, dout = (rtx.tensor(a, dtype=dtype).to(rtx.float64).numpy() for a in (q, k, v, dout))
    want, (dq, dk, dv, _) = reference(q, k, v, dout=dout, window=(-1, 0))
    out = flash_attention(tq, tk, tv, is_causal=True, enable_gqa=True, block_q=16, block_k=16)
    out.backward(rtx.tensor(dout, dtype=dtype))
    assert out.dtype == dtype and tq.grad.dtype == dtype and tk.grad.dtype == dtype
    for got, w in ((out, want), (tq.grad, dq), (tk.grad, dk), (tv.grad, dv)):
        got = got.detach().to(rtx.float64).numpy()
        np.testing.assert_allclose(got, w, rtol=tol, atol=tol * np.abs(w).max())


# ---- front doors ---------------------------------------------------------------------------------------------


def test_flash_attn_func_layout_causal_and_lse():
    rng = np.random.default_rng(6)
    q, k, v = rng.standard_normal((2, 10, 4, 8)), rng.standard_normal((2, 14, 2, 8)), rng.standard_normal((2, 14, 2, 8))
    qh, kh, vh = (a.transpose(0, 2, 1, 3) for a in (q, k, v))  # (B, H, L, D)
    want = reference(qh, kh, vh, window=(-1, 0), offset=4).transpose(0, 2, 1, 3)
    out = flash_attn_func(_t(q), _t(k), _t(v), causal=True)
    assert out.shape == (2, 10, 4, 8)
    _close(out, want)
    out, lse, probs = flash_attn_func(_t(q), _t(k), _t(v), causal=True, return_attn_probs=True)
    assert probs is None and lse.shape == (2, 4, 10)
    s = np.repeat(kh, 2, axis=1)
    s = qh @ s.swapaxes(-1, -2) / math.sqrt(8)
    s = np.where(np.arange(14)[None, :] <= np.arange(10)[:, None] + 4, s, -np.inf)
    _close(lse, np.log(np.exp(s).sum(-1)))

    qkv = rng.standard_normal((2, 10, 3, 2, 8))
    want = reference(*(qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))).transpose(0, 2, 1, 3)
    _close(flash_attn_qkvpacked_func(_t(qkv)), want)
    _close(flash_attn_kvpacked_func(_t(qkv[:, :, 0]), _t(qkv[:, :, 1:])), want)

    pad = np.ones((2, 14), dtype=bool)
    pad[1, 9:] = False
    want = reference(qh, kh, vh, mask=pad[:, None, None, :]).transpose(0, 2, 1, 3)
    _close(flash_attn_func(_t(q), _t(k), _t(v), key_padding_mask=rtx.tensor(pad)), want)


def test_non_contiguous_inputs():
    rng = np.random.default_rng(8)
    x = _t(rng.standard_normal((2, 20, 3, 8)))
    q = x.transpose(1, 2)  # (2, 3, 20, 8), a strided view
    want = reference(q.detach().numpy(), q.detach().numpy(), q.detach().numpy())
    _close(flash_attention(q, q, q), want)


@pytest.mark.parametrize("args,kw,match", [
    (((1, 2, 4, 8), (1, 3, 4, 8), (1, 3, 4, 8)), {"enable_gqa": True}, "multiple"),
    (((1, 4, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)), {}, "enable_gqa"),
    (((1, 2, 4, 8), (1, 2, 4, 6), (1, 2, 4, 8)), {}, "head_dim"),
    (((1, 2, 4, 8), (1, 2, 5, 8), (1, 2, 4, 8)), {}, "seq length"),
    (((2, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)), {}, "batch dims"),
    (((2, 8), (2, 8), (2, 8)), {}, "heads, seq"),
    (((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)), {"dropout_p": 1.0}, "dropout_p"),
    (((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)), {"attn_mask": (3, 4)}, "broadcast"),
    (((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)), {"causal_alignment": "middle"}, "causal_alignment"),
])
def test_bad_arguments_are_named(args, kw, match):
    q, k, v = (rtx.randn(*s) for s in args)
    if "attn_mask" in kw:
        kw["attn_mask"] = rtx.ones(*kw["attn_mask"], dtype=rtx.bool)
    with pytest.raises((ValueError, TypeError), match=match):
        flash_attention(q, k, v, **kw)
    with pytest.raises(TypeError, match="same dtype"):
        flash_attention(rtx.randn(1, 2, 4, 8), rtx.randn(1, 2, 4, 8, dtype=rtx.float64), rtx.randn(1, 2, 4, 8))


# ---- as the SDPA backend ------------------------------------------------------------------------------------------


def test_registered_through_the_entry_point():
    from rtx.nn._functional.attention import sdpa_backends
    assert sdpa_backends()[0] == "flash_attention"


def _backend_of(out):
    return type(out.grad_fn).__name__


def test_sdpa_chooses_by_size_and_agrees_with_math():
    small = rtx.randn(1, 2, 16, 8, requires_grad=True)
    assert _backend_of(F.scaled_dot_product_attention(small, small, small)) != "FlashAttention"
    n = int(math.isqrt(CPU_MIN_SCORES))
    big = rtx.randn(1, 2, n, 8, requires_grad=True)
    assert supports(big, big, big)
    assert _backend_of(F.scaled_dot_product_attention(big, big, big)) == "FlashAttention"
    with sdpa_kernel("flash_attention"):  # the caller's choice overrides the size rule
        assert _backend_of(F.scaled_dot_product_attention(small, small, small)) == "FlashAttention"

    rng = np.random.default_rng(9)
    q = rtx.tensor(rng.standard_normal((2, 4, 33, 8)), requires_grad=True)
    kv = rtx.tensor(rng.standard_normal((2, 2, 40, 8)), requires_grad=True)
    for mask, causal in ((None, True), (rtx.tensor(rng.random((33, 40)) > 0.3), False),
                         (rtx.tensor(rng.standard_normal((2, 1, 1, 40))), False)):
        outs, grads = [], []
        for backend in ("math", "flash_attention"):
            q.grad = kv.grad = None
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q, kv, kv, mask, is_causal=causal, enable_gqa=True)
            out.sum().backward()
            outs.append(out.detach().numpy())
            grads.append((q.grad.numpy(), kv.grad.numpy()))
        _close(outs[1], outs[0])
        _close(grads[1][0], grads[0][0])
        _close(grads[1][1], grads[0][1])


def test_sdpa_leaves_what_it_cannot_run_to_math():
    q = rtx.randn(4, 300, 8)  # no heads axis: 3-D is (H, L, E) here, still runnable
    assert supports(q, q, q)
    q2 = rtx.randn(300, 8)
    assert not supports(q2, q2, q2)
    k = rtx.randn(1, 2, 300, 8)  # key batch broadcasts against query's: math's job
    assert not supports(rtx.randn(3, 2, 300, 8), k, k)


# ---- memory ------------------------------------------------------------------------------------------------------


def test_peak_memory_stays_far_below_the_score_matrices():
    from rtx.memory import host_peak
    B, H, L, D = 1, 1, 4096, 16
    q, k, v = (rtx.randn(B, H, L, D, requires_grad=True) for _ in range(3))
    g = rtx.randn(B, H, L, D)
    scores = B * H * L * L * 4  # one float32 score matrix: the naive backward keeps three or more at once
    with host_peak() as m:
        with sdpa_kernel("flash_attention"):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out.backward(g)
    assert q.grad is not None
    assert m.peak < scores / 4, f"peak {m.peak / 2**20:.1f} MiB vs one score matrix {scores / 2**20:.1f} MiB"
