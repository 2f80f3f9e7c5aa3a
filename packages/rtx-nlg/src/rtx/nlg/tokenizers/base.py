"""What every rtx tokenizer shares: added (special) tokens, batch encoding with padding, and
the special-token properties a generation loop asks for (eos, pad)."""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence

from rtx.nlg.tokenizers.post_processor import PostProcessor

__all__ = ["Tokenizer", "BatchEncoding", "AddedToken"]


class AddedToken:
    """A token matched as a whole in the input before any other splitting (HF's AddedToken).
    special=True tokens are dropped by decode(skip_special_tokens=True)."""

    __slots__ = ("content", "id", "special")

    def __init__(self, content: str, id: int, special: bool = True):
        if not isinstance(content, str) or not content:
            raise ValueError(f"an added token must be a non-empty str, got {content!r}")
        self.content, self.id, self.special = content, int(id), bool(special)

    def to_json(self) -> dict:
        return {"id": self.id, "content": self.content, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": self.special}

    def __repr__(self):
        return f"AddedToken({self.content!r}, id={self.id}, special={self.special})"


class BatchEncoding(dict):
    """`input_ids` and `attention_mask` of a batch, by key or attribute (HF's BatchEncoding)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"BatchEncoding has no field {name!r}; fields: {list(self)}") from None


class TableVocab:
    """Vocabulary lookups for a Tokenizer that holds `vocab` (token -> id) and `_inv` (id -> token):
    byte-level BPE and WordPiece. List it before Tokenizer in the bases."""

    def _token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def _id_to_token(self, id: int) -> str | None:
        return self._inv.get(id)

    def _base_vocab_size(self) -> int:
        return max(self._inv, default=-1) + 1

    def get_vocab(self) -> dict[str, int]:
        v = dict(self.vocab)
        v.update({t.content: t.id for t in self.added_tokens})
        return v


class Tokenizer:
    """Base class. Subclasses implement `_encode_ordinary(text) -> list[int]` (text without added
    tokens), `_decode_ordinary(ids) -> str`, `_token_to_id`, `_id_to_token` and `_base_vocab_size`."""

    #: names of the special-token roles a subclass may set (HF's attribute names)
    _ROLES = ("bos_token", "eos_token", "unk_token", "pad_token")

    def __init__(self, added_tokens: Iterable[AddedToken] = (), *, bos_token=None, eos_token=None,
                 unk_token=None, pad_token=None):
        self._added: dict[str, AddedToken] = {}
        self._added_by_id: dict[int, AddedToken] = {}
        self._split_re = None
        for t in added_tokens:
            self._register(t)
        self.bos_token, self.eos_token, self.unk_token, self.pad_token = bos_token, eos_token, unk_token, pad_token
        self.padding_side = "left"  # generation pads on the left
        # what encode(add_special_tokens=True) adds: tokenizer.json's post_processor (none by default)
        self.post_processor = PostProcessor(None)

    # ---- added tokens ---------------------------------------------------------------------
    def _register(self, token: AddedToken) -> None:
        old = self._added_by_id.get(token.id)
        if old is not None and old.content != token.content:
            raise ValueError(f"added token {token.content!r} wants id {token.id}, which {old.content!r} holds")
        self._added[token.content] = token
        self._added_by_id[token.id] = token
        # longest first, so "<|endoftext|>" wins over a shorter token that is its prefix
        alts = sorted(self._added, key=len, reverse=True)
        self._split_re = re.compile("(" + "|".join(map(re.escape, alts)) + ")")

    def add_special_tokens(self, tokens: Sequence[str]) -> int:
        """Add tokens matched whole in the input (ids after the current vocabulary); returns how
        many were new."""
        new = 0
        for content in tokens:
            if content in self._added:
                continue
            existing = self._token_to_id(content)
            self._register(AddedToken(content, existing if existing is not None else len(self), special=True))
            new += 1
        return new

    @property
    def added_tokens(self) -> list[AddedToken]:
        return sorted(self._added.values(), key=lambda t: t.id)

    @property
    def all_special_tokens(self) -> list[str]:
        return [t.content for t in self.added_tokens if t.special]

    # ---- vocabulary -----------------------------------------------------------------------
    def __len__(self) -> int:
        top = max(self._added_by_id, default=-1)
        return max(self._base_vocab_size(), top + 1)

    @property
    def vocab_size(self) -> int:
        """Number of ids (including added tokens): the embedding size a model needs."""
        return len(self)

    def token_to_id(self, token: str) -> int | None:
        t = self._added.get(token)
        return t.id if t is not None else self._token_to_id(token)

    def id_to_token(self, id: int) -> str | None:
        t = self._added_by_id.get(int(id))
        return t.content if t is not None else self._id_to_token(int(id))

    def convert_tokens_to_ids(self, tokens):
        if isinstance(tokens, str):
            return self.token_to_id(tokens)
        return [self.token_to_id(t) for t in tokens]

    def _role_id(self, role: str) -> int | None:
        tok = getattr(self, role)
        return None if tok is None else self.token_to_id(tok)

    @property
    def eos_token_id(self) -> int | None:
        return self._role_id("eos_token")

    @property
    def bos_token_id(self) -> int | None:
        return self._role_id("bos_token")

    @property
    def pad_token_id(self) -> int | None:
        return self._role_id("pad_token")

    @property
    def unk_token_id(self) -> int | None:
        return self._role_id("unk_token")

    # ---- encode / decode ------------------------------------------------------------------
    def encode(self, text: str, text_pair: str | None = None, add_special_tokens: bool = True) -> list[int]:
        """Ids of `text` (and `text_pair`, for the pair template). Added tokens that occur in it
        are matched whole; add_special_tokens=True (HF's default) applies the post-processor
        (BOS for Llama 3, [CLS] ... [SEP] for BERT)."""
        return self.encode_with_types(text, text_pair, add_special_tokens)[0]

    def encode_with_types(self, text: str, text_pair: str | None = None,
                          add_special_tokens: bool = True) -> tuple[list[int], list[int]]:
        """(ids, token_type_ids) of `text` and `text_pair`, as encode."""
        a = self._encode_text(text)
        b = None if text_pair is None else self._encode_text(text_pair)
        if add_special_tokens:
            return self.post_processor.process(a, b)
        return a + (b or []), [0] * len(a) + [1] * len(b or [])

    def _encode_text(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"{type(self).__name__}.encode expects a str, got {type(text).__name__}")
        if self._split_re is None:
            return self._encode_ordinary(text)
        ids: list[int] = []
        for i, part in enumerate(self._split_re.split(text)):
            if i % 2:
                ids.append(self._added[part].id)
            elif part:
                ids.extend(self._encode_ordinary(part))
        return ids

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        """Text of `ids` (a list, or a 1-D Tensor/array of ints)."""
        ids = _as_id_list(ids, f"{type(self).__name__}.decode")
        out, run = [], []
        for i in ids:
            t = self._added_by_id.get(i)
            if t is None:
                run.append(i)
                continue
            if run:
                out.append(self._decode_ordinary(run))
                run = []
            if not (skip_special_tokens and t.special):
                out.append(t.content)
        if run:
            out.append(self._decode_ordinary(run))
        return "".join(out)

    def batch_decode(self, sequences, skip_special_tokens: bool = False) -> list[str]:
        if hasattr(sequences, "tolist"):
            sequences = sequences.tolist()
        return [self.decode(s, skip_special_tokens=skip_special_tokens) for s in sequences]

    #: what tokenizer(...) returns by default; token_type_ids also come whenever text_pair is given
    model_input_names = ("input_ids", "attention_mask")

    def __call__(self, text, text_pair=None, padding: bool | str = True, return_tensors: str | None = "rtx",
                 padding_side: str | None = None, add_special_tokens: bool = True,
                 return_token_type_ids: bool | None = None) -> BatchEncoding:
        """Encode one text or a list of texts (with `text_pair`: pairs, for BERT-style models):
        `input_ids` and `attention_mask`, padded to the longest with `pad_token_id` on
        `padding_side` ("left" by default: what generation wants; WordPiece tokenizers: "right").
        `token_type_ids` (the post-processor's, 0 for padding) come when return_token_type_ids is
        True, or when it is None and pairs are encoded or the tokenizer's model_input_names
        name them (BERT's WordPiece). return_tensors="rtx" gives int64 Tensors (needs equal
        lengths, so padding); None gives lists. add_special_tokens: apply the post-processor
        (BOS, [CLS]/[SEP]) as encode does."""
        texts = [text] if isinstance(text, str) else list(text)
        if not texts:
            raise ValueError("tokenizer(...) needs at least one text")
        if text_pair is None:
            pairs = [None] * len(texts)
        else:
            pairs = [text_pair] if isinstance(text_pair, str) else list(text_pair)
            if isinstance(text, str) != isinstance(text_pair, str) or len(pairs) != len(texts):
                raise ValueError(f"text_pair must match text: one str each, or lists of equal length; got "
                                 f"{len(texts)} text(s) and {len(pairs)} pair text(s)")
        rows = [self.encode_with_types(t, p, add_special_tokens=add_special_tokens) for t, p in zip(texts, pairs)]
        encoded, types = [list(r[0]) for r in rows], [list(r[1]) for r in rows]
        if return_token_type_ids is None:
            return_token_type_ids = text_pair is not None or "token_type_ids" in self.model_input_names
        side = padding_side or self.padding_side
        if side not in ("left", "right"):
            raise ValueError(f"padding_side must be 'left' or 'right', got {side!r}")
        masks = [[1] * len(e) for e in encoded]
        if padding and padding != "do_not_pad":
            pad = self.pad_token_id if self.pad_token_id is not None else self.eos_token_id
            longest = max(map(len, encoded))
            if pad is None and any(len(e) < longest for e in encoded):
                raise ValueError("padding texts of different lengths needs tokenizer.pad_token (or eos_token) set")
            for j, e in enumerate(encoded):
                k = longest - len(e)
                if k:
                    encoded[j] = [pad] * k + e if side == "left" else e + [pad] * k
                    masks[j] = [0] * k + masks[j] if side == "left" else masks[j] + [0] * k
                    types[j] = [0] * k + types[j] if side == "left" else types[j] + [0] * k
        fields = {"input_ids": encoded, **({"token_type_ids": types} if return_token_type_ids else {}),
                  "attention_mask": masks}
        if return_tensors is None:
            return BatchEncoding(fields)
        if return_tensors not in ("rtx", "pt"):
            raise ValueError(f"return_tensors must be 'rtx' (or 'pt') or None, got {return_tensors!r}")
        if len({len(e) for e in encoded}) > 1:
            raise ValueError("texts of different lengths need padding=True to become one tensor")
        import rtx
        return BatchEncoding({k: rtx.tensor(v, dtype=rtx.int64) for k, v in fields.items()})

    # ---- what subclasses provide ----------------------------------------------------------
    def _encode_ordinary(self, text: str) -> list[int]:
        raise NotImplementedError

    def _decode_ordinary(self, ids: list[int]) -> str:
        raise NotImplementedError

    def _token_to_id(self, token: str) -> int | None:
        raise NotImplementedError

    def _id_to_token(self, id: int) -> str | None:
        raise NotImplementedError

    def _base_vocab_size(self) -> int:
        raise NotImplementedError

    def _roles_json(self) -> dict:
        return {r: getattr(self, r) for r in self._ROLES if getattr(self, r) is not None}


def roles_from_config(path, names, roles: dict) -> dict:
    """`roles` completed from the tokenizer_config.json beside tokenizer.json `path` (HF writes
    the special-token roles there, as strings or AddedToken dicts); given roles win."""
    roles = dict(roles)
    config = os.path.join(os.path.dirname(os.fspath(path)), "tokenizer_config.json")
    if os.path.exists(config):
        cfg = read_json(config)
        for role in names:
            v = cfg.get(role)
            if isinstance(v, dict):
                v = v.get("content")
            if isinstance(v, str) and role not in roles:
                roles[role] = v
    return roles


def read_json(path) -> dict:
    """A JSON file's content, or ValueError naming the file when it is not JSON."""
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not a JSON file: {e}") from None


def _as_id_list(ids, where: str) -> list[int]:
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    if isinstance(ids, int):
        ids = [ids]
    if any(isinstance(i, (list, tuple)) for i in ids):
        raise TypeError(f"{where} expects one sequence of ids; use batch_decode for a batch")
    try:
        return [int(i) for i in ids]
    except (TypeError, ValueError):
        raise TypeError(f"{where} expects a sequence of ints (list, 1-D Tensor or array), got {ids!r:.80}") from None
