"""One DuckDB connection per thread and process, reused: opening one costs about 0.1 s here, more than
hashing a whole partition's keys. Connections are not shared between threads (DuckDB's rule), nor
carried over a fork (map(num_proc=) forks; a child opens its own)."""
from __future__ import annotations

import os
import threading

import duckdb
import pyarrow as pa

_local = threading.local()


def connection() -> duckdb.DuckDBPyConnection:
    pid, con = getattr(_local, "con", (None, None))
    if pid != os.getpid():
        con = duckdb.connect()
        con.execute(f"SET threads = {max(1, pa.cpu_count())}")  # the thread budget Arrow was given
        _local.con = (os.getpid(), con)
    return con


def query(sql: str, **tables: pa.Table) -> pa.Table:
    """Run `sql` over Arrow tables registered under the given names (unregistered afterwards, so the
    connection keeps no reference to them)."""
    con = connection()
    for name, t in tables.items():
        con.register(name, t)
    try:
        return con.sql(sql).to_arrow_table()
    finally:
        for name in tables:
            con.unregister(name)
