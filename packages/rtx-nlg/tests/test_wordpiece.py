"""WordPiece tokenizer.json files (BERT's) give the ids, tokens, type ids and decoded text that
Hugging Face's `tokenizers` gives, on text chosen to hit each rule: accents, Chinese characters
(isolated) beside kana/hangul (not), punctuation and ASCII symbols, unknown characters and words,
words over max_input_chars_per_word, control/format characters, Unicode whitespace, a final
capital sigma, special tokens inside the text, empty and whitespace-only text, pairs.
Fixtures: files and outputs written by `tokenizers` 0.23 / transformers 5.24 themselves
(fixtures/tokenizers/make_wordpiece.py)."""
import json
from pathlib import Path

import pytest

import rtx
from rtx.nlg.tokenizers import BertNormalizer, WordPieceTokenizer, load_tokenizer, tokenizer_from_json

FIXTURES = Path(__file__).parent / "fixtures" / "tokenizers"
KINDS = ["uncased", "cased", "strip_cased", "hf_bert"]


def files(kind):
    if kind == "hf_bert":
        return FIXTURES / "wordpiece_hf_bert", FIXTURES / "wordpiece_hf_bert" / "expected.json"
    return FIXTURES / f"wordpiece_{kind}.json", FIXTURES / f"wordpiece_{kind}.expected.json"


@pytest.mark.parametrize("kind", KINDS)
def test_ids_tokens_and_decoding_match_tokenizers(kind):
    path, expected = files(kind)
    tok = load_tokenizer(path)
    exp = json.loads(expected.read_text(encoding="utf-8"))
    assert isinstance(tok, WordPieceTokenizer)
    for i, text in enumerate(exp["texts"]):
        ids = tok.encode(text)
        assert ids == exp["ids"][i], text
        assert [tok.id_to_token(t) for t in ids] == exp["tokens"][i], text
        assert tok.encode(text, add_special_tokens=False) == exp["ids_plain"][i], text
        assert tok.decode(ids) == exp["decoded"][i], text
        assert tok.decode(ids, skip_special_tokens=True) == exp["decoded_skip"][i], text
    for (a, b), ids, types in zip(exp["pairs"], exp["pair_ids"], exp["pair_type_ids"]):
        assert list(tok.encode_with_types(a, b)) == [ids, types], (a, b)


def test_transformers_call_with_pairs_and_padding():
    """tokenizer(a_list, b_list) as transformers' BertTokenizer: token_type_ids, right padding."""
    tok = load_tokenizer(FIXTURES / "wordpiece_hf_bert")
    exp = json.loads((FIXTURES / "wordpiece_hf_bert" / "expected.json").read_text(encoding="utf-8"))
    assert (tok.cls_token, tok.sep_token, tok.pad_token, tok.mask_token, tok.unk_token) == (
        "[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")  # from tokenizer_config.json
    a, b = [p[0] for p in exp["pairs"]], [p[1] for p in exp["pairs"]]
    assert dict(tok(a, b, return_tensors=None)) == exp["call_pairs"]
    assert dict(tok(exp["texts"][:3], return_tensors=None)) == exp["call_single"]
    out = tok(a, b)  # tensors, in model_input_names' order
    assert list(out) == ["input_ids", "token_type_ids", "attention_mask"]
    assert out.token_type_ids.dtype == rtx.int64 and out.token_type_ids.tolist() == exp["call_pairs"]["token_type_ids"]
    assert "token_type_ids" not in tok(a, return_tensors=None, return_token_type_ids=False)
    with pytest.raises(ValueError, match="text_pair must match text"):
        tok(a, b[:2])


def test_normalizer_rules_by_hand():
    """The rules the fixtures exercise, stated directly (Rust's character classes, not Python's)."""
    n = BertNormalizer(lowercase=True)
    assert n("Héllo\tWÖRLD") == "hello world"
    assert n("a\x1cb") == "ab"              # U+001C: a control character, not whitespace as str.isspace says
    assert n("a\u00a0b\u3000c") == "a b c"  # White_Space characters become spaces
    assert n("ΟΔΟΣ") == "οδοσ"              # per-character lowercasing: no final sigma
    assert n("中a") == " 中 a" and n("こ") == "こ"
    assert BertNormalizer(lowercase=False)("Héllo") == "Héllo"  # strip_accents follows lowercase
    assert BertNormalizer(lowercase=False, strip_accents=True)("Héllo") == "Hello"


def test_max_input_chars_per_word_and_unknown_words():
    vocab = {t: i for i, t in enumerate(["[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "a", "##b", "."])}
    tok = WordPieceTokenizer(vocab, max_input_chars_per_word=9, normalizer=BertNormalizer())
    assert tok.tokenize("unaffable") == ["un", "##aff", "##able"]
    assert tok.tokenize("unaffablee") == ["[UNK]"]        # 10 characters > 9
    assert tok.tokenize("unaffz ab.") == ["[UNK]", "a", "##b", "."]  # no split of "unaffz": one [UNK]
    assert tok.decode(tok.encode("ab ab.")) == "ab ab."
    assert tok.encode("") == [] and tok("", return_tensors=None)["input_ids"] == [[]]


def test_save_and_load_round_trip(tmp_path):
    tok = load_tokenizer(FIXTURES / "wordpiece_uncased.json")
    tok.save_pretrained(tmp_path)
    again = load_tokenizer(tmp_path)
    exp = json.loads((FIXTURES / "wordpiece_uncased.expected.json").read_text(encoding="utf-8"))
    assert [again.encode(t) for t in exp["texts"]] == exp["ids"]
    assert again.to_json() == tok.to_json()
    assert json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))["normalizer"] == json.loads(
        (FIXTURES / "wordpiece_uncased.json").read_text(encoding="utf-8"))["normalizer"]


def test_unsupported_parts_are_refused():
    data = json.loads((FIXTURES / "wordpiece_uncased.json").read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match="pre_tokenizer 'Metaspace' is not supported"):
        tokenizer_from_json({**data, "pre_tokenizer": {"type": "Metaspace"}})
    with pytest.raises(ValueError, match="normalizer 'Replace' is not supported"):
        tokenizer_from_json({**data, "normalizer": {"type": "Replace", "pattern": "a", "content": "b"}})
    with pytest.raises(ValueError, match="decoder must be WordPiece"):
        tokenizer_from_json({**data, "decoder": {"type": "ByteLevel"}})
    with pytest.raises(ValueError, match="unk_token '<unk>' is not in the vocabulary"):
        tokenizer_from_json({**data, "model": {**data["model"], "unk_token": "<unk>"}})


def test_pairs_feed_a_bert_head():
    """model(**tokenizer(a, b)): the right-padded row gives what it gives alone, unpadded."""
    import rtx.transformers as T
    tok = load_tokenizer(FIXTURES / "wordpiece_hf_bert")
    rtx.manual_seed(0)
    model = T.BertForSequenceClassification(T.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1,
                                                         num_attention_heads=4, intermediate_size=48, num_labels=3))
    enc = tok(["The lazy dog", "Héllo"], ["jumps over", "Wörld!"])
    alone = tok("Héllo", "Wörld!")
    assert enc.attention_mask.tolist()[1] == [1] * 6 + [0] * 2 and alone.input_ids.shape == (1, 6)
    with rtx.no_grad():
        both, one = model.eval()(**enc).logits, model(**alone).logits
    assert (both[1] - one[0]).abs().max().item() < 1e-6
