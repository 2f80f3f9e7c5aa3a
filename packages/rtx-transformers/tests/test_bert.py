"""BERT: a checkpoint in Hugging Face's layout (written here) loads into the encoder, the
masked-LM and the classification models and gives the outputs of a NumPy forward pass; padding,
TF-era names, and the keys a pre-training checkpoint carries are handled and reported."""
import json
import math
import warnings

import numpy as np
import pytest
from safetensors.numpy import save_file

import rtx
from rtx.transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification, BertModel, CheckpointError

CFG = dict(vocab_size=45, hidden_size=24, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
           max_position_embeddings=32, type_vocab_size=2, layer_norm_eps=1e-12, num_labels=3)


def hf_weights(rng, cfg=CFG, mlm=True, pooler=True, classifier=False, nsp=False):
    E, V, I = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]

    def ln(name):
        return {name + ".weight": 1 + rng.normal(0, 0.1, E), name + ".bias": rng.normal(0, 0.1, E)}

    def lin(name, o, i):
        return {name + ".weight": rng.normal(0, 0.3, (o, i)), name + ".bias": rng.normal(0, 0.1, o)}
    w = {"bert.embeddings.word_embeddings.weight": rng.normal(0, 0.5, (V, E)),
         "bert.embeddings.position_embeddings.weight": rng.normal(0, 0.5, (cfg["max_position_embeddings"], E)),
         "bert.embeddings.token_type_embeddings.weight": rng.normal(0, 0.5, (cfg["type_vocab_size"], E)),
         **ln("bert.embeddings.LayerNorm")}
    for i in range(cfg["num_hidden_layers"]):
        p = f"bert.encoder.layer.{i}."
        for n in ("query", "key", "value"):
            w.update(lin(p + "attention.self." + n, E, E))
        w.update({**lin(p + "attention.output.dense", E, E), **ln(p + "attention.output.LayerNorm"),
                  **lin(p + "intermediate.dense", I, E), **lin(p + "output.dense", E, I), **ln(p + "output.LayerNorm")})
    if pooler:
        w.update(lin("bert.pooler.dense", E, E))
    if mlm:
        w.update({"cls.predictions.bias": rng.normal(0, 0.1, V), **lin("cls.predictions.transform.dense", E, E),
                  **ln("cls.predictions.transform.LayerNorm")})
    if nsp:
        w.update(lin("cls.seq_relationship", 2, E))
    if classifier:
        w.update(lin("classifier", cfg["num_labels"], E))
    return {k: np.asarray(v, dtype=np.float32) for k, v in w.items()}


def write_checkpoint(path, weights, cfg=CFG):
    path.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps({**cfg, "model_type": "bert"}))
    return path


# ---- the reference ---------------------------------------------------------------------------------------


def _ln(x, w, b, eps=1e-12):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * w + b


def _gelu(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))


def reference(w, ids, mask, types, cfg=CFG):
    """Encoder output (B, T, E) and pooled output, float64."""
    w = {k: v.astype(np.float64) for k, v in w.items()}
    E, H = cfg["hidden_size"], cfg["num_attention_heads"]
    d = E // H
    B, T = ids.shape
    g = lambda n: w["bert." + n]  # noqa: E731
    x = g("embeddings.word_embeddings.weight")[ids] + g("embeddings.position_embeddings.weight")[np.arange(T)] \
        + g("embeddings.token_type_embeddings.weight")[types]
    x = _ln(x, g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"))
    add = np.where(mask[:, None, None, :] > 0, 0.0, -np.inf)
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q, k, v = ((x @ g(p + f"attention.self.{n}.weight").T + g(p + f"attention.self.{n}.bias"))
                   .reshape(B, T, H, d).transpose(0, 2, 1, 3) for n in ("query", "key", "value"))
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + add
        pr = np.exp(s - s.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        a = (pr @ v).transpose(0, 2, 1, 3).reshape(B, T, E)
        a = _ln(a @ g(p + "attention.output.dense.weight").T + g(p + "attention.output.dense.bias") + x,
                g(p + "attention.output.LayerNorm.weight"), g(p + "attention.output.LayerNorm.bias"))
        m = _gelu(a @ g(p + "intermediate.dense.weight").T + g(p + "intermediate.dense.bias"))
        x = _ln(m @ g(p + "output.dense.weight").T + g(p + "output.dense.bias") + a,
                g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"))
    pooled = np.tanh(x[:, 0] @ g("pooler.dense.weight").T + g("pooler.dense.bias")) if "bert.pooler.dense.weight" in w \
        else None
    return x, pooled


def reference_mlm(w, x):
    w = {k: v.astype(np.float64) for k, v in w.items()}
    h = _gelu(x @ w["cls.predictions.transform.dense.weight"].T + w["cls.predictions.transform.dense.bias"])
    h = _ln(h, w["cls.predictions.transform.LayerNorm.weight"], w["cls.predictions.transform.LayerNorm.bias"])
    return h @ w["bert.embeddings.word_embeddings.weight"].T + w["cls.predictions.bias"]


IDS = np.array([[2, 17, 33, 5, 9, 3, 0, 0], [2, 40, 41, 3, 6, 7, 8, 3]])
MASK = np.array([[1, 1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1]])
TYPES = np.array([[0, 0, 0, 0, 1, 1, 0, 0], [0, 0, 0, 0, 0, 1, 1, 1]])


def _inputs():
    return rtx.tensor(IDS), rtx.tensor(MASK), rtx.tensor(TYPES)


def test_masked_lm_loads_and_matches_reference(tmp_path):
    w = hf_weights(np.random.default_rng(0), pooler=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model, report = BertForMaskedLM.from_pretrained(write_checkpoint(tmp_path, w), output_loading_info=True)
    assert sorted(report.tied_keys) == ["cls.predictions.decoder.bias", "cls.predictions.decoder.weight"]
    ids, mask, types = _inputs()
    out = model(ids, attention_mask=mask, token_type_ids=types)
    x, _ = reference(w, IDS, MASK, TYPES)
    want = reference_mlm(w, x)
    real = MASK.astype(bool)  # padded positions carry values no one reads; compare the real ones
    np.testing.assert_allclose(out.logits.detach().numpy()[real], want[real], rtol=2e-4, atol=2e-4)
    labels = np.full_like(IDS, -100)
    labels[0, 2], labels[1, 4] = 33, 6
    out = model(ids, attention_mask=mask, token_type_ids=types, labels=rtx.tensor(labels))
    lp = want - want.max(-1, keepdims=True)
    lp -= np.log(np.exp(lp).sum(-1, keepdims=True))
    assert abs(out.loss.item() - -(lp[0, 2, 33] + lp[1, 4, 6]) / 2) < 1e-4


def test_pretraining_checkpoint_into_masked_lm_reports_the_extra_heads(tmp_path):
    w = hf_weights(np.random.default_rng(1), nsp=True)  # bert-base-uncased carries NSP and pooler weights
    w = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
         for k, v in w.items()}  # TF-era names
    w["bert.embeddings.position_ids"] = np.arange(32, dtype=np.int64)[None]
    path = write_checkpoint(tmp_path, w)
    with pytest.warns(UserWarning, match=r"not in the model \(4\): bert\.pooler\.dense\.bias, "
                                         r"bert\.pooler\.dense\.weight, cls\.seq_relationship\.bias, "
                                         r"cls\.seq_relationship\.weight"):
        model, report = BertForMaskedLM.from_pretrained(path, output_loading_info=True)
    assert report.missing_keys == [] and report.ignored_keys == ["bert.embeddings.position_ids"]
    ln = model.bert.embeddings.LayerNorm.weight.detach().numpy()
    np.testing.assert_array_equal(ln, w["bert.embeddings.LayerNorm.gamma"])
    with pytest.raises(CheckpointError):
        BertForMaskedLM.from_pretrained(path, strict=True)


def test_encoder_and_classifier(tmp_path):
    w = hf_weights(np.random.default_rng(2), mlm=False, classifier=True)
    path = write_checkpoint(tmp_path, w)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = BertForSequenceClassification.from_pretrained(path)
    with pytest.warns(UserWarning, match=r"not in the model \(2\): classifier\.bias, classifier\.weight"):
        enc = BertModel.from_pretrained(path)  # the bare encoder: "bert." prefix dropped, classifier left over
    ids, mask, types = _inputs()
    x, pooled = reference(w, IDS, MASK, TYPES)
    out = enc(ids, attention_mask=mask, token_type_ids=types)
    real = MASK.astype(bool)
    np.testing.assert_allclose(out.last_hidden_state.detach().numpy()[real], x[real], rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(out.pooler_output.detach().numpy(), pooled, rtol=2e-4, atol=2e-4)
    logits = pooled @ w["classifier.weight"].T.astype(np.float64) + w["classifier.bias"]
    res = clf(ids, attention_mask=mask, token_type_ids=types, labels=rtx.tensor([2, 0]))
    np.testing.assert_allclose(res.logits.detach().numpy(), logits, rtol=2e-4, atol=2e-4)
    lp = logits - logits.max(-1, keepdims=True)
    lp -= np.log(np.exp(lp).sum(-1, keepdims=True))
    assert abs(res.loss.item() + (lp[0, 2] + lp[1, 0]) / 2) < 1e-4
    res.loss.backward()
    assert clf.bert.encoder.layer[0].attention.self.query.weight.grad is not None


def test_padding_does_not_leak_and_errors():
    model = BertModel(BertConfig(**CFG)).eval()
    ids, mask, _ = _inputs()
    with rtx.no_grad():
        a = model(ids, attention_mask=mask).last_hidden_state
        other = ids.clone()
        other[0, 6:] = 44  # change what sits under the padding
        b = model(other, attention_mask=mask).last_hidden_state
    np.testing.assert_allclose(a[0, :6].numpy(), b[0, :6].numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model(rtx.zeros((1, 33), dtype=rtx.int64))
    with pytest.raises(ValueError, match="attention_mask"):
        model(ids, attention_mask=rtx.ones(2, 3))
    with pytest.raises(NotImplementedError, match="relative_key"):
        BertConfig(position_embedding_type="relative_key")
    reg = BertForSequenceClassification(BertConfig(**{**CFG, "num_labels": 1}))
    assert reg(ids, labels=rtx.tensor([0.5, -1.0])).loss.item() > 0
