"""Schema validation with a reason per bad row (Great Expectations / pandera in spirit).

`check(table, schema)` returns the rows that pass (cast to the schema's types) and the rows that
fail with a `_reason` column; it never drops a row silently. The work is columnar: one boolean mask
per check (Arrow compute kernels, DuckDB TRY_CAST for text → timestamp); reason strings are built
only for the failing rows, so clean data pays for masks and casts, not for Python loops.
"""
from __future__ import annotations

import dataclasses
import re

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
        if target in ("int64", "float64"):
            ok = pc.match_substring_regex(col, _INT_RE if target == "int64" else _FLOAT_RE)
            clean = pc.if_else(ok, pc.utf8_trim_whitespace(col), pa.scalar(None, pa.string()))
            if target == "int64":
                # 19+ digit numbers may overflow int64: cast them one by one (they are rare)
                long = pc.fill_null(pc.greater(pc.utf8_length(clean), 18), False)
                if pc.any(long).as_py():
                    vals = clean.to_pylist()
                    bad = [i for i, v in enumerate(vals) if v is not None and len(v) > 18
                           and not -2**63 <= int(v) < 2**63]
                    mask = np.zeros(len(vals), bool)
                    mask[bad] = True
                    clean = pc.if_else(pa.array(mask), pa.scalar(None, pa.string()), clean)
            out = clean.cast(t)
        elif target == "bool":
            low = pc.utf8_lower(pc.utf8_trim_whitespace(col))
            is_t, is_f = pc.is_in(low, pa.array(_BOOL_TRUE)), pc.is_in(low, pa.array(_BOOL_FALSE))
            out = pc.if_else(is_t, True, pc.if_else(is_f, False, pa.scalar(None, pa.bool_())))
        else:  # timestamp: DuckDB parses ISO 8601 text and gives NULL where it cannot
            con = duckdb.connect()
            con.register("c", pa.table({"v": col}))
            out = con.sql("SELECT TRY_CAST(v AS TIMESTAMP) AS v FROM c").to_arrow_table()["v"].combine_chunks()
            out = out.cast(t)
        bad = np.asarray(pc.and_(pc.is_valid(col), pc.is_null(out)).to_numpy(zero_copy_only=False), bool)
        return out, bad
    if target == "string":
        return col.cast(pa.string()), np.zeros(len(col), bool)
    if target == "int64" and pa.types.is_floating(src):
        # a float column is an int only where every value is integral and in range
        v = col.to_numpy(zero_copy_only=False).astype(np.float64)
        good = np.isfinite(v) & (v == np.floor(v)) & (np.abs(v) < 2**63)
        good |= ~np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), bool)
        out = pa.array(np.where(good, np.nan_to_num(v), 0).astype(np.int64), mask=~good | np.isnan(v))
        return out, ~good
    try:
        return col.cast(t), np.zeros(len(col), bool)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise TypeError(f"column {name!r}: cannot cast {src} to {target}: {e}") from None


def _fmt(v) -> str:
    return repr(v.as_py() if isinstance(v, pa.Scalar) else v)


def check(table: pa.Table, schema: Schema) -> tuple[pa.Table, pa.Table]:
    """(good rows cast to the schema, bad rows as they came plus `_row` and `_reason`)."""
    missing = [n for n in schema.columns if n not in table.column_names]
    if missing:
        raise ValueError(f"validate: the data has no column {missing} (columns: {table.column_names})")
    n = table.num_rows
    casted, problems = {}, []  # problems: (mask, reason-for-row-i function)
    for name, c in schema.columns.items():
        raw = table[name]
        vals, bad_type = _to_type(raw, name, c.dtype)
        casted[name] = vals
        raw_arr = raw.combine_chunks() if isinstance(raw, pa.ChunkedArray) else raw
        problems.append((bad_type, lambda i, name=name, raw_arr=raw_arr, c=c:
                         f"{name}: {_fmt(raw_arr[i])} is not {c.dtype}"))
        if not c.nullable:
            isnull = ~np.asarray(pc.is_valid(raw_arr).to_numpy(zero_copy_only=False), bool)
            problems.append((isnull, lambda i, name=name: f"{name}: null"))
        valid = np.asarray(pc.is_valid(vals).to_numpy(zero_copy_only=False), bool)
        for bound, op, word in ((c.min, pc.less, "<"), (c.max, pc.greater, ">")):
            if bound is not None:
                m = np.asarray(pc.fill_null(op(vals, pa.scalar(bound).cast(vals.type)
                                               if c.dtype != "timestamp" else pa.scalar(bound)), False)
                               .to_numpy(zero_copy_only=False), bool) & valid
                problems.append((m, lambda i, name=name, vals=vals, word=word, bound=bound:
                                 f"{name}: {_fmt(vals[i])} {word} {'min' if word == '<' else 'max'} {bound!r}"))
        if c.regex is not None:
            s = vals.cast(pa.string())
            m = ~np.asarray(pc.fill_null(pc.match_substring_regex(s, c.regex), True)
                            .to_numpy(zero_copy_only=False), bool)
            problems.append((m, lambda i, name=name, vals=vals, c=c:
                             f"{name}: {_fmt(vals[i])} does not match {c.regex!r}"))
        if c.allowed is not None:
            m = ~np.asarray(pc.fill_null(pc.is_in(vals, pa.array(c.allowed).cast(vals.type)), True)
                            .to_numpy(zero_copy_only=False), bool)
            problems.append((m, lambda i, name=name, vals=vals, c=c:
                             f"{name}: {_fmt(vals[i])} not in {c.allowed!r}"))
    bad = np.zeros(n, bool)
    for m, _ in problems:
        bad |= m
    good_idx = np.flatnonzero(~bad)
    bad_idx = np.flatnonzero(bad)
    cols = {name: (casted[name] if name in casted else table[name]) for name in table.column_names}
    good = pa.table(cols).take(pa.array(good_idx))
    reasons = ["; ".join(f(i) for m, f in problems if m[i]) for i in bad_idx]
    quarantined = table.take(pa.array(bad_idx)).append_column("_row", pa.array(bad_idx, pa.int64())) \
        .append_column("_reason", pa.array(reasons, pa.string()))
    return good, quarantined
