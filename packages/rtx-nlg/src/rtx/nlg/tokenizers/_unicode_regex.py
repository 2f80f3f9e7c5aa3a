"""Pre-tokenisation patterns with Unicode properties (GPT-2's `\\p{L}`, `\\p{N}`) on the standard `re`.

Tokenizers write their split patterns for the `regex` module (Python) or Oniguruma (Hugging Face's
Rust `tokenizers`), both of which know `\\p{L}` (any letter) and `\\p{N}` (any number); `re` does
not, and its nearest classes differ: `[^\\W\\d_]` also takes the numerals of categories No/Nl
("²", "Ⅻ"), and `\\s` takes the separators U+001C..U+001F that Unicode's White_Space does not.
So `translate` rewrites a pattern for `re`, spelling each property as an explicit class of code
point ranges read from `unicodedata`:

- `\\p{X}` (X a general category or its first letter, or Letter/Number/Mark/Punctuation/Symbol/
  Separator/Other) becomes the class of every code point whose category is X (inside a `[...]`
  set, the ranges are spliced in); `\\P{X}` outside a set becomes the complement.
- `\\s` becomes Unicode White_Space (TAB..CR, NEL and the categories Zs, Zl, Zp, as Oniguruma and
  `regex` define it); `\\S` outside a set its complement.

What remains differs from `regex` only where the Unicode versions differ (Python's `unicodedata`
here is Unicode 14 or later): a letter assigned in a newer Unicode than Python knows counts as
"other". Python 3.11's `re` also has the possessive quantifiers and atomic groups that newer
patterns (Llama 3, Qwen) use.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["translate", "compile_pattern", "GPT2_PATTERN"]

#: GPT-2's pre-tokenisation pattern (openai/gpt-2 encoder.py; HF ByteLevel's use_regex=True).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

_LONG_NAMES = {"Letter": "L", "Number": "N", "Mark": "M", "Punctuation": "P", "Symbol": "S",
               "Separator": "Z", "Other": "C"}
_CATEGORY_RE = re.compile(r"[LMNPSZC][a-z]?")


@lru_cache(maxsize=1)
def _categories() -> list[str]:
    return [unicodedata.category(chr(c)) for c in range(0x110000)]


def _ranges_body(codepoints) -> str:
    """Class body (no brackets) for a sorted iterable of code points, as escaped ranges."""
    out = []
    start = prev = None
    for c in codepoints:
        if prev is not None and c == prev + 1:
            prev = c
            continue
        if start is not None:
            out.append(_range(start, prev))
        start = prev = c
    if start is not None:
        out.append(_range(start, prev))
    return "".join(out)


def _range(a: int, b: int) -> str:
    return f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}"


@lru_cache(maxsize=None)
def _property_body(name: str) -> str:
    cat = _LONG_NAMES.get(name, name)
    if not _CATEGORY_RE.fullmatch(cat):
        raise ValueError(f"unsupported Unicode property \\p{{{name}}}: expected a general category such as L, Lu, "
                         f"N, Nd, P or one of {sorted(_LONG_NAMES)}")
    cats = _categories()
    return _ranges_body(c for c in range(0x110000) if cats[c].startswith(cat))


@lru_cache(maxsize=1)
def _whitespace_body() -> str:
    cats = _categories()
    ws = [c for c in range(0x110000) if c in (9, 10, 11, 12, 13, 0x85) or cats[c] in ("Zs", "Zl", "Zp")]
    return _ranges_body(ws)


def translate(pattern: str) -> str:
    """Rewrite a `regex`/Oniguruma pattern that uses \\p{..} and \\s for the standard `re`."""
    out = []
    i, n = 0, len(pattern)
    in_set = False
    set_start = -1
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt in "pP":
                if i + 2 < n and pattern[i + 2] == "{":
                    close = pattern.find("}", i + 3)
                    if close < 0:
                        raise ValueError(f"unterminated \\{nxt}{{...}} at position {i} of {pattern!r}")
                    name, end = pattern[i + 3:close], close + 1
                else:
                    name, end = pattern[i + 2:i + 3], i + 3
                body = _property_body(name)
                if nxt == "p":
                    out.append(body if in_set else f"[{body}]")
                elif in_set:
                    raise ValueError(f"\\P{{{name}}} inside a character set is not supported (pattern {pattern!r})")
                else:
                    out.append(f"[^{body}]")
                i = end
                continue
            if nxt in "sS":
                body = _whitespace_body()
                if nxt == "s":
                    out.append(body if in_set else f"[{body}]")
                elif in_set:
                    raise ValueError(f"\\S inside a character set is not supported (pattern {pattern!r})")
                else:
                    out.append(f"[^{body}]")
                i += 2
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if not in_set and ch == "[":
            in_set, set_start = True, i
            out.append(ch)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":  # a leading ']' is literal
                out.append("\\]")
                i += 1
            continue
        if in_set and ch == "]":
            in_set = False
        out.append(ch)
        i += 1
    if in_set:
        raise ValueError(f"unterminated character set starting at position {set_start} of {pattern!r}")
    return "".join(out)


@lru_cache(maxsize=32)
def compile_pattern(pattern: str) -> re.Pattern:
    """`re.compile(translate(pattern))`, cached."""
    return re.compile(translate(pattern))
