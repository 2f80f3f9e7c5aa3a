"""Pipeline: declared steps run by partitions, locally (streaming, bounded memory) or on Dask distributed.

    Pipeline([
        {"op": "read_csv", "paths": "raw/*.csv", "partition_bytes": 32 << 20},
        {"op": "validate", "schema": {"age": {"dtype": "int64", "min": 0}}, "quarantine": "out/bad"},
        {"op": "sql", "query": "SELECT *, age / 10 AS decade FROM data WHERE age > 0"},
        {"op": "dedup", "columns": ["id"]},
        {"op": "write_parquet", "dir": "out/shards", "rows_per_shard": 100000},
    ]).run(engine="local")          # or engine="dask", address="tcp://scheduler:8786"

A partition is a byte range of a CSV file (cut at a newline outside quotes, so a quoted field holding
newlines stays whole; `quote_char = false` for files without quoting) or a whole Parquet/JSON file.
Steps before `dedup` are row-local and run per partition; locally, partition i + 1 is read and validated
on a second thread while partition i is deduplicated and written. Dedup is global: locally a set of
64-bit row keys carried across partitions, on Dask a hash shuffle of (key, position) into buckets that
keep each key's earliest position. Both keep the same rows, and partition i's surviving rows are written
to `part-<i>-<j>.parquet` by either engine, so the local and the Dask runs produce identical files. `sql`
here must be row-local (WHERE, computed columns); aggregates belong in Dataset.sql. The report counts
every row: read = kept + quarantined + filtered, overall and per step.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from rtx.etl import _duckdb, readers
from rtx.etl import dedup as _dedup
from rtx.etl.outputs import PARQUET_OPTIONS
from rtx.etl.validate import TYPES, Schema, check

SOURCES = ("read_csv", "read_parquet", "read_json")
ROW_STEPS = ("validate", "sql", "select_columns", "rename", "cast")
SINKS = ("write_parquet",)


def _schema(step) -> Schema:
    return Schema.from_dict(step["schema"])


def _quote(src_step) -> bytes | None:
    q = src_step.get("quote_char", '"')
    return q.encode() if q else None


def _csv_partitions(path: str, partition_bytes: int, quote: bytes | None = b'"', block: int = 1 << 20):
    """Byte ranges of whole records. A cut goes after the first newline at or past its target that lies
    outside quotes: the quote characters from the file's start up to that newline are even in number
    (an escaped quote "" counts twice, so the parity still tells inside from outside). The first cut
    ends the header. One sequential pass that only counts quote bytes."""
    size = os.path.getsize(path)
    cuts, quoted = [], []      # record boundaries; whether the range before each cut holds a quote
    target, parity, has_q = 0, 0, False
    with open(path, "rb") as f:
        off = 0
        while off < size:
            buf = f.read(block)
            i = 0              # parity counts buf[:i]
            q = quote if quote and quote in buf else None  # `in` is a memchr: most blocks hold no quote
            t = max(target - off, 0)
            while t < len(buf) and (j := buf.find(b"\n", t)) >= 0:
                if q:
                    n = buf.count(q, i, j)
                    parity, has_q, i = parity ^ (n & 1), has_q or n > 0, j
                if parity == 0:  # outside quotes: a record ends here
                    cuts.append(off + j + 1)
                    quoted.append(has_q)
                    target, has_q = off + j + 1 + partition_bytes, False
                    t = max(target - off, j + 1)
                else:
                    t = j + 1
            if q:
                n = buf.count(q, i)
                parity, has_q = parity ^ (n & 1), has_q or n > 0
            off += len(buf)
    if not cuts:  # a header without a newline: no rows
        return []
    if cuts[-1] < size:
        cuts.append(size)
        quoted.append(has_q)
    return [{"kind": "csv", "path": path, "header": cuts[0], "start": s, "end": e, "quoted": q}
            for s, e, q in zip(cuts[:-1], cuts[1:], quoted[1:])]


def _read_partition(p, src_step, string_cols) -> pa.Table:
    if p["kind"] == "csv":
        # header and body in one buffer, read in place (no second copy of the range)
        data = bytearray(p["header"] + p["end"] - p["start"])
        with open(p["path"], "rb") as f:
            f.readinto(memoryview(data)[:p["header"]])
            f.seek(p["start"])
            f.readinto(memoryview(data)[p["header"]:])
        types = {c: pa.string() for c in string_cols}
        types.update({k: TYPES[v] for k, v in (src_step.get("column_types") or {}).items()})
        quote = _quote(src_step)
        bad = []

        def on_bad(row):
            bad.append(row)
            return "error"

        def parse(use_threads):
            # newlines_in_values costs a slower chunker: only where the range holds a quote at all
            return pcsv.read_csv(pa.BufferReader(pa.py_buffer(data)),
                                 read_options=pcsv.ReadOptions(use_threads=use_threads),
                                 parse_options=pcsv.ParseOptions(delimiter=src_step.get("delimiter", ","),
                                                                 quote_char=quote.decode() if quote else False,
                                                                 newlines_in_values=p["quoted"],
                                                                 invalid_row_handler=on_bad),
                                 convert_options=pcsv.ConvertOptions(column_types=types))
        try:
            return parse(True)
        except pa.ArrowInvalid as e:
            if bad:  # the threaded reader does not number rows: read again on one thread for the line
                bad.clear()
                try:
                    parse(False)
                except pa.ArrowInvalid:
                    pass
            if bad:
                with open(p["path"], "rb") as f:
                    before = f.read(p["start"]).count(b"\n")
                r = bad[0]
                raise ValueError(f"{p['path']}: line {before + r.number - 1}: expected "
                                 f"{r.expected_columns} columns, got {r.actual_columns}: {r.text[:200]!r}") from None
            raise ValueError(f"{p['path']} (bytes {p['start']}-{p['end']}): {e}") from None
    if p["kind"] == "parquet":
        return readers.read_parquet(p["path"])
    return readers.read_json(p["path"])


def _row_steps(table: pa.Table, steps, index: int, counts: list, defer: bool = False):
    """Apply row-local steps; counts[k] accumulates [in, out, quarantined] of step k. Returns (table, sel):
    sel is None, or with defer=True and a validate step last, the mask of the rows that passed it (the
    table still holds every row: the caller filters once for validation and dedup together)."""
    sel = None
    for k, step in steps:
        n_in, q = table.num_rows, 0
        op = step["op"]
        if op == "validate":
            if defer and k == steps[-1][0]:
                table, bad, sel = check(table, _schema(step), select=False)
            else:
                table, bad = check(table, _schema(step))
            q = bad.num_rows
            if step.get("quarantine") and q:
                d = Path(step["quarantine"])
                d.mkdir(parents=True, exist_ok=True)
                pq.write_table(bad.append_column("_partition", pa.array(np.full(q, index), pa.int64())),
                               str(d / f"part-{index:05d}.parquet"), **PARQUET_OPTIONS)
        elif op == "sql":
            table = _duckdb.query(step["query"], data=table)
        elif op == "select_columns":
            table = table.select(step["columns"])
        elif op == "rename":
            table = table.rename_columns([step["mapping"].get(c, c) for c in table.column_names])
        elif op == "cast":
            table = table.cast(pa.schema([pa.field(f.name, TYPES.get(step["types"].get(f.name), f.type))
                                          for f in table.schema]))
        n_out = table.num_rows if sel is None else int(sel.sum())
        counts[k] = [a + b for a, b in zip(counts[k], (n_in, n_out, q))]
    return table, sel


class Pipeline:
    def __init__(self, steps: list[dict]):
        if not steps or steps[0].get("op") not in SOURCES:
            raise ValueError(f"a pipeline starts with a source step {SOURCES}, got {steps[:1]}")
        for s in steps[1:]:
            if s.get("op") not in (*ROW_STEPS, "dedup", *SINKS):
                raise ValueError(f"unknown step op {s.get('op')!r}; known: {[*ROW_STEPS, 'dedup', *SINKS]}")
        if sum(s["op"] == "dedup" for s in steps) > 1:
            raise ValueError("a pipeline has at most one dedup step")
        self.steps = [dict(s) for s in steps]
        self.source = self.steps[0]
        body = list(enumerate(self.steps))[1:]
        cut = next((i for i, (_, s) in enumerate(body) if s["op"] == "dedup"), len(body))
        self.before = [(k, s) for k, s in body[:cut] if s["op"] in ROW_STEPS]
        self.dedup = body[cut] if cut < len(body) else None
        self.after = [(k, s) for k, s in body[cut + 1:] if s["op"] in ROW_STEPS]
        self.sink = next((s for s in self.steps if s["op"] in SINKS), None)
        first_validate = next((s for _, s in self.before if s["op"] == "validate"), None)
        # validated columns are read as text: validate() casts them row by row and quarantines what fails
        self.string_cols = list(_schema(first_validate).columns) if first_validate else []

    def partitions(self) -> list[dict]:
        src = self.source
        files = readers.expand(src["paths"])
        if src["op"] == "read_csv":
            parts = []
            for f in files:
                parts += _csv_partitions(f, int(src.get("partition_bytes", 32 << 20)), _quote(src))
            return parts
        return [{"kind": src["op"].removeprefix("read_"), "path": f} for f in files]

    # stage 1: read a partition and run the row-local steps before dedup
    def _stage1(self, index, part):
        counts = {k: [0, 0, 0] for k, _ in self.before}
        t = _read_partition(part, self.source, self.string_cols)
        n_read = t.num_rows
        t, sel = _row_steps(t, self.before, index, counts, defer=self.dedup is not None)
        keys = _dedup.row_keys(t, self.dedup[1].get("columns") or t.column_names) if self.dedup else None
        if sel is not None:
            keys = keys[sel]  # the keys of the rows that passed validation, in order
        return (t, sel), keys, n_read, counts

    # stage 3: drop the duplicates, run the steps after dedup, write partition `index`'s shards
    def _stage3(self, index, t_sel, keep):
        counts = {k: [0, 0, 0] for k, _ in self.after}
        t, sel = t_sel
        n_dedup_in = t.num_rows if sel is None else int(sel.sum())
        if sel is not None:     # validation's rows and dedup's in one filter: keep is over the rows in sel
            if keep is not None:
                sel = sel.copy()
                sel[sel] = keep
            t = t.filter(pa.array(sel))
        elif keep is not None:
            t = t.filter(pa.array(keep))
        n_dedup_out = t.num_rows
        t = _row_steps(t, self.after, index, counts)[0]
        paths = []
        if self.sink is not None:
            from rtx.etl.outputs import write_parquet_shards
            if t.num_rows:
                paths = write_parquet_shards(t, self.sink["dir"], int(self.sink.get("rows_per_shard", 100_000)),
                                             prefix=f"part-{index:05d}")
        return (n_dedup_in, n_dedup_out), counts, paths, t.num_rows

    def run(self, engine: str = "local", address=None, client=None, progress=None) -> dict:
        if self.sink is not None:
            d = Path(self.sink["dir"])
            d.mkdir(parents=True, exist_ok=True)
            stale = list(d.glob("part-*.parquet"))
            if stale and not self.sink.get("overwrite", True):
                raise FileExistsError(f"{d} already holds shards; set overwrite = true")
            for p in stale:
                p.unlink()
        parts = self.partitions()
        if engine == "local":
            results = self._run_local(parts, progress)
        elif engine == "dask":
            results = self._run_dask(parts, address, client)
        else:
            raise ValueError(f"engine must be 'local' or 'dask', got {engine!r}")
        return self._report(results)

    def _run_local(self, parts, progress):
        seen = _dedup.SeenKeys() if self.dedup else None
        out = []
        # while partition i is deduplicated and written, partition i + 1 is read and validated on a second
        # thread (Arrow and DuckDB release the GIL): two partitions in memory at most. With Arrow held to
        # one CPU (pyarrow.set_cpu_count(1)) the pipeline keeps to one thread too.
        pool = ThreadPoolExecutor(1) if pa.cpu_count() > 1 else None
        stage1 = (lambda i: pool.submit(self._stage1, i, parts[i])) if pool else \
            (lambda i: _Done(self._stage1(i, parts[i])))
        try:
            nxt = stage1(0) if parts else None
            for i in range(len(parts)):
                t, keys, n_read, c1 = nxt.result()
                nxt = stage1(i + 1) if i + 1 < len(parts) else None
                keep = seen.first_new(keys) if seen is not None else None
                out.append((n_read, c1, *self._stage3(i, t, keep)))
                del t, keys
                pa.default_memory_pool().release_unused()  # hand freed pages back: RSS follows the live data
                if progress:
                    progress(i + 1, len(parts))
        finally:
            if pool:
                pool.shutdown(cancel_futures=True)
        return out

    def _run_dask(self, parts, address, client):
        from dask.distributed import Client
        own = client is None
        client = client or Client(address)
        try:
            s1 = [client.submit(self._stage1, i, p, pure=False) for i, p in enumerate(parts)]
            keeps = [None] * len(parts)
            if self.dedup:
                nb = max(1, min(len(parts), 16))
                keys = [client.submit(lambda r: r[1], f) for f in s1]
                buckets = [client.submit(_bucket_keep, b, nb, *keys) for b in range(nb)]
                keeps = [client.submit(_partition_keep, i, len(parts), *keys, *buckets) for i in range(len(parts))]
            s3 = [client.submit(lambda r, i, k: self._stage3(i, r[0], k), f, i, k) for i, (f, k) in
                  enumerate(zip(s1, keeps))]
            meta = client.gather([client.submit(lambda r: (r[2], r[3]), f) for f in s1])
            res = client.gather(s3)
            return [(m[0], m[1], *r) for m, r in zip(meta, res)]
        finally:
            if own:
                client.close()

    def _report(self, results) -> dict:
        steps = {k: [0, 0, 0] for k in range(1, len(self.steps))}
        read, outputs, kept = 0, [], 0
        for n_read, c1, dd, c3, paths, n_kept in results:
            read += n_read
            for k, v in (*c1.items(), *c3.items()):
                steps[k] = [a + b for a, b in zip(steps[k], v)]
            if self.dedup:
                steps[self.dedup[0]] = [a + b for a, b in zip(steps[self.dedup[0]], (dd[0], dd[1], 0))]
            outputs += paths
            kept += n_kept
        rows = [{"step": self.source["op"], "read": read, "kept": read, "quarantined": 0, "filtered": 0}]
        created_total = 0
        for k in sorted(steps):
            if self.steps[k]["op"] in SINKS:
                continue
            n_in, n_out, q = steps[k]
            created = max(0, n_out + q - n_in)  # a step that makes rows (sql with UNNEST) reads them there
            created_total += created
            rows.append({"step": self.steps[k]["op"], "read": n_in + created, "kept": n_out, "quarantined": q,
                         "filtered": max(0, n_in - n_out - q)})
        return {"read": read + created_total, "kept": kept, "quarantined": sum(r["quarantined"] for r in rows),
                "filtered": sum(r["filtered"] for r in rows), "steps": rows, "partitions": len(results),
                "outputs": sorted(outputs)}


class _Done:
    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def _bucket_keep(b, nb, *keys_per_partition):
    """For bucket b: the (partition, row) positions that hold the first occurrence of each key."""
    ks, ps, rs = [], [], []
    for i, k in enumerate(keys_per_partition):
        sel = np.flatnonzero(k % np.uint64(nb) == np.uint64(b))
        ks.append(k[sel])
        ps.append(np.full(len(sel), i, np.int64))
        rs.append(sel.astype(np.int64))
    k, p, r = np.concatenate(ks), np.concatenate(ps), np.concatenate(rs)
    order = np.lexsort((r, p, k))          # by key, then position: the first of each key run is the earliest
    k, p, r = k[order], p[order], r[order]
    first = np.ones(len(k), bool)
    first[1:] = k[1:] != k[:-1]
    return p[first], r[first]


def _partition_keep(i, nparts, *args):
    """Partition i's mask of rows to keep; args = every partition's keys, then every bucket's decision."""
    keys, buckets = args[:nparts], args[nparts:]
    keep = np.zeros(len(keys[i]), bool)
    for p, r in buckets:
        keep[r[p == i]] = True
    return keep
