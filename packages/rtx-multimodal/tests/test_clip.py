"""CLIP against transformers' fixtures (tests/fixtures/make_fixtures.py), plus closed-form checks."""
import json
from pathlib import Path

import numpy as np
import pytest

import rtx
from rtx.autograd import gradcheck
from rtx.multimodal import (
    CLIPConfig,
    CLIPImageProcessor,
    CLIPModel,
    CLIPProcessor,
    CLIPTextModel,
    CLIPTextModelWithProjection,
    CLIPTokenizer,
    CLIPVisionModel,
    CLIPVisionModelWithProjection,
    clip_loss,
    retrieval_metrics,
    zero_shot_classify,
)
from rtx.transformers.configuration import UnsupportedConfigError

FIX = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="module")
def io():
    return dict(np.load(FIX / "clip_io.npz"))


@pytest.fixture(scope="module")
def model():
    return CLIPModel.from_pretrained(FIX / "clip", strict=True)


def _t(a):
    return rtx.from_numpy(np.ascontiguousarray(a))


def _close(got, want, atol=1e-5, rtol=1e-5):
    np.testing.assert_allclose(got.detach().numpy() if hasattr(got, "detach") else got, want, atol=atol, rtol=rtol)


def test_clip_model_matches_transformers(model, io):
    with rtx.no_grad():
        out = model(input_ids=_t(io["input_ids"]), pixel_values=_t(io["pixel_values"]),
                    attention_mask=_t(io["attention_mask"]))
    for k in ("text_embeds", "image_embeds", "logits_per_image", "logits_per_text"):
        _close(getattr(out, k), io[k])
    _close(out.text_model_output.last_hidden_state, io["text_last_hidden_state"])
    _close(out.text_model_output.pooler_output, io["text_pooler_output"])
    _close(out.vision_model_output.last_hidden_state, io["vision_last_hidden_state"])
    _close(out.vision_model_output.pooler_output, io["vision_pooler_output"])
    assert out.loss is None


def test_return_loss_matches_transformers_and_closed_form(model, io):
    with rtx.no_grad():
        out = model(input_ids=_t(io["input_ids"][:3]), pixel_values=_t(io["pixel_values"]),
                    attention_mask=_t(io["attention_mask"][:3]), return_loss=True)
    _close(out.loss, io["loss"])
    lt = out.logits_per_text.numpy().astype(np.float64)

    def ce(z):
        z = z - z.max(1, keepdims=True)
        return -np.mean(np.diag(z) - np.log(np.exp(z).sum(1)))
    assert abs(float(out.loss) - (ce(lt) + ce(lt.T)) / 2) < 1e-5
    with pytest.raises(ValueError, match="as many texts as images"):
        model(input_ids=_t(io["input_ids"]), pixel_values=_t(io["pixel_values"]), return_loss=True)


def test_clip_loss_gradcheck():
    x = rtx.randn(4, 4, dtype=rtx.float64, requires_grad=True)
    assert gradcheck(clip_loss, (x,))


def test_features_and_towers(model, io):
    ids, mask, px = _t(io["input_ids"]), _t(io["attention_mask"]), _t(io["pixel_values"])
    unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)  # noqa: E731
    with rtx.no_grad():
        _close(unit(model.get_text_features(input_ids=ids, attention_mask=mask).numpy()), io["text_embeds"])
        _close(unit(model.get_image_features(pixel_values=px).numpy()), io["image_embeds"])
        text = CLIPTextModel.from_pretrained(FIX / "clip", strict=False)(input_ids=ids, attention_mask=mask)
        _close(text.last_hidden_state, io["text_last_hidden_state"])
        _close(text.pooler_output, io["text_pooler_output"])
        vision = CLIPVisionModel.from_pretrained(FIX / "clip", strict=False)(pixel_values=px)
        _close(vision.pooler_output, io["vision_pooler_output"])
        tp = CLIPTextModelWithProjection.from_pretrained(FIX / "clip", strict=False)(input_ids=ids, attention_mask=mask)
        _close(unit(tp.text_embeds.numpy()), io["text_embeds"])
        vp = CLIPVisionModelWithProjection.from_pretrained(FIX / "clip", strict=False)(pixel_values=px)
        _close(unit(vp.image_embeds.numpy()), io["image_embeds"])


def test_save_pretrained_round_trip_and_shards(model, io, tmp_path):
    model.save_pretrained(tmp_path / "one")
    model.save_pretrained(tmp_path / "sharded", max_shard_size="100KB")
    index = json.loads((tmp_path / "sharded" / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    assert not (tmp_path / "sharded" / "model.safetensors").exists()
    cfg = json.loads((tmp_path / "one" / "config.json").read_text())
    assert cfg["model_type"] == "clip" and cfg["text_config"]["hidden_act"] == "quick_gelu"
    assert cfg["architectures"] == ["CLIPModel"]
    for d in ("one", "sharded"):
        m = CLIPModel.from_pretrained(tmp_path / d, strict=True)
        with rtx.no_grad():
            out = m(input_ids=_t(io["input_ids"]), pixel_values=_t(io["pixel_values"]),
                    attention_mask=_t(io["attention_mask"]))
        _close(out.logits_per_image, io["logits_per_image"])


def test_config_refuses_unknown_keys_and_reads_defaults():
    cfg = CLIPConfig()
    assert (cfg.projection_dim, cfg.text_config.max_position_embeddings, cfg.vision_config.patch_size) == (512, 77, 32)
    assert abs(cfg.logit_scale_init_value - 2.6592) < 1e-9
    with pytest.raises(UnsupportedConfigError, match="rope_scaling"):
        CLIPConfig.from_dict({"text_config": {"rope_scaling": {"type": "linear"}}})
    with pytest.raises(ValueError, match="divisible"):
        CLIPConfig(vision_config={"hidden_size": 30, "num_attention_heads": 4})


def test_bad_inputs_say_what_was_expected(model):
    with pytest.raises(ValueError, match="pixel_values must be"):
        model.get_image_features(pixel_values=rtx.zeros(1, 3, 16, 16))
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model.get_text_features(input_ids=rtx.zeros(1, 80, dtype=rtx.int64))


# ---- tokenizer ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tok():
    return CLIPTokenizer.from_pretrained(FIX / "tokenizer")


def test_tokenizer_matches_transformers_on_tricky_strings(tok):
    data = json.loads((FIX / "tokenizer_cases.json").read_text(encoding="utf-8"))
    for c in data["cases"]:
        assert tok(c["text"])["input_ids"] == c["ids"], c["text"]
        assert tok.tokenize(c["text"]) == c["tokens"], c["text"]
        p = tok(c["text"], padding="max_length", truncation=True)
        assert p["input_ids"] == c["padded_ids"] and p["attention_mask"] == c["padded_mask"], c["text"]
        assert len(p["input_ids"]) == 77
        assert tok.decode(c["ids"], skip_special_tokens=True) == c["decoded"], c["text"]
    batch = tok([c["text"] for c in data["cases"][:4]], padding=True, return_tensors="rtx")
    assert batch["input_ids"].tolist() == data["batch_ids"] and batch["attention_mask"].tolist() == data["batch_mask"]


def test_tokenizer_save_round_trip(tok, tmp_path):
    tok.save_pretrained(tmp_path)
    again = CLIPTokenizer.from_pretrained(tmp_path)
    text = "A handwritten 7, it's SEVEN!"
    assert again(text)["input_ids"] == tok(text)["input_ids"] and again.model_max_length == 77


# ---- image processor ------------------------------------------------------------------------------
def test_image_processor_matches_transformers():
    from PIL import Image
    d = FIX / "image_processor"
    proc = CLIPImageProcessor.from_pretrained(d)
    imgs, ref = np.load(d / "images.npz"), np.load(d / "pixel_values.npz")
    for key in ref.files:
        name, kind = key.rsplit("_", 1)
        a = imgs[name]
        if name == "rgba":
            x = Image.fromarray(a, "RGBA")
        else:
            x = Image.fromarray(a) if kind == "pil" else a if kind == "np" else a.astype(np.float32) / 255
        got = proc(x, return_tensors="np")["pixel_values"][0]
        np.testing.assert_allclose(got, ref[key], atol=1e-6, err_msg=key)
    t = proc(rtx.from_numpy(imgs["rgb_wide"].copy()))["pixel_values"]          # an rtx Tensor in
    np.testing.assert_allclose(t.numpy()[0], ref["rgb_wide_np"], atol=1e-6)
    assert t.dtype == rtx.float32 and tuple(t.shape) == (1, 3, 32, 32)


def test_processor_combines_both(tok, tmp_path):
    proc = CLIPProcessor(CLIPImageProcessor(size=32, crop_size=32), tok)
    proc.save_pretrained(tmp_path)
    proc = CLIPProcessor.from_pretrained(tmp_path)
    out = proc(text=["a cat", "the number seven"], images=[np.zeros((40, 50, 3), np.uint8)] * 2)
    assert tuple(out["pixel_values"].shape) == (2, 3, 32, 32) and out["input_ids"].shape[0] == 2


# ---- zero-shot and retrieval ----------------------------------------------------------------------
def test_retrieval_metrics_against_brute_force():
    rng = np.random.default_rng(0)
    img, txt = rng.normal(size=(30, 8)), rng.normal(size=(30, 8))
    txt[:10] = img[:10] * 3.0                    # ten exact pairs (scale does not matter)
    m = retrieval_metrics(rtx.from_numpy(img), txt, ks=(1, 5))
    iu = img / np.linalg.norm(img, axis=1, keepdims=True)
    tu = txt / np.linalg.norm(txt, axis=1, keepdims=True)
    s = iu @ tu.T
    for k in (1, 5):
        i2t = np.mean([sum(s[i, j] > s[i, i] for j in range(30)) < k for i in range(30)])
        t2i = np.mean([sum(s[j, i] > s[i, i] for j in range(30)) < k for i in range(30)])
        assert m[f"image_to_text_R@{k}"] == pytest.approx(i2t) and m[f"text_to_image_R@{k}"] == pytest.approx(t2i)
    assert m["image_to_text_R@1"] >= 10 / 30
    # two captions per image: image i owns texts 2i and 2i+1
    m2 = retrieval_metrics(img[:5], np.repeat(img[:5], 2, axis=0), ks=(1,), text_to_image=np.repeat(np.arange(5), 2))
    assert m2 == {"image_to_text_R@1": 1.0, "text_to_image_R@1": 1.0}


def test_zero_shot_classify_is_prompt_ensembled_softmax(model, tok, io):
    proc = CLIPProcessor(CLIPImageProcessor(size=32, crop_size=32), tok)
    names, templates = ["seven", "cat", "zero"], ["a photo of the number {}.", "a handwritten {}"]
    px = _t(io["pixel_values"])
    probs = zero_shot_classify(model, proc, px, names, templates).numpy()
    with rtx.no_grad():
        img = model.get_image_features(pixel_values=px).numpy().astype(np.float64)
        cls = []
        for n in names:
            e = [model.get_text_features(**{k: v for k, v in tok([t.format(n)], return_tensors="rtx").items()})
                 .numpy()[0].astype(np.float64) for t in templates]
            e = np.mean([v / np.linalg.norm(v) for v in e], axis=0)
            cls.append(e / np.linalg.norm(e))
    z = (img / np.linalg.norm(img, axis=1, keepdims=True)) @ np.array(cls).T * np.exp(float(model.logit_scale))
    want = np.exp(z - z.max(1, keepdims=True))
    np.testing.assert_allclose(probs, want / want.sum(1, keepdims=True), atol=1e-5)
