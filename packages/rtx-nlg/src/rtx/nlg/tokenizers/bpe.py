"""Byte-level BPE, as GPT-2 (and HF's ByteLevel BPE) do it.

Text is split by a pre-tokenisation pattern (GPT-2's by default), each piece's UTF-8 bytes are
spelt with 256 printable stand-in characters (`bytes_to_unicode`, so a space is "Ġ"), and learned
merges join adjacent symbols, lowest merge rank first. Every byte has a symbol, so any text
encodes without an unknown token and decodes back exactly.

Files: `save` writes Hugging Face's tokenizer.json layout (model.type "BPE", vocab, merges,
added_tokens, a ByteLevel pre-tokenizer and decoder); `from_file` reads ours and HF's byte-level
BPE files (GPT-2, RoBERTa, and the Split + ByteLevel pipelines of Llama 3 / Qwen with NFC-style
normalizers). The file's post-processor (Llama 3's BOS template, BERT's / RoBERTa's [CLS] ... [SEP])
is applied when encoding with add_special_tokens=True, HF's default (post_processor.py).
"""
from __future__ import annotations

import heapq
import json
import os
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from rtx.nlg.tokenizers._unicode_regex import GPT2_PATTERN, compile_pattern
from rtx.nlg.tokenizers.base import AddedToken, TableVocab, Tokenizer, read_json
from rtx.nlg.tokenizers.post_processor import PostProcessor

__all__ = ["ByteLevelBPETokenizer", "bytes_to_unicode"]

_CACHE_LIMIT = 100_000
_NORMALIZERS = ("NFC", "NFD", "NFKC", "NFKD")


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from the 256 byte values to printable characters: printable Latin-1 bytes
    stand for themselves, the others (controls, space, ...) get U+0100 onwards in byte order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


@lru_cache(maxsize=1)
def _unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def _to_symbols(piece: str) -> str:
    table = bytes_to_unicode()
    return "".join(table[b] for b in piece.encode("utf-8", errors="surrogatepass"))


class ByteLevelBPETokenizer(TableVocab, Tokenizer):
    """Byte-level BPE tokenizer.

    vocab: token string (in byte-symbol spelling) -> id; merges: (left, right) pairs, rank =
    position; added_tokens: tokens matched whole before splitting (special tokens).
    pattern: the pre-tokenisation regex (`regex`-module syntax; None: no regex split);
    add_prefix_space: prepend a space to a text that does not start with whitespace (GPT-2's
    option; breaks the exact round trip, so off by default); ignore_merges: a piece that is
    itself in the vocabulary becomes one token without merging (Llama 3); normalizer: None or
    a Unicode normal form ("NFC", ...) applied before splitting (also breaks the round trip).
    """

    def __init__(self, vocab: dict[str, int], merges: Sequence[tuple[str, str]], added_tokens=(), *,
                 pattern: str | None = GPT2_PATTERN, add_prefix_space: bool = False, ignore_merges: bool = False,
                 normalizer: str | Sequence[str] | None = None, post_processor: dict | None = None, **roles):
        self.vocab = dict(vocab)
        self._inv = {i: t for t, i in self.vocab.items()}
        if len(self._inv) != len(self.vocab):
            raise ValueError("vocab maps two tokens to the same id")
        self.merges = [tuple(m) for m in merges]
        for m in self.merges:
            if len(m) != 2:
                raise ValueError(f"each merge must be a pair of tokens, got {m!r}")
        self._ranks = {m: r for r, m in enumerate(self.merges)}
        self.pattern = pattern
        self._split = compile_pattern(pattern) if pattern else None
        self.add_prefix_space = bool(add_prefix_space)
        self.ignore_merges = bool(ignore_merges)
        normalizer = [normalizer] if isinstance(normalizer, str) else list(normalizer or ())
        for form in normalizer:
            if form not in _NORMALIZERS:
                raise ValueError(f"normalizer must be one of {_NORMALIZERS} (or a list of them), got {form!r}")
        self.normalizer = normalizer
        self._cache: dict[str, list[int]] = {}
        super().__init__(added_tokens, **roles)
        self.post_processor = PostProcessor(post_processor)

    # ---- training -------------------------------------------------------------------------
    @classmethod
    def train(cls, corpus: str | Iterable[str], vocab_size: int, special_tokens: Sequence[str] = (),
              min_frequency: int = 2, *, pattern: str = GPT2_PATTERN, show_progress: bool = False,
              **roles) -> ByteLevelBPETokenizer:
        """Learn merges from `corpus` (a str or an iterable of documents) until the vocabulary
        holds `vocab_size` tokens: the special tokens (ids 0..), the 256 byte symbols, then one
        token per merge. Each step merges the most frequent adjacent pair (ties: the smaller pair
        in string order), counted over the pre-tokenised words; training stops early when no
        pair occurs `min_frequency` times."""
        special_tokens = list(dict.fromkeys(special_tokens))
        alphabet = sorted(bytes_to_unicode().values())  # code point order = GPT-2's id order
        base = len(special_tokens) + len(alphabet)
        if vocab_size < base:
            raise ValueError(f"vocab_size must be at least {base} (the {len(special_tokens)} special tokens and 256 "
                             f"byte symbols), got {vocab_size}")
        docs = [corpus] if isinstance(corpus, str) else corpus
        splitter = compile_pattern(pattern) if pattern else None
        counts: Counter[str] = Counter()
        for doc in docs:
            if not isinstance(doc, str):
                raise TypeError(f"train: the corpus must be a str or an iterable of str, got an item of type "
                                f"{type(doc).__name__}")
            pieces = _split_pieces(splitter, doc) if splitter else [doc]
            counts.update(_to_symbols(p) for p in pieces if p)
        vocab = {t: i for i, t in enumerate(special_tokens)}
        for ch in alphabet:
            vocab.setdefault(ch, len(vocab))
        merges = _learn_merges(counts, vocab_size - len(vocab), min_frequency, show_progress)
        for a, b in merges:
            vocab[a + b] = len(vocab)
        added = [AddedToken(t, vocab[t], special=True) for t in special_tokens]
        return cls(vocab, merges, added, pattern=pattern, **roles)

    # ---- encoding -------------------------------------------------------------------------
    def _encode_ordinary(self, text: str) -> list[int]:
        for form in self.normalizer:
            text = unicodedata.normalize(form, text)
        if self.add_prefix_space and text and not text[0].isspace():
            text = " " + text
        pieces = _split_pieces(self._split, text) if self._split else [text]
        ids: list[int] = []
        cache = self._cache
        for piece in pieces:
            got = cache.get(piece)
            if got is None:
                got = self._encode_piece(piece)
                if len(cache) >= _CACHE_LIMIT:
                    cache.clear()
                cache[piece] = got
            ids.extend(got)
        return ids

    def _encode_piece(self, piece: str) -> list[int]:
        word = _to_symbols(piece)
        if self.ignore_merges and word in self.vocab:
            return [self.vocab[word]]
        ids = []
        for sym in self._bpe(word):
            i = self.vocab.get(sym)
            if i is None:
                unk = self.unk_token_id
                if unk is None:
                    raise KeyError(f"token {sym!r} (from {piece!r}) is not in the vocabulary and the tokenizer has "
                                   f"no unk_token; a byte-level vocabulary must hold all 256 byte symbols")
                i = unk
            ids.append(i)
        return ids

    def _bpe(self, word: str) -> list[str]:
        symbols = list(word)
        ranks = self._ranks
        while len(symbols) > 1:
            best = None
            for pair in zip(symbols, symbols[1:]):
                r = ranks.get(pair)
                if r is not None and (best is None or r < best):
                    best = r
            if best is None:
                break
            a, b = self.merges[best]
            merged, i, n = [], 0, len(symbols)
            while i < n:
                if i < n - 1 and symbols[i] == a and symbols[i + 1] == b:
                    merged.append(a + b)
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        return symbols

    def _decode_ordinary(self, ids: list[int]) -> str:
        table = _unicode_to_bytes()
        out = bytearray()
        for i in ids:
            tok = self._inv.get(i)
            if tok is None:
                raise IndexError(f"decode: id {i} is outside the vocabulary (0..{len(self) - 1})")
            try:
                out.extend(table[c] for c in tok)
            except KeyError:
                raise ValueError(f"decode: token {tok!r} (id {i}) is not spelt in byte-level symbols") from None
        data = bytes(out)
        try:
            return data.decode("utf-8", errors="surrogatepass")  # exact, even for lone surrogates
        except UnicodeDecodeError:  # ids that cut a character in two: HF's replacement behaviour
            return data.decode("utf-8", errors="replace")

    def tokenize(self, text: str) -> list[str]:
        """Token strings (byte-symbol spelling, "Ġworld") of `text`."""
        return [self.id_to_token(i) for i in self.encode(text)]

    # ---- files ----------------------------------------------------------------------------
    def to_json(self) -> dict:
        """The tokenizer as Hugging Face's tokenizer.json structure."""
        byte_level = {"type": "ByteLevel", "add_prefix_space": self.add_prefix_space, "trim_offsets": True,
                      "use_regex": self.pattern == GPT2_PATTERN}
        if self.pattern in (None, GPT2_PATTERN):
            pre = byte_level
        else:
            pre = {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": self.pattern}, "behavior": "Isolated", "invert": False},
                {**byte_level, "use_regex": False}]}
        norm = None
        if self.normalizer:
            steps = [{"type": f} for f in self.normalizer]
            norm = steps[0] if len(steps) == 1 else {"type": "Sequence", "normalizers": steps}
        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [t.to_json() for t in self.added_tokens],
            "normalizer": norm,
            "pre_tokenizer": pre,
            "post_processor": self.post_processor.to_json() or {
                "type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": self.unk_token, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": self.ignore_merges, "vocab": self.vocab,
                      "merges": [f"{a} {b}" for a, b in self.merges]},
        }

    def save(self, path) -> None:
        """Write tokenizer.json (HF's layout). The special-token roles (eos, pad, ...) are not part
        of that file; save_pretrained writes them to tokenizer_config.json beside it."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, ensure_ascii=False, indent=1)

    def save_pretrained(self, directory) -> None:
        """tokenizer.json and tokenizer_config.json in `directory` (HF's folder layout)."""
        os.makedirs(directory, exist_ok=True)
        self.save(os.path.join(directory, "tokenizer.json"))
        with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({"tokenizer_class": "PreTrainedTokenizerFast", **self._roles_json()}, f, indent=1)

    @classmethod
    def from_json(cls, data: dict, **roles) -> ByteLevelBPETokenizer:
        """Build from a tokenizer.json structure (ours or Hugging Face's byte-level BPE)."""
        where = "tokenizer.json"
        if not isinstance(data, dict) or "model" not in data:
            raise ValueError(f"{where}: expected an object with a 'model' field, got {str(data)[:80]!r}")
        model = data["model"]
        mtype = model.get("type", "BPE" if "merges" in model else None)
        if mtype != "BPE":
            raise ValueError(f"{where}: model.type must be 'BPE' or 'WordPiece' (WordPieceTokenizer), got {mtype!r}")
        if model.get("byte_fallback") or model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
            raise ValueError(f"{where}: only byte-level BPE is supported; this model uses byte_fallback/"
                             f"continuing_subword_prefix/end_of_word_suffix (a SentencePiece- or WordPiece-style BPE)")
        if model.get("dropout"):
            raise ValueError(f"{where}: BPE dropout ({model['dropout']}) is a training-time option; not supported")
        merges = []
        for m in model.get("merges", []):
            pair = m.split(" ") if isinstance(m, str) else list(m)
            if len(pair) != 2:
                raise ValueError(f"{where}: a merge must be 'a b' or ['a', 'b'], got {m!r}")
            merges.append(tuple(pair))
        pattern, add_prefix_space = _read_pre_tokenizer(data.get("pre_tokenizer"), where)
        normalizer = _read_normalizer(data.get("normalizer"), where)
        dec = data.get("decoder")
        if dec is not None and dec.get("type") != "ByteLevel":
            raise ValueError(f"{where}: the decoder must be ByteLevel, got {dec.get('type')!r}")
        added = [AddedToken(t["content"], t["id"], t.get("special", True)) for t in data.get("added_tokens") or ()]
        if "unk_token" not in roles and model.get("unk_token"):
            roles["unk_token"] = model["unk_token"]
        if "eos_token" not in roles and any(t.content == "<|endoftext|>" for t in added):
            roles["eos_token"] = "<|endoftext|>"  # GPT-2's convention, when nothing else says
        return cls(model["vocab"], merges, added, pattern=pattern, add_prefix_space=add_prefix_space,
                   ignore_merges=model.get("ignore_merges", False), normalizer=normalizer,
                   post_processor=data.get("post_processor"), **roles)

    @classmethod
    def from_file(cls, path, **roles) -> ByteLevelBPETokenizer:
        """Read a tokenizer.json (or a folder holding one). Roles (eos_token=, pad_token=, ...)
        come from the arguments, else from a tokenizer_config.json beside the file."""
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, "tokenizer.json")
        data = read_json(path)
        config = os.path.join(os.path.dirname(path), "tokenizer_config.json")
        if os.path.exists(config):
            with open(config, encoding="utf-8") as f:
                cfg = json.load(f)
            for role in cls._ROLES:
                v = cfg.get(role)
                if isinstance(v, dict):
                    v = v.get("content")
                if isinstance(v, str) and role not in roles:
                    roles[role] = v
        return cls.from_json(data, **roles)

    def __repr__(self):
        return (f"ByteLevelBPETokenizer(vocab_size={len(self)}, merges={len(self.merges)}, "
                f"added_tokens={[t.content for t in self.added_tokens]})")


def _split_pieces(splitter, text: str) -> list[str]:
    """Matches of the pattern and the text between them (HF's Split behaviour 'Isolated'), so
    nothing of the text is lost even if the pattern does not cover it."""
    out, pos = [], 0
    for m in splitter.finditer(text):
        s, e = m.span()
        if s > pos:
            out.append(text[pos:s])
        if e > s:
            out.append(text[s:e])
        pos = e
    if pos < len(text):
        out.append(text[pos:])
    return out


def _read_pre_tokenizer(pre, where):
    """(pattern, add_prefix_space) of a supported pre_tokenizer."""
    if pre is None:
        raise ValueError(f"{where}: a byte-level BPE needs a ByteLevel pre_tokenizer, found none")
    steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    pattern, add_prefix_space, byte_level = None, False, False
    for step in steps:
        kind = step.get("type")
        if kind == "ByteLevel":
            byte_level = True
            add_prefix_space = bool(step.get("add_prefix_space", False))
            if step.get("use_regex", True):
                if pattern is not None:
                    raise ValueError(f"{where}: two split patterns (Split and ByteLevel use_regex) are not supported")
                pattern = GPT2_PATTERN
        elif kind == "Split":
            if byte_level or pattern is not None:
                raise ValueError(f"{where}: a Split must come first, before ByteLevel, and only once")
            if step.get("behavior", "Isolated") != "Isolated" or step.get("invert", False):
                raise ValueError(f"{where}: only Split with behavior 'Isolated' and invert false is supported, got "
                                 f"{step.get('behavior')!r} invert={step.get('invert')}")
            pat = step.get("pattern", {})
            if "Regex" in pat:
                pattern = pat["Regex"]
            elif "String" in pat:
                import re
                pattern = re.escape(pat["String"])
            else:
                raise ValueError(f"{where}: Split.pattern must be {{'Regex': ...}} or {{'String': ...}}, got {pat!r}")
        else:
            raise ValueError(f"{where}: pre_tokenizer {kind!r} is not supported (ByteLevel, optionally after a "
                             f"Split, is)")
    if not byte_level:
        raise ValueError(f"{where}: only byte-level BPE is supported; the pre_tokenizer has no ByteLevel step")
    return pattern, add_prefix_space


def _read_normalizer(norm, where):
    if norm is None:
        return None
    steps = norm.get("normalizers", []) if norm.get("type") == "Sequence" else [norm]
    forms = []
    for s in steps:
        if s.get("type") not in _NORMALIZERS:
            raise ValueError(f"{where}: normalizer {s.get('type')!r} is not supported (only {', '.join(_NORMALIZERS)})")
        forms.append(s["type"])
    return forms


def _learn_merges(counts: Counter, n_merges: int, min_frequency: int, show_progress: bool) -> list[tuple[str, str]]:
    """BPE merge learning with incremental pair counts: only the words holding the merged pair
    are rewritten, and a lazy max-heap finds the next best pair."""
    words = [list(w) for w in counts]
    freqs = list(counts.values())
    pair_count: Counter = Counter()
    where: dict[tuple[str, str], set[int]] = {}
    for idx, (w, f) in enumerate(zip(words, freqs)):
        for p in zip(w, w[1:]):
            pair_count[p] += f
            where.setdefault(p, set()).add(idx)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    merges: list[tuple[str, str]] = []
    done: set[tuple[str, str]] = set()
    bar = None
    if show_progress:
        from tqdm import tqdm
        bar = tqdm(total=n_merges, desc="BPE merges", unit="merge")
    while len(merges) < n_merges and heap:
        neg, pair = heapq.heappop(heap)
        if pair_count.get(pair, 0) != -neg:
            continue  # stale entry: the pair's count changed since it was pushed
        if -neg < max(min_frequency, 1):
            break
        if pair in done:
            continue
        done.add(pair)
        merges.append(pair)
        if bar is not None:
            bar.update(1)
        a, b = pair
        new_sym = a + b
        changed = set()
        for idx in list(where.get(pair, ())):
            w, f = words[idx], freqs[idx]
            old_pairs = list(zip(w, w[1:]))
            merged, i, n = [], 0, len(w)
            while i < n:
                if i < n - 1 and w[i] == a and w[i + 1] == b:
                    merged.append(new_sym)
                    i += 2
                else:
                    merged.append(w[i])
                    i += 1
            words[idx] = merged
            new_pairs = list(zip(merged, merged[1:]))
            for p in old_pairs:
                pair_count[p] -= f
                changed.add(p)
            for p in new_pairs:
                pair_count[p] += f
                changed.add(p)
            for p in set(old_pairs) - set(new_pairs):
                where[p].discard(idx)
            for p in new_pairs:
                where.setdefault(p, set()).add(idx)
        for p in changed:
            c = pair_count[p]
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                pair_count.pop(p, None)
                where.pop(p, None)
    if bar is not None:
        bar.close()
    return merges
