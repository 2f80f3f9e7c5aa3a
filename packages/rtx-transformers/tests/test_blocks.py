"""The building blocks: RoPE, ALiBi, attention with causal / padding / window / ALiBi (with
and without rtx-flash-attn), SwiGLU, Conv1D, RMSNorm, the KV cache, configs and outputs."""
import math

import numpy as np
import pytest

import rtx
from rtx.transformers import (
    BertConfig,
    CausalLMOutput,
    Conv1D,
    GPT2Config,
    KVCache,
    LlamaConfig,
    RMSNorm,
    RotaryEmbedding,
    SwiGLU,
    alibi_bias,
    alibi_slopes,
    apply_rotary_pos_emb,
    attend,
)
from rtx.transformers import blocks as blocks_module


def _np(t):
    return t.detach().numpy()


# ---- RoPE ------------------------------------------------------------------------------------------------


def test_rope_rotates_pairs_and_keeps_only_relative_position():
    d, theta = 8, 10000.0
    rope = RotaryEmbedding(d, theta)
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((1, 1, 6, d)), rng.standard_normal((1, 1, 6, d))
    cos, sin = rope(np.arange(6)[None])
    rq, rk = apply_rotary_pos_emb(rtx.tensor(q), rtx.tensor(k), cos, sin)
    # pair (x_i, x_{i+d/2}) turned by pos * theta^(-2i/d): a 2-D rotation matrix per pair
    for pos in range(6):
        for i in range(d // 2):
            a = pos * theta ** (-2 * i / d)
            rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
            np.testing.assert_allclose(_np(rq)[0, 0, pos, [i, i + d // 2]], rot @ q[0, 0, pos, [i, i + d // 2]],
                                       atol=1e-12)
    # the score of a rotated pair depends on positions only through their difference
    one_q, one_k = rng.standard_normal(d), rng.standard_normal(d)

    def score(m, n):
        c, s = rope(np.array([[m, n]]))
        a, b = apply_rotary_pos_emb(rtx.tensor(np.stack([one_q, one_q])[None, None]),
                                    rtx.tensor(np.stack([one_k, one_k])[None, None]), c, s)
        return float(_np(a)[0, 0, 0] @ _np(b)[0, 0, 1])
    assert abs(score(3, 1) - score(10, 8)) < 1e-10 and abs(score(3, 1) - score(1, 3)) > 1e-6


def test_rope_linear_and_dynamic_scaling():
    base = RotaryEmbedding(8, 10000.0)
    lin = RotaryEmbedding(8, 10000.0, {"type": "linear", "factor": 4.0})
    np.testing.assert_allclose(lin.inv_freq, base.inv_freq / 4)
    dyn = RotaryEmbedding(8, 10000.0, {"rope_type": "dynamic", "factor": 2.0}, max_position_embeddings=16)
    c_short, _ = dyn(np.arange(10)[None])
    np.testing.assert_allclose(_np(c_short), _np(base(np.arange(10)[None])[0]))  # within the trained length: unchanged
    c_long, _ = dyn(np.arange(32)[None])
    grown = 10000.0 * ((2.0 * 32 / 16) - 1) ** (8 / 6)  # the NTK-aware base for 32 positions
    want = np.cos(np.arange(32)[:, None] * grown ** (-np.arange(0, 8, 2) / 8))
    np.testing.assert_allclose(_np(c_long)[0, :, :4], want, atol=1e-12)
    with pytest.raises(ValueError, match="even"):
        RotaryEmbedding(7)


# ---- ALiBi ---------------------------------------------------------------------------------------------------


def test_alibi_slopes_and_bias():
    np.testing.assert_allclose(alibi_slopes(8), [2.0 ** -(i + 1) for i in range(8)])
    np.testing.assert_allclose(alibi_slopes(4), [2.0 ** -(2 * (i + 1)) for i in range(4)])
    six = alibi_slopes(6)  # the paper's rule for a head count that is not a power of two
    np.testing.assert_allclose(six, [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3])
    b = _np(alibi_bias([0.5, 0.25], 2, 4))
    assert b.shape == (2, 2, 4)
    np.testing.assert_allclose(b[0], -0.5 * np.array([[2, 1, 0, 1], [3, 2, 1, 0]]))


# ---- attend ----------------------------------------------------------------------------------------------------


def _naive(q, k, v, causal, pad, window, alibi, scale):
    B, H, L, d = q.shape
    S = k.shape[-2]
    G = H // k.shape[1]
    k, v = np.repeat(k, G, 1), np.repeat(v, G, 1)
    s = q @ k.transpose(0, 1, 3, 2) * scale
    i, j = np.arange(L)[:, None] + S - L, np.arange(S)[None, :]
    if alibi is not None:
        s = s - np.asarray(alibi)[None, :, None, None] * np.abs(i - j)
    ok = np.ones((L, S), dtype=bool)
    if causal:
        ok &= j <= i
    if window[0] >= 0:
        ok &= j - i >= -window[0]
    if window[1] >= 0:
        ok &= j - i <= window[1]
    ok = ok[None, None] & (pad[:, None, None, :] > 0 if pad is not None else True)
    s = np.where(ok, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    p = np.exp(s - m)
    den = p.sum(-1, keepdims=True)
    return np.divide(p, den, out=np.zeros_like(p), where=den > 0) @ v


ATTEND = [
    # causal, with padding, window (left, right), alibi, L, S
    (True, False, (-1, -1), False, 6, 6),
    (True, True, (-1, -1), False, 6, 6),
    (True, True, (-1, -1), False, 3, 9),       # three new queries after six cached positions
    (False, True, (-1, -1), False, 5, 5),
    (True, False, (2, -1), False, 8, 8),        # sliding window: the last three keys
    (True, True, (2, -1), True, 4, 10),
    (False, False, (-1, -1), True, 5, 7),
    (True, False, (-1, -1), False, 1, 7),       # one decoding step
]


@pytest.mark.parametrize("flash", [True, False], ids=["flash", "sdpa-masks"])
@pytest.mark.parametrize("causal,padded,window,alibi,L,S", ATTEND)
def test_attend_matches_naive_attention(flash, causal, padded, window, alibi, L, S, monkeypatch):
    if not flash:
        monkeypatch.setattr(blocks_module, "_flash", lambda: None)
    rng = np.random.default_rng(L * 100 + S)
    q = rng.standard_normal((2, 4, L, 8))
    k, v = rng.standard_normal((2, 2, S, 8)), rng.standard_normal((2, 2, S, 8))
    pad = np.ones((2, S), dtype=np.int64)
    if padded:
        pad[0, :2] = 0  # left padding
    slopes = alibi_slopes(4) if alibi else None
    want = _naive(q, k, v, causal, pad if padded else None, window, slopes, 0.3)
    tq = rtx.tensor(q, requires_grad=True)
    got = attend(tq, rtx.tensor(k), rtx.tensor(v), causal=causal, padding_mask=rtx.tensor(pad) if padded else None,
                 window_size=window, alibi_slopes=slopes, scale=0.3)
    np.testing.assert_allclose(_np(got), want, rtol=1e-10, atol=1e-10)
    got.sum().backward()
    assert np.isfinite(tq.grad.numpy()).all()


def test_attend_rejects_a_misshapen_padding_mask():
    q = rtx.randn(2, 2, 3, 4)
    with pytest.raises(ValueError, match="padding_mask"):
        attend(q, q, q, padding_mask=rtx.ones(2, 4))


# ---- small modules ------------------------------------------------------------------------------------------


def test_swiglu_conv1d_rmsnorm():
    rtx.manual_seed(0)
    mlp = SwiGLU(6, 10)
    assert sorted(mlp.state_dict()) == ["down_proj.weight", "gate_proj.weight", "up_proj.weight"]
    x = rtx.randn(3, 6)
    g = x.numpy() @ mlp.gate_proj.weight.detach().numpy().T
    u = x.numpy() @ mlp.up_proj.weight.detach().numpy().T
    want = (g / (1 + np.exp(-g)) * u) @ mlp.down_proj.weight.detach().numpy().T
    np.testing.assert_allclose(_np(mlp(x)), want, rtol=1e-5, atol=1e-6)

    conv = Conv1D(5, 3)  # nf=5 outputs from nx=3 inputs; weight stored (3, 5)
    assert conv.weight.shape == (3, 5)
    x = rtx.randn(2, 4, 3)
    np.testing.assert_allclose(_np(conv(x)), x.numpy() @ conv.weight.detach().numpy() + conv.bias.detach().numpy(),
                               rtol=1e-6)

    norm = RMSNorm(6, eps=1e-6)
    x = rtx.randn(2, 6)
    a = x.numpy()
    np.testing.assert_allclose(_np(norm(x)), a / np.sqrt((a * a).mean(-1, keepdims=True) + 1e-6), rtol=1e-5)


# ---- KV cache -----------------------------------------------------------------------------------------------


def test_kv_cache_append_crop_reorder():
    cache = KVCache()
    assert cache.length() == 0 and len(cache) == 0
    rng = np.random.default_rng(0)
    ks = [rng.standard_normal((2, 3, n, 4)).astype(np.float32) for n in (5, 1, 1, 20)]
    for layer in (0, 1):
        for a in ks:
            k, v = cache.append(layer, rtx.tensor(a), rtx.tensor(a * 2))
    assert cache.length() == 27 and cache.length(1) == 27 and len(cache) == 2
    np.testing.assert_array_equal(_np(k), np.concatenate(ks, axis=2))
    np.testing.assert_array_equal(_np(v), 2 * np.concatenate(ks, axis=2))
    cache.crop(6)
    assert cache.length() == 6
    np.testing.assert_array_equal(_np(cache[0][0]), np.concatenate(ks[:2], axis=2))
    cache.crop(-2)
    assert cache.length() == 4
    cache.reorder([1, 1])
    np.testing.assert_array_equal(_np(cache[1][0])[0], ks[0][1, :, :4])
    legacy = cache.to_legacy_cache()
    again = KVCache.from_legacy_cache(legacy)
    assert again.length() == 4 and len(again.to_legacy_cache()) == 2
    assert "lengths=[4, 4]" in repr(cache)


def test_kv_cache_keeps_the_graph_when_keys_need_grad_and_checks_shapes():
    cache = KVCache()
    cache.append(0, rtx.randn(1, 2, 3, 4), rtx.randn(1, 2, 3, 4))
    k_new = rtx.randn(1, 2, 1, 4, requires_grad=True)
    k, _ = cache.append(0, k_new, rtx.randn(1, 2, 1, 4))
    k.sum().backward()
    np.testing.assert_array_equal(k_new.grad.numpy(), np.ones((1, 2, 1, 4)))
    with pytest.raises(ValueError, match="differ outside the sequence axis"):
        cache.append(0, rtx.randn(1, 3, 1, 4), rtx.randn(1, 3, 1, 4))
    with pytest.raises(ValueError, match=r"\(batch, kv_heads, seq, head_dim\)"):
        cache.append(1, rtx.randn(2, 1, 4), rtx.randn(2, 1, 4))
    with pytest.raises(IndexError, match="holds nothing"):
        KVCache(2)[1]


# ---- configs and outputs -----------------------------------------------------------------------------------


def test_configs_round_trip_and_outputs(tmp_path):
    cfg = LlamaConfig(hidden_size=64, num_attention_heads=8, num_key_value_heads=2, intermediate_size=128)
    assert cfg.head_dim == 8 and cfg.num_key_value_heads == 2
    cfg.to_json_file(tmp_path / "config.json")
    again = LlamaConfig.from_pretrained(tmp_path)
    assert again == cfg and again.extra == {}
    with pytest.warns(UserWarning, match="model_type 'bert'"):
        LlamaConfig.from_dict({"model_type": "bert", "hidden_size": 64, "num_attention_heads": 8})
    g = GPT2Config.from_dict({"n_embd": 32, "n_head": 2, "n_ctx": 128, "architectures": ["GPT2LMHeadModel"]})
    assert g.hidden_size == 32 and g.extra["n_ctx"] == 128 and g.n_positions == 1024
    assert BertConfig().hidden_size == 768 and LlamaConfig().num_key_value_heads == 32
    out = CausalLMOutput(logits="L", past_key_values="P")
    assert out[0] == "L" and out["past_key_values"] == "P" and len(out) == 2 and list(out) == ["L", "P"]
    assert CausalLMOutput(logits="L").to_tuple() == ("L",)
    with pytest.raises(KeyError, match="fields"):
        out["scores"]
