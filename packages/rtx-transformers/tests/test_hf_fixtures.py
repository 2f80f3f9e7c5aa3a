"""Checkpoints written by Hugging Face transformers 4.x and 5.x themselves (tests/fixtures,
made by fixtures/make_fixtures.py in side venvs) load, and give transformers' own outputs:
logits, a left-padded batch, one KV-cached step, 10 greedy tokens, every BERT head and its loss.
Weights are O(1), so a wrong RoPE base, scaling, window or epsilon shows.

Twice: in float32 against transformers' float32 outputs (expected.npz), and in float64 against
transformers run in float64 on the same weights (expected64.npz), where the comparison is free
of float32 rounding."""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import rtx
import rtx.transformers as T

FIXTURES = Path(__file__).parent / "fixtures"
CASES = sorted(p for p in FIXTURES.glob("hf*/*") if p.is_dir())
DECODERS = [p for p in CASES if "pad_ids" in np.load(p / "expected.npz")]
BERTS = [p for p in CASES if p not in DECODERS]
# transformers' own float32 logits differ from a float64 evaluation of the same weights by up to
# 1.5e-5 (logits reach ~20 at this weight scale): 3e-5 absolute is that noise, not slack
TOL = dict(rtol=1e-5, atol=3e-5)
# float64 against float64: the issue asks for 1e-5; rtx and transformers agree to ~1e-13, so the
# test holds them to 1e-9, which a float32 step slipping into either float64 path would break
TOL64 = dict(rtol=0, atol=1e-9)


def ident(p):
    return f"{p.parent.name}-{p.name}"


def load(path, dtype=None):
    arch = json.loads((path / "config.json").read_text())["architectures"][0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing missing, nothing unexpected, no config key set aside
        model, report = getattr(T, arch).from_pretrained(path, dtype=dtype, output_loading_info=True)
    assert not report.missing_keys and not report.unexpected_keys
    return model


def test_fixtures_cover_both_layouts_and_every_family():
    names = {p.parent.name for p in CASES}
    assert names == {"hf4", "hf5"}
    for v in names:
        assert json.loads((FIXTURES / v / "llama3" / "config.json").read_text()).keys() >= (
            {"rope_parameters"} if v == "hf5" else {"rope_theta", "rope_scaling"})
    assert {p.name for p in DECODERS} >= {"gpt2", "llama3", "llama_linear_mqa", "mistral", "qwen2"}
    assert all((p / "expected64.npz").exists() for p in CASES)
    assert sum(f.stat().st_size for f in FIXTURES.rglob("*") if f.is_file()) < 4_000_000


def precisions(exp, path):
    """(dtype, expected outputs, tolerance): float32 vs transformers' float32, float64 vs its float64."""
    return [(None, exp, TOL), (rtx.float64, {**exp, **np.load(path / "expected64.npz")}, TOL64)]


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("path", DECODERS, ids=ident)
def test_decoder_matches_transformers(path, precision):
    dtype, exp, tol = precisions(np.load(path / "expected.npz"), path)[precision == "float64"]
    model = load(path, dtype)
    with rtx.no_grad():
        logits = model(rtx.tensor(exp["ids"])).logits.numpy()
        assert logits.dtype == (np.float64 if dtype else np.float32)
        np.testing.assert_allclose(logits, exp["logits"], **tol)
        # left padding: positions from the mask, as generate() makes them; padded rows are not compared
        mask = exp["pad_mask"]
        pad = model(rtx.tensor(exp["pad_ids"]), attention_mask=rtx.tensor(mask)).logits.numpy()
        np.testing.assert_allclose(pad[mask == 1], exp["pad_logits"][mask == 1], **tol)
        # one cached step
        first = model(rtx.tensor(exp["ids"]), use_cache=True)
        step = model(rtx.tensor(exp["step_ids"]), past_key_values=first.past_key_values, use_cache=True)
        np.testing.assert_allclose(step.logits.numpy(), exp["step_logits"], **tol)
    assert np.array_equal(greedy(model, exp["pad_ids"], mask, 10, model.config.eos_token_id), exp["gen_ids"])


def greedy(model, ids, mask, n, eos):
    """Greedy decoding of a left-padded batch with the KV cache, EOS barred (the fixture's
    generate() had min_new_tokens=10)."""
    ids, mask, cache = rtx.tensor(ids), rtx.tensor(mask), None
    with rtx.no_grad():
        for _ in range(n):
            out = model(ids if cache is None else ids[:, -1:], attention_mask=mask, past_key_values=cache,
                        use_cache=True)
            cache = out.past_key_values
            last = out.logits[:, -1].clone()
            last[:, eos] = -float("inf")
            ids = rtx.cat([ids, last.argmax(-1, keepdim=True)], dim=1)
            mask = rtx.cat([mask, rtx.ones((mask.shape[0], 1), dtype=mask.dtype)], dim=1)
    return ids.numpy()


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("path", BERTS, ids=ident)
def test_bert_head_matches_transformers(path, precision):
    dtype, exp, TOL = precisions(np.load(path / "expected.npz"), path)[precision == "float64"]
    model = load(path, dtype)
    kw = dict(attention_mask=rtx.tensor(exp["mask"]), token_type_ids=rtx.tensor(exp["token_type_ids"]))
    ids = rtx.tensor(exp["ids"])
    with rtx.no_grad():
        if isinstance(model, T.BertForQuestionAnswering):
            out = model(ids, **kw, start_positions=rtx.tensor(exp["start_positions"]),
                        end_positions=rtx.tensor(exp["end_positions"]))
            np.testing.assert_allclose(out.start_logits.numpy(), exp["start_logits"], **TOL)
            np.testing.assert_allclose(out.end_logits.numpy(), exp["end_logits"], **TOL)
        elif type(model) is T.BertModel:
            out = model(ids, **kw)
            np.testing.assert_allclose(out.last_hidden_state.numpy(), exp["last_hidden_state"], **TOL)
            np.testing.assert_allclose(out.pooler_output.numpy(), exp["pooler_output"], **TOL)
            return
        else:
            out = model(ids, **kw, labels=rtx.tensor(exp["labels"]))
            np.testing.assert_allclose(out.logits.numpy(), exp["logits"], **TOL)
        np.testing.assert_allclose(out.loss.item(), float(exp["loss"]), **TOL)


# Every rope_type transformers 4.57 / 5.24 computes (their ROPE_INIT_FUNCTIONS, recorded by
# make_fixtures.py in versions.json): either rtx computes it and a fixture of that type matches
# above, or a config asking for it is refused, naming it. Settings as transformers writes them.
ROPE_FIXTURE = {"default": "mistral", "linear": "llama_linear_mqa", "llama3": "llama3", "dynamic": "llama_dynamic",
                "yarn": "llama_yarn"}  # llama_yarn_mscale too: DeepSeek's mscale keys, truncate false
ROPE_REFUSED = {
    "longrope": {"short_factor": [1.0] * 4, "long_factor": [2.0] * 4, "original_max_position_embeddings": 16},
    "proportional": {"partial_rotary_factor": 0.5},  # Gemma 4's
}


def test_every_rope_type_transformers_knows_is_matched_or_refused():
    known = {v: set(json.loads((FIXTURES / v / "versions.json").read_text())["rope_types"]) for v in ("hf4", "hf5")}
    assert known["hf4"] == {"default", "linear", "dynamic", "yarn", "longrope", "llama3"}
    assert known["hf5"] == known["hf4"] | {"proportional"}
    assert set(ROPE_FIXTURE) | set(ROPE_REFUSED) == known["hf5"] and not set(ROPE_FIXTURE) & set(ROPE_REFUSED)
    for kind, case in ROPE_FIXTURE.items():
        for v in ("hf4", "hf5"):
            cfg = json.loads((FIXTURES / v / case / "config.json").read_text())
            rope = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
            assert rope.get("rope_type", "default") == kind and FIXTURES / v / case in DECODERS
    for kind, extra in ROPE_REFUSED.items():
        for v, layout in (("hf5", {"rope_parameters": {"rope_theta": 1e4, "rope_type": kind, **extra}}),
                          ("hf4", {"rope_theta": 1e4, "rope_scaling": {"rope_type": kind, **extra}})):
            cfg = {**json.loads((FIXTURES / v / "llama3" / "config.json").read_text()), **layout}
            with pytest.raises(T.UnsupportedConfigError, match=f"rope_type='{kind}'"):
                T.LlamaConfig.from_dict(cfg)
            with pytest.raises(T.UnsupportedConfigError, match=f"rope_type='{kind}'"):
                T.Qwen2Config.from_dict({**cfg, "model_type": "qwen2"})
