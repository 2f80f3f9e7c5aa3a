"""WordPiece, as BERT (and HF's `tokenizers` WordPiece model) does it.

    text --BertNormalizer--> cleaned, Chinese characters spaced, accents stripped, lowercased
         --BertPreTokenizer--> words: split at whitespace, each punctuation character alone
         --WordPiece--> greedy longest-match-first pieces ("unaffable" -> un ##aff ##able); a
                        word with no split into known pieces, or longer than
                        max_input_chars_per_word, becomes one unknown token

Each step follows the Rust code of `tokenizers` (normalizers/bert.rs, pre_tokenizers/bert.rs,
models/wordpiece, decoders/wordpiece.rs), including its character classes: Rust's White_Space
(not Python's str.isspace, which also counts U+001C..U+001F), "other" = general category C*,
punctuation = ASCII punctuation or general category P*, lowercasing character by character
(so a final capital sigma becomes σ, as there, not ς as str.lower() gives).

`WordPieceTokenizer.from_json` reads a tokenizer.json whose model.type is "WordPiece" (BERT's,
DistilBERT's, ...); `load_tokenizer` picks it by that field. The file's post_processor (BERT's
[CLS] A [SEP] B [SEP] template) is applied when encoding with add_special_tokens=True, and
tokenizer(text, text_pair) returns its token_type_ids.
"""
from __future__ import annotations

import json
import os
import unicodedata

from rtx.nlg.tokenizers.base import AddedToken, TableVocab, Tokenizer, _as_id_list, read_json, roles_from_config
from rtx.nlg.tokenizers.post_processor import PostProcessor

__all__ = ["WordPieceTokenizer", "BertNormalizer"]

_CACHE_LIMIT = 100_000

# Unicode's White_Space property (what Rust's char::is_whitespace tests)
_WHITESPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                        "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
# CJK Unified Ideographs blocks BERT isolates (normalizers/bert.rs is_chinese_char); not kana or hangul
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
        (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_chinese(c: str) -> bool:
    o = ord(c)
    return any(lo <= o <= hi for lo, hi in _CJK)


def _is_control(c: str) -> bool:
    # \t \n \r are control characters that BERT counts as whitespace instead
    return c not in "\t\n\r" and unicodedata.category(c).startswith("C")


def _is_punctuation(c: str) -> bool:
    # ASCII symbols ($ + < = > ^ ` | ~) count too; non-ASCII symbols (€ ©) do not
    return (c.isascii() and not c.isalnum() and c.isprintable() and c != " ") or unicodedata.category(c).startswith("P")


def _lower(text: str) -> str:
    return "".join(c.lower() for c in text)


def _strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


class BertNormalizer:
    """tokenizers' BertNormalizer. strip_accents=None follows lowercase (BERT uncased strips them)."""

    def __init__(self, clean_text: bool = True, handle_chinese_chars: bool = True, strip_accents: bool | None = None,
                 lowercase: bool = True):
        self.clean_text, self.handle_chinese_chars = bool(clean_text), bool(handle_chinese_chars)
        self.strip_accents, self.lowercase = strip_accents, bool(lowercase)

    def __call__(self, text: str) -> str:
        if self.clean_text:
            text = "".join(" " if c in _WHITESPACE else c for c in text
                           if c not in "\x00\ufffd" and not _is_control(c))
        if self.handle_chinese_chars:
            text = "".join(f" {c} " if _is_chinese(c) else c for c in text)
        if self.strip_accents if self.strip_accents is not None else self.lowercase:
            text = _strip_accents(text)
        return _lower(text) if self.lowercase else text

    def to_json(self) -> dict:
        return {"type": "BertNormalizer", "clean_text": self.clean_text, "handle_chinese_chars":
                self.handle_chinese_chars, "strip_accents": self.strip_accents, "lowercase": self.lowercase}


# the other normalizers tokenizer.json files put in front of WordPiece, by their type name
_SIMPLE_NORMALIZERS = {
    "NFC": lambda t: unicodedata.normalize("NFC", t), "NFD": lambda t: unicodedata.normalize("NFD", t),
    "NFKC": lambda t: unicodedata.normalize("NFKC", t), "NFKD": lambda t: unicodedata.normalize("NFKD", t),
    "Lowercase": _lower, "StripAccents": lambda t: "".join(c for c in t if unicodedata.category(c) != "Mn"),
}


def _read_normalizer(norm, where):
    """A list of (callable, json) steps for tokenizer.json's normalizer."""
    if norm is None:
        return []
    if norm.get("type") == "Sequence":
        return [s for n in norm.get("normalizers", ()) for s in _read_normalizer(n, where)]
    kind = norm.get("type")
    if kind == "BertNormalizer":
        args = {k: norm[k] for k in ("clean_text", "handle_chinese_chars", "strip_accents", "lowercase") if k in norm}
        return [(BertNormalizer(**args), norm)]
    if kind in _SIMPLE_NORMALIZERS:
        return [(_SIMPLE_NORMALIZERS[kind], norm)]
    raise ValueError(f"{where}: normalizer {kind!r} is not supported for WordPiece (BertNormalizer, Sequence of "
                     f"{', '.join(_SIMPLE_NORMALIZERS)})")


def bert_pre_tokenize(text: str) -> list[str]:
    """Words of `text`: split at whitespace (dropped), every punctuation character a word of its own."""
    words, cur = [], []
    for c in text:
        if c in _WHITESPACE or _is_punctuation(c):
            if cur:
                words.append("".join(cur))
                cur = []
            if c not in _WHITESPACE:
                words.append(c)
        else:
            cur.append(c)
    if cur:
        words.append("".join(cur))
    return words


def _cleanup(text: str) -> str:
    """The WordPiece decoder's cleanup (tokenizers' decoders/wordpiece.rs), in its order."""
    for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
                 (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
        text = text.replace(a, b)
    return text


class WordPieceTokenizer(TableVocab, Tokenizer):
    """WordPiece tokenizer (BERT's). vocab: token -> id (pieces after the first carry
    `continuing_subword_prefix`, "##"); normalizer: a BertNormalizer (or None, or a list of
    callables); decoder_prefix / decoder_cleanup: the WordPiece decoder's settings (None: no
    decoder, tokens joined by spaces); post_processor: tokenizer.json's post_processor."""

    _ROLES = Tokenizer._ROLES + ("cls_token", "sep_token", "mask_token")
    #: what tokenizer(...) returns by default (HF's BertTokenizer names token_type_ids too)
    model_input_names = ("input_ids", "token_type_ids", "attention_mask")

    def __init__(self, vocab: dict[str, int], added_tokens=(), *, continuing_subword_prefix: str = "##",
                 max_input_chars_per_word: int = 100, normalizer=None, pre_tokenizer: str = "BertPreTokenizer",
                 decoder_prefix: str | None = "##", decoder_cleanup: bool = True, post_processor: dict | None = None,
                 unk_token: str = "[UNK]", **roles):
        self.vocab = dict(vocab)
        self._inv = {i: t for t, i in self.vocab.items()}
        if len(self._inv) != len(self.vocab):
            raise ValueError("vocab maps two tokens to the same id")
        if unk_token not in self.vocab:
            raise ValueError(f"WordPiece: unk_token {unk_token!r} is not in the vocabulary")
        if pre_tokenizer != "BertPreTokenizer":
            raise ValueError(f"WordPiece: pre_tokenizer {pre_tokenizer!r} is not supported (BertPreTokenizer)")
        self.continuing_subword_prefix = continuing_subword_prefix
        self.max_input_chars_per_word = int(max_input_chars_per_word)
        self.normalizer = normalizer
        self._normalize = ([normalizer] if callable(normalizer) else list(normalizer or ()))
        self.decoder_prefix, self.decoder_cleanup = decoder_prefix, bool(decoder_cleanup)
        extra = {r: roles.pop(r) for r in ("cls_token", "sep_token", "mask_token") if r in roles}
        super().__init__(added_tokens, unk_token=unk_token, **roles)
        self.cls_token, self.sep_token, self.mask_token = (extra.get(r) for r in ("cls_token", "sep_token",
                                                                                   "mask_token"))
        self.padding_side = "right"  # HF's default for encoders; left padding is for generation
        self.post_processor = PostProcessor(post_processor)
        self._cache: dict[str, list[int]] = {}

    # ---- encode ---------------------------------------------------------------------------
    def _encode_ordinary(self, text: str) -> list[int]:
        for step in self._normalize:
            text = step(text)
        ids: list[int] = []
        for word in bert_pre_tokenize(text):
            got = self._cache.get(word)
            if got is None:
                if len(self._cache) >= _CACHE_LIMIT:  # bounded: a stream of distinct words must not grow it
                    self._cache.clear()
                got = self._cache[word] = self._wordpiece(word)
            ids.extend(got)
        return ids

    def _wordpiece(self, word: str) -> list[int]:
        """Greedy longest-match-first split of one word; the unknown token if it has none."""
        unk = [self.vocab[self.unk_token]]
        if len(word) > self.max_input_chars_per_word:
            return unk
        out, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self.continuing_subword_prefix + word[start:end]
                if piece in self.vocab:
                    out.append(self.vocab[piece])
                    break
                end -= 1
            else:
                return unk
            start = end
        return out

    def tokenize(self, text: str) -> list[str]:
        """Token strings ("un", "##aff", ...) of `text`, without special tokens."""
        return [self.id_to_token(i) for i in self.encode(text, add_special_tokens=False)]

    # ---- decode ---------------------------------------------------------------------------
    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        """Text of `ids`: pieces glued to the word before them, words joined by spaces, then the
        decoder's cleanup (" ." -> "."), as `tokenizers` decodes (special tokens included unless
        skipped)."""
        tokens = []
        for i in _as_id_list(ids, f"{type(self).__name__}.decode"):
            added = self._added_by_id.get(i)
            if added is not None and skip_special_tokens and added.special:
                continue
            tok = self.id_to_token(i)
            if tok is None:
                raise IndexError(f"decode: id {i} is outside the vocabulary (0..{len(self) - 1})")
            tokens.append(tok)
        if self.decoder_prefix is None:
            return " ".join(tokens)
        out = []
        for j, tok in enumerate(tokens):
            if j:
                tok = tok[len(self.decoder_prefix):] if tok.startswith(self.decoder_prefix) else " " + tok
            out.append(_cleanup(tok) if self.decoder_cleanup else tok)
        return "".join(out)

    def _decode_ordinary(self, ids: list[int]) -> str:
        return self.decode(ids)

    # ---- vocabulary -----------------------------------------------------------------------
    @property
    def cls_token_id(self) -> int | None:
        return self._role_id("cls_token")

    @property
    def sep_token_id(self) -> int | None:
        return self._role_id("sep_token")

    @property
    def mask_token_id(self) -> int | None:
        return self._role_id("mask_token")

    # ---- files ----------------------------------------------------------------------------
    def to_json(self) -> dict:
        """The tokenizer as Hugging Face's tokenizer.json structure."""
        steps = [s.to_json() if hasattr(s, "to_json") else None for s in self._normalize]
        if any(s is None for s in steps):
            raise ValueError("to_json: a normalizer given as a plain callable cannot be written to tokenizer.json")
        norm = None if not steps else steps[0] if len(steps) == 1 else {"type": "Sequence", "normalizers": steps}
        return {
            "version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [t.to_json() for t in self.added_tokens],
            "normalizer": norm,
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": self.post_processor.to_json(),
            "decoder": None if self.decoder_prefix is None else {"type": "WordPiece", "prefix": self.decoder_prefix,
                                                                  "cleanup": self.decoder_cleanup},
            "model": {"type": "WordPiece", "unk_token": self.unk_token,
                      "continuing_subword_prefix": self.continuing_subword_prefix,
                      "max_input_chars_per_word": self.max_input_chars_per_word, "vocab": self.vocab},
        }

    def save(self, path) -> None:
        """Write tokenizer.json (HF's layout); save_pretrained adds tokenizer_config.json (roles)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, ensure_ascii=False, indent=1)

    def save_pretrained(self, directory) -> None:
        os.makedirs(directory, exist_ok=True)
        self.save(os.path.join(directory, "tokenizer.json"))
        with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({"tokenizer_class": "BertTokenizer", **self._roles_json()}, f, indent=1)

    @classmethod
    def from_json(cls, data: dict, **roles) -> WordPieceTokenizer:
        """Build from a tokenizer.json structure whose model.type is WordPiece."""
        where = "tokenizer.json"
        model = data.get("model") if isinstance(data, dict) else None
        if not isinstance(model, dict) or model.get("type") != "WordPiece":
            raise ValueError(f"{where}: expected model.type 'WordPiece', got {model and model.get('type')!r}")
        normalizer = [_Step(fn, js) for fn, js in _read_normalizer(data.get("normalizer"), where)]
        pre = data.get("pre_tokenizer")
        kind = pre.get("type") if isinstance(pre, dict) else pre
        if kind == "Sequence" and [p.get("type") for p in pre.get("pretokenizers", ())] == ["BertPreTokenizer"]:
            kind = "BertPreTokenizer"
        if kind != "BertPreTokenizer":
            raise ValueError(f"{where}: pre_tokenizer {kind!r} is not supported for WordPiece (BertPreTokenizer)")
        dec = data.get("decoder")
        if dec is not None and dec.get("type") != "WordPiece":
            raise ValueError(f"{where}: the decoder must be WordPiece, got {dec.get('type')!r}")
        added = [AddedToken(t["content"], t["id"], t.get("special", True)) for t in data.get("added_tokens") or ()]
        roles.setdefault("unk_token", model.get("unk_token", "[UNK]"))
        vocab = model["vocab"]
        for role, tok in (("pad_token", "[PAD]"), ("cls_token", "[CLS]"), ("sep_token", "[SEP]"),
                          ("mask_token", "[MASK]")):  # BERT's names, when nothing else says
            if role not in roles and tok in vocab:
                roles[role] = tok
        return cls(vocab, added, continuing_subword_prefix=model.get("continuing_subword_prefix") or "##",
                   max_input_chars_per_word=model.get("max_input_chars_per_word", 100), normalizer=normalizer,
                   decoder_prefix=None if dec is None else dec.get("prefix", "##"),
                   decoder_cleanup=True if dec is None else dec.get("cleanup", True),
                   post_processor=data.get("post_processor"), **roles)

    @classmethod
    def from_file(cls, path, **roles) -> WordPieceTokenizer:
        """Read a tokenizer.json (or a folder holding one); roles from the arguments, else from a
        tokenizer_config.json beside it."""
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, "tokenizer.json")
        return cls.from_json(read_json(path), **roles_from_config(path, cls._ROLES, roles))

    def __repr__(self):
        return (f"WordPieceTokenizer(vocab_size={len(self)}, added_tokens={[t.content for t in self.added_tokens]})")


class _Step:
    """A normalizer step read from tokenizer.json: callable, and written back as it was read."""

    def __init__(self, fn, data):
        self.fn, self.data = fn, data

    def __call__(self, text):
        return self.fn(text)

    def to_json(self):
        return self.data
