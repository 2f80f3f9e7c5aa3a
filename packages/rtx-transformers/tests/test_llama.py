"""Llama: a checkpoint in Hugging Face's layout (written here) loads and gives the logits of a
NumPy forward pass (RoPE as complex rotations, RMSNorm, SwiGLU, grouped-query attention, an
optional sliding window); the KV cache and left padding change nothing."""
import json
import math
import warnings

import numpy as np
import pytest
from safetensors.numpy import save_file

import rtx
from rtx.transformers import LlamaConfig, LlamaForCausalLM, LlamaModel

CFG = dict(vocab_size=41, hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=4,
           num_key_value_heads=2, rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=64)


def hf_weights(rng, cfg, tied=False):
    E, V, I = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    H, Hk = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = E // H
    w = {"model.embed_tokens.weight": rng.normal(0, 0.5, (V, E)), "model.norm.weight": 1 + rng.normal(0, 0.1, E)}
    if not tied:
        w["lm_head.weight"] = rng.normal(0, 0.3, (V, E))
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w.update({
            p + "self_attn.q_proj.weight": rng.normal(0, 0.3, (H * d, E)),
            p + "self_attn.k_proj.weight": rng.normal(0, 0.3, (Hk * d, E)),
            p + "self_attn.v_proj.weight": rng.normal(0, 0.3, (Hk * d, E)),
            p + "self_attn.o_proj.weight": rng.normal(0, 0.3, (E, H * d)),
            p + "mlp.gate_proj.weight": rng.normal(0, 0.3, (I, E)),
            p + "mlp.up_proj.weight": rng.normal(0, 0.3, (I, E)),
            p + "mlp.down_proj.weight": rng.normal(0, 0.3, (E, I)),
            p + "input_layernorm.weight": 1 + rng.normal(0, 0.1, E),
            p + "post_attention_layernorm.weight": 1 + rng.normal(0, 0.1, E),
        })
    return {k: v.astype(np.float32) for k, v in w.items()}


def write_checkpoint(path, weights, cfg):
    path.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps({**cfg, "model_type": "llama", "torch_dtype": "float32"}))
    return path


# ---- the reference --------------------------------------------------------------------------------------


def _rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _rope(x, pos, theta, inv_freq=None):
    """Rotate each pair (x_i, x_{i + d/2}) by pos * theta_i, as a complex multiplication."""
    d = x.shape[-1]
    if inv_freq is None:
        inv_freq = theta ** (-np.arange(0, d, 2) / d)
    z = x[..., : d // 2] + 1j * x[..., d // 2:]
    z = z * np.exp(1j * pos[:, None] * inv_freq[None, :])
    return np.concatenate([z.real, z.imag], axis=-1)


def reference_logits(w, ids, cfg, window=None, inv_freq=None):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    E, H, Hk = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d, eps = E // H, cfg["rms_norm_eps"]
    T = len(ids)
    pos = np.arange(T)
    x = w["model.embed_tokens.weight"][ids]
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    visible = j <= i if window is None else (j <= i) & (i - j < window)
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        a = _rms(x, w[p + "input_layernorm.weight"], eps)
        q = (a @ w[p + "self_attn.q_proj.weight"].T).reshape(T, H, d).transpose(1, 0, 2)
        k = (a @ w[p + "self_attn.k_proj.weight"].T).reshape(T, Hk, d).transpose(1, 0, 2)
        v = (a @ w[p + "self_attn.v_proj.weight"].T).reshape(T, Hk, d).transpose(1, 0, 2)
        q, k = _rope(q, pos, cfg["rope_theta"], inv_freq), _rope(k, pos, cfg["rope_theta"], inv_freq)
        k, v = np.repeat(k, H // Hk, axis=0), np.repeat(v, H // Hk, axis=0)  # head h reads kv head h // (H/Hk)
        s = np.where(visible, q @ k.transpose(0, 2, 1) / math.sqrt(d), -np.inf)
        pr = np.exp(s - s.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        x = x + (pr @ v).transpose(1, 0, 2).reshape(T, E) @ w[p + "self_attn.o_proj.weight"].T
        m = _rms(x, w[p + "post_attention_layernorm.weight"], eps)
        g = m @ w[p + "mlp.gate_proj.weight"].T
        x = x + ((g / (1 + np.exp(-g))) * (m @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    x = _rms(x, w["model.norm.weight"], eps)
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return x @ head.T


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    rng = np.random.default_rng(0)
    weights = hf_weights(rng, CFG)
    stored = dict(weights)
    stored["model.layers.0.self_attn.rotary_emb.inv_freq"] = np.ones(4, dtype=np.float32)  # old checkpoints' buffer
    return write_checkpoint(tmp_path_factory.mktemp("llama"), stored, CFG), weights


def test_loads_hf_checkpoint_and_matches_reference(ckpt):
    path, weights = ckpt
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model, report = LlamaForCausalLM.from_pretrained(path, output_loading_info=True)
    assert not report.missing_keys and not report.unexpected_keys and not report.tied_keys
    assert model.config.num_key_value_heads == 2 and model.model.layers[0].self_attn.k_proj.weight.shape == (16, 32)
    ids = np.array([[3, 17, 0, 36, 5, 9, 9, 21, 40]])
    got = model(rtx.tensor(ids)).logits.detach().numpy()[0]
    np.testing.assert_allclose(got, reference_logits(weights, ids[0], CFG), rtol=2e-4, atol=2e-4)


def test_tied_embeddings_sliding_window_and_multi_query(tmp_path):
    cfg = {**CFG, "num_key_value_heads": 1, "tie_word_embeddings": True, "sliding_window": 3}
    rng = np.random.default_rng(1)
    weights = hf_weights(rng, cfg, tied=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model, report = LlamaForCausalLM.from_pretrained(write_checkpoint(tmp_path, weights, cfg),
                                                         output_loading_info=True)
    assert report.tied_keys == ["lm_head.weight"] and model.lm_head.weight is model.model.embed_tokens.weight
    ids = np.array([[3, 17, 0, 36, 5, 9, 9, 21, 40, 1, 2]])
    got = model(rtx.tensor(ids)).logits.detach().numpy()[0]
    np.testing.assert_allclose(got, reference_logits(weights, ids[0], cfg, window=3), rtol=2e-4, atol=2e-4)


def test_llama3_rope_scaling(tmp_path):
    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 16}
    cfg = {**CFG, "rope_scaling": scaling, "rope_theta": 500000.0}
    weights = hf_weights(np.random.default_rng(2), cfg)
    model = LlamaForCausalLM.from_pretrained(write_checkpoint(tmp_path, weights, cfg))
    # Llama 3.1's rule, per frequency: long wavelengths slowed by the factor, short ones kept, a blend between
    d = 8
    inv = 500000.0 ** (-np.arange(0, d, 2) / d)
    wavelen = 2 * np.pi / inv
    blend = (16 / wavelen - 1.0) / (4.0 - 1.0)
    want = np.where(wavelen < 16 / 4.0, inv, np.where(wavelen > 16 / 1.0, inv / 8, (1 - blend) * inv / 8 + blend * inv))
    np.testing.assert_allclose(model.model.rotary_emb.inv_freq, want)
    ids = np.array([[1, 2, 3, 4, 5, 6]])
    np.testing.assert_allclose(model(rtx.tensor(ids)).logits.detach().numpy()[0],
                               reference_logits(weights, ids[0], cfg, inv_freq=want), rtol=2e-4, atol=2e-4)


def test_generation_with_cache_equals_generation_without(ckpt):
    model = LlamaForCausalLM.from_pretrained(ckpt[0])
    ids = rtx.tensor([[3, 17, 0, 36], [5, 5, 1, 2]])
    full, cached, past = ids, ids, None
    with rtx.no_grad():
        for _ in range(8):
            a = model(full).logits[:, -1]
            out = model(cached if past is None else cached[:, -1:], past_key_values=past, use_cache=True)
            past = out.past_key_values
            b = out.logits[:, -1]
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)
            nxt = a.argmax(-1, keepdim=True)
            full, cached = rtx.cat([full, nxt], 1), rtx.cat([cached, b.argmax(-1, keepdim=True)], 1)
    assert np.array_equal(full.numpy(), cached.numpy()) and past.length() == 11
    # several new tokens at once through a cache (chunked prefill): the causal mask is aligned to the end
    with rtx.no_grad():
        first = model(ids[:, :2], use_cache=True)
        rest = model(ids[:, 2:], past_key_values=first.past_key_values, use_cache=True)
        np.testing.assert_allclose(rest.logits.numpy(), model(ids).logits[:, 2:].numpy(), rtol=1e-4, atol=1e-4)


def test_left_padding_and_crop(ckpt):
    model = LlamaForCausalLM.from_pretrained(ckpt[0])
    with rtx.no_grad():
        out = model(rtx.tensor([[0, 0, 0, 7, 8], [1, 2, 3, 4, 5]]),
                    attention_mask=rtx.tensor([[0, 0, 0, 1, 1], [1, 1, 1, 1, 1]]), use_cache=True)
        alone = model(rtx.tensor([[7, 8]])).logits
        np.testing.assert_allclose(out.logits[0, 3:].numpy(), alone[0].numpy(), rtol=1e-4, atol=1e-4)
        cache = out.past_key_values
        cache.crop(4)  # drop the last position and feed it again: the same logits
        again = model(rtx.tensor([[8], [5]]), attention_mask=rtx.tensor([[0, 0, 0, 1, 1], [1, 1, 1, 1, 1]]),
                      past_key_values=cache, use_cache=True)
        np.testing.assert_allclose(again.logits[:, 0].numpy(), out.logits[:, -1].numpy(), rtol=1e-4, atol=1e-4)


def test_training_step_and_errors():
    cfg = LlamaConfig(**{**CFG, "vocab_size": 20})
    model = LlamaForCausalLM(cfg)
    ids = rtx.randint(0, 20, (2, 6))
    out = model(ids, labels=ids)
    assert out.loss.item() > 0
    out.loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    base = LlamaModel(cfg)
    assert "lm_head.weight" not in base.state_dict() and base(ids).last_hidden_state.shape == (2, 6, 32)
    with pytest.raises(ValueError, match="multiple of num_key_value_heads"):
        LlamaConfig(num_attention_heads=4, num_key_value_heads=3, hidden_size=32)
    with pytest.raises(ValueError, match="attention_mask"):
        model(ids, attention_mask=rtx.ones(2, 5))
    with pytest.raises(NotImplementedError, match="longrope"):
        LlamaForCausalLM(LlamaConfig(**{**CFG, "rope_scaling": {"rope_type": "longrope", "factor": 2.0}}))
