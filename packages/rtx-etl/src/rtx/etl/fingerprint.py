"""Fingerprints and the Arrow cache (Hugging Face datasets' scheme).

A dataset's fingerprint is a hash of where it came from: a file's path, size and mtime, or the bytes of
an in-memory table. A transform's result is keyed by hash(parent fingerprint, step name, the function's
source and the arguments), and stored as an Arrow IPC file `<cache_dir>/<fingerprint>.arrow` (memory-
mapped when read back) next to a `.json` with the row accounting, so re-running a pipeline reuses it.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pyarrow as pa

from rtx.config.files import write_atomic


def default_cache_dir() -> Path:
    return Path(os.environ.get("RTX_ETL_CACHE", Path.home() / ".cache" / "rtx" / "etl"))


def _h(*parts) -> str:
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        h.update(p if isinstance(p, bytes) else repr(p).encode())
        h.update(b"\x00")
    return h.hexdigest()


def of_files(paths: list[str], kind: str, options) -> str:
    stats = [(os.path.abspath(p), os.path.getsize(p), os.stat(p).st_mtime_ns) for p in paths]
    return _h("files", kind, stats, options)


def of_table(table: pa.Table) -> str:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return _h("table", sink.getvalue().to_pybytes())


def of_function(fn) -> object:
    """What identifies a function: its source (or bytecode), and the values it closes over."""
    if fn is None or isinstance(fn, (str, int, float, bool, tuple, list, dict)):
        return fn
    if not callable(fn):
        return repr(fn)
    # the compiled body (bytecode, constants, names), not the source text: a lambda's source is its whole
    # line, so `a = ds.filter(lambda r: ...)` and `b = ds.filter(lambda r: ...)` would never match
    code = getattr(fn, "__code__", None)
    src = _code_id(code) if code is not None else repr(fn)
    closure = getattr(fn, "__closure__", None) or ()
    cells = []
    for c in closure:
        try:
            cells.append(repr(c.cell_contents))
        except ValueError:
            cells.append("<empty>")
    return (getattr(fn, "__qualname__", ""), src, cells)


def _code_id(code) -> bytes:
    # nested code objects (comprehensions) print with their address: use their own bytes instead
    consts = [_code_id(c) if hasattr(c, "co_code") else repr(c).encode() for c in code.co_consts]
    return code.co_code + b"|".join(consts) + repr(code.co_names).encode()


def of_step(parent: str, name: str, fn=None, **args) -> str:
    return _h(parent, name, of_function(fn), sorted((k, of_function(v)) for k, v in args.items()))


def load(cache_dir: Path, fp: str):
    """(memory-mapped table, saved accounting) or None on a miss."""
    path, meta = cache_dir / f"{fp}.arrow", cache_dir / f"{fp}.json"
    if not (path.exists() and meta.exists()):
        return None
    table = pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()
    return table, json.loads(meta.read_text())


def save(cache_dir: Path, fp: str, table: pa.Table, info: dict) -> Path:
    """Both files through rtx.config.files.write_atomic: a crashed or failed run never leaves a half
    cache file that looks whole (the table is written first: a table without its .json is a miss)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"{fp}.arrow"

    def write_table(f):
        with pa.ipc.new_file(f, table.schema) as w:
            w.write_table(table)
    write_atomic(path, write_table)
    write_atomic(cache_dir / f"{fp}.json", json.dumps(info, default=str))
    return path
