"""The offline store: point-in-time correct retrieval in DuckDB over the sources' Parquet/CSV files.

For each feature view, every entity row gets the source row with the same join keys and the latest timestamp
at or before the entity row's event timestamp (an ASOF join), provided it is no older than the view's ttl.
Rows with equal keys and timestamp are decided by the created timestamp, then by the later row in the file.
Nothing after the event timestamp can be chosen: the join condition is `source ts <= event ts`."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv


def connect():
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")  # TIMESTAMPTZ -> TIMESTAMP casts keep UTC wall time
    return con


def _arrow(con, query):
    rel = con.sql(query)  # a relation streams straight to Arrow (duckdb >= 2: to_arrow_table; 1.x: arrow)
    return rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()


def _q(name):
    return '"' + str(name).replace('"', '""') + '"'


def source_relation(con, fv, alias):
    """Register the view's source under `alias` with a `__row` column (file order, the last tie-break)."""
    src = fv.source
    if src.file_format == "csv":
        t = pacsv.read_csv(src.path)
        t = t.append_column("__row", pa.array(np.arange(t.num_rows, dtype=np.int64)))
        con.register(alias, t)
    else:
        path = src.path.replace("'", "''")
        con.execute(f"CREATE OR REPLACE TEMP VIEW {alias} AS SELECT * EXCLUDE (file_row_number), "
                    f"file_row_number AS __row FROM read_parquet('{path}', file_row_number=true)")
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


def historical(con, entity_table, ts_col, views):
    """`views`: [(FeatureView, [feature names], [output names])]. Returns an Arrow table: the entity rows in
    their order with the requested features appended."""
    con.register("__entity_in", entity_table)
    con.execute(f"CREATE OR REPLACE TEMP TABLE __entity AS SELECT *, row_number() OVER () - 1 AS __rid, "
                f"CAST({_q(ts_col)} AS TIMESTAMP) AS __ets FROM __entity_in")
    lo, hi = con.execute("SELECT MIN(__ets), MAX(__ets) FROM __entity").fetchall()[0]
    selects, joins = [], []
    for i, (fv, names, outs) in enumerate(views):
        alias = source_relation(con, fv, f"__src{i}")
        # Prune the source to the entity rows' time range (plus ttl): the ASOF join then sorts less.
        where = ""
        if hi is not None:
            where = f"AND CAST({_q(fv.source.timestamp_field)} AS TIMESTAMP) <= TIMESTAMP '{hi}'"
            if fv.ttl is not None:
                where += (f" AND CAST({_q(fv.source.timestamp_field)} AS TIMESTAMP) >= "
                          f"TIMESTAMP '{lo}' - to_microseconds({int(round(fv.ttl * 1e6))})")
        on = " AND ".join(f"e.{_q(k)} = s.{_q(k)}" for k in fv.join_keys)
        fresh = "TRUE" if fv.ttl is None else f"s.__ts >= e.__ets - to_microseconds({int(round(fv.ttl * 1e6))})"
        cols = ", ".join(f"CASE WHEN {fresh} THEN s.{_q(n)} END AS {_q(o)}" for n, o in zip(names, outs))
        con.execute(f"CREATE OR REPLACE TEMP TABLE __fv{i} AS SELECT e.__rid, {cols} FROM __entity e "
                    f"ASOF LEFT JOIN ({latest_rows_sql(fv, alias, where)}) s ON {on} AND e.__ets >= s.__ts")
        selects.append(", ".join(f"f{i}.{_q(o)}" for o in outs))
        joins.append(f"LEFT JOIN __fv{i} f{i} ON f{i}.__rid = e.__rid")
    sel = ", ".join(["e.* EXCLUDE (__rid, __ets)"] + selects)
    return _arrow(con, f"SELECT {sel} FROM __entity e {' '.join(joins)} ORDER BY e.__rid")


def latest_per_entity(con, fv, start, end):
    """For materialization: the newest row per entity key with start <= timestamp < end (naive UTC datetimes).
    Returns an Arrow table of join keys, __ts, __created and the features."""
    alias = source_relation(con, fv, "__mat")
    ts = f"CAST({_q(fv.source.timestamp_field)} AS TIMESTAMP)"
    where = f"AND {ts} >= TIMESTAMP '{start}' AND {ts} < TIMESTAMP '{end}'"
    keys = ", ".join(_q(k) for k in fv.join_keys)
    return _arrow(con, f"SELECT * FROM ({latest_rows_sql(fv, alias, where)}) "
                       f"QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY __ts DESC) = 1")
