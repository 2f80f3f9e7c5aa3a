"""The offline store: point-in-time correct retrieval in DuckDB over the sources' Parquet/CSV files.

For each feature view, every entity row gets the source row with the same join keys and the latest timestamp
at or before the entity row's event timestamp (an ASOF join), provided it is no older than the view's ttl.
Rows with equal keys and timestamp are decided by the created timestamp, then by the later row in the file.
Nothing after the event timestamp can be chosen: the join condition is `source ts <= event ts`."""
from __future__ import annotations

import glob
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq


def connect():
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")  # TIMESTAMPTZ -> TIMESTAMP casts keep UTC wall time
    # Row order is never taken from a scan's output order here (entity rows carry __rid, source rows __row), so
    # DuckDB may write intermediate tables in any order: faster on the join's CREATE TABLE AS.
    con.execute("SET preserve_insertion_order=false")
    return con


def _arrow(con, query):
    rel = con.sql(query)  # a relation streams straight to Arrow (duckdb >= 2: to_arrow_table; 1.x: arrow)
    return rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()


def _q(name):
    return '"' + str(name).replace('"', '""') + '"'


def source_relation(con, fv, alias):
    """Register the view's source under `alias` with a `__row` column (file order, the last tie-break)."""
    _Source(con, fv.source, alias)
    return alias


def latest_rows_sql(fv, alias, where=""):
    """SQL of the source's rows with one row per (join keys, timestamp): the created-timestamp tie-break."""
    keys = ", ".join(_q(k) for k in fv.join_keys)
    ts = f"CAST({_q(fv.source.timestamp_field)} AS TIMESTAMP)"
    order = []
    if fv.source.created_timestamp_column:
        order.append(f"CAST({_q(fv.source.created_timestamp_column)} AS TIMESTAMP) DESC NULLS LAST")
    order.append("__row DESC")
    feats = ", ".join(_q(f.name) for f in fv.features)
    created = (f"CAST({_q(fv.source.created_timestamp_column)} AS TIMESTAMP)" if fv.source.created_timestamp_column
               else "NULL::TIMESTAMP")
    return (f"SELECT {keys}, {ts} AS __ts, {created} AS __created, {feats} FROM {alias} "
            f"WHERE {ts} IS NOT NULL {where} "
            f"QUALIFY row_number() OVER (PARTITION BY {keys}, {ts} ORDER BY {', '.join(order)}) = 1")


def parquet_files(path):
    """The Parquet files of a source path (a file, a folder, or a glob), in a fixed (sorted) order: the order
    that defines 'the later row' for ties across files."""
    p = Path(path)
    if p.is_dir():
        return sorted(str(f) for f in p.rglob("*.parquet"))
    if any(c in str(path) for c in "*?["):
        return sorted(glob.glob(str(path), recursive=True))
    return [str(path)]


class _Source:
    """One source as the historical join reads it: narrow key columns for DuckDB, feature columns gathered
    afterwards by row number (late materialization: the ASOF join sorts keys, never the feature payload)."""

    def __init__(self, con, src, alias):
        self.src, self.alias = src, alias
        if src.file_format == "csv":
            self.table = pacsv.read_csv(src.path)
            con.register(alias, self.table.append_column("__row", pa.array(np.arange(self.table.num_rows))))
            return
        self.table = None
        self.files = parquet_files(src.path)
        if not self.files:
            raise FileNotFoundError(f"FileSource {src.path!r}: no Parquet files")
        self.offsets = np.cumsum([0] + [pq.ParquetFile(f).metadata.num_rows for f in self.files])
        # One global row number across files: file order, then the row within the file.
        parts = [f"SELECT * EXCLUDE (file_row_number), file_row_number + {int(off)} AS __row "
                 f"FROM read_parquet('{f.replace(chr(39), chr(39) * 2)}', file_row_number=true)"
                 for f, off in zip(self.files, self.offsets)]
        con.execute(f"CREATE OR REPLACE TEMP VIEW {alias} AS {' UNION ALL '.join(parts)}")

    def distinct_keys_sample(self, key):
        """Distinct values of `key` in the first row group (or the whole CSV): a cheap lower bound on the
        source's distinct keys."""
        if self.table is not None:
            return pc.count_distinct(self.table.column(key)).as_py() if self.table.num_rows else 0
        for f in self.files:
            pf = pq.ParquetFile(f)
            if pf.num_row_groups and pf.metadata.row_group(0).num_rows:
                return pc.count_distinct(pf.read_row_group(0, columns=[key]).column(0)).as_py()
        return 0

    def gather(self, columns, rows):
        """Arrow table of `columns` at global row numbers `rows` (int64, -1 = no row: nulls)."""
        valid = rows >= 0
        picked = rows[valid]
        order = np.argsort(picked, kind="stable")
        sorted_rows = picked[order]
        if self.table is not None:
            taken = self.table.select(columns).take(pa.array(sorted_rows))
        else:
            parts = []
            for f, lo, hi in zip(self.files, self.offsets[:-1], self.offsets[1:]):
                a, b = np.searchsorted(sorted_rows, [lo, hi])
                if a == b:
                    continue
                pf = pq.ParquetFile(f)
                base = lo
                for g in range(pf.num_row_groups):  # one row group at a time: memory stays at one group
                    n = pf.metadata.row_group(g).num_rows
                    ga, gb = np.searchsorted(sorted_rows, [base, base + n])
                    if ga < gb:
                        parts.append(pf.read_row_group(g, columns=columns).take(pa.array(sorted_rows[ga:gb] - base)))
                    base += n
            schema = pq.read_schema(self.files[0])
            empty = pa.schema([schema.field(c) for c in columns]).empty_table()
            taken = pa.concat_tables(parts, promote_options="permissive") if parts else empty
        # taken[j] belongs to the j-th valid entity row in row-number order; put it back in entity order.
        where = np.full(len(rows), 0, dtype=np.int64)
        where[np.flatnonzero(valid)[order]] = np.arange(len(picked))
        return taken.take(pa.array(where, mask=~valid))


def historical(con, entity_table, ts_col, views):
    """`views`: [(FeatureView, [feature names], [output names])]. Returns an Arrow table: the entity rows in
    their order with the requested features appended.

    Per source (views over the same file and join keys share one join): the source's key columns, pruned to the
    entity rows' keys and time range, are ASOF-joined to the entity rows, giving each row the timestamp of its
    latest source row at or before its event time. Only where several source rows share that (keys, timestamp)
    does the created timestamp (then the row order) decide: a hash join of the picks back to the source, which
    replaces a window over every source row. The features are then read once, in file order, and taken by row
    number; ttl is a mask on the picked timestamp."""
    keys_needed = list(dict.fromkeys(k for fv, _, _ in views for k in fv.join_keys))
    n = entity_table.num_rows
    con.register("__entity_in", entity_table.select(keys_needed + [ts_col]).append_column(
        "__rid", pa.array(np.arange(n, dtype=np.int64))))
    con.execute(f"CREATE OR REPLACE TEMP TABLE __entity AS SELECT {', '.join(_q(k) for k in keys_needed)}, "
                f"__rid, CAST({_q(ts_col)} AS TIMESTAMP) AS __ets FROM __entity_in")
    lo, hi = con.execute("SELECT MIN(__ets), MAX(__ets) FROM __entity").fetchall()[0]
    ets = con.execute("SELECT epoch_us(__ets) FROM __entity ORDER BY __rid").fetchnumpy()
    ets = np.asarray(ets[next(iter(ets))])
    groups = {}
    for fv, names, outs in views:
        s = fv.source
        ident = (s.path, s.file_format, s.timestamp_field, s.created_timestamp_column, tuple(fv.join_keys))
        groups.setdefault(ident, []).append((fv, names, outs))
    out = entity_table
    for gi, members in enumerate(groups.values()):
        fv0 = members[0][0]
        src = _Source(con, fv0.source, f"__src{gi}")
        keys = ", ".join(_q(k) for k in fv0.join_keys)
        ts = f"CAST({_q(fv0.source.timestamp_field)} AS TIMESTAMP)"
        cr = fv0.source.created_timestamp_column
        created = f"CAST({_q(cr)} AS TIMESTAMP)" if cr else "NULL::TIMESTAMP"
        where = f"{ts} IS NOT NULL"
        if hi is not None:
            where += f" AND {ts} <= TIMESTAMP '{hi}'"
            ttls = [fv.ttl for fv, _, _ in members]
            if all(t is not None for t in ttls):  # older rows can never be fresh for any entity row
                where += f" AND {ts} >= TIMESTAMP '{lo}' - to_microseconds({int(round(max(ttls) * 1e6))})"
        # Source rows of requested keys only (a semi join), when that surely drops at least half of them: the
        # ASOF join then sorts only what can match. When the entity rows ask for most keys, the probe would cost
        # more than it saves.
        k0 = fv0.join_keys[0]
        wanted = con.execute(f"SELECT count(DISTINCT {_q(k0)}) FROM __entity").fetchall()[0][0]
        if wanted < 0.5 * src.distinct_keys_sample(k0):
            semi = " AND ".join(f"x.{_q(k)} = e.{_q(k)}" for k in fv0.join_keys)
            where += f" AND EXISTS (SELECT 1 FROM __entity e WHERE {semi})"
        con.execute(f"CREATE OR REPLACE TEMP TABLE __sn AS SELECT {keys}, {ts} AS __ts, {created} AS __c, __row "
                    f"FROM {src.alias} x WHERE {where}")
        on = " AND ".join(f"e.{_q(k)} = s.{_q(k)}" for k in fv0.join_keys)
        ekeys = ", ".join("e." + _q(k) for k in fv0.join_keys)
        con.execute(f"CREATE OR REPLACE TEMP TABLE __pick AS SELECT e.__rid, {ekeys}, s.__ts, s.__row "
                    f"FROM __entity e ASOF JOIN __sn s ON {on} AND e.__ets >= s.__ts")
        # Ties: the ASOF join picked one of the rows with the winning (keys, ts); the latest created timestamp
        # (nulls lowest), then the later row, decides among them.
        tie_on = " AND ".join(f"s.{_q(k)} = p.{_q(k)}" for k in fv0.join_keys)
        got = con.execute(
            f"SELECT p.__rid, epoch_us(p.__ts) AS ts, arg_max(s.__row, (coalesce(s.__c, '-infinity'::TIMESTAMP), "
            f"s.__row)) AS row FROM __pick p JOIN __sn s ON {tie_on} AND s.__ts = p.__ts "
            f"GROUP BY p.__rid, p.__ts").fetchnumpy()
        rid = np.asarray(got["__rid"], dtype=np.int64)
        pick_ts = np.zeros(n, dtype=np.int64)
        pick_row = np.full(n, -1, dtype=np.int64)
        pick_ts[rid] = np.asarray(got["ts"], dtype=np.int64)
        pick_row[rid] = np.asarray(got["row"], dtype=np.int64)
        names = list(dict.fromkeys(n for _, ns, _ in members for n in ns))
        taken = src.gather(names, pick_row)  # the file's feature columns are read once for all these views
        for fv, ns, outs in members:
            fresh = None
            if fv.ttl is not None:  # inclusive: a row exactly ttl old is still fresh
                fresh = pa.array((pick_row < 0) | (pick_ts >= ets - int(round(fv.ttl * 1e6))))
            for name, o in zip(ns, outs):
                col = taken.column(name)
                if fresh is not None:
                    col = pc.if_else(fresh, col, pa.scalar(None, col.type))
                out = out.append_column(o, col)
    return out


def latest_per_entity(con, fv, start, end):
    """For materialization: the newest row per entity key with start <= timestamp < end (naive UTC datetimes).
    Returns an Arrow table of join keys, __ts, __created and the features."""
    alias = source_relation(con, fv, "__mat")
    ts = f"CAST({_q(fv.source.timestamp_field)} AS TIMESTAMP)"
    where = f"AND {ts} >= TIMESTAMP '{start}' AND {ts} < TIMESTAMP '{end}'"
    keys = ", ".join(_q(k) for k in fv.join_keys)
    return _arrow(con, f"SELECT * FROM ({latest_rows_sql(fv, alias, where)}) "
                       f"QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY __ts DESC) = 1")
