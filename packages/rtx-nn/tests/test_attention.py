"""scaled_dot_product_attention (math backend, masks, causal, GQA, dropout, the backend
registry and sdpa_kernel) and nn.MultiheadAttention, against NumPy references of the
published equations."""
import math

import numpy as np
import pytest

import rtx
import rtx.nn as nn
import rtx.nn.functional as F
from rtx.autograd import gradcheck, gradgradcheck
from rtx.nn import attention
from rtx.nn._functional import attention as impl
from rtx.testing import assert_close

rng = np.random.default_rng(1)


def r(*shape):
    return rng.standard_normal(shape)


def T(a, **kw):
    return rtx.tensor(a, **kw)


# ---- NumPy references -------------------------------------------------------------------------------


def np_softmax(s, safe=False):
    m = s.max(-1, keepdims=True)
    dead = np.isneginf(m)
    e = np.exp(s - np.where(dead, 0, m))
    w = e / e.sum(-1, keepdims=True)
    return np.where(dead, 0.0, w) if safe else w


def np_sdpa(q, k, v, mask=None, causal=False, scale=None, gqa=False):
    if gqa:
        k = np.repeat(k, q.shape[-3] // k.shape[-3], axis=-3)
        v = np.repeat(v, q.shape[-3] // v.shape[-3], axis=-3)
    L, S = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    with np.errstate(invalid="ignore"):
        return np_softmax(s, safe=True) @ v


def np_mha(query, key, value, p, num_heads, attn_mask=None, kpm=None, bias_kv=None, zero_attn=False):
    """Batch-first (N, L, E) reference. p: dict of arrays (wq, wk, wv, bq, bk, bv, wo, bo); masks
    are additive floats: attn_mask (L, S) or (N*H, L, S), kpm (N, S). Returns (out, per-head weights)."""
    N, L, E = query.shape
    hd = E // num_heads
    q = query @ p["wq"].T + p["bq"]
    k = key @ p["wk"].T + p["bk"]
    v = value @ p["wv"].T + p["bv"]
    extra = 0
    if bias_kv is not None:
        k = np.concatenate([k, np.broadcast_to(bias_kv[0].reshape(1, 1, E), (N, 1, E))], 1)
        v = np.concatenate([v, np.broadcast_to(bias_kv[1].reshape(1, 1, E), (N, 1, E))], 1)
        extra += 1
    if zero_attn:
        k = np.concatenate([k, np.zeros((N, 1, E))], 1)
        v = np.concatenate([v, np.zeros((N, 1, E))], 1)
        extra += 1
    S = k.shape[1]
    mask = np.zeros((N, num_heads, L, S))
    if attn_mask is not None:
        am = np.pad(attn_mask, [(0, 0)] * (attn_mask.ndim - 1) + [(0, extra)])
        mask = mask + (am.reshape(N, num_heads, L, S) if am.ndim == 3 else am)
    if kpm is not None:
        mask = mask + np.pad(kpm, [(0, 0), (0, extra)])[:, None, None, :]
    heads, weights = [], []
    for h in range(num_heads):
        sl = slice(h * hd, (h + 1) * hd)
        s = q[..., sl] @ np.swapaxes(k[..., sl], 1, 2) / math.sqrt(hd) + mask[:, h]
        w = np_softmax(s)
        weights.append(w)
        heads.append(w @ v[..., sl])
    out = np.concatenate(heads, -1) @ p["wo"].T + p["bo"]
    return out, np.stack(weights, 1)


def mha_params(m):
    E = m.embed_dim
    b = m.in_proj_bias.detach().numpy() if m.in_proj_bias is not None else np.zeros(3 * E)
    if m._qkv_same_embed_dim:
        w = m.in_proj_weight.detach().numpy()
        wq, wk, wv = w[:E], w[E:2 * E], w[2 * E:]
    else:
        wq, wk, wv = (getattr(m, n).detach().numpy() for n in ("q_proj_weight", "k_proj_weight", "v_proj_weight"))
    bo = m.out_proj.bias.detach().numpy() if m.out_proj.bias is not None else np.zeros(E)
    return {"wq": wq, "wk": wk, "wv": wv, "bq": b[:E], "bk": b[E:2 * E], "bv": b[2 * E:],
            "wo": m.out_proj.weight.detach().numpy(), "bo": bo}


def randomize(m, seed=0):
    g = np.random.default_rng(seed)
    sd = {k: T(g.standard_normal(tuple(v.shape)) * 0.5, dtype=v.dtype) for k, v in m.state_dict().items()}
    m.load_state_dict(sd)
    return m


# ---- scaled_dot_product_attention: values ---------------------------------------------------------


def test_sdpa_plain():
    q, k, v = r(2, 3, 5, 4), r(2, 3, 7, 4), r(2, 3, 7, 6)
    out = F.scaled_dot_product_attention(T(q), T(k), T(v))
    assert tuple(out.shape) == (2, 3, 5, 6)
    assert_close(out, np_sdpa(q, k, v))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5, 8, 64, 8, 64), (40, 1, 64, 16, 64), (3, 3, 7, 5, 6), (1, 0, 4, 3, 4)])
def test_sdpa_without_graph_on_arrays_equals_the_graph_path(shape, dtype):
    """With no gradient to record, the math backend computes on the arrays a chunk of heads at a
    time (several chunks here), heads viewed strided out of (N, L, H*E) projections as models
    make them; the graph path (requires_grad) and a float64 reference give the same values."""
    N, H, L, E, S = shape
    g = np.random.default_rng(7)
    heads = [g.standard_normal((N, n, H * E)).astype(dtype) * 2 for n in (L, S, S)]
    def views(requires_grad):
        return [T(a, requires_grad=requires_grad).reshape(N, a.shape[1], H, E).transpose(1, 2) for a in heads]
    q, k, v = views(False)
    assert impl._numpy_path_ok(q, k, v, None, 0.0, False)
    out = F.scaled_dot_product_attention(q, k, v)
    graph = F.scaled_dot_product_attention(*views(True))
    assert graph.grad_fn is not None and out.grad_fn is None and out.dtype == graph.dtype
    ref = np_sdpa(*(np.asarray(t.detach().numpy(), np.float64) for t in (q, k, v)))
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    assert_close(out, ref, **tol)
    assert_close(out, graph.detach(), **tol)
    with rtx.no_grad():  # leaves that require grad, under no_grad: no graph either
        assert impl._numpy_path_ok(*views(True), None, 0.0, False)


def test_sdpa_array_path_2d_wide_scores_and_when_it_is_not_taken():
    q, k, v = r(6, 4), r(9, 4), r(9, 3)
    assert_close(F.scaled_dot_product_attention(T(q), T(k), T(v)), np_sdpa(q, k, v), rtol=1e-12, atol=1e-13)
    big = r(2, 3, 5, 4) * 40  # score rows spread far beyond the shared-shift limit: row maxima
    assert_close(F.scaled_dot_product_attention(T(big), T(big), T(big)), np_sdpa(big, big, big),
                 rtol=1e-10, atol=1e-12)
    t = T(r(2, 2, 3, 4))
    mask = T(np.ones((3, 3), bool))
    for args in ((mask, 0.0, False), (None, 0.5, False), (None, 0.0, True)):
        assert not impl._numpy_path_ok(t, t, t, *args)
    assert not impl._numpy_path_ok(T(r(2, 3, 4), requires_grad=True), t[0], t[0], None, 0.0, False)
    assert not impl._numpy_path_ok(t.half(), t.half(), t.half(), None, 0.0, False)


def test_sdpa_without_keys_gives_zeros_as_torch():
    q = T(r(2, 3, 4, 5), requires_grad=True)
    k, v = T(r(2, 3, 0, 5)), T(r(2, 3, 0, 6))
    with rtx.no_grad():
        assert_close(F.scaled_dot_product_attention(q, k, v), np.zeros((2, 3, 4, 6)))
    F.scaled_dot_product_attention(q, k, v).sum().backward()
    assert_close(q.grad, np.zeros((2, 3, 4, 5)))


def test_sdpa_3d_and_scale():
    q, k, v = r(3, 5, 4), r(3, 6, 4), r(3, 6, 2)
    assert_close(F.scaled_dot_product_attention(T(q), T(k), T(v), scale=0.3), np_sdpa(q, k, v, scale=0.3))


def test_sdpa_bool_mask_true_takes_part():
    q, k, v = r(2, 2, 4, 3), r(2, 2, 5, 3), r(2, 2, 5, 3)
    mask = rng.random((2, 1, 4, 5)) > 0.4
    mask[..., 0] = True  # every row keeps at least one key
    assert_close(F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=T(mask)), np_sdpa(q, k, v, mask))


def test_sdpa_float_mask_is_added():
    q, k, v = r(2, 4, 3), r(2, 5, 3), r(2, 5, 3)
    mask = r(4, 5)
    assert_close(F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=T(mask)), np_sdpa(q, k, v, mask))


def test_sdpa_float32_mask_with_float64_query_is_cast():
    q, k, v = r(1, 3, 2), r(1, 3, 2), r(1, 3, 2)
    mask = r(3, 3)
    out = F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=T(mask.astype(np.float32)))
    assert out.dtype == rtx.float64
    assert_close(out, np_sdpa(q, k, v, mask.astype(np.float32).astype(np.float64)))


@pytest.mark.parametrize("L,S", [(4, 4), (3, 6), (6, 3)])
def test_sdpa_causal_top_left(L, S):
    q, k, v = r(2, L, 3), r(2, S, 3), r(2, S, 3)
    out = F.scaled_dot_product_attention(T(q), T(k), T(v), is_causal=True)
    assert_close(out, np_sdpa(q, k, v, causal=True))
    # Top-left alignment: query 0 sees key 0 only.
    assert_close(out[:, 0], v[:, 0])


def test_sdpa_fully_masked_row_is_zero():
    q, k, v = r(1, 3, 2), r(1, 4, 2), r(1, 4, 2)
    mask = np.ones((3, 4), bool)
    mask[1] = False
    out = F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=T(mask)).numpy()
    assert np.all(out[0, 1] == 0) and np.isfinite(out).all()
    # causal with L > S: rows beyond S still see keys; all finite
    out = F.scaled_dot_product_attention(T(r(1, 5, 2)), T(k), T(v), is_causal=True).numpy()
    assert np.isfinite(out).all()


def test_sdpa_gqa():
    q, k, v = r(2, 6, 4, 3), r(2, 2, 5, 3), r(2, 2, 5, 3)
    out = F.scaled_dot_product_attention(T(q), T(k), T(v), enable_gqa=True)
    assert_close(out, np_sdpa(q, k, v, gqa=True))
    # head h of the query uses kv head h // 3 (repeat_interleave, not tile)
    ref0 = np_sdpa(q[:, 2:3], k[:, 0:1], v[:, 0:1])
    assert_close(out[:, 2:3], ref0)
    with pytest.raises(RuntimeError, match="multiple"):
        F.scaled_dot_product_attention(T(r(1, 5, 4, 3)), T(r(1, 2, 4, 3)), T(r(1, 2, 4, 3)), enable_gqa=True)


def test_sdpa_dropout_uses_rtx_rng():
    q, k = r(2, 8, 4), r(2, 8, 4)
    v = np.broadcast_to(np.eye(8), (2, 8, 8)).copy()  # output = the (dropped) weights
    w = np_sdpa(q, k, v)
    rtx.manual_seed(3)
    a = F.scaled_dot_product_attention(T(q), T(k), T(v), dropout_p=0.25).numpy()
    rtx.manual_seed(3)
    b = F.scaled_dot_product_attention(T(q), T(k), T(v), dropout_p=0.25).numpy()
    np.testing.assert_array_equal(a, b)
    kept = a != 0
    np.testing.assert_allclose(a[kept], w[kept] / 0.75)
    assert 0.1 < 1 - kept.mean() < 0.4
    assert np.all(F.scaled_dot_product_attention(T(q), T(k), T(v), dropout_p=1.0).numpy() == 0)


def test_sdpa_errors():
    q = T(r(2, 3, 4))
    with pytest.raises(RuntimeError, match="is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=T(np.ones((3, 3), bool)), is_causal=True)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, q.float(), q)
    with pytest.raises(RuntimeError, match="embedding size"):
        F.scaled_dot_product_attention(q, T(r(2, 3, 5)), q)


def test_sdpa_gradcheck_and_double_backward():
    q = T(r(1, 2, 3, 2), requires_grad=True)
    k = T(r(1, 2, 4, 2), requires_grad=True)
    v = T(r(1, 2, 4, 3), requires_grad=True)
    mask = T(rng.random((3, 4)) > 0.3)
    fmask = T(r(3, 4))
    for kw in ({}, {"attn_mask": mask}, {"attn_mask": fmask}, {"is_causal": True}):
        def f(a, b, c, kw=kw):
            return F.scaled_dot_product_attention(a, b, c, **kw)
        assert gradcheck(f, [q, k, v])
        assert gradgradcheck(f, [q, k, v])


def test_sdpa_gradcheck_gqa():
    q = T(r(1, 4, 2, 2), requires_grad=True)
    k = T(r(1, 2, 3, 2), requires_grad=True)
    v = T(r(1, 2, 3, 2), requires_grad=True)
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, enable_gqa=True), [q, k, v])


# ---- the backend registry ---------------------------------------------------------------------------


@pytest.fixture
def fake_backend():
    calls = []
    state = {"accept": True}

    def fn(query, key, value, attn_mask, dropout_p, is_causal, scale):
        calls.append({"key_shape": tuple(key.shape), "scale": scale, "is_causal": is_causal})
        return impl._sdpa_math(query, key, value, attn_mask, dropout_p, is_causal, scale) * 0 + 42.0

    def supports(query, key, value, attn_mask, dropout_p, is_causal, scale):
        return state["accept"]

    # above any backend a plugin (rtx-flash-attn) registers through the entry point
    attention.register_sdpa_backend("fake", fn, priority=10_000, supports=supports)
    try:
        yield calls, state
    finally:
        attention.unregister_sdpa_backend("fake")


def qkv():
    return T(r(1, 2, 3, 4)), T(r(1, 2, 5, 4)), T(r(1, 2, 5, 4))


def test_registry_highest_priority_supported_backend_runs(fake_backend):
    calls, state = fake_backend
    q, k, v = qkv()
    assert attention.sdpa_backends()[:1] == ["fake"] and "math" in attention.sdpa_backends()
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert np.all(out.numpy() == 42.0)
    assert calls == [{"key_shape": (1, 2, 5, 4), "scale": 0.5, "is_causal": True}]  # scale resolved
    state["accept"] = False  # supports() declines: math takes the call
    assert_close(F.scaled_dot_product_attention(q, k, v), np_sdpa(q.numpy(), k.numpy(), v.numpy()))
    assert len(calls) == 1


def test_sdpa_kernel_forces_a_backend(fake_backend):
    calls, state = fake_backend
    q, k, v = qkv()
    with attention.sdpa_kernel(attention.SDPBackend.MATH):
        assert_close(F.scaled_dot_product_attention(q, k, v), np_sdpa(q.numpy(), k.numpy(), v.numpy()))
    assert calls == []
    with attention.sdpa_kernel(["fake"]):
        assert np.all(F.scaled_dot_product_attention(q, k, v).numpy() == 42.0)
        state["accept"] = False
        with pytest.raises(RuntimeError, match="No available kernel"):
            F.scaled_dot_product_attention(q, k, v)
    # outside the block every backend is allowed again
    assert_close(F.scaled_dot_product_attention(q, k, v), np_sdpa(q.numpy(), k.numpy(), v.numpy()))


def test_sdpa_kernel_set_priority_and_missing_backend(fake_backend):
    calls, _ = fake_backend
    q, k, v = qkv()
    with attention.sdpa_kernel(["math", "fake"], set_priority=True):
        F.scaled_dot_product_attention(q, k, v)
    assert calls == []  # math listed first wins despite the lower priority
    # (flash_attention is registered when rtx-flash-attn is installed; cudnn_attention never is)
    with attention.sdpa_kernel([attention.SDPBackend.CUDNN_ATTENTION]):
        with pytest.raises(RuntimeError, match="not registered: \\['cudnn_attention'\\]"):
            F.scaled_dot_product_attention(q, k, v)


def test_gqa_backend_gets_unexpanded_heads():
    seen = {}

    def fn(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa=False):
        seen["heads"], seen["gqa"] = key.shape[-3], enable_gqa
        return impl._sdpa_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)

    attention.register_sdpa_backend("fake_gqa", fn, priority=5, gqa=True)
    try:
        q, k, v = r(1, 4, 3, 2), r(1, 2, 3, 2), r(1, 2, 3, 2)
        out = F.scaled_dot_product_attention(T(q), T(k), T(v), enable_gqa=True)
        assert seen == {"heads": 2, "gqa": True}
        assert_close(out, np_sdpa(q, k, v, gqa=True))
    finally:
        attention.unregister_sdpa_backend("fake_gqa")


def test_non_gqa_backend_gets_expanded_heads(fake_backend):
    calls, _ = fake_backend
    F.scaled_dot_product_attention(T(r(1, 4, 3, 2)), T(r(1, 2, 3, 2)), T(r(1, 2, 3, 2)), enable_gqa=True)
    assert calls[0]["key_shape"] == (1, 4, 3, 2)


def test_math_cannot_be_replaced():
    with pytest.raises(ValueError, match="built in"):
        attention.register_sdpa_backend("math", lambda *a: None)
    with pytest.raises(TypeError):
        attention.register_sdpa_backend("x", "not callable")


class _FakeEntryPoint:
    def __init__(self, name, target):
        self.name, self.value, self._target = name, f"fake:{name}", target

    def load(self):
        return self._target


def test_entry_points_load_lazily_once(monkeypatch):
    import importlib.metadata
    loads = []
    group_seen = []

    def register():
        loads.append(1)
        attention.register_sdpa_backend("from_ep", lambda q, k, v, *a: q * 0 + 7.0, priority=3)

    def broken():
        raise ImportError("no GPU here")

    def entry_points(group=None):
        group_seen.append(group)
        return [_FakeEntryPoint("good", register), _FakeEntryPoint("bad", broken)]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(impl, "_entry_points_loaded", False)
    try:
        q, k, v = qkv()
        with pytest.warns(RuntimeWarning, match="'bad'"):
            out = F.scaled_dot_product_attention(q, k, v)
        assert np.all(out.numpy() == 7.0)
        F.scaled_dot_product_attention(q, k, v)
        assert loads == [1] and group_seen == ["rtx.sdpa_backends"]
    finally:
        attention.unregister_sdpa_backend("from_ep")


# ---- MultiheadAttention -------------------------------------------------------------------------------


def test_mha_state_dict_keys_and_init():
    m = nn.MultiheadAttention(8, 2)
    assert list(m.state_dict()) == ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert tuple(m.in_proj_weight.shape) == (24, 8) and tuple(m.in_proj_bias.shape) == (24,)
    assert isinstance(m.out_proj, nn.Linear)
    assert np.all(m.in_proj_bias.detach().numpy() == 0) and np.all(m.out_proj.bias.detach().numpy() == 0)
    bound = math.sqrt(6 / (8 + 24))  # xavier_uniform over the (3E, E) matrix
    w = m.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    m2 = nn.MultiheadAttention(8, 2, add_bias_kv=True, kdim=3, vdim=5, bias=False)
    assert list(m2.state_dict()) == ["q_proj_weight", "k_proj_weight", "v_proj_weight", "bias_k", "bias_v",
                                     "out_proj.weight"]
    assert tuple(m2.k_proj_weight.shape) == (8, 3) and tuple(m2.v_proj_weight.shape) == (8, 5)
    assert m2.in_proj_weight is None and m2.in_proj_bias is None and tuple(m2.bias_k.shape) == (1, 1, 8)
    assert m.bias_k is None and m.head_dim == 4
    with pytest.raises(AssertionError, match="divisible"):
        nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError):
        nn.MultiheadAttention(0, 1)


@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_self_attention(batch_first):
    m = randomize(nn.MultiheadAttention(6, 3, batch_first=batch_first).double())
    x = r(2, 4, 6)  # (N, L, E)
    inp = T(x if batch_first else x.transpose(1, 0, 2))
    out, w = m(inp, inp, inp)
    ref, ref_w = np_mha(x, x, x, mha_params(m), 3)
    assert_close(out, ref if batch_first else ref.transpose(1, 0, 2))
    assert_close(w, ref_w.mean(1))
    out2, w2 = m(inp, inp, inp, average_attn_weights=False)
    assert_close(w2, ref_w)
    out3, w3 = m(inp, inp, inp, need_weights=False)
    assert w3 is None
    assert_close(out3, out)


def test_mha_cross_attention_kdim_vdim():
    m = randomize(nn.MultiheadAttention(4, 2, kdim=3, vdim=5).double())
    q, k, v = r(2, 3, 4), r(2, 6, 3), r(2, 6, 5)
    out, w = m(T(q.transpose(1, 0, 2)), T(k.transpose(1, 0, 2)), T(v.transpose(1, 0, 2)))
    ref, ref_w = np_mha(q, k, v, mha_params(m), 2)
    assert_close(out, ref.transpose(1, 0, 2))
    assert_close(w, ref_w.mean(1))


def test_mha_encoder_decoder_packed_weights():
    m = randomize(nn.MultiheadAttention(4, 2, batch_first=True).double())
    q, kv = r(2, 3, 4), r(2, 5, 4)
    out, _ = m(T(q), T(kv), T(kv))
    assert_close(out, np_mha(q, kv, kv, mha_params(m), 2)[0])


def test_mha_masks():
    m = randomize(nn.MultiheadAttention(6, 2, batch_first=True).double())
    N, L, S = 2, 3, 5
    q, k, v = r(N, L, 6), r(N, S, 6), r(N, S, 6)
    p = mha_params(m)
    bool_mask = rng.random((L, S)) > 0.6
    bool_mask[:, 0] = False  # True = masked out in MultiheadAttention
    kpm = np.zeros((N, S), bool)
    kpm[0, 3:] = True
    float_mask = r(N * 2, L, S)
    neg = np.where(bool_mask, -np.inf, 0.0)
    kpm_f = np.where(kpm, -np.inf, 0.0)
    for kw, ref_kw in [
        ({"attn_mask": T(bool_mask)}, {"attn_mask": neg}),
        ({"attn_mask": T(float_mask)}, {"attn_mask": float_mask}),
        ({"key_padding_mask": T(kpm)}, {"kpm": kpm_f}),
        ({"key_padding_mask": T(kpm_f)}, {"kpm": kpm_f}),
        ({"attn_mask": T(bool_mask), "key_padding_mask": T(kpm)}, {"attn_mask": neg, "kpm": kpm_f}),
    ]:
        ref, ref_w = np_mha(q, k, v, p, 2, **ref_kw)
        out, w = m(T(q), T(k), T(v), **kw)
        assert_close(out, ref)
        assert_close(w, ref_w.mean(1))
        out2, _ = m(T(q), T(k), T(v), need_weights=False, **kw)
        assert_close(out2, ref)


def test_mha_is_causal_hint():
    m = randomize(nn.MultiheadAttention(4, 2).double())
    x = T(r(3, 2, 4))
    causal = T(np.triu(np.ones((3, 3), bool), 1))
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        m(x, x, x, is_causal=True)
    a, _ = m(x, x, x, attn_mask=causal)
    b, none = m(x, x, x, attn_mask=causal, is_causal=True, need_weights=False)
    assert none is None
    assert_close(a, b)


def test_mha_bias_kv_and_zero_attn():
    m = randomize(nn.MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True, batch_first=True).double())
    q, k = r(2, 3, 4), r(2, 5, 4)
    kpm = np.zeros((2, 5), bool)
    kpm[1, -2:] = True
    am = r(3, 5)
    bias_kv = (m.bias_k.detach().numpy(), m.bias_v.detach().numpy())
    ref, ref_w = np_mha(q, k, k, mha_params(m), 2, attn_mask=am, kpm=np.where(kpm, -np.inf, 0.0),
                        bias_kv=bias_kv, zero_attn=True)
    out, w = m(T(q), T(k), T(k), key_padding_mask=T(kpm), attn_mask=T(am))
    assert tuple(w.shape) == (2, 3, 7)
    assert_close(out, ref)
    assert_close(w, ref_w.mean(1))


def test_mha_unbatched():
    m = randomize(nn.MultiheadAttention(4, 2).double())
    q, k = r(3, 4), r(5, 4)
    kpm = np.array([False, False, True, False, True])
    out, w = m(T(q), T(k), T(k), key_padding_mask=T(kpm))
    ref, ref_w = np_mha(q[None], k[None], k[None], mha_params(m), 2, kpm=np.where(kpm, -np.inf, 0.0)[None])
    assert tuple(out.shape) == (3, 4) and tuple(w.shape) == (3, 5)
    assert_close(out, ref[0])
    assert_close(w, ref_w.mean(1)[0])
    out2, _ = m(T(q), T(k), T(k), key_padding_mask=T(kpm), need_weights=False)
    assert_close(out2, ref[0])


def test_mha_shape_errors():
    m = nn.MultiheadAttention(4, 2)
    with pytest.raises(AssertionError, match="batched"):
        m(rtx.randn(3, 2, 4), rtx.randn(3, 4), rtx.randn(3, 4))
    with pytest.raises(AssertionError, match="2D or batched 3D"):
        m(rtx.randn(1, 3, 2, 4), rtx.randn(3, 2, 4), rtx.randn(3, 2, 4))
    with pytest.raises(RuntimeError, match="2D attn_mask"):
        m(rtx.randn(3, 2, 4), rtx.randn(5, 2, 4), rtx.randn(5, 2, 4), attn_mask=rtx.zeros(3, 3))
    with pytest.raises(AssertionError, match="embedding dimension"):
        m(rtx.randn(3, 2, 5), rtx.randn(3, 2, 5), rtx.randn(3, 2, 5))


def test_mha_dropout_train_vs_eval():
    m = nn.MultiheadAttention(4, 2, dropout=0.5)
    x = rtx.randn(6, 2, 4)
    m.eval()
    a, wa = m(x, x, x)
    b, wb = m(x, x, x)
    assert_close(a, b)
    assert_close(wa.sum(-1), np.ones((2, 6)), rtol=1e-5, atol=1e-5)
    m.train()
    rtx.manual_seed(0)
    c, wc = m(x, x, x, average_attn_weights=False)
    assert np.any(wc.detach().numpy() == 0)  # dropped weights are returned, as PyTorch


def test_mha_gradcheck():
    m = randomize(nn.MultiheadAttention(4, 2, add_bias_kv=True).double(), seed=3)
    q = T(r(2, 1, 4), requires_grad=True)
    k = T(r(3, 1, 4), requires_grad=True)
    w = T(m.in_proj_weight.detach().numpy(), requires_grad=True)
    mask = T(np.array([[False, True, False], [False, False, True]]))

    def f(q, k, w):
        out, weights = F.multi_head_attention_forward(
            q, k, k, 4, 2, w, m.in_proj_bias, m.bias_k, m.bias_v, False, 0.0, m.out_proj.weight, m.out_proj.bias,
            attn_mask=mask)
        return out, weights

    assert gradcheck(f, [q, k, w])


def test_rtx_nn_attention_module_exports():
    import rtx.nn.attention as A
    assert A.sdpa_kernel is impl.sdpa_kernel and A.SDPBackend.MATH == "math"
    assert hasattr(F, "scaled_dot_product_attention") and hasattr(F, "multi_head_attention_forward")


def test_no_grad_array_path_is_silent_on_inf():
    # the array path (no graph) gives inf inputs' NaN without a warning (python -W error must not raise in it),
    # and the same NaN pattern as the graph path
    import warnings
    q = rtx.randn(2, 2, 4, 8)
    q[0, 0, 0, 0] = float("inf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with rtx.no_grad():
            a = F.scaled_dot_product_attention(q, q, q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = F.scaled_dot_product_attention(q.requires_grad_(), q, q)
    np.testing.assert_array_equal(np.isnan(a.numpy()), np.isnan(b.detach().numpy()))
