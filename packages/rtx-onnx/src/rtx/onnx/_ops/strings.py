"""Text ops on string tensors (NumPy object arrays): StringConcat, StringSplit, StringNormalizer,
RegexFullMatch, TfIdfVectorizer; and ImageDecoder (through Pillow, when installed)."""
from __future__ import annotations

import io
import re

import numpy as np

from rtx.onnx._ops import arr, const, op, unsupported


def _strs(t):
    a = arr(t)
    return a if a.dtype == object else a.astype(str).astype(object)


@op("StringConcat")
def string_concat(inputs, attrs, opset):
    a, b = np.broadcast_arrays(_strs(inputs[0]), _strs(inputs[1]))
    out = np.empty(a.shape, dtype=object)
    for i in np.ndindex(a.shape):
        out[i] = str(a[i]) + str(b[i])
    return const(out)


@op("StringSplit")
def string_split(inputs, attrs, opset):
    x = _strs(inputs[0])
    sep = attrs.get("delimiter") or None
    maxsplit = attrs.get("maxsplit")
    parts = [str(s).split(sep, -1 if maxsplit is None else maxsplit) for s in x.reshape(-1)]
    if sep is None:  # whitespace splitting drops empty strings; "" gives no parts
        parts = [[p for p in ps if p] for ps in parts]
    width = max((len(p) for p in parts), default=0)
    y = np.full((len(parts), width), "", dtype=object)
    for i, p in enumerate(parts):
        y[i, :len(p)] = p
    return const(y.reshape(x.shape + (width,))), const(np.array([len(p) for p in parts], np.int64).reshape(x.shape))


@op("StringNormalizer")
def string_normalizer(inputs, attrs, opset):
    x = _strs(inputs[0])
    action = attrs.get("case_change_action", "NONE")
    sensitive = attrs.get("is_case_sensitive", 0)
    stops = attrs.get("stopwords") or []
    stopset = set(stops) if sensitive else {s.lower() for s in stops}

    def keep(w):
        return (w if sensitive else w.lower()) not in stopset

    def change(w):
        return w.lower() if action == "LOWER" else w.upper() if action == "UPPER" else w

    if x.ndim == 2:
        if x.shape[0] != 1:
            raise ValueError(f"StringNormalizer: expected shape [C] or [1, C], got {list(x.shape)}")
        words = [change(w) for w in x[0] if keep(w)] or [""]
        return const(np.array([words], dtype=object))
    words = [change(w) for w in x if keep(w)] or [""]
    return const(np.array(words, dtype=object))


@op("RegexFullMatch")
def regex_full_match(inputs, attrs, opset):
    x = _strs(inputs[0])
    try:
        pattern = re.compile(attrs["pattern"])
    except re.error as e:
        raise ValueError(f"RegexFullMatch: invalid pattern {attrs['pattern']!r}: {e}") from None
    return const(np.vectorize(lambda s: pattern.fullmatch(s) is not None, otypes=[bool])(x).reshape(x.shape))


@op("TfIdfVectorizer")
def tfidf_vectorizer(inputs, attrs, opset):
    x = arr(inputs[0])
    lo, hi = attrs["min_gram_length"], attrs["max_gram_length"]
    skips = attrs["max_skip_count"]
    pool = attrs.get("pool_strings") or attrs.get("pool_int64s") or []
    counts = list(attrs["ngram_counts"]) + [len(pool)]
    indexes = attrs["ngram_indexes"]
    weights = attrs.get("weights")
    grams, k = {}, 0
    for n in range(1, len(counts)):
        items = pool[counts[n - 1]:counts[n]]
        for j in range(0, len(items), n):
            if lo <= n <= hi:
                grams[tuple(items[j:j + n])] = k
            k += 1
    size = max(indexes) + 1
    rows = x.reshape(1, -1) if x.ndim <= 1 else x
    freq = np.zeros((rows.shape[0], size), np.float32)
    for r, row in enumerate(rows):
        row = list(row)
        for d in range(1, skips + 2):
            first = lo if (d == 1 or lo > 1) else 2
            for start in range(len(row)):
                for n in range(first, hi + 1):
                    last = start + d * (n - 1)
                    if last >= len(row):
                        break
                    hit = grams.get(tuple(row[start:last + 1:d]))
                    if hit is not None:
                        freq[r, indexes[hit]] += 1
    mode = attrs.get("mode", "TF")
    w = np.asarray(weights, np.float32) if weights else None
    if mode == "IDF":
        freq = (freq > 0) * (w if w is not None else 1.0)
    elif mode == "TFIDF" and w is not None:
        freq = freq * w
    out = freq.astype(np.float32)
    return const(out[0] if x.ndim <= 1 else out)


@op("ImageDecoder")
def image_decoder(inputs, attrs, opset):
    try:
        import PIL.Image
    except ImportError:
        unsupported("ImageDecoder", "ai.onnx", opset, "it needs Pillow: pip install 'rtx-onnx[images]'")
    img = PIL.Image.open(io.BytesIO(arr(inputs[0]).tobytes()))
    fmt = attrs.get("pixel_format", "RGB")
    if fmt == "Grayscale":
        return const(np.asarray(img.convert("L"))[..., None].copy())
    rgb = np.asarray(img.convert("RGB"))
    return const(np.ascontiguousarray(rgb[..., ::-1] if fmt == "BGR" else rgb))
