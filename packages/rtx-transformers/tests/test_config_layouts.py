"""config.json as transformers 4.x and 5.x write it: both layouts read to the same config,
numerics-changing keys rtx does not compute are refused by name (a warning with strict=False),
and save_pretrained writes back what transformers wrote (fixtures from make_fixtures.py)."""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import rtx
import rtx.transformers as T
from rtx.transformers import (
    BertConfig,
    BertForSequenceClassification,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    Qwen2Config,
    UnsupportedConfigError,
)

FIXTURES = Path(__file__).parent / "fixtures"
SMALL = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4, vocab_size=50)


def hf_config(version, case):
    return json.loads((FIXTURES / version / case / "config.json").read_text())


def test_rope_parameters_and_top_level_layouts_read_the_same():
    """The issue's Llama 3 config: theta 500000 and llama3 scaling, whichever layout wrote it."""
    four = LlamaConfig.from_dict(hf_config("hf4", "llama3"))
    five = LlamaConfig.from_dict(hf_config("hf5", "llama3"))
    assert five.rope_theta == four.rope_theta == 500000.0
    assert five.rope_scaling == four.rope_scaling and five.rope_scaling["rope_type"] == "llama3"
    lin = LlamaConfig.from_dict(hf_config("hf5", "llama_linear_mqa"))
    assert lin.rope_scaling == {"rope_type": "linear", "factor": 2.0} and lin.head_dim == 12
    assert lin.num_key_value_heads == 1 and lin.tie_word_embeddings
    default = LlamaConfig.from_dict({**SMALL, "rope_parameters": {"rope_theta": 1e6, "rope_type": "default"}})
    assert default.rope_theta == 1e6 and default.rope_scaling is None
    # Gemma-style per-layer-type settings read when every layer type agrees
    same = {"rope_theta": 1e4, "rope_type": "linear", "factor": 2.0}
    both = LlamaConfig.from_dict({**SMALL, "rope_parameters": {"full_attention": same, "sliding_attention": same}})
    assert both.rope_scaling == {"rope_type": "linear", "factor": 2.0}


def test_qwen2_and_mistral_configs():
    q = Qwen2Config.from_dict(hf_config("hf5", "qwen2"))
    assert q.layer_types == ["full_attention", "sliding_attention"] and q.rope_theta == 1e6
    assert [q.layer_window(i) for i in range(2)] == [None, 4] and q.qkv_bias() and not q.o_bias()
    # transformers 4 wrote no layer_types before 4.5x: the same rule derives them
    q4 = {k: v for k, v in hf_config("hf4", "qwen2").items() if k != "layer_types"}
    assert Qwen2Config.from_dict(q4).layer_types == q.layer_types
    full = Qwen2Config.from_dict(hf_config("hf4", "qwen2_full"))
    assert [full.layer_window(i) for i in range(2)] == [None, None]
    m = MistralConfig.from_dict(hf_config("hf5", "mistral"))
    assert m.sliding_window == 4 and m.layer_window(1) == 4 and m.rope_theta == 1000.0
    assert MistralConfig().num_key_value_heads == 8 and Qwen2Config().vocab_size == 151936


def test_bert_num_labels_from_id2label():
    """The issue's 3-label classifier: transformers writes id2label, not num_labels."""
    cfg = BertConfig.from_dict(hf_config("hf5", "bert_seqcls"))
    assert cfg.num_labels == 3 and "num_labels" not in hf_config("hf5", "bert_seqcls")
    model = BertForSequenceClassification.from_pretrained(FIXTURES / "hf5" / "bert_seqcls")
    assert model.classifier.weight.shape == (3, 32)
    named = BertConfig.from_dict({"id2label": {"0": "NEG", "1": "NEU", "2": "POS"}, "hidden_size": 32,
                                  "num_attention_heads": 4})
    assert named.num_labels == 3 and named.label2id == {"NEG": 0, "NEU": 1, "POS": 2}
    with pytest.raises(UnsupportedConfigError, match="num_labels=2 disagrees with id2label"):
        BertConfig.from_dict({"id2label": {"0": "A", "1": "B", "2": "C"}, "num_labels": 2})


@pytest.mark.parametrize("cls, key, value, words", [
    (LlamaConfig, "rope_parameters", {"rope_theta": 1e4, "rope_type": "proportional", "partial_rotary_factor": 0.5},
     "rope_type='proportional'"),
    (LlamaConfig, "rope_scaling", {"rope_type": "yarn", "factor": 4.0, "extrapolation_factor": 1.0},
     "rope_scaling.extrapolation_factor=1.0"),
    (LlamaConfig, "rope_scaling", {"rope_type": "longrope", "factor": 4.0}, "rope_type='longrope'"),
    (LlamaConfig, "rope_scaling", {"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.5},
     "rope_scaling.partial_rotary_factor=0.5"),
    (LlamaConfig, "attn_logit_softcapping", 50.0, "attn_logit_softcapping=50.0"),
    (LlamaConfig, "quantization_config", {"quant_method": "gptq"}, "quantization_config="),
    (LlamaConfig, "hidden_act", "gelu_pytorch_tanh_fancy", "hidden_act='gelu_pytorch_tanh_fancy'"),
    (LlamaConfig, "rope_parameters", {"full_attention": {"rope_theta": 1e4, "rope_type": "default"},
                                      "sliding_attention": {"rope_theta": 1e6, "rope_type": "default"}},
     "each layer type its own RoPE"),
    (Qwen2Config, "layer_types", ["full_attention", "chunked_attention"], "layer_types="),
    (BertConfig, "position_embedding_type", "relative_key", "position_embedding_type='relative_key'"),
    (BertConfig, "is_decoder", True, "is_decoder=True"),
    (BertConfig, "add_cross_attention", True, "add_cross_attention=True"),
    (BertConfig, "pruned_heads", {"0": [1]}, "pruned_heads="),
])
def test_numerics_keys_rtx_does_not_compute_are_refused(cls, key, value, words):
    base = dict(SMALL) if cls is not BertConfig else dict(hidden_size=32, num_attention_heads=4)
    with pytest.raises(UnsupportedConfigError, match=words.replace("(", r"\(").replace("[", r"\[")):
        cls.from_dict({**base, key: value})
    with pytest.warns(UserWarning, match=words.replace("(", r"\(").replace("[", r"\[")):
        try:
            cls.from_dict({**base, key: value}, strict=False)
        except NotImplementedError:  # the RoPE itself cannot be built: warned first, then refused
            assert key.startswith("rope")


def test_model_from_pretrained_refuses_by_default_and_loads_with_strict_false(tmp_path):
    src = FIXTURES / "hf5" / "llama3"
    for f in ("model.safetensors", "config.json"):
        (tmp_path / f).write_bytes((src / f).read_bytes())
    cfg = json.loads((src / "config.json").read_text())
    cfg["attn_logit_softcapping"] = 30.0
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(UnsupportedConfigError, match=r"attn_logit_softcapping=30\.0.*strict=False"):
        LlamaForCausalLM.from_pretrained(tmp_path)
    with pytest.warns(UserWarning, match="attn_logit_softcapping"):
        model = LlamaForCausalLM.from_pretrained(tmp_path, strict=False)
    assert model.config.extra["attn_logit_softcapping"] == 30.0


def test_ignored_keys_are_kept_and_written_back():
    d = hf_config("hf4", "gpt2")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = T.GPT2Config.from_dict({**d, "n_ctx": 32, "task_specific_params": {"text-generation": {}}})
    assert g.extra["n_ctx"] == 32 and g.to_dict()["task_specific_params"] == {"text-generation": {}}
    assert {"use_cache", "torch_dtype", "dtype", "architectures", "id2label"} <= T.IGNORED_KEYS


@pytest.mark.parametrize("version", ["hf4", "hf5"])
def test_save_pretrained_writes_what_transformers_wrote(version, tmp_path):
    """Every key transformers wrote comes back with its value (the layout too), plus
    architectures and model_type; the saved checkpoint loads and computes the same."""
    for case in sorted(p.name for p in (FIXTURES / version).iterdir() if p.is_dir()):
        hf = hf_config(version, case)
        arch = hf["architectures"][0]
        model = getattr(T, arch).from_pretrained(FIXTURES / version / case)
        model.save_pretrained(tmp_path / case)
        ours = json.loads((tmp_path / case / "config.json").read_text())
        for key, value in hf.items():
            if value is None and key in ("head_dim", "num_key_value_heads"):
                continue  # transformers 4's Mistral writes null for "derive it": rtx writes the derived number
            assert key in ours and ours[key] == value, (case, key, value, ours.get(key))
        assert ours["architectures"] == [arch] and ours["model_type"] == hf["model_type"]
        again = getattr(T, arch).from_pretrained(tmp_path / case)
        exp = np.load(FIXTURES / version / case / "expected.npz")
        ids = rtx.tensor(exp["ids"])
        with rtx.no_grad():
            a, b = model(ids), again(ids)
        key = "logits" if hasattr(a, "logits") else ("start_logits" if hasattr(a, "start_logits")
                                                     else "last_hidden_state")
        np.testing.assert_array_equal(getattr(a, key).numpy(), getattr(b, key).numpy())


def test_fresh_configs_save_the_layout_both_versions_read(tmp_path):
    cfg = LlamaConfig(**SMALL, rope_theta=5e5, rope_scaling={"rope_type": "linear", "factor": 2.0})
    LlamaForCausalLM(cfg).save_pretrained(tmp_path)
    d = json.loads((tmp_path / "config.json").read_text())
    assert d["rope_theta"] == 5e5 and d["rope_scaling"]["factor"] == 2.0 and "rope_parameters" not in d
    assert d["architectures"] == ["LlamaForCausalLM"] and d["model_type"] == "llama"
    assert d["torch_dtype"] == "float32"
    m = LlamaForCausalLM.from_pretrained(tmp_path, dtype="auto")
    assert m.lm_head.weight.dtype == rtx.float32


def test_readme_lists_every_ignored_key():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("Keys knowingly ignored"):readme.index("## Loading checkpoints")]
    keys = set(T.IGNORED_KEYS).union(*(c._ignored for c in (T.GPT2Config, T.BertConfig, T.LlamaConfig, T.Qwen2Config,
                                                            T.MistralConfig)))
    groups = {"summary_": "`summary_*`", "pooler_": "`pooler_*`"}
    unlisted = [k for k in sorted(keys) if f"`{k}`" not in section
                and not any(k.startswith(g) and groups[g] in section for g in groups)]
    assert not unlisted, f"README's ignored keys lack {unlisted}"
