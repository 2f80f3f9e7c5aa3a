"""Tokenizers: BPE training against a brute-force reference, exact round trips (hypothesis),
special tokens, HF tokenizer.json files written here in HF's layout, the pre-tokenisation
pattern, the character tokenizer."""
import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rtx
from rtx.nlg import ByteLevelBPETokenizer, CharTokenizer, bytes_to_unicode, load_tokenizer
from rtx.nlg.tokenizers._unicode_regex import GPT2_PATTERN, compile_pattern, translate

CORPUS = ("The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs.\n"
          "Shall I compare thee to a summer's day? Thou art more lovely and more temperate.\n"
          "naïve café — 東京 2024 ² emoji 🌍🌍 tabs\tand\nnewlines\n\n") * 3


@pytest.fixture(scope="module")
def tok():
    return ByteLevelBPETokenizer.train(CORPUS, vocab_size=330, special_tokens=["<|endoftext|>", "<pad>"],
                                       eos_token="<|endoftext|>", pad_token="<pad>")


# ---- bytes_to_unicode and the pattern ----------------------------------------------------------

def test_bytes_to_unicode_is_gpt2s():
    m = bytes_to_unicode()
    assert len(m) == 256 and len(set(m.values())) == 256
    assert m[ord("!")] == "!" and m[ord("A")] == "A" and m[ord(" ")] == "Ġ" and m[ord("\n")] == "Ċ"
    assert m[0] == "Ā" and m[ord("\t")] == "ĉ"
    assert all(c.isprintable() and not c.isspace() for c in m.values())


@pytest.mark.parametrize("text,pieces", [
    ("Hello world's end", ["Hello", " world", "'s", " end"]),
    ("I'll  go", ["I", "'ll", " ", " go"]),
    ("x²y", ["x", "²", "y"]),           # ² is a number (No), not a letter: re's [^\W\d_] would say letter
    ("Ⅻ1", ["Ⅻ1"]),                    # Nl and Nd are both \p{N}
    ("a\x1c b", ["a", "\x1c", " b"]),   # U+001C is not Unicode White_Space (re's \s says it is)
    ("a\u00a0b", ["a", "\u00a0", "b"]),  # no-break space is White_Space
    ("ok!!  \n\n x", ["ok", "!!", "  \n\n", " x"]),
    ("naïve 東京", ["naïve", " 東京"]),
])
def test_gpt2_pattern_splits(text, pieces):
    assert compile_pattern(GPT2_PATTERN).findall(text) == pieces


def test_translate_errors_and_sets():
    with pytest.raises(ValueError, match="unsupported Unicode property"):
        translate(r"\p{Foo}")
    with pytest.raises(ValueError, match="inside a character set"):
        translate(r"[\S]")
    import re
    assert re.fullmatch(translate(r"[^\r\n\p{L}\p{N}]"), "!")
    assert not re.fullmatch(translate(r"[^\r\n\p{L}\p{N}]"), "é")
    assert re.fullmatch(translate(r"\P{L}+"), "12 !")


# ---- training ------------------------------------------------------------------------------------

def _reference_merges(counts: Counter, n_merges: int, min_frequency: int):
    """Brute force: recount every pair after every merge."""
    words = {tuple(w): f for w, f in counts.items()}
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for w, f in words.items():
            for p in zip(w, w[1:]):
                pairs[p] += f
        if not pairs:
            break
        best = max(pairs.values())
        if best < max(min_frequency, 1):
            break
        pair = min(p for p, c in pairs.items() if c == best)
        merges.append(pair)
        new = {}
        for w, f in words.items():
            out, i = [], 0
            while i < len(w):
                if i < len(w) - 1 and (w[i], w[i + 1]) == pair:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new[tuple(out)] = new.get(tuple(out), 0) + f
        words = new
    return merges


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet="abc xyz.\n", min_size=1, max_size=200), st.integers(0, 40), st.integers(1, 3))
def test_training_matches_brute_force(text, n_merges, min_frequency):
    from rtx.nlg.tokenizers.bpe import _learn_merges, _split_pieces, _to_symbols
    counts = Counter(_to_symbols(p) for p in _split_pieces(compile_pattern(GPT2_PATTERN), text))
    assert _learn_merges(counts, n_merges, min_frequency, False) == _reference_merges(counts, n_merges,
                                                                                       min_frequency)


def test_train_vocab_layout(tok):
    assert len(tok) == 330 == tok.vocab_size
    assert tok.token_to_id("<|endoftext|>") == 0 and tok.token_to_id("<pad>") == 1
    assert tok.token_to_id("!") == 2 and tok.token_to_id("Ā") == 2 + 188  # GPT-2's byte order after specials
    assert len(tok.merges) == 330 - 258
    assert tok.merges[0][0] + tok.merges[0][1] in tok.vocab
    # the most frequent pair of the corpus is merged first
    counts = Counter()
    from rtx.nlg.tokenizers.bpe import _split_pieces, _to_symbols
    for p in _split_pieces(compile_pattern(GPT2_PATTERN), CORPUS):
        w = _to_symbols(p)
        for pair in zip(w, w[1:]):
            counts[pair] += 1
    top = max(counts.values())
    assert tok.merges[0] == min(p for p, c in counts.items() if c == top)
    assert tok.eos_token_id == 0 and tok.pad_token_id == 1


def test_train_compresses_and_bad_sizes():
    t = ByteLevelBPETokenizer.train(CORPUS, vocab_size=400)
    assert len(t.encode(CORPUS)) < len(CORPUS.encode()) / 2
    with pytest.raises(ValueError, match="at least 257"):
        ByteLevelBPETokenizer.train(CORPUS, vocab_size=200, special_tokens=["<s>"])
    with pytest.raises(TypeError, match="iterable of str"):
        ByteLevelBPETokenizer.train([b"bytes"], vocab_size=300)
    # (a, b) occurs 3 times, then (Ġ, ab) once: below min_frequency=2, training stops
    assert ByteLevelBPETokenizer.train(["ab ab", "ab"], vocab_size=1000).merges == [("a", "b")]


# ---- encode / decode -------------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.text())
def test_round_trip_any_text(tok, text):
    ids = tok.encode(text)
    assert all(0 <= i < len(tok) for i in ids)
    assert tok.decode(ids) == text


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=20), st.sampled_from(["<|endoftext|>", "<pad>"])), max_size=6))
def test_round_trip_with_special_tokens(tok, parts):
    text = "".join(parts)
    assert tok.decode(tok.encode(text)) == text


def test_round_trip_lone_surrogate_and_controls(tok):
    for text in ["\ud800x", "\x00\x01\x7f", "\r\n\t", " " * 50, "é" * 30]:
        assert tok.decode(tok.encode(text)) == text


def test_special_tokens_are_matched_whole(tok):
    ids = tok.encode("hi<|endoftext|>there<pad>")
    assert ids.count(0) == 1 and ids.count(1) == 1
    assert tok.decode(ids, skip_special_tokens=True) == "hithere"
    assert tok.decode(ids) == "hi<|endoftext|>there<pad>"
    assert tok.all_special_tokens == ["<|endoftext|>", "<pad>"]


def test_decode_accepts_tensors_and_rejects_bad_ids(tok):
    ids = tok.encode("the fox")
    assert tok.decode(rtx.tensor(ids)) == "the fox"
    with pytest.raises(IndexError, match="outside the vocabulary"):
        tok.decode([10_000])
    with pytest.raises(TypeError, match="batch_decode"):
        tok.decode([[1, 2]])
    with pytest.raises(TypeError, match="expects a str"):
        tok.encode(b"bytes")
    assert tok.batch_decode(rtx.tensor([ids, ids])) == ["the fox", "the fox"]
    # ids that split a multi-byte character decode with the replacement character
    e = tok.encode("é")
    if len(e) == 2:
        assert tok.decode(e[:1]) == "\ufffd"


def test_batch_encoding_left_pads(tok):
    enc = tok(["the quick brown fox", "a"])
    ids, mask = enc.input_ids.tolist(), enc["attention_mask"].tolist()
    n = len(tok.encode("the quick brown fox"))
    assert len(ids[0]) == len(ids[1]) == n
    assert ids[1] == [1] * (n - 1) + tok.encode("a") and mask[1] == [0] * (n - 1) + [1]
    assert mask[0] == [1] * n
    right = tok(["the quick brown fox", "a"], padding_side="right", return_tensors=None)
    assert right["input_ids"][1] == tok.encode("a") + [1] * (n - 1)
    with pytest.raises(ValueError, match="padding=True"):
        tok(["a", "the fox"], padding=False)


# ---- files ---------------------------------------------------------------------------------------

def test_save_load_round_trip(tok, tmp_path):
    p = tmp_path / "tokenizer.json"
    tok.save(p)
    data = json.loads(p.read_text(encoding="utf-8"))
    assert data["model"]["type"] == "BPE" and data["pre_tokenizer"]["type"] == "ByteLevel"
    assert data["added_tokens"][0] == {"id": 0, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                                       "rstrip": False, "normalized": False, "special": True}
    assert all(isinstance(m, str) and m.count(" ") == 1 for m in data["model"]["merges"])
    back = load_tokenizer(p)
    assert back.vocab == tok.vocab and back.merges == tok.merges
    assert back.encode(CORPUS) == tok.encode(CORPUS)
    assert back.eos_token == "<|endoftext|>"  # GPT-2's convention for that token
    tok.save_pretrained(tmp_path / "folder")
    again = load_tokenizer(tmp_path / "folder")
    assert again.pad_token_id == 1 and again.eos_token_id == 0


def _byte_vocab(extra):
    vocab = {c: i for i, c in enumerate(sorted(bytes_to_unicode().values()))}
    for t in extra:
        vocab[t] = len(vocab)
    return vocab


def test_load_hf_gpt2_layout(tmp_path):
    # a tokenizer.json as HF's tokenizers library writes it for a GPT-2-style model
    vocab = _byte_vocab(["ab", "Ġab", "abc"])
    vocab["<|endoftext|>"] = len(vocab)
    hf = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": vocab["<|endoftext|>"], "content": "<|endoftext|>", "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": ["a b", "Ġ ab", "ab c"]},
    }
    p = tmp_path / "tokenizer.json"
    p.write_text(json.dumps(hf), encoding="utf-8")
    t = load_tokenizer(p)
    # "ab abc" -> "ab" | " abc"; " abc": Ġ a b c -> Ġ ab c (rank 0) -> Ġab c (rank 1); "ab c" never applies
    assert t.tokenize("ab abc") == ["ab", "Ġab", "c"]
    assert t.encode("ab abc") == [vocab["ab"], vocab["Ġab"], vocab["c"]]
    assert t.encode("abc<|endoftext|>") == [vocab["abc"], vocab["<|endoftext|>"]]  # "a b" then "ab c"
    assert t.eos_token_id == vocab["<|endoftext|>"]
    assert t.decode(t.encode("xyz ab!")) == "xyz ab!"
    # newer tokenizers versions write merges as pairs
    hf["model"]["merges"] = [["a", "b"], ["Ġ", "ab"], ["ab", "c"]]
    p.write_text(json.dumps(hf), encoding="utf-8")
    assert load_tokenizer(p).tokenize("ab abc") == ["ab", "Ġab", "c"]


def test_load_hf_split_sequence_and_ignore_merges(tmp_path):
    # Llama 3 / Qwen layout: NFC normalizer, Split with the pattern, ByteLevel without regex
    vocab = _byte_vocab(["ab", "abc", "12"])
    pattern = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
    hf = {"normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}]},
          "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
              {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
              {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
          "decoder": {"type": "ByteLevel"},
          "model": {"type": "BPE", "ignore_merges": True, "vocab": vocab, "merges": ["a b", "1 2"]}}
    p = tmp_path / "tokenizer.json"
    p.write_text(json.dumps(hf), encoding="utf-8")
    t = load_tokenizer(p)
    # "abc" is in the vocabulary: one token although no merge makes it; digits go in threes
    assert t.tokenize("abc") == ["abc"]
    # digits split in threes by the pattern ("123" "45"), then merged by BPE ("1 2")
    assert t.tokenize("12345") == ["12", "3", "4", "5"]
    assert t.decode(t.encode("a\u0301")) == "\u00e1"  # NFC joins a + combining acute
    back = ByteLevelBPETokenizer.from_json(t.to_json())
    assert back.pattern == pattern and back.normalizer == ["NFC"] and back.ignore_merges


def test_load_rejects_other_tokenizers(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"model": {"type": "Unigram", "vocab": []}}), encoding="utf-8")
    with pytest.raises(ValueError, match="model.type must be 'BPE' or 'WordPiece' .WordPieceTokenizer., got 'Unigram'"):
        load_tokenizer(p)
    p.write_text(json.dumps({"pre_tokenizer": {"type": "Metaspace"},
                             "model": {"type": "BPE", "vocab": {}, "merges": [], "byte_fallback": True}}))
    with pytest.raises(ValueError, match="only byte-level BPE"):
        load_tokenizer(p)
    p.write_text(json.dumps({"pre_tokenizer": {"type": "Whitespace"}, "model": {"type": "BPE", "vocab": {},
                                                                                  "merges": []}}))
    with pytest.raises(ValueError, match="'Whitespace' is not supported"):
        load_tokenizer(p)
    p.write_text("not json")
    with pytest.raises(ValueError, match="not a JSON file"):
        load_tokenizer(p)


def test_missing_byte_symbol_without_unk(tmp_path):
    t = ByteLevelBPETokenizer({"a": 0, "b": 1, "ab": 2}, [("a", "b")])
    assert t.encode("abab") == [2, 2]
    with pytest.raises(KeyError, match="no unk_token"):
        t.encode("c")
    t2 = ByteLevelBPETokenizer({"a": 0, "<unk>": 1}, [], unk_token="<unk>")
    assert t2.encode("ac") == [0, 1]


# ---- character tokenizer -------------------------------------------------------------------------

def test_char_tokenizer(tmp_path):
    t = CharTokenizer.train("hello world\n", special_tokens=["<eos>"], eos_token="<eos>")
    assert t.chars == sorted(set("hello world\n"))
    assert len(t) == 1 + len(t.chars) and t.eos_token_id == 0
    ids = t.encode("hold<eos>")
    assert ids == [t.token_to_id(c) for c in "hold"] + [0]
    assert t.decode(ids) == "hold<eos>" and t.decode(ids, skip_special_tokens=True) == "hold"
    with pytest.raises(ValueError, match=r"character 'z' \(U\+007A\) at position 2"):
        t.encode("hez")
    u = CharTokenizer("abc", unk_token="<unk>")
    assert u.encode("abz") == [1, 2, 0] and u.decode(u.encode("abz")) == "ab<unk>"
    p = tmp_path / "char.json"
    t.save(p)
    back = load_tokenizer(p)
    assert isinstance(back, CharTokenizer) and back.encode("hold<eos>") == ids and back.eos_token_id == 0
    with pytest.raises(ValueError, match="single characters"):
        CharTokenizer(["ab"])
    with pytest.raises(ValueError, match="repeats"):
        CharTokenizer("aab")


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="abc \n😀é"))
def test_char_round_trip(text):
    t = CharTokenizer("abc \n😀é")
    assert t.decode(t.encode(text)) == text
