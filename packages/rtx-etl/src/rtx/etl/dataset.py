"""rtx.etl.Dataset: an Arrow table with a fingerprint and a row account (Hugging Face datasets' shape).

Every transform returns a new Dataset. Its result is cached as an Arrow file keyed by the fingerprint
of (input, function source, arguments) and memory-mapped back, so re-running a pipeline reuses it.
The row account (`report()`) follows every row: read = kept + quarantined + filtered, overall and for
each step (a step that creates rows, e.g. a batched map that splits texts, counts them as read there).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rtx.etl import dedup as _dedup
from rtx.etl import fingerprint as fpr
from rtx.etl import readers
from rtx.etl.validate import TYPES, Schema, check


def _step(name, n_in, n_out, quarantined=0):
    created = max(0, n_out + quarantined - n_in)
    return {"step": name, "read": n_in + created, "kept": n_out, "quarantined": quarantined,
            "filtered": max(0, n_in - n_out - quarantined)}


class Dataset:
    def __init__(self, table: pa.Table, fingerprint: str | None = None, *, cache_dir=None, steps=None,
                 read: int | None = None, cache_files=None):
        if not isinstance(table, pa.Table):
            raise TypeError(f"Dataset expects a pyarrow.Table, got {type(table).__name__}")
        self._table = table
        self._fingerprint = fingerprint or fpr.of_table(table)
        # cache_dir=False turns the cache off; None uses $RTX_ETL_CACHE or ~/.cache/rtx/etl
        self._cache_dir = None if cache_dir is False else Path(cache_dir or fpr.default_cache_dir())
        self._steps = list(steps or [])
        self._read = table.num_rows if read is None else read
        self.cache_files = list(cache_files or [])
        self.cache_hit = False  # whether this dataset came from the cache (tests and logs read it)

    # ---- sources -------------------------------------------------------------------------------
    @classmethod
    def _from_source(cls, table, fp, cache_dir, name, n_read=None, quarantined=0):
        n_read = table.num_rows + quarantined if n_read is None else n_read
        return cls(table, fp, cache_dir=cache_dir, read=n_read,
                   steps=[{"step": name, "read": n_read, "kept": table.num_rows, "quarantined": quarantined,
                           "filtered": n_read - table.num_rows - quarantined}])

    @classmethod
    def from_csv(cls, paths, *, column_types=None, delimiter=",", bad_lines=None, cache_dir=None):
        """CSV files (same header). A malformed line raises ValueError naming file and line, unless
        `bad_lines="quarantine.parquet"`: then such lines go there (file, line, text, reason)."""
        files = readers.expand(paths)
        types = {k: TYPES.get(v, v) if isinstance(v, str) else v for k, v in (column_types or {}).items()}
        bad = [] if bad_lines else None
        tables = [readers.read_csv(p, types, delimiter, bad) for p in files]
        if len(tables) > 1:
            # a column that needed string in one file needs it in all: unify before concatenating
            strs = {f.name for t in tables for f in t.schema if pa.types.is_string(f.type)}
            tables = [t.cast(pa.schema([pa.field(f.name, pa.string()) if f.name in strs else f for f in t.schema]))
                      for t in tables]
            readers.check_same_schema(tables, files)
        if bad is not None:
            pq.write_table(pa.Table.from_pylist(bad, schema=pa.schema(
                [("_file", pa.string()), ("_line", pa.int64()), ("_text", pa.string()), ("_reason", pa.string())])),
                bad_lines)
        table = pa.concat_tables(tables)
        fp = fpr.of_files(files, "csv", (sorted((k, str(v)) for k, v in types.items()), delimiter, bool(bad_lines)))
        return cls._from_source(table, fp, cache_dir, "from_csv", quarantined=len(bad or []))

    @classmethod
    def from_json(cls, paths, *, cache_dir=None):
        """JSON lines files; an invalid line raises ValueError naming file and line."""
        files = readers.expand(paths)
        tables = [readers.read_json(p) for p in files]
        readers.check_same_schema(tables, files)
        return cls._from_source(pa.concat_tables(tables), fpr.of_files(files, "json", None), cache_dir, "from_json")

    @classmethod
    def from_parquet(cls, paths, *, columns=None, schema: pa.Schema | None = None, cache_dir=None):
        """Parquet files; files whose schemas differ (or differ from `schema`) raise naming the file."""
        files = readers.expand(paths)
        tables = [readers.read_parquet(p, columns) for p in files]
        if schema is not None:
            for t, p in zip(tables, files):
                for f in schema:
                    if f.name not in t.column_names:
                        raise ValueError(f"{p}: no column {f.name!r} (has {t.column_names})")
                    if t.schema.field(f.name).type != f.type:
                        raise ValueError(f"{p}: column {f.name!r} has type {t.schema.field(f.name).type}, "
                                         f"expected {f.type}")
        readers.check_same_schema(tables, files)
        return cls._from_source(pa.concat_tables(tables), fpr.of_files(files, "parquet", columns), cache_dir,
                                "from_parquet")

    @classmethod
    def from_folder(cls, root, *, kind="auto", cache_dir=None):
        """Images (bytes) with labels from subfolder names, or text files; see readers.read_folder."""
        t = readers.read_folder(str(root), kind)
        fp = fpr.of_files(list(t["path"].to_pylist()), "folder", kind)
        return cls._from_source(t, fp, cache_dir, "from_folder")

    @classmethod
    def from_arrow(cls, table, *, cache_dir=None):
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        return cls._from_source(table, fpr.of_table(table), cache_dir, "from_arrow")

    @classmethod
    def from_pandas(cls, df, *, preserve_index=False, cache_dir=None):
        t = pa.Table.from_pandas(df, preserve_index=preserve_index)
        return cls._from_source(t.replace_schema_metadata(None), None, cache_dir, "from_pandas")

    @classmethod
    def from_dict(cls, mapping: dict, *, cache_dir=None):
        return cls._from_source(pa.table(mapping), None, cache_dir, "from_dict")

    @classmethod
    def from_generator(cls, generator, gen_kwargs=None, *, chunk_rows=10_000, cache_dir=None):
        """Rows (dicts) from `generator(**gen_kwargs)`; the fingerprint is the function's source and kwargs,
        so a second call with the same generator is a cache hit and does not run it."""
        gen_kwargs = dict(gen_kwargs or {})
        fp = fpr.of_step("generator", "from_generator", generator, **gen_kwargs)
        cdir = None if cache_dir is False else Path(cache_dir or fpr.default_cache_dir())
        if cdir is not None and (hit := fpr.load(cdir, fp)) is not None:
            ds = cls(hit[0], fp, cache_dir=cdir, steps=hit[1]["steps"], read=hit[1]["read"])
            ds.cache_hit = True
            return ds
        batches, rows = [], []
        for row in generator(**gen_kwargs):
            rows.append(row)
            if len(rows) >= chunk_rows:
                batches.append(pa.Table.from_pylist(rows))
                rows = []
        if rows or not batches:
            batches.append(pa.Table.from_pylist(rows))
        table = pa.concat_tables(batches, promote_options="default")
        ds = cls._from_source(table, fp, cache_dir, "from_generator")
        if cdir is not None:
            path = fpr.save(cdir, fp, table, {"steps": ds._steps, "read": ds._read})
            ds.cache_files.append(str(path))
        return ds

    # ---- plumbing ------------------------------------------------------------------------------
    @property
    def data(self) -> pa.Table:
        return self._table

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def num_rows(self) -> int:
        return self._table.num_rows

    @property
    def column_names(self) -> list[str]:
        return self._table.column_names

    @property
    def schema(self) -> pa.Schema:
        return self._table.schema

    def __len__(self):
        return self._table.num_rows

    def __getitem__(self, key):
        if isinstance(key, str):
            return self._table[key].to_pylist()
        if isinstance(key, int):
            if not -len(self) <= key < len(self):
                raise IndexError(f"row {key} out of range for a dataset of {len(self)} rows")
            return self._table.slice(key % len(self), 1).to_pylist()[0]
        if isinstance(key, slice):
            return self._table.take(pa.array(range(*key.indices(len(self))), pa.int64())).to_pydict()
        raise TypeError(f"Dataset indices are int, slice or column name, got {type(key).__name__}")

    def __iter__(self):
        for batch in self._table.to_batches():
            yield from batch.to_pylist()

    def __repr__(self):
        return f"Dataset(num_rows={self.num_rows}, columns={self.column_names}, fingerprint={self._fingerprint[:8]})"

    def to_pandas(self):
        return self._table.to_pandas()

    def to_arrow(self) -> pa.Table:
        return self._table

    def _derive(self, table, fp, name, quarantined=0, extra_steps=()):
        st = _step(name, self.num_rows, table.num_rows, quarantined)
        return Dataset(table, fp, cache_dir=self._cache_dir if self._cache_dir is not None else False,
                       steps=self._steps + [*extra_steps, st], read=self._read + (st["read"] - self.num_rows),
                       cache_files=self.cache_files)

    def _cached(self, name, compute, fn=None, **args):
        """Run `compute() -> (table, quarantined)` unless the cache holds this step's result."""
        fp = fpr.of_step(self._fingerprint, name, fn, **args)
        if self._cache_dir is not None and (hit := fpr.load(self._cache_dir, fp)) is not None:
            table, info = hit
            ds = self._derive(table, fp, name, info["quarantined"])
            ds.cache_hit = True
            ds.cache_files = self.cache_files + [str(self._cache_dir / f"{fp}.arrow")]
            return ds
        table, quarantined = compute()
        ds = self._derive(table, fp, name, quarantined)
        if self._cache_dir is not None:
            path = fpr.save(self._cache_dir, fp, table, {"quarantined": quarantined})
            ds._table = fpr.load(self._cache_dir, fp)[0]  # memory-mapped: the heap copy can go
            ds.cache_files = self.cache_files + [str(path)]
        return ds

    def cleanup_cache_files(self) -> int:
        """Delete the cache files this dataset's chain wrote; returns how many."""
        n = 0
        for f in self.cache_files:
            for p in (Path(f), Path(f).with_suffix(".json")):
                if p.exists():
                    p.unlink()
                    n += p.suffix == ".arrow"
        self.cache_files = []
        return n

    def report(self) -> dict:
        """{"read", "kept", "quarantined", "filtered", "steps": [...]}: read = kept + quarantined + filtered."""
        q = sum(s["quarantined"] for s in self._steps)
        f = sum(s["filtered"] for s in self._steps)
        return {"read": self._read, "kept": self.num_rows, "quarantined": q, "filtered": f,
                "steps": [dict(s) for s in self._steps]}

    # ---- transforms ----------------------------------------------------------------------------
    def map(self, function, batched: bool = False, batch_size: int = 1000, num_proc: int | None = None,
            remove_columns=None, fn_kwargs=None, batch_format: str = "dict"):
        """HF datasets' map: `function(row)` or, batched, `function(batch)` with a dict of lists
        (batch_format="dict") or a pyarrow.Table ("arrow"); it returns a dict of new/updated columns
        (or a table). A batched function may return more or fewer rows than it got."""
        if batch_format not in ("dict", "arrow"):
            raise ValueError(f"batch_format must be 'dict' or 'arrow', got {batch_format!r}")
        remove = [remove_columns] if isinstance(remove_columns, str) else list(remove_columns or [])
        kw = dict(fn_kwargs or {})

        def compute():
            bs = batch_size if batched else 1000
            spans = [(i, min(i + bs, self.num_rows)) for i in range(0, self.num_rows, bs)] or [(0, 0)]
            parts = _run_spans(self._table, spans, _map_span, (function, batched, batch_format, remove, kw), num_proc)
            return pa.concat_tables(parts, promote_options="default"), 0

        return self._cached("map", compute, function, batched=batched, batch_size=batch_size,
                            remove=remove, kw=kw, fmt=batch_format)

    def filter(self, function, batched: bool = False, batch_size: int = 1000, num_proc: int | None = None,
               fn_kwargs=None):
        """Keep rows where `function(row)` (or, batched, `function(batch)[i]`) is true. A
        pyarrow.compute.Expression is evaluated by Arrow directly."""
        kw = dict(fn_kwargs or {})

        def compute():
            if isinstance(function, pc.Expression):
                return self._table.filter(function), 0
            spans = [(i, min(i + batch_size, self.num_rows)) for i in range(0, self.num_rows, batch_size)] or [(0, 0)]
            masks = _run_spans(self._table, spans, _filter_span, (function, batched, kw), num_proc)
            mask = np.concatenate([np.asarray(m, bool) for m in masks]) if masks else np.zeros(0, bool)
            if len(mask) != self.num_rows:
                raise ValueError(f"filter: the function gave {len(mask)} booleans for {self.num_rows} rows")
            return self._table.filter(pa.array(mask)), 0

        fn_id = str(function) if isinstance(function, pc.Expression) else function
        return self._cached("filter", compute, fn_id, batched=batched, kw=kw)

    def select_columns(self, columns):
        columns = [columns] if isinstance(columns, str) else list(columns)
        missing = [c for c in columns if c not in self.column_names]
        if missing:
            raise ValueError(f"select_columns: no column {missing}; columns are {self.column_names}")
        return self._derive(self._table.select(columns), fpr.of_step(self._fingerprint, "select", None, c=columns),
                            "select_columns")

    def remove_columns(self, columns):
        columns = [columns] if isinstance(columns, str) else list(columns)
        return self.select_columns([c for c in self.column_names if c not in columns])

    def rename(self, mapping: dict):
        missing = [c for c in mapping if c not in self.column_names]
        if missing:
            raise ValueError(f"rename: no column {missing}; columns are {self.column_names}")
        names = [mapping.get(c, c) for c in self.column_names]
        fp = fpr.of_step(self._fingerprint, "rename", None, m=mapping)
        return self._derive(self._table.rename_columns(names), fp,
                            "rename")

    rename_columns = rename

    def rename_column(self, original: str, new: str):
        return self.rename({original: new})

    def cast(self, schema):
        """Cast columns: a pyarrow.Schema, or a dict column -> "int64"/"float64"/"string"/"bool"/"timestamp"
        or a pyarrow type. A value that cannot be cast raises naming the column (validate() quarantines)."""
        if isinstance(schema, pa.Schema):
            types = {f.name: f.type for f in schema}
        else:
            types = {k: TYPES[v] if isinstance(v, str) else v for k, v in schema.items()}
        fields = []
        for f in self._table.schema:
            fields.append(pa.field(f.name, types.pop(f.name, f.type)))
        if types:
            raise ValueError(f"cast: no column {sorted(types)}; columns are {self.column_names}")

        def compute():
            cols = []
            for f, col in zip(fields, self._table.columns):
                try:
                    cols.append(col.cast(f.type))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise ValueError(f"cast: column {f.name!r} to {f.type}: {e}") from None
            return pa.table(cols, schema=pa.schema(fields)), 0

        return self._cached("cast", compute, None, schema=str(pa.schema(fields)))

    def sql(self, query: str, **tables):
        """Run DuckDB SQL with this dataset as `data` (and other Datasets/tables as named keyword args)."""
        def compute():
            con = duckdb.connect()
            con.register("data", self._table)
            for name, t in tables.items():
                con.register(name, t.data if isinstance(t, Dataset) else t)
            return con.sql(query).to_arrow_table(), 0

        others = {k: (v.fingerprint if isinstance(v, Dataset) else fpr.of_table(v)) for k, v in tables.items()}
        return self._cached("sql", compute, query, others=others)

    def shuffle(self, seed: int | None = None):
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % (2**32))
        perm = np.random.default_rng(seed).permutation(self.num_rows)
        return self._cached("shuffle", lambda: (self._table.take(pa.array(perm)), 0), None, seed=seed)

    def select(self, indices):
        idx = np.asarray(list(indices) if not isinstance(indices, np.ndarray) else indices, np.int64)
        return self._derive(self._table.take(pa.array(idx)),
                            fpr.of_step(self._fingerprint, "select", None, idx=fpr._h(idx.tobytes())), "select")

    def train_test_split(self, test_size=0.25, seed: int | None = None, stratify_by_column: str | None = None,
                         shuffle: bool = True) -> dict:
        """{"train": Dataset, "test": Dataset}. test_size: a fraction or a row count. With a stratify
        column each class contributes round(share * class size) rows to the test split (largest remainders
        first so the total is exact)."""
        n = self.num_rows
        n_test = int(np.ceil(test_size * n)) if isinstance(test_size, float) else int(test_size)
        if not 0 < n_test < n:
            raise ValueError(f"test_size={test_size} leaves an empty split of a dataset of {n} rows")
        rng = np.random.default_rng(seed)
        if stratify_by_column is None:
            order = rng.permutation(n) if shuffle else np.arange(n)
            test, train = order[:n_test], order[n_test:]
        else:
            labels = np.asarray(self._table[stratify_by_column].to_pylist(), dtype=object)
            classes, y = np.unique(labels.astype(str), return_inverse=True)
            counts = np.bincount(y)
            exact = counts * n_test / n
            take = np.floor(exact).astype(int)
            rest = n_test - take.sum()
            take[np.argsort(-(exact - take), kind="stable")[:rest]] += 1
            test, train = [], []
            for c in range(len(classes)):
                idx = np.flatnonzero(y == c)
                idx = rng.permutation(idx) if shuffle else idx
                test.append(idx[:take[c]])
                train.append(idx[take[c]:])
            test = rng.permutation(np.concatenate(test)) if shuffle else np.sort(np.concatenate(test))
            train = rng.permutation(np.concatenate(train)) if shuffle else np.sort(np.concatenate(train))
        out = {}
        for name, idx in (("train", train), ("test", test)):
            fp = fpr.of_step(self._fingerprint, "split", None, part=name, idx=fpr._h(np.asarray(idx).tobytes()))
            out[name] = self._derive(self._table.take(pa.array(np.asarray(idx, np.int64))), fp, f"split:{name}")
        return out

    def validate(self, schema: Schema, quarantine: str | os.PathLike | None = None):
        """Rows that fail `schema` go to the Parquet file `quarantine` with `_row` (the row's index here)
        and `_reason`; the rest are kept, cast to the schema's types. Never a silent drop."""
        if not isinstance(schema, Schema):
            raise TypeError(f"validate expects an rtx.etl.Schema, got {type(schema).__name__}")
        holder = {}

        def compute():
            good, bad = check(self._table, schema)
            holder["bad"] = bad
            return good, bad.num_rows

        ds = self._cached("validate", compute, None, schema=json.dumps(schema.to_dict(), sort_keys=True, default=str))
        if quarantine is not None:
            bad = holder.get("bad")
            if bad is None:  # a cache hit: the quarantined rows are recomputed (only they were not stored)
                bad = check(self._table, schema)[1]
            Path(quarantine).parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(bad, str(quarantine))
        return ds

    def dedup(self, columns=None):
        """Drop exact duplicate rows (on `columns`, default all), keeping the first occurrence in order.
        Exact: DuckDB compares the values themselves (NULL equals NULL, as pandas' drop_duplicates)."""
        cols = self.column_names if columns is None else ([columns] if isinstance(columns, str) else list(columns))

        def compute():
            con = duckdb.connect()
            con.register("t", self._table.append_column("__rid", pa.array(np.arange(self.num_rows))))
            keys = ", ".join(f'"{c}"' for c in cols)
            rid = con.sql(f"SELECT min(__rid) AS r FROM t GROUP BY {keys} ORDER BY r").to_arrow_table()["r"]
            return self._table.take(rid), 0

        return self._cached("dedup", compute, None, cols=cols)

    def near_dedup(self, column: str, threshold: float = 0.8, num_perm: int = 128, ngram: int = 5, seed: int = 0):
        """Drop rows whose `column` text is a near duplicate (MinHash LSH, estimated Jaccard of character
        n-grams >= threshold) of an earlier row."""
        def compute():
            keep = _dedup.near_duplicates(self._table[column].to_pylist(), threshold, num_perm, ngram, seed)
            return self._table.filter(pa.array(keep)), 0

        return self._cached("near_dedup", compute, None, column=column, threshold=threshold, num_perm=num_perm,
                            ngram=ngram, seed=seed)

    def concat(self, *others):
        return concatenate_datasets([self, *others])

    def join(self, other, on, how: str = "inner", suffix: str = "_right"):
        """SQL join through DuckDB; `on` is a column or list of columns present in both. Row order: this
        dataset's order, then the other's."""
        if how not in ("inner", "left", "right", "full", "outer"):
            raise ValueError(f"join: how must be inner/left/right/full, got {how!r}")
        on = [on] if isinstance(on, str) else list(on)
        right = other.data if isinstance(other, Dataset) else other

        def compute():
            con = duckdb.connect()
            con.register("l", self._table.append_column("__l", pa.array(np.arange(self.num_rows))))
            con.register("r", right.append_column("__r", pa.array(np.arange(right.num_rows))))
            lcols = [f'l."{c}"' if c not in on else f'COALESCE(l."{c}", r."{c}") AS "{c}"' for c in self.column_names]
            rcols = [f'r."{c}" AS "{c + suffix if c in self.column_names else c}"' for c in right.column_names
                     if c not in on]
            cond = " AND ".join(f'l."{c}" = r."{c}"' for c in on)
            kind = "FULL OUTER" if how in ("full", "outer") else how.upper()
            q = f"SELECT {', '.join(lcols + rcols)} FROM l {kind} JOIN r ON {cond} ORDER BY l.__l NULLS LAST, r.__r"
            return con.sql(q).to_arrow_table(), 0

        ofp = other.fingerprint if isinstance(other, Dataset) else fpr.of_table(right)
        return self._cached("join", compute, None, other=ofp, on=on, how=how, suffix=suffix)

    # ---- outputs (rtx.etl.outputs does the writing) ------------------------------------------------
    def to_parquet(self, directory, rows_per_shard: int = 100_000, row_group_size: int | None = None):
        from rtx.etl.outputs import write_parquet_shards
        return write_parquet_shards(self._table, directory, rows_per_shard, row_group_size)

    def to_tar_shards(self, directory, rows_per_shard: int = 10_000, key_column: str | None = None):
        from rtx.etl.outputs import write_tar_shards
        return write_tar_shards(self._table, directory, rows_per_shard, key_column)

    def to_safetensors(self, path, columns=None):
        from rtx.etl.outputs import write_safetensors
        return write_safetensors(self._table if columns is None else self._table.select(columns), path)

    def to_iterable_dataset(self, **kwargs):
        from rtx.etl.outputs import ShardedIterableDataset
        return ShardedIterableDataset([self._table], **kwargs)


def concatenate_datasets(datasets: list[Dataset]) -> Dataset:
    if not datasets:
        raise ValueError("concatenate_datasets needs at least one dataset")
    first = datasets[0].schema
    for i, d in enumerate(datasets[1:], 1):
        if d.schema.names != first.names:
            raise ValueError(f"concatenate_datasets: dataset {i} has columns {d.schema.names}, dataset 0 has "
                             f"{first.names}")
    table = pa.concat_tables([d.data for d in datasets], promote_options="permissive")
    fp = fpr._h("concat", [d.fingerprint for d in datasets])
    steps = [dict(s, step=f"[{i}] {s['step']}") for i, d in enumerate(datasets) for s in d._steps]
    d0 = datasets[0]
    return Dataset(table, fp, cache_dir=d0._cache_dir if d0._cache_dir is not None else False,
                   steps=steps, read=sum(d._read for d in datasets),
                   cache_files=[f for d in datasets for f in d.cache_files])


# ---- worker side of map/filter: spans of the table, run in forked processes when num_proc > 1 --------
_SHARED = {}


def _as_batch(table, fmt):
    return table if fmt == "arrow" else table.to_pydict()


def _map_span(table, start, stop, function, batched, fmt, remove, kw):
    part = table.slice(start, stop - start)
    base = part.drop_columns([c for c in remove if c in part.column_names])
    if not batched:
        rows = [{**{k: v for k, v in r.items() if k not in remove}, **(function(r, **kw) or {})}
                for r in part.to_pylist()]
        return pa.Table.from_pylist(rows) if rows else base
    out = function(_as_batch(part, fmt), **kw)
    if out is None:
        return base
    if not isinstance(out, pa.Table):
        out = pa.table({k: v if isinstance(v, (pa.Array, pa.ChunkedArray)) else pa.array(list(v))
                        for k, v in out.items()})
    if out.num_rows != part.num_rows:
        return out  # a different row count: the function's columns alone (HF requires remove_columns here)
    for name in out.column_names:
        if name in base.column_names:
            base = base.set_column(base.column_names.index(name), name, out[name])
        else:
            base = base.append_column(name, out[name])
    return base


def _filter_span(table, start, stop, function, batched, kw):
    part = table.slice(start, stop - start)
    if batched:
        return np.asarray(function(part.to_pydict(), **kw), bool)
    return np.fromiter((bool(function(r, **kw)) for r in part.to_pylist()), bool, part.num_rows)


def _in_worker(i):
    table, spans, fn, args = _SHARED["job"]
    out = fn(table, *spans[i], *args)
    if isinstance(out, pa.Table):  # tables travel as Arrow IPC bytes
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, out.schema) as w:
            w.write_table(out)
        return sink.getvalue().to_pybytes()
    return out


def _run_spans(table, spans, fn, args, num_proc):
    if not num_proc or num_proc <= 1 or len(spans) == 1:
        return [fn(table, s, e, *args) for s, e in spans]
    import multiprocessing as mp
    # fork: the table and the (possibly lambda) function reach the workers without pickling
    _SHARED["job"] = (table, spans, fn, args)
    try:
        with mp.get_context("fork").Pool(num_proc) as pool:
            outs = pool.map(_in_worker, range(len(spans)))
    finally:
        _SHARED.pop("job", None)
    return [pa.ipc.open_stream(o).read_all() if isinstance(o, bytes) else o for o in outs]
