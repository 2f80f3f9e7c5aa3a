"""Schema validation with a reason per bad row (Great Expectations / pandera in spirit).

`check(table, schema)` returns the rows that pass (cast to the schema's types) and the rows that
fail with a `_reason` column; it never drops a row silently. The work is columnar: one boolean mask
per check (Arrow compute kernels, DuckDB TRY_CAST for text → timestamp); reason strings are built
only for the failing rows (one column of texts per check, joined by Arrow), so clean data pays for
masks and casts, not for Python loops.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rtx.etl import _duckdb

TYPES = {"int64": pa.int64(), "float64": pa.float64(), "string": pa.string(), "bool": pa.bool_(),
         "timestamp": pa.timestamp("us")}
_INT_RE = r"^\s*[+-]?\d+\s*$"
_FLOAT_RE = r"(?i)^\s*[+-]?((\d+\.?\d*|\.\d+)(e[+-]?\d+)?|inf|infinity|nan)\s*$"
_BOOL_TRUE = ["true", "1", "t", "yes"]
_BOOL_FALSE = ["false", "0", "f", "no"]


@dataclasses.dataclass
class Column:
    """One column's rules. dtype: "int64" | "float64" | "string" | "bool" | "timestamp"."""
    dtype: str
    nullable: bool = True
    min: float | None = None
    max: float | None = None
    regex: str | None = None
    allowed: list | None = None

    def __post_init__(self):
        if self.dtype not in TYPES:
            raise ValueError(f"Column dtype must be one of {sorted(TYPES)}, got {self.dtype!r}")
        if self.regex is not None:
            re.compile(self.regex)  # a bad pattern fails here, not on the first batch


class Schema:
    """`Schema({"col": Column("int64", nullable=False, min=0)})`; columns not named pass through."""

    def __init__(self, columns: dict[str, Column]):
        if not isinstance(columns, dict) or not all(isinstance(c, Column) for c in columns.values()):
            raise TypeError("Schema expects a dict of column name -> rtx.etl.Column")
        self.columns = dict(columns)

    def arrow_types(self) -> dict[str, pa.DataType]:
        return {n: TYPES[c.dtype] for n, c in self.columns.items()}

    def to_dict(self) -> dict:
        return {n: dataclasses.asdict(c) for n, c in self.columns.items()}

    @classmethod
    def from_dict(cls, d: dict) -> "Schema":
        return cls({n: Column(**c) if isinstance(c, dict) else Column(c) for n, c in d.items()})

    def __repr__(self):
        return f"Schema({self.columns!r})"


def _text_to_int(col: pa.Array):
    """(int64 values, mask of text that is not an int64) by _INT_RE's rule. Most values are [-]digits of
    at most 18 characters, which cheap kernels recognise and one cast converts (they cannot overflow);
    the rest (signs, blanks, long numbers, junk) go through the regex and Python's int(): they are few."""
    # plain: at most one leading "-", then only ASCII digits ("" and "-" are not decimal), 18 bytes at most.
    # Trimming every leading "-" and comparing byte lengths costs less than slicing off one conditionally.
    unsigned = pc.utf8_ltrim(col, "-")
    n = pc.binary_length(col)
    plain = pc.and_(pc.ascii_is_decimal(unsigned),
                    pc.and_(pc.less_equal(pc.subtract(n, pc.binary_length(unsigned)), 1), pc.less_equal(n, 18)))
    if pc.all(pc.fill_null(plain, True)).as_py():  # nulls stay null through the cast: only text can be bad
        return col.cast(pa.int64()), np.zeros(len(col), bool)
    plain = _np(pc.fill_null(plain, False))
    values = pc.fill_null(pc.if_else(pa.array(plain), col, pa.scalar(None, pa.string())).cast(pa.int64()), 0)
    values = np.frombuffer(values.buffers()[1], np.int64, len(values), values.offset).copy()
    good = plain.copy()
    rest = np.flatnonzero(~plain & _np(pc.is_valid(col)))
    if len(rest):
        texts = col.take(pa.array(rest))
        ok = _np(pc.fill_null(pc.match_substring_regex(texts, _INT_RE), False))
        for i, text in zip(rest[ok], texts.filter(pa.array(ok)).to_pylist()):
            v = int(text)  # the regex admits only what int() reads: sign, digits, blanks around
            if -2**63 <= v < 2**63:
                values[i], good[i] = v, True
    return pa.array(values, mask=~good), ~good & _np(pc.is_valid(col))


def _to_type(col: pa.ChunkedArray | pa.Array, name: str, target: str):
    """(values cast to the target type with bad entries null, mask of entries that could not be cast)."""
    t = TYPES[target]
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    src = col.type
    if src == t:
        return col, np.zeros(len(col), bool)
    if pa.types.is_null(src):
        return pa.nulls(len(col), t), np.zeros(len(col), bool)
    if pa.types.is_string(src) or pa.types.is_large_string(src):
        if target == "string":
            return col.cast(pa.string()), np.zeros(len(col), bool)
        if target == "float64" and not pc.any(pc.match_substring(col, "(")).as_py():
            # clean text converts in one kernel; Arrow reads what the regex accepts, less surrounding
            # blanks, plus "nan(...)" (hence the test above). Anything else falls through to the regex.
            try:
                return col.cast(t), np.zeros(len(col), bool)
            except pa.ArrowInvalid:
                pass
        if target == "int64":
            return _text_to_int(col)
        if target == "float64":
            ok = pc.match_substring_regex(col, _FLOAT_RE)
            out = pc.if_else(ok, pc.utf8_trim_whitespace(col), pa.scalar(None, pa.string())).cast(t)
        elif target == "bool":
            low = pc.utf8_lower(pc.utf8_trim_whitespace(col))
            is_t, is_f = pc.is_in(low, pa.array(_BOOL_TRUE)), pc.is_in(low, pa.array(_BOOL_FALSE))
            out = pc.if_else(is_t, True, pc.if_else(is_f, False, pa.scalar(None, pa.bool_())))
        else:  # timestamp: DuckDB parses ISO 8601 text and gives NULL where it cannot
            out = _duckdb.query("SELECT TRY_CAST(v AS TIMESTAMP) AS v FROM c", c=pa.table({"v": col}))["v"]
            out = out.combine_chunks()
            out = out.cast(t)
        bad = _np(pc.and_(pc.is_valid(col), pc.is_null(out)))
        return out, bad
    if target == "string":
        return col.cast(pa.string()), np.zeros(len(col), bool)
    if target == "int64" and pa.types.is_floating(src):
        # a float column is an int only where every value is integral and in range
        v = col.to_numpy(zero_copy_only=False).astype(np.float64)
        good = np.isfinite(v) & (v == np.floor(v)) & (np.abs(v) < 2**63)
        good |= ~_np(pc.is_valid(col))
        out = pa.array(np.where(good, np.nan_to_num(v), 0).astype(np.int64), mask=~good | np.isnan(v))
        return out, ~good
    try:
        return col.cast(t), np.zeros(len(col), bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise TypeError(f"column {name!r}: cannot cast {src} to {target}: {e}") from None


def _np(mask) -> np.ndarray:
    """A boolean Arrow array without nulls as a NumPy bool array, read from its buffer: pyarrow's
    to_numpy() imports pandas (seconds in a fresh process), which a pipeline does not otherwise need."""
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    m = mask.cast(pa.uint8())
    return np.frombuffer(m.buffers()[1], np.uint8, len(m), m.offset).view(bool)


_PLAIN_TEXT = r"^[\x20-\x26\x28-\x5b\x5d-\x7e]*$"  # printable ASCII but ' and \: repr() only adds quotes


def _describe(values, rows, before: str, after: str) -> pa.Array:
    """The reason text of each failing row: repr() of the row's value as a Python value (so it reads
    like the row, e.g. 'n/a' quoted) between two fixed texts. Runs over failing rows only. Where repr()
    is known to Arrow's kernels (integers; text of printable ASCII without ' or \\, which repr() just
    quotes) the texts are joined by a kernel; other values (floats, dates, escapes) go through repr()."""
    v = values.take(pa.array(rows))
    if v.null_count == 0:
        if pa.types.is_integer(v.type):
            return pc.binary_join_element_wise(pa.scalar(before), v.cast(pa.string()), pa.scalar(after), "")
        if pa.types.is_string(v.type) and pc.all(pc.match_substring_regex(v, _PLAIN_TEXT)).as_py():
            return pc.binary_join_element_wise(pa.scalar(before + "'"), v, pa.scalar("'" + after), "")
    return pa.array([f"{before}{x!r}{after}" for x in v.to_pylist()], pa.string())


def check(table: pa.Table, schema: Schema, select: bool = True):
    """(good rows cast to the schema, bad rows as they came plus `_row` and `_reason`). With
    select=False: (every row cast to the schema, the bad rows, a NumPy mask of the good rows), for a
    caller that filters once for this and a later step (the Pipeline's dedup)."""
    missing = [n for n in schema.columns if n not in table.column_names]
    if missing:
        raise ValueError(f"validate: the data has no column {missing} (columns: {table.column_names})")
    n = table.num_rows
    casted, problems = {}, []  # problems: (mask, values or None, text before the value, text after)
    for name, c in schema.columns.items():
        raw = table[name]
        raw_arr = raw.combine_chunks() if isinstance(raw, pa.ChunkedArray) else raw
        vals, bad_type = _to_type(raw_arr, name, c.dtype)
        casted[name] = vals
        problems.append((bad_type, raw_arr, f"{name}: ", f" is not {c.dtype}"))
        if not c.nullable:
            problems.append((~_np(pc.is_valid(raw_arr)), None, f"{name}: null", ""))
        for bound, op, word in ((c.min, pc.less, "<"), (c.max, pc.greater, ">")):
            if bound is not None:
                b = pa.scalar(bound).cast(vals.type) if c.dtype != "timestamp" else pa.scalar(bound)
                m = _np(pc.fill_null(op(vals, b), False))
                problems.append((m, vals, f"{name}: ", f" {word} {'min' if word == '<' else 'max'} {bound!r}"))
        if c.regex is not None:
            m = ~_np(pc.fill_null(pc.match_substring_regex(vals.cast(pa.string()), c.regex), True))
            problems.append((m, vals, f"{name}: ", f" does not match {c.regex!r}"))
        if c.allowed is not None:
            # a null passes (nullable= decides); is_in says False for it
            m = ~_np(pc.fill_null(pc.is_in(vals, pa.array(c.allowed).cast(vals.type)), True)) & _np(pc.is_valid(vals))
            problems.append((m, vals, f"{name}: ", f" not in {c.allowed!r}"))
    bad = np.zeros(n, bool)
    for m, *_ in problems:
        bad |= m
    bad_idx = np.flatnonzero(bad)
    cols = {name: (casted[name] if name in casted else table[name]) for name in table.column_names}
    good = pa.table(cols)
    if select:
        good = good.filter(pa.array(~bad))
    # one reason column per problem (null where it does not apply), joined per row with "; "
    parts = []
    for m, values, before, after in problems:
        hit = m[bad_idx]
        if hit.any():
            if values is None:
                parts.append(pc.if_else(pa.array(hit), pa.scalar(before), pa.scalar(None, pa.string())))
                continue
            text = _describe(values, bad_idx[hit], before, after)
            # spread over the bad rows: row k takes text[rank of k among the hits], the others a null
            where = np.where(hit, np.cumsum(hit) - 1, len(text))
            parts.append(pa.concat_arrays([text, pa.nulls(1, pa.string())]).take(pa.array(where)))
    reasons = pc.binary_join_element_wise(*parts, "; ", null_handling="skip") if parts else pa.array([], pa.string())
    quarantined = table.filter(pa.array(bad)).append_column("_row", pa.array(bad_idx, pa.int64())) \
        .append_column("_reason", reasons)
    return (good, quarantined) if select else (good, quarantined, ~bad)
