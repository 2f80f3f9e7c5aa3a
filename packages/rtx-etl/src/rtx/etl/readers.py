"""File readers with errors that name the file and the line or row (a malformed input is never a bare
Arrow message). Each returns an Arrow table plus the rows set aside (malformed CSV lines) if asked."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import pyarrow.parquet as pq

IMAGE_EXT = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".ppm", ".pgm"}
TEXT_EXT = {".txt", ".md"}


def expand(paths) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = []
    for p in paths:
        p = str(p)
        if any(ch in p for ch in "*?["):
            import glob
            hits = sorted(glob.glob(p))
            if not hits:
                raise FileNotFoundError(f"no file matches {p!r}")
            out += hits
        elif os.path.isdir(p):
            out += sorted(str(q) for q in Path(p).iterdir() if q.is_file() and not q.name.startswith("."))
        elif not os.path.exists(p):
            raise FileNotFoundError(f"no such file: {p!r}")
        else:
            out.append(p)
    return out


def csv_stream(path: str, column_types=None, delimiter=",", block_size=1 << 24, bad_lines=None):
    """Record batches of one CSV file. Malformed lines (wrong column count, e.g. a truncated last
    line) raise ValueError naming the file and line, or go to `bad_lines` (a list) when one is given.
    Types: inferred from the first block; `column_types` fixes some (e.g. every column as string)."""
    first_bad = []

    def on_bad(row):
        if bad_lines is None:  # an exception raised here would be swallowed by Arrow: note it, stop the read
            first_bad.append(f"{path}: line {row.number}: expected {row.expected_columns} columns, got "
                             f"{row.actual_columns}: {row.text[:200]!r}")
            return "error"
        bad_lines.append({"_file": path, "_line": row.number, "_text": row.text,
                          "_reason": f"expected {row.expected_columns} columns, got {row.actual_columns}"})
        return "skip"

    # use_threads=False: the invalid-row callback then gets the line number, and a stream's memory stays
    # one block; parallelism comes from partitions (files or byte ranges), as on Dask.
    ro = pcsv.ReadOptions(use_threads=False, block_size=block_size)
    po = pcsv.ParseOptions(delimiter=delimiter, invalid_row_handler=on_bad)
    co = pcsv.ConvertOptions(column_types=column_types or {})
    try:
        reader = pcsv.open_csv(path, read_options=ro, parse_options=po, convert_options=co)
        for batch in reader:
            yield batch
    except pa.ArrowInvalid as e:
        if first_bad:
            raise ValueError(first_bad[0]) from None
        raise _csv_error(path, e) from None


class ColumnTypeError(ValueError):
    """A later block held a value the inferred type cannot take; `column` names it (retry as string)."""

    def __init__(self, msg, column_index):
        super().__init__(msg)
        self.column_index = column_index


def _csv_error(path, e):
    m = re.search(r"In CSV column #(\d+): CSV conversion error", str(e))
    if m:
        return ColumnTypeError(f"{path}: {e}", int(m.group(1)))
    return ValueError(f"{path}: {e}")


def read_csv(path: str, column_types=None, delimiter=",", bad_lines=None) -> pa.Table:
    """The whole file; a column whose later values do not fit the type inferred from the first block is
    read again as string (validate() then decides row by row), rather than failing the file."""
    types = dict(column_types or {})
    for _ in range(10_000):
        try:
            got = None if bad_lines is None else []  # a retry must not count a bad line twice
            batches = list(csv_stream(path, types, delimiter, bad_lines=got))
            if got is not None:
                bad_lines.extend(got)
            if not batches:
                names = pcsv.read_csv(path, parse_options=pcsv.ParseOptions(delimiter=delimiter)).schema
                return names.empty_table()
            return pa.Table.from_batches(batches)
        except ColumnTypeError as e:
            header = pcsv.open_csv(path, read_options=pcsv.ReadOptions(use_threads=False),
                                   parse_options=pcsv.ParseOptions(delimiter=delimiter)).schema.names
            types[header[e.column_index]] = pa.string()
    raise AssertionError("unreachable")


def read_json(path: str) -> pa.Table:
    """JSON lines. An invalid line raises ValueError naming the file and line."""
    try:
        return pjson.read_json(path)
    except pa.ArrowInvalid as e:
        with open(path, encoding="utf-8", errors="replace") as f:
            for i, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as je:
                    raise ValueError(f"{path}: line {i}: invalid JSON: {je.msg} (column {je.colno}): "
                                     f"{line.strip()[:200]!r}") from None
                if not isinstance(obj, dict):
                    raise ValueError(f"{path}: line {i}: expected a JSON object per line, got "
                                     f"{type(obj).__name__}") from None
        raise ValueError(f"{path}: {e}") from None


def read_parquet(path: str, columns=None) -> pa.Table:
    try:
        return pq.read_table(path, columns=columns)
    except (pa.ArrowInvalid, OSError) as e:
        raise ValueError(f"{path}: not a readable Parquet file: {e}") from None


def check_same_schema(tables: list[pa.Table], paths: list[str]):
    first = tables[0].schema
    for t, p in zip(tables[1:], paths[1:]):
        if t.schema.names != first.names:
            raise ValueError(f"{p}: columns {t.schema.names} differ from {paths[0]}'s {first.names}")
        for f0, f in zip(first, t.schema):
            if f0.type != f.type:
                raise ValueError(f"{p}: column {f.name!r} has type {f.type}, but {paths[0]} has {f0.type}")


def read_folder(root: str, kind: str = "auto") -> pa.Table:
    """Images with labels from subfolders (torchvision ImageFolder: sorted class names → 0..C-1), or
    text files (a `text` column, labels likewise when files sit in subfolders)."""
    rootp = Path(root)
    if not rootp.is_dir():
        raise NotADirectoryError(f"from_folder expects a folder, got {root!r}")
    files = sorted(p for p in rootp.rglob("*") if p.is_file() and not p.name.startswith("."))
    exts = {p.suffix.lower() for p in files}
    if kind == "auto":
        kind = "image" if exts & IMAGE_EXT and not exts & TEXT_EXT else "text"
    keep = IMAGE_EXT if kind == "image" else TEXT_EXT
    files = [p for p in files if p.suffix.lower() in keep]
    if not files:
        raise ValueError(f"{root}: no {kind} files ({sorted(keep)}) found")
    classes = sorted({p.parent.relative_to(rootp).parts[0] for p in files if p.parent != rootp})
    index = {c: i for i, c in enumerate(classes)}
    cols = {"path": [str(p) for p in files]}
    if kind == "image":
        cols["image"] = pa.array([p.read_bytes() for p in files], pa.binary())
    else:
        cols["text"] = [p.read_text(encoding="utf-8") for p in files]
    if classes:
        cols["label"] = pa.array([index.get(p.parent.relative_to(rootp).parts[0] if p.parent != rootp else "", -1)
                                  for p in files], pa.int64())
    t = pa.table(cols)
    return t.replace_schema_metadata({"rtx.etl.classes": json.dumps(classes)})
