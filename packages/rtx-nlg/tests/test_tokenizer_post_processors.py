"""tokenizer.json post-processors (BERT's, RoBERTa's, Llama 3's template, a pair template,
ByteLevel) give the ids Hugging Face's `tokenizers` gives, with and without special tokens.
Fixtures: files and ids written by `tokenizers` itself
(packages/rtx-transformers/tests/fixtures/make_fixtures.py, under transformers 5)."""
import json
from pathlib import Path

import pytest

from rtx.nlg.tokenizers import ByteLevelBPETokenizer, load_tokenizer
from rtx.nlg.tokenizers.post_processor import PostProcessor

FIXTURES = Path(__file__).parent / "fixtures" / "tokenizers"
KINDS = ["bert", "roberta", "llama3", "template_pair", "bytelevel"]


@pytest.mark.parametrize("kind", KINDS)
def test_ids_match_tokenizers(kind):
    tok = load_tokenizer(FIXTURES / f"{kind}.json")
    exp = json.loads((FIXTURES / f"{kind}.expected.json").read_text())
    assert [tok.encode(t) for t in exp["texts"]] == exp["with"]
    assert [tok.encode(t, add_special_tokens=False) for t in exp["texts"]] == exp["without"]
    for (a, b), (ids, types) in zip(exp["pair_texts"], exp["pair_ids"]):
        assert list(tok.encode_with_types(a, b)) == [ids, types]


def test_special_tokens_in_batches_and_round_trip(tmp_path):
    tok = load_tokenizer(FIXTURES / "llama3.json")
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.pad_token = "[PAD]"
    batch = tok(["The quick brown fox", "Héllo"], return_tensors=None, padding=True)
    for row, mask, text in zip(batch["input_ids"], batch["attention_mask"], ["The quick brown fox", "Héllo"]):
        real = [i for i, m in zip(row, mask) if m]
        assert real[0] == bos and real == tok.encode(text)
    assert tok(["Héllo"], return_tensors=None, add_special_tokens=False)["input_ids"][0] == tok.encode(
        "Héllo", add_special_tokens=False)
    assert tok.decode(tok.encode("Héllo"), skip_special_tokens=True) == "Héllo"
    tok.save(tmp_path / "tokenizer.json")  # the post-processor is written back
    again = ByteLevelBPETokenizer.from_file(tmp_path / "tokenizer.json")
    assert again.encode("The quick brown fox") == tok.encode("The quick brown fox")
    assert PostProcessor(json.loads((FIXTURES / "bert.json").read_text())["post_processor"]).added(pair=True) == 3


def test_unsupported_post_processor_is_refused():
    with pytest.raises(ValueError, match="post_processor type 'Mystery'"):
        PostProcessor({"type": "Mystery"})
    with pytest.raises(ValueError, match="special_tokens does not list"):
        PostProcessor({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<x>", "type_id": 0}}],
                       "pair": [], "special_tokens": {}})
