"""The registry: every applied definition as JSON in one SQLite file, with the materialized intervals.

SQLite gives atomic `apply` (one transaction) and safe reads from several processes (the feature server and
`rtx feature-store materialize` at once)."""
from __future__ import annotations

import json
import sqlite3
import time

SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (kind TEXT, name TEXT, spec TEXT, version INTEGER, updated REAL,
                                    PRIMARY KEY (kind, name));
CREATE TABLE IF NOT EXISTS materializations (feature_view TEXT, start_ts REAL, end_ts REAL, done REAL);
"""


class BreakingChangeError(ValueError):
    """`apply` would change a definition in a way that breaks readers of the stored data."""


def breaking_changes(old, new):
    """What about `new` breaks data written under `old` (same kind and name); empty when compatible."""
    out = []
    if old["kind"] == "entity":
        if old["join_keys"] != new["join_keys"]:
            out.append(f"join_keys {old['join_keys']} -> {new['join_keys']}")
        if old.get("value_type") != new.get("value_type"):
            out.append(f"value_type {old.get('value_type')} -> {new.get('value_type')}")
    elif old["kind"] == "feature_view":
        if old["entities"] != new["entities"]:
            out.append(f"entities {old['entities']} -> {new['entities']}")
        new_types = {f["name"]: f["dtype"] for f in new["schema"]}
        for f in old["schema"]:
            if f["name"] not in new_types:
                out.append(f"field {f['name']!r} removed")
            elif new_types[f["name"]] != f["dtype"]:
                out.append(f"field {f['name']!r} dtype {f['dtype']} -> {new_types[f['name']]}")
    return out


class Registry:
    def __init__(self, path):
        self.path = str(path)
        with self._connect() as c:
            c.executescript(SCHEMA)

    def _connect(self):
        c = sqlite3.connect(self.path, timeout=30)
        c.execute("PRAGMA journal_mode=WAL")
        return c

    def apply(self, specs, allow_breaking=False, delete_names=()):
        """Store `specs` (dicts from `to_dict`) in one transaction; raises BreakingChangeError first if any
        changes incompatibly and `allow_breaking` is False. A feature service's version grows when its feature
        list changes. Returns {(kind, name): version}."""
        versions = {}
        c = self._connect()
        try:
            c.execute("BEGIN IMMEDIATE")
            problems = []
            for s in specs:
                row = c.execute("SELECT spec FROM objects WHERE kind=? AND name=?", (s["kind"], s["name"])).fetchone()
                if row and not allow_breaking:
                    problems += [f"{s['kind']} {s['name']!r}: {p}" for p in breaking_changes(json.loads(row[0]), s)]
            if problems:
                raise BreakingChangeError("apply refused, breaking change(s): " + "; ".join(problems)
                                          + " (pass allow_breaking=True / --allow-breaking to apply anyway)")
            for s in specs:
                row = c.execute("SELECT spec, version FROM objects WHERE kind=? AND name=?",
                                (s["kind"], s["name"])).fetchone()
                body = {k: v for k, v in s.items() if k != "version"}
                if row is None:
                    version = 1
                else:
                    old = {k: v for k, v in json.loads(row[0]).items() if k != "version"}
                    version = row[1] + (old != body)
                s = dict(body, version=version)
                c.execute("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)",
                          (s["kind"], s["name"], json.dumps(s, sort_keys=True), version, time.time()))
                versions[(s["kind"], s["name"])] = version
            for kind, name in delete_names:
                c.execute("DELETE FROM objects WHERE kind=? AND name=?", (kind, name))
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        finally:
            c.close()
        return versions

    def list(self, kind):
        with self._connect() as c:
            rows = c.execute("SELECT spec FROM objects WHERE kind=? ORDER BY name", (kind,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def get(self, kind, name):
        with self._connect() as c:
            row = c.execute("SELECT spec FROM objects WHERE kind=? AND name=?", (kind, name)).fetchone()
        return None if row is None else json.loads(row[0])

    def record_materialization(self, feature_view, start_ts, end_ts):
        with self._connect() as c:
            c.execute("INSERT INTO materializations VALUES (?, ?, ?, ?)", (feature_view, start_ts, end_ts, time.time()))

    def last_materialized(self, feature_view):
        """End (epoch seconds) of the latest materialized interval of `feature_view`, or None."""
        with self._connect() as c:
            row = c.execute("SELECT MAX(end_ts) FROM materializations WHERE feature_view=?", (feature_view,)).fetchone()
        return row[0]
