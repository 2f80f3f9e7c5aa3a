"""Online stores: the latest feature values per entity key, for serving. SQLite (embedded default) and Redis.

A write replaces a stored row only if it is newer (event timestamp, then created timestamp): materializing
the same interval twice, or intervals out of order, or a push racing a materialization, never moves a value
back in time. Both stores make that check atomic (an SQLite UPSERT ... WHERE, a Redis Lua script)."""
from __future__ import annotations

import json
import sqlite3
import threading
from urllib.parse import urlparse


def entity_key(values):
    """The stored form of an entity key: JSON of the join key values in the view's join-key order."""
    if len(values) == 1 and type(values[0]) is int:  # the common case, without the JSON encoder's overhead
        return f"[{values[0]}]"
    return json.dumps(list(values), separators=(",", ":"))


class OnlineStore:
    def write(self, feature_view, rows):
        """rows: iterable of (entity_key str, {feature: value}, event_ts epoch seconds, created_ts epoch seconds)."""
        raise NotImplementedError

    def read(self, feature_view, keys):
        """[(values dict, event_ts) or None] in the order of `keys`."""
        docs, stamps = self.read_columns(feature_view, keys)
        return [None if t is None else (d, t) for d, t in zip(docs, stamps)]

    def read_columns(self, feature_view, keys):
        """([values dict or None], [event_ts or None]) in the order of `keys`: the form get_online_features
        consumes, built by one JSON decoder call per lookup."""
        raise NotImplementedError

    def close(self):
        pass


class SqliteOnlineStore(OnlineStore):
    def __init__(self, path):
        self.path = str(path)
        self._local = threading.local()
        c = self._conn()
        c.execute("CREATE TABLE IF NOT EXISTS online (fv TEXT, ek TEXT, vals TEXT, ts REAL, created REAL, "
                  "PRIMARY KEY (fv, ek)) WITHOUT ROWID")
        c.commit()

    def _conn(self):
        # One connection per thread (sqlite3 connections are not shared across threads); WAL lets readers run
        # while a writer commits, from other threads and other processes.
        c = getattr(self._local, "conn", None)
        if c is None:
            c = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
            c.execute("PRAGMA journal_mode=WAL")
            c.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = c
        return c

    def write(self, feature_view, rows):
        c = self._conn()
        with c:  # one transaction: readers see all of a batch or none of it
            c.executemany(
                "INSERT INTO online VALUES (?, ?, ?, ?, ?) ON CONFLICT (fv, ek) DO UPDATE SET vals = excluded.vals, "
                "ts = excluded.ts, created = excluded.created WHERE excluded.ts > online.ts OR "
                "(excluded.ts = online.ts AND excluded.created >= online.created)",
                ((feature_view, ek, json.dumps(v), float(ts), float(cr)) for ek, v, ts, cr in rows))

    # The database answers a lookup as one JSON text, {"v": [values or null, ...], "t": [ts or null, ...]} in
    # the order of the keys (json_each drives the LEFT JOIN, so it is the outer loop): no Python per row, one
    # decoder call. '%!.17g' prints a REAL with enough digits to read back the same double (plain REAL-to-text
    # keeps 15; printf of NULL is not NULL, hence the iif).
    _READ = ("SELECT '{\"v\":[' || group_concat(coalesce(o.vals, 'null')) || '],\"t\":[' || "
             "group_concat(iif(o.ts IS NULL, 'null', printf('%!.17g', o.ts))) || ']}' "
             "FROM json_each(?2) AS k LEFT JOIN online AS o ON o.fv = ?1 AND o.ek = k.value")

    def read_columns(self, feature_view, keys):
        if not keys:
            return [], []
        doc = self._conn().execute(self._READ, (feature_view, json.dumps(keys))).fetchone()[0]
        got = json.loads(doc)
        return got["v"], got["t"]

    def close(self):
        c = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
            self._local.conn = None


# KEYS: one hash per entity; ARGV: (values json, ts, created) per key. Newer-or-equal wins, atomically.
_WRITE_LUA = """
local n = 0
for i, key in ipairs(KEYS) do
  local v, ts, cr = ARGV[3*i-2], tonumber(ARGV[3*i-1]), tonumber(ARGV[3*i])
  local old = redis.call('HMGET', key, 'ts', 'c')
  local ots, oc = tonumber(old[1]), tonumber(old[2])
  if (not ots) or ts > ots or (ts == ots and cr >= oc) then
    redis.call('HSET', key, 'v', v, 'ts', ARGV[3*i-1], 'c', ARGV[3*i])
    n = n + 1
  end
end
return n
"""


# ARGV[1]: the entity hashes' names as one JSON array; returns one JSON text, {"v": [values or null, ...],
# "t": [ts or null, ...]}: one command, one argument and one bulk reply per lookup, each made or read by one C
# call. A pipeline of HMGETs (or 100 KEYS, or a reply of 200 elements) spends more time in the client's
# per-element packing and parsing than the server spends on the lookups (measured: ~3.5 ms vs ~0.3 ms for 100
# keys). The names are not declared as KEYS, so this script is for a single Redis server (not a cluster), which
# is what redis:// URLs open here.
_READ_LUA = """
local vs, ts = {}, {}
for i, key in ipairs(cjson.decode(ARGV[1])) do
  local r = redis.call('HMGET', key, 'v', 'ts')
  if r[1] then vs[i] = r[1]; ts[i] = r[2] else vs[i] = 'null'; ts[i] = 'null' end
end
return '{"v":[' .. table.concat(vs, ',') .. '],"t":[' .. table.concat(ts, ',') .. ']}'
"""


class RedisOnlineStore(OnlineStore):
    def __init__(self, url, project="default"):
        import redis

        self.url = url
        self.project = project
        self.client = redis.Redis.from_url(url)
        self._write = self.client.register_script(_WRITE_LUA)
        self._read_sha = None

    def _key(self, feature_view, ek):
        return f"{self.project}:{feature_view}:{ek}"

    def write(self, feature_view, rows):
        rows = list(rows)
        for i in range(0, len(rows), 1000):
            chunk = rows[i:i + 1000]
            args = []
            for _ek, v, ts, cr in chunk:
                args += [json.dumps(v), repr(float(ts)), repr(float(cr))]
            self._write(keys=[self._key(feature_view, r[0]) for r in chunk], args=args)

    def read_columns(self, feature_view, keys):
        if not keys:
            return [], []
        prefix = f"{self.project}:{feature_view}:"
        got = json.loads(self._evalsha_read(json.dumps([prefix + k for k in keys])))
        return got["v"], got["t"]

    def _evalsha_read(self, names_json):
        # EVALSHA by hand, loading the script once (and again if the server lost it).
        import redis
        if self._read_sha is None:
            self._read_sha = self.client.script_load(_READ_LUA)
        try:
            return self.client.evalsha(self._read_sha, 0, names_json)
        except redis.exceptions.NoScriptError:  # the server restarted or its script cache was flushed
            self._read_sha = self.client.script_load(_READ_LUA)
            return self.client.evalsha(self._read_sha, 0, names_json)

    def close(self):
        self.client.close()


def open_online_store(spec, repo_path, project="default"):
    """`spec`: None/"sqlite" (repo/online.db), "sqlite:///path", a path ending in .db, or "redis://host:port/db"."""
    from pathlib import Path

    if spec is None or spec == "sqlite":
        return SqliteOnlineStore(Path(repo_path) / "online.db")
    if isinstance(spec, OnlineStore):
        return spec
    s = str(spec)
    if s.startswith(("redis://", "rediss://", "unix://")):
        return RedisOnlineStore(s, project)
    if s.startswith("sqlite:///"):
        return SqliteOnlineStore(s[len("sqlite:///"):])
    if s.endswith(".db"):
        return SqliteOnlineStore(s)
    raise ValueError(f"unknown online store {spec!r}: expected 'sqlite', 'sqlite:///path.db' or "
                     f"'redis://host:port/db' ({urlparse(s).scheme or 'no scheme'} given)")
