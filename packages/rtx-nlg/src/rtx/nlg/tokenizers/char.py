"""Character tokenizer: one id per character of a fixed alphabet (nanoGPT's Shakespeare setup)."""
from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Sequence

from rtx.nlg.tokenizers.base import AddedToken, Tokenizer, read_json

__all__ = ["CharTokenizer"]


class CharTokenizer(Tokenizer):
    """Ids: the special tokens first (with `unk_token` among them when given), then `chars` in
    order. A character outside the alphabet becomes `unk_token` when one is set (decode then
    gives the unk token's text: the round trip is exact only over the alphabet); without one,
    encode raises ValueError naming the character."""

    def __init__(self, chars: Iterable[str], special_tokens: Sequence[str] = (), *, unk_token: str | None = None,
                 **roles):
        chars = list(chars)
        for c in chars:
            if not isinstance(c, str) or len(c) != 1:
                raise ValueError(f"CharTokenizer: the alphabet must hold single characters, got {c!r}")
        if len(set(chars)) != len(chars):
            dup = [c for c, n in Counter(chars).items() if n > 1]
            raise ValueError(f"CharTokenizer: the alphabet repeats {dup[:5]!r}")
        specials = list(dict.fromkeys(([unk_token] if unk_token is not None else []) + list(special_tokens)))
        self.chars = chars
        self._offset = len(specials)
        self._char_to_id = {c: i + self._offset for i, c in enumerate(chars)}
        super().__init__([AddedToken(t, i, special=True) for i, t in enumerate(specials)], unk_token=unk_token,
                         **roles)

    @classmethod
    def train(cls, corpus: str | Iterable[str], special_tokens: Sequence[str] = (), *, unk_token: str | None = None,
              min_frequency: int = 1, **roles) -> CharTokenizer:
        """The alphabet of `corpus` (characters seen at least `min_frequency` times), sorted by
        code point."""
        counts: Counter[str] = Counter()
        for doc in [corpus] if isinstance(corpus, str) else corpus:
            counts.update(doc)
        return cls(sorted(c for c, n in counts.items() if n >= min_frequency), special_tokens, unk_token=unk_token,
                   **roles)

    def _encode_ordinary(self, text: str) -> list[int]:
        table = self._char_to_id
        try:
            return [table[c] for c in text]
        except KeyError:
            pass
        unk = self.unk_token_id
        if unk is None:
            pos, c = next((i, c) for i, c in enumerate(text) if c not in table)
            raise ValueError(f"CharTokenizer: character {c!r} (U+{ord(c):04X}) at position {pos} is not in the "
                             f"alphabet of {len(self.chars)} characters and no unk_token is set")
        return [table.get(c, unk) for c in text]

    def _decode_ordinary(self, ids: list[int]) -> str:
        out = []
        for i in ids:
            j = i - self._offset
            if not 0 <= j < len(self.chars):
                raise IndexError(f"decode: id {i} is outside the vocabulary (0..{len(self) - 1})")
            out.append(self.chars[j])
        return "".join(out)

    def _token_to_id(self, token: str) -> int | None:
        return self._char_to_id.get(token)

    def _id_to_token(self, id: int) -> str | None:
        j = id - self._offset
        return self.chars[j] if 0 <= j < len(self.chars) else None

    def _base_vocab_size(self) -> int:
        return self._offset + len(self.chars)

    def get_vocab(self) -> dict[str, int]:
        return {**{t.content: t.id for t in self.added_tokens}, **self._char_to_id}

    def to_json(self) -> dict:
        specials = [t.content for t in self.added_tokens if t.content != self.unk_token]
        return {"type": "CharTokenizer", "chars": self.chars, "special_tokens": specials,
                **self._roles_json()}

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, ensure_ascii=False, indent=1)

    @classmethod
    def from_json(cls, data: dict, **roles) -> CharTokenizer:
        if not isinstance(data, dict) or data.get("type") != "CharTokenizer":
            raise ValueError(f"expected a CharTokenizer JSON object (type 'CharTokenizer'), got "
                             f"{str(data)[:80]!r}")
        saved = {r: data[r] for r in cls._ROLES if r in data}
        return cls(data["chars"], data.get("special_tokens", ()), **{**saved, **roles})

    @classmethod
    def from_file(cls, path, **roles) -> CharTokenizer:
        return cls.from_json(read_json(os.fspath(path)), **roles)

    def __repr__(self):
        return f"CharTokenizer(chars={len(self.chars)}, added_tokens={[t.content for t in self.added_tokens]})"
