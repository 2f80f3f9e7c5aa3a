"""CLIPTokenizer: CLIP's byte-level BPE (vocab.json + merges.txt) on rtx-nlg's ByteLevelBPETokenizer.

    tok = CLIPTokenizer.from_pretrained("ckpt/")          # vocab.json + merges.txt
    batch = tok(["a photo of a cat", "a dog"], padding="max_length", truncation=True, return_tensors="rtx")
    batch.input_ids, batch.attention_mask                 # (2, 77) each

What differs from GPT-2's BPE, as transformers' CLIPTokenizer does it: the text is NFC-normalised,
runs of whitespace become one space, and it is lower-cased; it is split into words by CLIP's pattern
(letters runs, single digits, punctuation runs, English contractions; the spaces are dropped); the
last symbol of every word carries "</w>", so merges know where words end; encode adds
<|startoftext|> ... <|endoftext|>; padding is on the right with <|endoftext|>, and truncation keeps
the two special tokens (77 positions is CLIP's text length). Decoding turns "</w>" back into spaces.
"""
from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

from rtx.nlg.tokenizers import GPT2_PATTERN, AddedToken, BatchEncoding, ByteLevelBPETokenizer, bytes_to_unicode

__all__ = ["CLIPTokenizer", "CLIP_PATTERN"]

#: CLIP's word pattern (openai/CLIP simple_tokenizer.py), `\p{..}` spelt as in transformers
CLIP_PATTERN = r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""
_WS = re.compile(r"\s+")
_END = "</w>"


class CLIPTokenizer(ByteLevelBPETokenizer):
    """CLIP's tokenizer. vocab: token -> id (CLIP's layout: byte symbols, the same with "</w>",
    merges, then the two special tokens); merges: (left, right) pairs in rank order."""

    def __init__(self, vocab: dict[str, int], merges, *, unk_token="<|endoftext|>", bos_token="<|startoftext|>",
                 eos_token="<|endoftext|>", pad_token="<|endoftext|>", model_max_length: int = 77):
        specials = []
        for tok in dict.fromkeys([bos_token, eos_token, unk_token, pad_token]):
            if tok not in vocab:
                raise ValueError(f"CLIPTokenizer: the special token {tok!r} is not in the vocabulary")
            specials.append(AddedToken(tok, vocab[tok], special=True))
        super().__init__(vocab, merges, specials, pattern=CLIP_PATTERN, bos_token=bos_token, eos_token=eos_token,
                         unk_token=unk_token, pad_token=pad_token)
        self._byte_level = re.compile(_gpt2_split_pattern())
        self.model_max_length = model_max_length
        self.padding_side = "right"

    # ---- files ----------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, path, **kwargs) -> CLIPTokenizer:
        """A folder with vocab.json and merges.txt (as transformers writes them; tokenizer_config.json's
        model_max_length and special tokens are read when present)."""
        p = Path(path)
        for name in ("vocab.json", "merges.txt"):
            if not (p / name).exists():
                raise FileNotFoundError(f"CLIPTokenizer.from_pretrained: no {name} in {p}")
        with open(p / "vocab.json", encoding="utf-8") as f:
            vocab = json.load(f)
        merges = _read_merges(p / "merges.txt")
        cfg_file = p / "tokenizer_config.json"
        if cfg_file.exists():
            with open(cfg_file, encoding="utf-8") as f:
                cfg = json.load(f)
            for key in ("unk_token", "bos_token", "eos_token", "pad_token", "model_max_length"):
                value = cfg.get(key)
                if isinstance(value, dict):       # transformers 4.x AddedToken dicts
                    value = value.get("content")
                if value is not None and key not in kwargs:
                    kwargs[key] = int(value) if key == "model_max_length" and value < 1e9 else value
            if kwargs.get("model_max_length", 77) >= 1e9:
                kwargs.pop("model_max_length")
        return cls(vocab, merges, **kwargs)

    def save_pretrained(self, directory) -> None:
        p = Path(directory)
        p.mkdir(parents=True, exist_ok=True)
        with open(p / "vocab.json", "w", encoding="utf-8") as f:
            json.dump(self.vocab, f, ensure_ascii=False)
        with open(p / "merges.txt", "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in self.merges))
        cfg = {"tokenizer_class": "CLIPTokenizer", "model_max_length": self.model_max_length,
               **{r: getattr(self, r) for r in self._ROLES}}
        with open(p / "tokenizer_config.json", "w", encoding="utf-8") as f:
            json.dump(cfg, f, indent=2)

    @classmethod
    def train(cls, texts, num_merges: int = 200, **kwargs) -> CLIPTokenizer:
        """Learn a CLIP-layout vocabulary from `texts` (normalised and split as encoding does):
        the 256 byte symbols, the same with "</w>", then `num_merges` merges of the most frequent
        adjacent pair (ties: the larger pair), then <|startoftext|> and <|endoftext|>."""
        from collections import Counter
        probe = cls({"<|startoftext|>": 0, "<|endoftext|>": 1}, [])
        table = bytes_to_unicode()
        words: Counter = Counter()
        for text in texts:
            text = _WS.sub(" ", unicodedata.normalize("NFC", text)).lower()
            for word in probe._split.findall(text):
                for piece in probe._byte_level.findall(word):
                    sym = [table[b] for b in piece.encode("utf-8")]
                    sym[-1] += _END
                    words[tuple(sym)] += 1
        merges = []
        for _ in range(num_merges):
            pairs: Counter = Counter()
            for w, c in words.items():
                for pair in zip(w, w[1:]):
                    pairs[pair] += c
            if not pairs:
                break
            best = max(pairs, key=lambda p: (pairs[p], p))
            merges.append(best)
            merged_words: Counter = Counter()
            for w, c in words.items():
                out, i = [], 0
                while i < len(w):
                    if i < len(w) - 1 and (w[i], w[i + 1]) == best:
                        out.append(w[i] + w[i + 1])
                        i += 2
                    else:
                        out.append(w[i])
                        i += 1
                merged_words[tuple(out)] += c
            words = merged_words
        symbols = list(table.values())
        tokens = list(dict.fromkeys(symbols + [s + _END for s in symbols] + ["".join(m) for m in merges]))
        tokens += ["<|startoftext|>", "<|endoftext|>"]
        return cls({t: i for i, t in enumerate(tokens)}, merges, **kwargs)

    # ---- encoding -------------------------------------------------------------------------
    def _encode_ordinary(self, text: str) -> list[int]:
        text = _WS.sub(" ", unicodedata.normalize("NFC", text)).lower()
        ids: list[int] = []
        for word in self._split.findall(text):            # only the matches: spaces are dropped
            for piece in self._byte_level.findall(word):  # HF's ByteLevel pre-tokenizer splits again
                got = self._cache.get(piece)
                if got is None:
                    got = self._cache[piece] = self._encode_word(piece)
                ids.extend(got)
        return ids

    def _encode_word(self, piece: str) -> list[int]:
        table = bytes_to_unicode()
        symbols = [table[b] for b in piece.encode("utf-8", errors="surrogatepass")]
        symbols[-1] += _END
        ranks = self._ranks
        while len(symbols) > 1:
            best = min((ranks.get(p, len(ranks)), i) for i, p in enumerate(zip(symbols, symbols[1:])))
            if best[0] == len(ranks):
                break
            a, b = self.merges[best[0]]
            merged, i = [], 0
            while i < len(symbols):
                if i < len(symbols) - 1 and symbols[i] == a and symbols[i + 1] == b:
                    merged.append(a + b)
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        unk = self.unk_token_id
        return [self.vocab.get(s, unk) for s in symbols]

    def tokenize(self, text: str) -> list[str]:
        return [self.id_to_token(i) for i in self.encode(text, add_special_tokens=False)]

    def encode_with_types(self, text, text_pair=None, add_special_tokens=True):
        a = self._encode_text(text)
        b = None if text_pair is None else self._encode_text(text_pair)
        if not add_special_tokens:
            ids = a + (b or [])
            return ids, [0] * len(ids)
        bos, eos = self.bos_token_id, self.eos_token_id
        ids = [bos] + a + [eos] + ([] if b is None else [eos] + b + [eos])   # RoBERTa's template, as transformers
        return ids, [0] * len(ids)

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        return super().decode(ids, skip_special_tokens=skip_special_tokens).replace(_END, " ").strip()

    def __call__(self, text, padding: bool | str = False, truncation: bool = False, max_length: int | None = None,
                 return_tensors: str | None = None, add_special_tokens: bool = True,
                 padding_side: str | None = None) -> BatchEncoding:
        """transformers' call: padding False / True or "longest" / "max_length" (to max_length, default
        model_max_length = 77), truncation to max_length keeping the special tokens, return_tensors
        None (lists), "rtx" / "pt" (int64 Tensors) or "np"."""
        single = isinstance(text, str)
        texts = [text] if single else list(text)
        if not texts or not all(isinstance(t, str) for t in texts):
            raise TypeError("CLIPTokenizer(...) expects a str or a non-empty list of str")
        limit = max_length if max_length is not None else self.model_max_length
        encoded = []
        for t in texts:
            ids = self._encode_text(t)
            if truncation:
                keep = limit - (2 if add_special_tokens else 0)
                if keep < 0:
                    raise ValueError(f"max_length={limit} leaves no room for the two special tokens")
                ids = ids[:keep]
            if add_special_tokens:
                ids = [self.bos_token_id] + ids + [self.eos_token_id]
            encoded.append(ids)
        if padding is True or padding == "longest":
            target = max(map(len, encoded))
        elif padding == "max_length":
            target = limit
        elif padding in (False, None, "do_not_pad"):
            target = None
        else:
            raise ValueError(f"padding must be True/'longest', 'max_length' or False, got {padding!r}")
        side = padding_side or self.padding_side
        masks = [[1] * len(e) for e in encoded]
        if target is not None:
            pad = self.pad_token_id
            for j, e in enumerate(encoded):
                k = max(target - len(e), 0)
                encoded[j] = e + [pad] * k if side == "right" else [pad] * k + e
                masks[j] = masks[j] + [0] * k if side == "right" else [0] * k + masks[j]
        if return_tensors is None:
            if single:
                return BatchEncoding(input_ids=encoded[0], attention_mask=masks[0])
            return BatchEncoding(input_ids=encoded, attention_mask=masks)
        if len({len(e) for e in encoded}) > 1:
            raise ValueError("texts of different lengths need padding=True (or 'max_length') to become one tensor")
        if return_tensors == "np":
            import numpy as np
            return BatchEncoding(input_ids=np.array(encoded, dtype=np.int64), attention_mask=np.array(masks, np.int64))
        if return_tensors not in ("rtx", "pt"):
            raise ValueError(f"return_tensors must be 'rtx' (or 'pt'), 'np' or None, got {return_tensors!r}")
        import rtx
        return BatchEncoding(input_ids=rtx.tensor(encoded, dtype=rtx.int64),
                             attention_mask=rtx.tensor(masks, dtype=rtx.int64))

    def __repr__(self):
        return (f"CLIPTokenizer(vocab_size={len(self)}, merges={len(self.merges)}, "
                f"model_max_length={self.model_max_length})")


def _gpt2_split_pattern() -> str:
    # the ByteLevel pre-tokenizer's own regex (GPT-2's), compiled as rtx-nlg compiles it
    from rtx.nlg.tokenizers.bpe import compile_pattern
    return compile_pattern(GPT2_PATTERN).pattern


def _read_merges(path) -> list[tuple[str, str]]:
    merges = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            line = line.rstrip("\n")
            if (i == 0 and line.startswith("#version")) or not line:
                continue
            parts = line.split(" ")
            if len(parts) != 2:
                raise ValueError(f"{path}:{i + 1}: a merge is two tokens separated by one space, got {line!r}")
            merges.append((parts[0], parts[1]))
    return merges
