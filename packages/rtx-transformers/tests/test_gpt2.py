"""GPT-2: a checkpoint in Hugging Face's layout (written here) loads, gives the logits of a NumPy
forward pass written from the paper's equations, reports missing / unexpected keys, and the KV
cache and left padding change nothing."""
import json
import math
import warnings

import numpy as np
import pytest
from safetensors.numpy import save_file

import rtx
from rtx.transformers import CausalLMOutput, CheckpointError, GPT2Config, GPT2LMHeadModel, GPT2Model, KVCache

CFG = dict(vocab_size=37, n_positions=24, n_embd=16, n_layer=2, n_head=4, layer_norm_epsilon=1e-5)


def hf_weights(rng, cfg=CFG, prefix="transformer."):
    """Random weights under HF's GPT-2 names; Conv1D weights are (in, out)."""
    E, V, P = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
    w = {f"{prefix}wte.weight": rng.normal(0, 0.3, (V, E)), f"{prefix}wpe.weight": rng.normal(0, 0.3, (P, E)),
         f"{prefix}ln_f.weight": 1 + rng.normal(0, 0.1, E), f"{prefix}ln_f.bias": rng.normal(0, 0.1, E)}
    for i in range(cfg["n_layer"]):
        h = f"{prefix}h.{i}."
        w.update({
            h + "ln_1.weight": 1 + rng.normal(0, 0.1, E), h + "ln_1.bias": rng.normal(0, 0.1, E),
            h + "attn.c_attn.weight": rng.normal(0, 0.3, (E, 3 * E)), h + "attn.c_attn.bias": rng.normal(0, 0.1, 3 * E),
            h + "attn.c_proj.weight": rng.normal(0, 0.3, (E, E)), h + "attn.c_proj.bias": rng.normal(0, 0.1, E),
            h + "ln_2.weight": 1 + rng.normal(0, 0.1, E), h + "ln_2.bias": rng.normal(0, 0.1, E),
            h + "mlp.c_fc.weight": rng.normal(0, 0.3, (E, 4 * E)), h + "mlp.c_fc.bias": rng.normal(0, 0.1, 4 * E),
            h + "mlp.c_proj.weight": rng.normal(0, 0.3, (4 * E, E)), h + "mlp.c_proj.bias": rng.normal(0, 0.1, E),
        })
    return {k: v.astype(np.float32) for k, v in w.items()}


def write_checkpoint(path, weights, cfg=CFG):
    path.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps({**cfg, "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}))
    return path


# ---- the reference -------------------------------------------------------------------------------------


def _ln(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * w + b


def _gelu_new(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def reference_logits(w, ids, cfg=CFG, prefix="transformer."):
    """GPT-2's forward pass in float64 NumPy, one sequence (no padding) of token ids."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    E, H = cfg["n_embd"], cfg["n_head"]
    d = E // H
    T = len(ids)
    x = w[f"{prefix}wte.weight"][ids] + w[f"{prefix}wpe.weight"][:T]
    causal = np.tril(np.ones((T, T), dtype=bool))
    for i in range(cfg["n_layer"]):
        h = f"{prefix}h.{i}."
        a = _ln(x, w[h + "ln_1.weight"], w[h + "ln_1.bias"])
        qkv = a @ w[h + "attn.c_attn.weight"] + w[h + "attn.c_attn.bias"]
        q, k, v = (qkv[:, j * E:(j + 1) * E].reshape(T, H, d).transpose(1, 0, 2) for j in range(3))
        s = np.where(causal, q @ k.transpose(0, 2, 1) / math.sqrt(d), -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        o = (p @ v).transpose(1, 0, 2).reshape(T, E)
        x = x + o @ w[h + "attn.c_proj.weight"] + w[h + "attn.c_proj.bias"]
        m = _ln(x, w[h + "ln_2.weight"], w[h + "ln_2.bias"])
        x = x + _gelu_new(m @ w[h + "mlp.c_fc.weight"] + w[h + "mlp.c_fc.bias"]) @ w[h + "mlp.c_proj.weight"] \
            + w[h + "mlp.c_proj.bias"]
    x = _ln(x, w[f"{prefix}ln_f.weight"], w[f"{prefix}ln_f.bias"])
    return x @ w[f"{prefix}wte.weight"].T  # the head is tied to the token embeddings


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    rng = np.random.default_rng(0)
    weights = hf_weights(rng)
    # HF's older checkpoints also carry the causal-mask buffers: they must be dropped quietly
    weights["transformer.h.0.attn.bias"] = np.tril(np.ones((1, 1, 24, 24), dtype=np.float32))
    weights["transformer.h.1.attn.masked_bias"] = np.array(-1e4, dtype=np.float32)
    return write_checkpoint(tmp_path_factory.mktemp("gpt2"), weights), weights


def test_loads_hf_checkpoint_and_matches_reference(ckpt):
    path, weights = ckpt
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to report
        model, report = GPT2LMHeadModel.from_pretrained(path, output_loading_info=True)
    assert report.missing_keys == [] and report.unexpected_keys == []
    assert set(report.ignored_keys) == {"transformer.h.0.attn.bias", "transformer.h.1.attn.masked_bias"}
    assert report.tied_keys == ["lm_head.weight"] and model.lm_head.weight is model.transformer.wte.weight
    assert not model.training
    ids = np.array([[3, 17, 0, 36, 5, 9, 9, 21]])
    out = model(rtx.tensor(ids))
    assert isinstance(out, CausalLMOutput) and out.past_key_values is None
    np.testing.assert_allclose(out.logits.detach().numpy()[0], reference_logits(weights, ids[0]), rtol=1e-4,
                               atol=1e-4)
    assert model.transformer.h[0].attn.c_attn.weight.shape == (16, 48)  # Conv1D layout kept


def test_checkpoint_of_the_bare_model_and_the_base_model_class(tmp_path):
    rng = np.random.default_rng(1)
    bare = hf_weights(rng, prefix="")  # as openai-community/gpt2: saved from GPT2Model, no "transformer."
    path = write_checkpoint(tmp_path / "bare", bare)
    ids = np.array([[1, 2, 3, 4]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lm = GPT2LMHeadModel.from_pretrained(path)
        base = GPT2Model.from_pretrained(path)
    want = reference_logits(bare, ids[0], prefix="")
    np.testing.assert_allclose(lm(rtx.tensor(ids)).logits.detach().numpy()[0], want, rtol=1e-4, atol=1e-4)
    h = base(rtx.tensor(ids)).last_hidden_state
    np.testing.assert_allclose((h @ base.wte.weight.T).detach().numpy()[0], want, rtol=1e-4, atol=1e-4)


def test_missing_unexpected_and_misshapen_keys_are_reported(tmp_path):
    rng = np.random.default_rng(2)
    w = hf_weights(rng)
    del w["transformer.h.1.mlp.c_fc.bias"]
    w["transformer.h.0.attn.rotary.weight"] = np.zeros(3, dtype=np.float32)
    path = write_checkpoint(tmp_path / "c", w)
    with pytest.warns(UserWarning, match=r"missing from the checkpoint \(1\): transformer\.h\.1\.mlp\.c_fc\.bias.*"
                                         r"not in the model \(1\): transformer\.h\.0\.attn\.rotary\.weight"):
        _, report = GPT2LMHeadModel.from_pretrained(path, output_loading_info=True)
    assert report.missing_keys == ["transformer.h.1.mlp.c_fc.bias"]
    assert report.unexpected_keys == ["transformer.h.0.attn.rotary.weight"]
    with pytest.raises(CheckpointError, match="does not match"):
        GPT2LMHeadModel.from_pretrained(path, strict=True)
    w = hf_weights(rng)
    w["transformer.h.0.attn.c_attn.weight"] = w["transformer.h.0.attn.c_attn.weight"].T.copy()  # nn.Linear layout
    with pytest.raises(CheckpointError, match=r"transformer\.h\.0\.attn\.c_attn\.weight: checkpoint \(48, 16\), "
                                              r"model \(16, 48\)"):
        GPT2LMHeadModel.from_pretrained(write_checkpoint(tmp_path / "d", w))
    with pytest.raises(FileNotFoundError, match="no config.json"):
        GPT2LMHeadModel.from_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError, match="no model.safetensors"):
        GPT2LMHeadModel.from_pretrained(tmp_path, config=GPT2Config(**CFG))


def _greedy(model, ids, steps, cache):
    ids = rtx.tensor(ids)
    past = None
    logits_seen = []
    for _ in range(steps):
        if cache:
            out = model(ids if past is None else ids[:, -1:], past_key_values=past, use_cache=True)
            past = out.past_key_values
        else:
            out = model(ids)
        logits_seen.append(out.logits[:, -1].detach().numpy())
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        ids = rtx.cat([ids, nxt], dim=1)
    return ids.numpy(), np.stack(logits_seen)


def test_generation_with_cache_equals_generation_without(ckpt):
    model = GPT2LMHeadModel.from_pretrained(ckpt[0])
    prompt = np.array([[3, 17, 0, 36], [5, 5, 1, 2]])
    with rtx.no_grad():
        a, la = _greedy(model, prompt, 10, cache=False)
        b, lb = _greedy(model, prompt, 10, cache=True)
    assert np.array_equal(a, b)
    np.testing.assert_allclose(la, lb, rtol=1e-5, atol=1e-5)


def test_left_padding_gives_each_row_its_own_result(ckpt):
    model = GPT2LMHeadModel.from_pretrained(ckpt[0])
    short, long = [7, 8, 9], [1, 2, 3, 4, 5]
    ids = rtx.tensor([[0, 0] + short, long])
    mask = rtx.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    with rtx.no_grad():
        out = model(ids, attention_mask=mask, use_cache=True)
        alone = model(rtx.tensor([short])).logits
        np.testing.assert_allclose(out.logits[0, 2:].numpy(), alone[0].numpy(), rtol=1e-5, atol=1e-5)
        # one more step through the cache, the mask growing by one column
        nxt = rtx.tensor([[11], [12]])
        step = model(nxt, attention_mask=rtx.cat([mask, rtx.ones(2, 1, dtype=mask.dtype)], 1),
                     past_key_values=out.past_key_values, use_cache=True)
        want = model(rtx.tensor([short + [11]])).logits[0, -1]
        np.testing.assert_allclose(step.logits[0, -1].numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
        assert step.past_key_values.length() == 6


def test_loss_backward_and_save_round_trip(ckpt, tmp_path):
    path, weights = ckpt
    model = GPT2LMHeadModel.from_pretrained(path)
    ids = np.array([[3, 17, 0, 36, 5, 9]])
    labels = ids.copy()
    labels[0, 2] = -100
    out = model(rtx.tensor(ids), labels=rtx.tensor(labels))
    logits = reference_logits(weights, ids[0])
    logp = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) \
        - logits.max(-1, keepdims=True)
    targets = labels[0, 1:]
    keep = targets != -100
    want = -logp[:-1][np.arange(5), np.where(keep, targets, 0)][keep].mean()
    assert abs(out.loss.item() - want) < 1e-4
    out.loss.backward()
    assert model.transformer.wte.weight.grad is not None and model.transformer.h[1].mlp.c_fc.weight.grad is not None
    model.save_pretrained(tmp_path / "saved")
    again = GPT2LMHeadModel.from_pretrained(tmp_path / "saved", strict=True)
    with rtx.no_grad():
        np.testing.assert_array_equal(again(rtx.tensor(ids)).logits.numpy(), model(rtx.tensor(ids)).logits.numpy())


def test_config_checks_and_bad_inputs():
    model = GPT2LMHeadModel(GPT2Config(**CFG)).eval()
    with pytest.raises(ValueError, match=r"token ids must be in \[0, 37\)"):
        model(rtx.tensor([[1, 40]]))
    with pytest.raises(ValueError, match="n_positions"):
        model(rtx.zeros((1, 25), dtype=rtx.int64))
    with pytest.raises(ValueError, match=r"\(batch, seq\)"):
        model(rtx.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="divisible"):
        GPT2Config(n_embd=10, n_head=4)
    with pytest.raises(TypeError, match="KVCache"):
        model(rtx.tensor([[1, 2]]), past_key_values="cache")
    cache = KVCache()
    model(rtx.tensor([[1, 2]]), past_key_values=cache)
    assert cache.length() == 2  # a cache passed in is filled even without use_cache


# ---- cross-attention (the decoder of an encoder-decoder model; fixture comparison with transformers in
# rtx-multimodal/tests/test_vision_encoder_decoder.py) ---------------------------------------------------
def test_cross_attention_cache_equals_full_forward_and_config_keys():
    from rtx.transformers.configuration import LlamaConfig, UnsupportedConfigError
    from rtx.transformers.gpt2 import EncoderDecoderCache
    cfg = GPT2Config.from_dict({**CFG, "add_cross_attention": True, "model_type": "gpt2"})
    assert cfg.add_cross_attention and cfg.to_dict()["add_cross_attention"] is True
    with pytest.raises(UnsupportedConfigError, match="add_cross_attention"):
        LlamaConfig.from_dict({"add_cross_attention": True})   # lifted for GPT-2 only
    rtx.manual_seed(0)
    model = GPT2LMHeadModel(cfg).eval()
    assert "transformer.h.1.crossattention.q_attn.weight" in model.state_dict()
    assert "transformer.h.0.ln_cross_attn.weight" in model.state_dict()
    ids = rtx.randint(0, CFG["vocab_size"], (2, 6))
    enc = rtx.randn(2, 5, CFG["n_embd"])
    enc_mask = rtx.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]])
    with rtx.no_grad():
        full = model(ids, encoder_hidden_states=enc, encoder_attention_mask=enc_mask).logits
        out = model(ids[:, :4], encoder_hidden_states=enc, encoder_attention_mask=enc_mask, use_cache=True)
        cache = out.past_key_values
        assert isinstance(cache, EncoderDecoderCache) and cache.cross_attention_cache.length() == 5
        step = [out.logits]
        for j in (4, 5):
            o = model(ids[:, j:j + 1], encoder_hidden_states=enc, encoder_attention_mask=enc_mask,
                      past_key_values=cache, use_cache=True)
            step.append(o.logits)
        assert cache.length() == 6 and cache.cross_attention_cache.length() == 5   # cross keys not re-appended
        np.testing.assert_allclose(rtx.cat(step, 1).numpy(), full.numpy(), atol=1e-5)
        # the masked source positions of row 1 do not matter; unmasked ones do
        enc2 = enc.clone()
        enc2[1, 2:] = 100.0
        again = model(ids, encoder_hidden_states=enc2, encoder_attention_mask=enc_mask).logits
        np.testing.assert_allclose(again.numpy(), full.numpy(), atol=1e-5)
        assert np.abs(model(ids, encoder_hidden_states=enc2).logits.numpy()[1] - full.numpy()[1]).max() > 1e-3
        before = cache.cross_attention_cache[0][0].numpy().copy()
        cache.reorder([1, 0])   # beams: both caches follow
        np.testing.assert_array_equal(cache.cross_attention_cache[0][0].numpy(), before[::-1])
    with pytest.raises(ValueError, match="encoder_hidden_states must be"):
        model(ids, encoder_hidden_states=rtx.randn(2, 5, 3))
    plain = GPT2LMHeadModel(GPT2Config(**CFG))
    with pytest.raises(ValueError, match="no cross-attention"):
        plain(ids, encoder_hidden_states=enc)


def test_save_pretrained_keeps_zero_dim_tensors(tmp_path):
    from safetensors.numpy import load_file
    model = GPT2LMHeadModel(GPT2Config(**CFG))
    model.temperature = rtx.nn.Parameter(rtx.tensor(2.5))   # a 0-d parameter, as CLIP's logit_scale
    model.save_pretrained(tmp_path)
    saved = load_file(str(tmp_path / "model.safetensors"))
    assert saved["temperature"].shape == () and float(saved["temperature"]) == 2.5
