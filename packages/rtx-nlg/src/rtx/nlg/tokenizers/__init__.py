"""Tokenizers: byte-level BPE (train, encode, decode, HF tokenizer.json), WordPiece (BERT's
tokenizer.json) and characters."""
from __future__ import annotations

import os

from rtx.nlg.tokenizers._unicode_regex import GPT2_PATTERN
from rtx.nlg.tokenizers.base import AddedToken, BatchEncoding, Tokenizer, read_json
from rtx.nlg.tokenizers.bpe import ByteLevelBPETokenizer, bytes_to_unicode
from rtx.nlg.tokenizers.char import CharTokenizer
from rtx.nlg.tokenizers.wordpiece import BertNormalizer, WordPieceTokenizer

__all__ = ["Tokenizer", "AddedToken", "BatchEncoding", "ByteLevelBPETokenizer", "CharTokenizer", "WordPieceTokenizer",
           "BertNormalizer", "bytes_to_unicode",
           "GPT2_PATTERN", "load_tokenizer", "tokenizer_from_json"]


def tokenizer_from_json(data: dict, **roles) -> Tokenizer:
    """The tokenizer a JSON structure describes: a CharTokenizer's, or a (HF) tokenizer.json."""
    if isinstance(data, dict) and data.get("type") == "CharTokenizer":
        return CharTokenizer.from_json(data, **roles)
    if _is_wordpiece(data):
        return WordPieceTokenizer.from_json(data, **roles)
    return ByteLevelBPETokenizer.from_json(data, **roles)


def _is_wordpiece(data) -> bool:
    return isinstance(data, dict) and isinstance(data.get("model"), dict) and data["model"].get("type") == "WordPiece"


def load_tokenizer(path, **roles) -> Tokenizer:
    """Read a tokenizer file written by `save` (either kind) or a Hugging Face tokenizer.json
    (or a folder holding one)."""
    path = os.fspath(path)
    target = os.path.join(path, "tokenizer.json") if os.path.isdir(path) else path
    data = read_json(target)
    if isinstance(data, dict) and data.get("type") == "CharTokenizer":
        return CharTokenizer.from_json(data, **roles)
    if _is_wordpiece(data):
        return WordPieceTokenizer.from_file(target, **roles)
    return ByteLevelBPETokenizer.from_file(target, **roles)
