"""GPT-2 with cross-attention and VisionEncoderDecoderModel against transformers 5 fixtures
(tests/fixtures/make_fixtures.py ved): logits within 1e-5, generated ids identical."""
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

import rtx
from rtx.multimodal import EncoderDecoderCache, VisionEncoderDecoderConfig, VisionEncoderDecoderModel, ViTConfig
from rtx.transformers import GPT2Config
from rtx.transformers.configuration import UnsupportedConfigError
from rtx.transformers.gpt2 import GPT2LMHeadModel

FIX = Path(__file__).resolve().parent / "fixtures"


def _t(a):
    return rtx.from_numpy(np.ascontiguousarray(a))


@pytest.fixture(scope="module")
def ved():
    return VisionEncoderDecoderModel.from_pretrained(FIX / "ved", strict=True)


@pytest.fixture(scope="module")
def io():
    return dict(np.load(FIX / "ved_io.npz"))


def test_gpt2_cross_attention_matches_transformers():
    z = dict(np.load(FIX / "gpt2_xattn_io.npz"))
    model = GPT2LMHeadModel.from_pretrained(FIX / "gpt2_xattn", strict=True)
    enc, mask = _t(z["enc"]), _t(z["enc_mask"])
    with rtx.no_grad():
        out = model(_t(z["ids"]), encoder_hidden_states=enc, encoder_attention_mask=mask, use_cache=True)
        np.testing.assert_allclose(out.logits.numpy(), z["logits"], atol=1e-5)
        nxt = model(_t(z["step_ids"]), encoder_hidden_states=enc, encoder_attention_mask=mask,
                    past_key_values=out.past_key_values, use_cache=True)
        np.testing.assert_allclose(nxt.logits.numpy(), z["step_logits"], atol=1e-5)
        assert isinstance(out.past_key_values, EncoderDecoderCache)
        # a cache built by the caller (rtx.multimodal's export) is filled the same way
        own = EncoderDecoderCache()
        first = model(_t(z["ids"]), encoder_hidden_states=enc, encoder_attention_mask=mask, past_key_values=own,
                      use_cache=True)
        assert first.past_key_values is own and own.length() == z["ids"].shape[1]
        assert own.cross_attention_cache.length() == z["enc"].shape[1]
        nxt = model(_t(z["step_ids"]), encoder_hidden_states=enc, encoder_attention_mask=mask,
                    past_key_values=own, use_cache=True)
        np.testing.assert_allclose(nxt.logits.numpy(), z["step_logits"], atol=1e-5)
        plain = model(_t(z["ids"]), encoder_hidden_states=enc)
        np.testing.assert_allclose(plain.logits.numpy(), z["nomask_logits"], atol=1e-5)


def test_logits_loss_and_encoder_match_transformers(ved, io):
    with rtx.no_grad():
        out = ved(pixel_values=_t(io["pixel_values"]), labels=_t(io["labels"]))
        enc = ved.encoder(_t(io["pixel_values"]))
    np.testing.assert_allclose(out.logits.numpy(), io["logits"], atol=1e-5)
    np.testing.assert_allclose(float(out.loss), float(io["loss"]), rtol=1e-5)
    np.testing.assert_allclose(out.encoder_last_hidden_state.numpy(), io["encoder_last_hidden_state"], atol=1e-5)
    np.testing.assert_allclose(enc.pooler_output.numpy(), io["encoder_pooler_output"], atol=1e-5)


@pytest.mark.parametrize("name,kw", [("greedy", {}), ("beam", {"num_beams": 3}),
                                     ("beam2", {"num_beams": 3, "num_return_sequences": 2, "length_penalty": 0.5})])
@pytest.mark.parametrize("use_cache", [True, False])
def test_generated_ids_equal_transformers(ved, io, name, kw, use_cache):
    ids = ved.generate(_t(io["pixel_values"]), max_new_tokens=10, use_cache=use_cache, **kw)
    np.testing.assert_array_equal(ids.numpy(), io[name])


def test_cross_attention_keys_are_projected_once_per_generation(ved, io):
    calls = []
    layer = ved.decoder.transformer.h[0].crossattention.c_attn
    original = layer.forward
    layer.forward = lambda x: (calls.append(tuple(x.shape)), original(x))[1]
    try:
        ved.generate(_t(io["pixel_values"]), max_new_tokens=6, num_beams=2, eos_token_id=None)
    finally:
        del layer.forward
    assert calls == [(6, 17, 24)]   # 3 images x 2 beams, 16 patches + [CLS], decoder width


def test_sampling_same_seed_same_ids_with_and_without_cache(ved, io):
    px = _t(io["pixel_values"])
    a = ved.generate(px, max_new_tokens=8, do_sample=True, top_k=10, generator=rtx.Generator().manual_seed(3))
    b = ved.generate(px, max_new_tokens=8, do_sample=True, top_k=10, use_cache=False,
                     generator=rtx.Generator().manual_seed(3))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert a.shape[0] == 3 and (a.numpy()[:, 0] == 0).all()


def test_save_round_trip_writes_transformers_keys(ved, io, tmp_path):
    ved.save_pretrained(tmp_path)
    assert set(load_file(str(tmp_path / "model.safetensors"))) == set(load_file(str(FIX / "ved" / "model.safetensors")))
    again = VisionEncoderDecoderModel.from_pretrained(tmp_path, strict=True)
    with rtx.no_grad():
        a = again(pixel_values=_t(io["pixel_values"]), labels=_t(io["labels"])).logits
    np.testing.assert_allclose(a.numpy(), io["logits"], atol=1e-5)


def test_training_step_and_config_checks():
    enc = ViTConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, image_size=8,
                    patch_size=4)
    dec = GPT2Config(vocab_size=12, n_positions=8, n_embd=16, n_layer=1, n_head=2)
    cfg = VisionEncoderDecoderConfig.from_encoder_decoder_configs(enc, dec, decoder_start_token_id=0, pad_token_id=1)
    model = VisionEncoderDecoderModel(cfg)
    assert model.enc_to_dec_proj is None              # equal widths: no projection, as transformers
    out = model(pixel_values=rtx.randn(2, 3, 8, 8), labels=rtx.tensor([[3, 4, -100], [5, 6, 7]]))
    out.loss.backward()
    assert model.encoder.embeddings.patch_embeddings.projection.weight.grad is not None
    assert model.decoder.transformer.h[0].crossattention.q_attn.weight.grad is not None
    with pytest.raises(UnsupportedConfigError, match="deit"):
        VisionEncoderDecoderConfig(encoder={"model_type": "deit"}, decoder=dec.to_dict())
    with pytest.raises(ValueError, match="add_cross_attention"):
        VisionEncoderDecoderConfig(encoder=enc, decoder=GPT2Config(n_embd=16, n_head=2))
    with pytest.raises(ValueError, match="pixel_values must be"):
        model(pixel_values=rtx.randn(2, 3, 9, 9), decoder_input_ids=rtx.tensor([[0]]))


def test_generation_config_json(ved, io, tmp_path):
    """transformers' generation_config.json (fixture) sets generate's defaults; save_pretrained writes
    one in the same keys, with the options that differ from the defaults, and loading it back gives
    the same generate as passing those options."""
    import json
    gc = ved.generation_config
    assert (gc.eos_token_id, gc.pad_token_id, ved.config.decoder_start_token_id) == (4, 2, 0)
    ved.generation_config = gc.update(num_beams=2, max_new_tokens=5)
    try:
        ved.save_pretrained(tmp_path)
    finally:
        ved.generation_config = gc
    d = json.loads((tmp_path / "generation_config.json").read_text())
    assert d == {"bos_token_id": 0, "decoder_start_token_id": 0, "eos_token_id": 4, "max_new_tokens": 5,
                 "num_beams": 2, "pad_token_id": 2}
    again = VisionEncoderDecoderModel.from_pretrained(tmp_path, strict=True)
    assert (again.generation_config.num_beams, again.generation_config.max_new_tokens) == (2, 5)
    px = _t(io["pixel_values"])
    np.testing.assert_array_equal(again.generate(px).numpy(), ved.generate(px, num_beams=2, max_new_tokens=5).numpy())
    # transformers' max_length counts the start token; an option given to generate still wins
    d.pop("max_new_tokens")
    d.update(max_length=4, transformers_version="5.24.0", output_attentions=False)
    (tmp_path / "generation_config.json").write_text(json.dumps(d))
    again = VisionEncoderDecoderModel.from_pretrained(tmp_path, strict=True)
    assert again.generation_config.max_new_tokens == 3 and again.generate(px).shape[1] <= 4
    assert again.generate(px, num_beams=1, max_new_tokens=6).shape[1] <= 7
